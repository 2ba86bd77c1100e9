/**
 * One invocation of a workflow run on a given history, with everything else defaulted: what the
 * runner's unit tests and `bench/workflows.ts` call instead of wiring `runWorkflow` themselves.
 *
 * @module
 */
import { silentLogger } from '../shared/runtime/logger.js';
import type { AnyWorkflowDefinition } from '../shared/workflow/define.js';
import type { HistoryStore } from '../shared/workflow/history-store.js';
import { type RunInvocation, runWorkflow, type WorkflowOutcome } from '../shared/workflow/runner.js';

export interface InvokeOptions extends Partial<Omit<RunInvocation, 'def'>> {
  readonly history: HistoryStore;
  /** The clock's time (epoch ms). */
  readonly now: () => number;
  /** Backoff jitter. @default 0.5 */
  readonly jitter?: number;
}

/** Invokes `def`'s run once: run id `t_0…1`, created and due now, lease 1, 300 s of invocation left. */
export function invokeWorkflow(def: AnyWorkflowDefinition, o: InvokeOptions): Promise<WorkflowOutcome> {
  const { history, now, jitter, ...run } = o;
  return runWorkflow(
    { history, clock: { now }, random: { next: () => jitter ?? 0.5, id: () => 'x' }, historyRetentionDays: 30 },
    {
      def,
      input: {},
      runId: 't_00000000000000000000000000000001',
      createdAt: now(),
      attempt: 1,
      leaseToken: () => 1,
      signal: new AbortController().signal,
      logger: silentLogger,
      deadline: now() + 300_000,
      ...run,
    },
  );
}
