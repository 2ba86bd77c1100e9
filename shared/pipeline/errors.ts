/**
 * The pipeline module's errors. A definition refused at start-up is a `PipelineDefinitionError`
 * naming the pipeline and the node; a request the API or CLI refuses is a `PipelineRequestError`
 * naming the field (a 4xx); a run whose nodes did not all succeed fails with `PipelineRunFailedError`.
 *
 * @module
 */
import { KajError } from '../errors.js';
import { PermanentError } from '../retry/errors.js';

/** Root of the pipeline module's errors. */
export class PipelineError extends KajError {}

/** A pipeline declaration is invalid: a cycle, an unknown node, a bad option (checked at start-up). */
export class PipelineDefinitionError extends PipelineError {}

/** A request names no pipeline of the deployment. */
export class UnknownPipelineError extends PipelineError {
  constructor(readonly pipeline: string) {
    super(`pipeline "${pipeline}" is not defined in this deployment`);
  }
}

/** A request's field is wrong (a date, a range, a node): 422 naming `field`. */
export class PipelineRequestError extends PipelineError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** A pipeline run for that logical date does not exist. */
export class PipelineRunNotFoundError extends PipelineError {
  constructor(
    readonly pipeline: string,
    readonly logicalDate: string,
  ) {
    super(`pipeline "${pipeline}" has no run for ${logicalDate}`);
  }
}

/** The run cannot do that now (clear a run still going, a run too old to reopen): 409 with `reason`. */
export class PipelineRunConflictError extends PipelineError {
  constructor(
    readonly reason: 'run_active' | 'run_expired' | 'nothing_to_clear',
    message: string,
    options: { taskId?: string } = {},
  ) {
    super(message, options);
  }
}

/**
 * A run ended with nodes that failed (or could not run because an upstream failed): the run
 * fails, permanently, naming them. Its nodes' own errors are on their tasks.
 */
export class PipelineRunFailedError extends PermanentError {
  constructor(
    readonly failed: readonly string[],
    readonly upstreamFailed: readonly string[],
    options: { taskId?: string } = {},
  ) {
    super(
      `nodes failed: ${failed.join(', ')}${upstreamFailed.length > 0 ? `; not run (upstream failed): ${upstreamFailed.join(', ')}` : ''}`,
      { code: 'PIPELINE_FAILED', ...options },
    );
  }
}
