import { KajError } from '../errors.js';
import { PermanentError, RetryableError } from '../retry/errors.js';
import type { ErrorInfo } from '../task/model.js';

/** Root of the workflow module's errors. */
export class WorkflowError extends KajError {}

/** A workflow declaration is invalid (checked at start-up, naming the option). */
export class WorkflowDefinitionError extends WorkflowError {}

/**
 * A step ran out of attempts (or threw a `PermanentError`, or returned what cannot be stored).
 * Thrown by `wf.step` — on the run that failed it and on every replay after — so the workflow's
 * code can catch it; uncaught, it fails the run (permanent: the run is not retried for it).
 */
export class StepFailedError extends PermanentError {
  constructor(
    readonly step: string,
    /** The step's last error, as recorded. */
    readonly error: ErrorInfo,
    options: { taskId?: string; cause?: unknown } = {},
  ) {
    super(`step "${step}" failed: ${error.name}: ${error.message}`, { code: 'STEP_FAILED', ...options });
  }
}

/**
 * The code asked for something its recorded history cannot give: a step name used twice in one
 * run, or a name recorded as another kind of entry (a sleep recorded where a step is asked for).
 * Permanent: replaying the same code again would fail the same way.
 */
export class NonDeterminismError extends PermanentError {
  constructor(
    readonly step: string,
    message: string,
    options: { taskId?: string } = {},
  ) {
    super(`${step}: ${message}`, { code: 'NON_DETERMINISM', ...options });
  }
}

/** A run went over its deployment's limit of history entries. Permanent. */
export class HistoryLimitError extends PermanentError {
  constructor(limit: number, options: { taskId?: string } = {}) {
    super(`the run has ${limit} history entries, the most a run may have`, { code: 'HISTORY_LIMIT', ...options });
  }
}

/** A workflow's `handler` was called directly instead of through the consumer's workflow runner. */
export class WorkflowRunnerMissingError extends WorkflowError {
  constructor(type: string) {
    super(`workflow "${type}" runs only in a Kaj consumer that has a history store (KAJ_HISTORY_TABLE_NAME)`);
  }
}

/** The run's code asked for one step name twice: step names are unique in a run (loops name theirs). */
export class DuplicateStepError extends PermanentError {
  constructor(
    readonly step: string,
    options: { taskId?: string } = {},
  ) {
    super(`step "${step}" is asked for twice in this run: give each call its own name (\`charge_\${i}\`)`, {
      code: 'DUPLICATE_STEP',
      ...options,
    });
  }
}

/** A step or sleep name that cannot be recorded (empty, too long, not a string). */
export class InvalidStepNameError extends PermanentError {
  constructor(name: unknown, options: { taskId?: string } = {}) {
    super(`a step name must be a string of 1-200 characters, got ${JSON.stringify(String(name).slice(0, 40))}`, {
      code: 'INVALID_STEP_NAME',
      ...options,
    });
  }
}

/** One attempt of a step ran past its timeout (its `signal` was aborted). Retryable. */
export class StepTimeoutError extends RetryableError {
  constructor(
    readonly step: string,
    timeoutSeconds: number,
    options: { taskId?: string } = {},
  ) {
    super(`step "${step}" timed out after ${timeoutSeconds}s`, { code: 'TIMEOUT', ...options });
  }
}

/** The workflow asked to fail and compensate (`wf.compensate()`). Permanent: the run fails. */
export class CompensationRequestedError extends PermanentError {
  constructor(reason: string, options: { taskId?: string } = {}) {
    super(reason, { code: 'COMPENSATED', ...options });
  }
}

/**
 * A child task started by `wf.run` ended without a result: failed (out of attempts, a permanent
 * error, dead-lettered) or cancelled. Thrown by `wf.run` on the run that saw it and on every
 * replay after, so the code can catch it; uncaught, it fails the run (and its compensations run).
 */
export class ChildFailedError extends PermanentError {
  constructor(
    /** The `wf.run` call's name. */
    readonly step: string,
    readonly childId: string,
    readonly childStatus: 'failed' | 'cancelled',
    /** The child's last error, as recorded. */
    readonly error: ErrorInfo,
    options: { taskId?: string } = {},
  ) {
    super(`child "${step}" (${childId}) ${childStatus}: ${error.name}: ${error.message}`, {
      code: 'CHILD_FAILED',
      ...options,
    });
  }
}

/** A run asked for more children than its type allows (`maxChildren`). Permanent. */
export class ChildLimitError extends PermanentError {
  constructor(limit: number, options: { taskId?: string } = {}) {
    super(`the run has started ${limit} children, the most a run may start`, { code: 'CHILD_LIMIT', ...options });
  }
}

/** A run called `wf.run` in a runner given no way to start children. */
export class ChildRunsMissingError extends WorkflowError {
  constructor(runId: string) {
    super(`run ${runId}: this runner cannot start child tasks (no child port given)`);
  }
}

/**
 * A run outlived its type's `maxRunDays` (or asked for a wait that would end after it): its
 * history is kept only that long (plus the retention). Permanent.
 */
export class RunExpiredError extends PermanentError {
  constructor(message: string, options: { taskId?: string } = {}) {
    super(message, { code: 'RUN_EXPIRED', ...options });
  }
}
