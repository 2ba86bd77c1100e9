/**
 * The run of one attempt: the handler (or, for a workflow, the workflow runner) called with its
 * context, racing its timeout and the loss of the lease.
 *
 * @module
 */
import type { Priority } from '../../config/resources.js';
import { TaskTimeoutError } from '../../retry/errors.js';
import type { Clock } from '../../runtime/clock.js';
import type { Logger } from '../../runtime/logger.js';
import type { AnyTaskDefinition, TaskContext } from '../../task/define.js';
import type { TaskRecord } from '../../task/model.js';
import { isWorkflow } from '../../workflow/define.js';
import type { Heartbeat } from './heartbeat.js';
import type { RunOutcome } from './run-outcome.js';
import { runWorkflowAttempt, type WorkflowDeps } from './workflow-attempt.js';

/** Time kept in reserve after a task's timeout, to record its outcome before the invocation ends. */
export const RECORDING_RESERVE_MS = 5_000;

export interface ExecuteDeps {
  readonly logger: Logger;
  readonly clock: Clock;
  /** What workflow runs need (their history): present when the registry has workflows. */
  readonly workflows?: WorkflowDeps;
}

/** Calls the handler, racing its timeout and the loss of the lease. */
export async function execute(
  d: ExecuteDeps,
  def: AnyTaskDefinition,
  payload: unknown,
  claimed: TaskRecord,
  { priority, remainingMs }: { readonly priority: Priority; readonly remainingMs: () => number },
  controller: AbortController,
  heartbeat: Heartbeat,
  fields: Record<string, unknown>,
): Promise<RunOutcome> {
  const workflow = isWorkflow(def) && d.workflows !== undefined ? { def, deps: d.workflows } : undefined;
  // A task has its timeout; a workflow run the invocation (each step has its own timeout, and a
  // step that would not fit waits for the next invocation), with a margin for its last write.
  const budgetMs =
    workflow === undefined
      ? claimed.timeout_seconds * 1000
      : Math.max(claimed.timeout_seconds * 1000, remainingMs() - RECORDING_RESERVE_MS);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<RunOutcome>((resolve) => {
    timer = setTimeout(
      () => {
        controller.abort(new TaskTimeoutError(claimed.task_id, Math.round(budgetMs / 1000)));
        resolve({ kind: 'timeout' });
      },
      workflow === undefined ? budgetMs : budgetMs + RECORDING_RESERVE_MS / 2,
    );
  });
  const leaseLost = heartbeat.leaseLost.then((error): RunOutcome => ({ kind: 'lease_lost', error }));
  const ctx: TaskContext = {
    taskId: claimed.task_id,
    attempt: claimed.attempts,
    maxAttempts: claimed.max_attempts,
    priority,
    signal: controller.signal,
    logger: boundLogger(d.logger, fields),
    ...(claimed.scheduled_time === undefined ? {} : { scheduledTime: new Date(claimed.scheduled_time) }),
    ...(claimed.schedule === undefined ? {} : { schedule: claimed.schedule }),
    ...logicalDateOf(claimed),
  };
  try {
    const running =
      workflow !== undefined
        ? runWorkflowAttempt(workflow.deps, {
            def: workflow.def,
            input: payload,
            claimed,
            leaseToken: () => heartbeat.current.lease_token,
            ctx,
            deadline: d.clock.now() + budgetMs,
          })
        : Promise.resolve()
            .then(() => def.handler(payload, ctx))
            .then(
              (value): RunOutcome => ({ kind: 'ok', value }),
              (error: unknown): RunOutcome => ({ kind: 'error', error }),
            );
    return await Promise.race([running, timedOut, leaseLost]);
  } finally {
    clearTimeout(timer);
  }
}

function boundLogger(logger: Logger, fields: Record<string, unknown>): Logger {
  return {
    debug: (m, f) => logger.debug(m, { ...fields, ...f }),
    info: (m, f) => logger.info(m, { ...fields, ...f }),
    warn: (m, f) => logger.warn(m, { ...fields, ...f }),
    error: (m, f) => logger.error(m, { ...fields, ...f }),
  };
}

/** A task's logical date and data interval, as its context gives them (`TaskContext.logicalDate`). */
export function logicalDateOf(
  r: Pick<TaskRecord, 'scheduled_time' | 'data_interval'>,
): Pick<TaskContext, 'logicalDate' | 'dataInterval'> {
  if (r.data_interval !== undefined) {
    const start = new Date(r.data_interval.start);
    return { logicalDate: start, dataInterval: { start, end: new Date(r.data_interval.end) } };
  }
  return r.scheduled_time === undefined ? {} : { logicalDate: new Date(r.scheduled_time) };
}
