/**
 * The run of a workflow's attempt: its invocation handed to the workflow runner
 * (`shared/workflow/runner.ts`), under the attempt's lease and signal, and what the runner answers
 * turned into the attempt's outcome (`suspend` when the run waits for a time still to come).
 *
 * @module
 */
import type { TaskContext } from '../../task/define.js';
import { LeaseLostError } from '../../task/errors.js';
import type { TaskRecord } from '../../task/model.js';
import type { AnyWorkflowDefinition } from '../../workflow/define.js';
import { type RunnerDeps, runWorkflow } from '../../workflow/runner.js';
import type { ChildRuns } from '../../workflow/children.js';
import type { RunOutcome } from './run-outcome.js';

export interface WorkflowAttempt {
  readonly def: AnyWorkflowDefinition;
  readonly input: unknown;
  /** The claimed run. */
  readonly claimed: TaskRecord;
  /** The attempt's current fencing token (the heartbeat's view: a lazy claim's write raises it). */
  readonly leaseToken: () => number;
  readonly ctx: TaskContext;
  /** Epoch ms by which the invocation must have ended its steps. */
  readonly deadline: number;
}

/** What workflow runs need: the runner's dependencies, and how a run's children are started. */
export interface WorkflowDeps extends RunnerDeps {
  /** The children of a claimed run (`wf.run`). */
  readonly childRuns?: (run: TaskRecord) => ChildRuns;
}

/** One invocation of the run; never rejects. */
export async function runWorkflowAttempt(deps: WorkflowDeps, a: WorkflowAttempt): Promise<RunOutcome> {
  try {
    const o = await runWorkflow(deps, {
      ...(deps.childRuns === undefined ? {} : { children: deps.childRuns(a.claimed) }),
      def: a.def,
      input: a.input,
      runId: a.claimed.task_id,
      owner: a.claimed.owner ?? 'anonymous',
      createdAt: Date.parse(a.claimed.created_at),
      attempt: a.claimed.attempts,
      finalAttempt: a.claimed.attempts >= a.claimed.max_attempts,
      leaseToken: a.leaseToken,
      signal: a.ctx.signal,
      logger: a.ctx.logger,
      deadline: a.deadline,
      ...(a.ctx.scheduledTime === undefined ? {} : { scheduledTime: a.ctx.scheduledTime }),
      ...(a.ctx.logicalDate === undefined ? {} : { logicalDate: a.ctx.logicalDate }),
      ...(a.ctx.dataInterval === undefined ? {} : { dataInterval: a.ctx.dataInterval }),
    });
    if (o.kind === 'completed') return { kind: 'ok', value: o.value };
    if (o.kind === 'suspended') return { kind: 'suspend', wakeAt: o.wakeAt, childrenOpen: o.childrenOpen };
    return o.error instanceof LeaseLostError
      ? { kind: 'lease_lost', error: o.error }
      : { kind: 'error', error: o.error };
  } catch (error) {
    // The history could not be read: the attempt failed as a handler's error would.
    return { kind: 'error', error };
  }
}
