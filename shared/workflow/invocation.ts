/**
 * What one invocation of a workflow run is given and what it comes to: the runner's dependencies,
 * the invocation (run, lease, deadline) and its outcome.
 *
 * @module
 */
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { RandomSource } from '../runtime/random.js';
import type { AnyWorkflowDefinition } from './define.js';
import type { HistoryStore } from './history-store.js';
import type { ChildRuns } from './children.js';
import type { ActiveRuns } from './active-runs.js';
import type { DataInterval } from '../task/define.js';

export interface RunnerDeps {
  readonly history: HistoryStore;
  readonly clock: Clock;
  /** Backoff jitter of step retries. */
  readonly random: RandomSource;
  /** How long history entries are kept after they are written, in days (their TTL). */
  readonly historyRetentionDays: number;
  /** How long after a child started its waiting run first looks it up. @default DEFAULTS.childCheckMs */
  readonly childCheckMs?: number;
  /** The slots of types with `maxActiveRuns`; without it such runs are not held back. */
  readonly activeRuns?: ActiveRuns;
  /** How often a run waiting for a slot looks again. @default DEFAULTS.admitPollMs */
  readonly admitPollMs?: number;
}

/** The invocation: which run, under which lease, until when. */
export interface RunInvocation {
  readonly def: AnyWorkflowDefinition;
  /** The input, parsed by the type's schema. */
  readonly input: unknown;
  readonly runId: string;
  /** The run's owner (its type's active-run slots are per owner). @default 'anonymous' */
  readonly owner?: string;
  /** Epoch ms the run was created: `wf.now()` before any entry. */
  readonly createdAt: number;
  /** The run's invocation since it last made progress. */
  readonly attempt: number;
  /**
   * True when a retryable error of the run's own code would fail the run (its attempts are used
   * up): the run's compensations run then too, as for a permanent error. @default false
   */
  readonly finalAttempt?: boolean;
  /** The attempt's fencing token now (it grows when a lazy claim is written). */
  readonly leaseToken: () => number;
  /** Aborted on a cancel request or the loss of the lease. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Epoch ms after which no step may still be running: a step that would not fit waits for the next invocation. */
  readonly deadline: number;
  readonly scheduledTime?: Date;
  readonly logicalDate?: Date;
  readonly dataInterval?: DataInterval;
  /** Starts and looks up the run's children (`wf.run`); a run without it cannot start any. */
  readonly children?: ChildRuns;
}

export type WorkflowOutcome =
  | { readonly kind: 'completed'; readonly value: unknown }
  | { readonly kind: 'failed'; readonly error: unknown }
  /** Nothing left to do before `wakeAt` (epoch ms): suspend the run until then. */
  | {
      readonly kind: 'suspended';
      readonly wakeAt: number;
      /** Children the code waits for that have not ended: the run's count for their fan-in. */
      readonly childrenOpen: number;
      readonly steps: StepCounts;
    };

/** What the invocation did, for the logs and the benches. */
export interface StepCounts {
  /** Entries found recorded and given back instead of running. */
  readonly replayed: number;
  /** Steps run (attempts, failed or not). */
  readonly ran: number;
  /** Entries written. */
  readonly recorded: number;
}
