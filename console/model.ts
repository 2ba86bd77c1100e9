/**
 * What the console shows and does, as a port: {@link ConsoleBackend}. The console (router,
 * pages) is built on it alone; the implementation over a deployment's services — the same ones
 * the `kaj` CLI uses (queue depths, the listing index, the DLQ redrive and purge paths, the
 * schedule service, the domain's cancel) — lives with the CLI (cli/console/backend.ts), and tests
 * pass fakes.
 *
 * @module
 */
import type { Priority } from '../shared/config/resources.js';
import type { LimitStatusRow } from '../shared/limit/status.js';
import type { ScheduleSummary, ScheduleView } from '../shared/schedule/views.js';
import type { RunResult } from '../shared/schedule/writes.js';
import type { ListedTask } from '../shared/task/task-store.js';
import type { BoundedCount } from '../shared/task/delayed-count.js';
import type { ListedStatus, ListingView, TaskRecord } from '../shared/task/model.js';
import type { Operator } from '../shared/task/operations.js';
import type { HistoryEntry } from '../shared/workflow/history-store.js';

/** One queue's depth (SQS's approximate attributes). */
export interface QueueDepthRow {
  /** Absent for the default lane. */
  readonly lane?: string;
  readonly priority: Priority;
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
  /** Age of the oldest message (CloudWatch's ApproximateAgeOfOldestMessage); `null`: not known here. */
  readonly oldestAgeSeconds: number | null;
}

export interface DlqDepthRow {
  readonly priority: Priority;
  readonly visible: number;
  readonly inFlight: number;
}

/** Tasks of one listed status, counted by paging the listing index up to a bound. */
export interface StatusCount {
  readonly status: ListedStatus;
  readonly count: number;
  /** True when counting stopped at the bound: "1,000+". */
  readonly capped: boolean;
}

/** Task outcomes in one time bucket. */
export interface ThroughputBucket {
  /** Start of the bucket (epoch ms). */
  readonly start: number;
  readonly succeeded: number;
  /** Failed for good (dead-lettered). */
  readonly failed: number;
  /** Attempts that failed and will be retried. */
  readonly retried: number;
}

export type Throughput =
  | {
      readonly available: true;
      /** Where the numbers come from, said on the page. */
      readonly source: string;
      readonly bucketSeconds: number;
      readonly buckets: readonly ThroughputBucket[];
    }
  | { readonly available: false; readonly reason: string };

export interface Overview {
  /** When it was read (epoch ms). */
  readonly at: number;
  readonly queues: readonly QueueDepthRow[];
  readonly dlqs: readonly DlqDepthRow[];
  readonly statuses: readonly StatusCount[];
  /**
   * Tasks waiting in the table for their message (a delay beyond SQS's 15 minutes: the queues'
   * `delayed` does not see them), counted from the outbox index up to a bound per partition.
   */
  readonly delayedInTable: BoundedCount;
  readonly throughput: Throughput;
  /** Every declared flow-control limit's use; absent when none is declared. */
  readonly limits?: readonly LimitStatusRow[];
}

export interface TaskQuery {
  /** A listed status, or `delayed`: queued tasks waiting in the table, soonest due first. */
  readonly status: ListingView;
  readonly type?: string;
  readonly priority?: Priority;
  /** Only tasks that entered the status at or after this time (epoch ms). */
  readonly since?: number;
  /** Rows per page. */
  readonly limit: number;
  readonly cursor?: string;
}

export interface TaskPage {
  readonly items: readonly ListedTask[];
  /** Present when more may follow. */
  readonly cursor?: string;
}

/** One dead task in the DLQs (a DLQ message), as `kaj dlq list` reports it. */
export interface DeadTaskRow {
  readonly messageId: string;
  readonly taskId?: string;
  readonly type?: string;
  readonly originPriority: Priority;
  readonly attempts?: number;
  readonly lastError?: string;
  /** ISO time it died. */
  readonly deadSince?: string;
  readonly kind: 'dead_letter' | 'moved_by_sqs' | 'unreadable';
  readonly status?: string;
}

export interface DeadLetterView {
  readonly tasks: readonly DeadTaskRow[];
  /** DLQ messages read (and released). */
  readonly received: number;
  /** True when reading stopped at the bound: there may be more. */
  readonly truncated: boolean;
}

/** Which dead tasks a redrive or purge acts on: exactly these tasks (confirmed by the operator). */
export interface DeadSelection {
  readonly taskIds: readonly string[];
}

export interface BatchCounts {
  readonly selected: number;
  readonly done: number;
  readonly skipped: number;
  readonly failed: number;
}

export interface BatchItem {
  readonly task_id: string | null;
  readonly outcome: 'done' | 'skipped' | 'failed';
  readonly action: string;
  readonly detail?: string;
}

export interface BatchOutcome extends BatchCounts {
  readonly interrupted: boolean;
  readonly items: readonly BatchItem[];
}

export type Progress = (counts: BatchCounts) => void;

export interface ScheduleConsole {
  list(cursor?: string): Promise<{ readonly items: readonly ScheduleSummary[]; readonly cursor?: string }>;
  get(name: string): Promise<ScheduleView>;
  pause(name: string, note: string | undefined): Promise<ScheduleView>;
  resume(name: string): Promise<ScheduleView>;
  trigger(name: string): Promise<RunResult>;
}

/** Workflow runs (docs/workflows.md): their histories, and the signals an operator sends them. */
export interface WorkflowConsole {
  /** The run's history entries (`HistoryStore.read`); none for a task that is no workflow run. */
  history(runId: string): Promise<readonly HistoryEntry[]>;
  /**
   * `signalRoute` (`POST /api/v1/tasks/{id}/signals/{name}`, `kaj task signal`) as an operator,
   * who may signal any run: records the signal in the run's history and wakes the run if it waits.
   * @throws ValidationError (the name, the payload), TaskNotFoundError, HttpError (409 `not_a_workflow`,
   *   `run_finished`, `signal_already_received`, `signal_wait_ended`)
   */
  signal(runId: string, name: string, payload: unknown): Promise<{ readonly woken: boolean }>;
}

/** The deployment the console shows, through Kaj's own services. */
export interface ConsoleBackend {
  /** `local (npm start, pid 123)`, `stack kaj-prod (eu-west-1)`. */
  readonly label: string;
  overview(): Promise<Overview>;
  /** @throws ValidationError (a bad cursor) */
  listTasks(query: TaskQuery): Promise<TaskPage>;
  getTask(taskId: string): Promise<TaskRecord | undefined>;
  /** `TaskLifecycle.cancel`, audited. @throws TaskNotFoundError, TaskNotCancellableError */
  cancelTask(taskId: string, operator: Operator): Promise<{ readonly status: string; readonly requested: boolean }>;
  /** Reads the DLQs (receive and release, as `kaj dlq list`), at most `limit` messages. */
  deadLetters(limit: number): Promise<DeadLetterView>;
  /** The DLQ redrive path of `kaj dlq redrive --task …`. */
  redrive(selection: DeadSelection, operator: Operator, onProgress: Progress): Promise<BatchOutcome>;
  /** The DLQ purge path of `kaj dlq purge --task …`. */
  purge(selection: DeadSelection, operator: Operator, onProgress: Progress): Promise<BatchOutcome>;
  /** Absent when the deployment has no scheduler. */
  readonly schedules?: ScheduleConsole;
  /** Absent when the deployment has no history store (no workflow types). */
  readonly workflows?: WorkflowConsole;
}
