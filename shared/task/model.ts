import { createHash } from 'node:crypto';
import { PRIORITIES, type Priority, TABLE_SCHEMA } from '../config/resources.js';

/** A task id as Kaj makes them: `t_` and 32 lowercase hex digits (random, or an HMAC of an idempotency key). */
export const TASK_ID_PATTERN = /^t_[0-9a-f]{32}$/;

/**
 * `waiting`: a workflow run suspended until a timer (a durable sleep, a step's retry) wakes it;
 * no worker holds it meanwhile (docs/workflows.md).
 */
export const TASK_STATUSES = ['queued', 'running', 'retrying', 'waiting', 'succeeded', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/**
 * The statuses the listing index holds (`GET /api/v1/tasks?status=…`). `queued` tasks wait in
 * SQS (their count is the queue depth) and `succeeded` ones are the ordinary case: indexing
 * either would cost a write per task. `running` holds the tasks running past their first
 * heartbeat (lease/3), whose claim write puts them there; `waiting` the suspended workflow runs.
 */
export const LISTED_STATUSES = ['retrying', 'failed', 'cancelled', 'running', 'waiting'] as const;
export type ListedStatus = (typeof LISTED_STATUSES)[number];

/**
 * What the listing can be asked for: a listed status, or `delayed` — the `queued` tasks that wait
 * in the table rather than in SQS (a `run_at` beyond SQS's 15-minute delay, or a send the
 * sweeper retries), read from the outbox index those tasks are in anyway (no index of its own).
 */
export const LISTING_VIEWS = [...LISTED_STATUSES, 'delayed'] as const;
export type ListingView = (typeof LISTING_VIEWS)[number];

/** What went wrong in an attempt, as stored and shown. Never contains the payload. */
export interface ErrorInfo {
  readonly name: string;
  readonly message: string;
  readonly retryable: boolean;
  readonly code?: string;
}

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'cancelled' | 'crashed';

/** One entry of a task's history. */
export interface AttemptRecord {
  readonly attempt: number;
  readonly outcome: AttemptOutcome;
  readonly started_at?: string;
  readonly finished_at: string;
  readonly duration_ms?: number;
  readonly error?: ErrorInfo;
}

/** Where a message for the task still has to be sent (see the outbox in docs/reliability.md). */
export type OutboxTarget = 'queue' | 'dlq';

/**
 * A task as stored in the table: the one record of truth for its lifecycle.
 * Times shown to users are ISO-8601 strings; times used in conditions are epoch ms.
 */
export interface TaskRecord {
  task_id: string;
  type: string;
  priority: Priority;
  status: TaskStatus;
  payload: unknown;
  /** Attempts started so far (claims). */
  attempts: number;
  max_attempts: number;
  timeout_seconds: number;
  run_at: string;
  created_at: string;
  updated_at: string;
  started_at?: string;
  finished_at?: string;
  result?: unknown;
  last_error?: ErrorInfo;
  history: AttemptRecord[];
  idempotency_key?: string;
  /**
   * The tenant the task belongs to (API field `tenant`): on AWS the SQS message group id of its
   * messages (fair queues: one tenant's backlog does not starve the others' tasks), and a key
   * that limits can be split by (`defineTask({ uses: [{ limit, key: (p, t) => t.tenant }] })`).
   */
  tenant?: string;
  /**
   * The lane whose queues carry the task's messages (`defineTask({ lane })`, fixed at submit);
   * absent for the default lane. Every send of the task (retries, the sweeper, a redrive) goes there.
   */
  lane?: string;
  /** Hash of the submitted request: a replay with the same key must match it. */
  fingerprint: string;
  /** Fencing token: incremented by every claim; every later write of that attempt is conditioned on it. */
  lease_token: number;
  /** Epoch ms until which the current claim holds the task. */
  lease_until?: number;
  /** Identifies the one message allowed to claim the task next; a new one is made per enqueue. */
  dispatch_id: string;
  /** Set by DELETE on a running task; the worker's heartbeat sees it and aborts the handler. */
  cancel_requested?: boolean;
  /**
   * Set when a signal arrives for a workflow run that is being run or due (`shared/task/wake.ts`):
   * if that invocation suspends, the run is woken at once.
   */
  wake_requested?: boolean;
  /**
   * Crashes attributed to the task: its worker vanished (crash, kill, OOM) while it ran alone
   * (`solo`). Counted towards `crash_limit`.
   */
  crashes?: number;
  /** Times its worker vanished while it ran beside other tasks: not proof against it, not counted. */
  unattributed_crashes?: number;
  /** Set on the attempt when it runs alone on its worker (a task that crashed before runs so). */
  solo?: boolean;
  /** The type's crash limit when it overrides the deployment's (`defineTask({ crashLimit })`). */
  crash_limit?: number;
  /** Who submitted it: the caller's IAM principal, or the local identity. GET/DELETE by others answer 404. */
  owner?: string;
  /** Outbox partition `${target}#${priority}#${shard}`; present only while something waits in the table. */
  outbox_pk?: string;
  /** Epoch ms at which the sweeper sends the owed message if nobody confirmed sending it. */
  outbox_due?: number;
  /** Listing index partition (`TABLE_SCHEMA.listIndex`): the listed status, while the task is listable. */
  list_pk?: ListedStatus;
  /** Listing index sort key: `<ISO time it entered the listed status>#<task id>` (newest first). */
  list_sk?: string;
  /** TTL (epoch seconds), set when the task finishes. */
  expires_at?: number;
  /** Times an operator redrove the task from a DLQ. */
  redrive_count?: number;
  /** Operator actions (redrive, purge), newest last. */
  audit?: AuditEntry[];
  /** Set when an operator discarded the dead task. */
  discarded_at?: string;
  /** The schedule that created the task (docs/schedules.md). */
  schedule?: string;
  /** Its run's logical date: the nominal scheduled time (ISO, UTC), before jitter. */
  scheduled_time?: string;
  /** The data interval a pipeline's run and its nodes process (ISO, UTC): `[start, end)`; `start` is the logical date. */
  data_interval?: { start: string; end: string };
  /** A child of a workflow run (`wf.run`): the run that started it. Its end is recorded in the run's history. */
  parent_id?: string;
  /** A child: the name of the run's call that started it (unique in the run). */
  parent_step?: string;
  /**
   * A waiting workflow run: its children not yet finished when it suspended. Each child that
   * finishes counts it down; the last one wakes the run (`RunWakes.childFinished`).
   */
  children_open?: number;
}

export interface AuditEntry {
  readonly action: string;
  readonly at: string;
  readonly by: string;
  readonly reason?: string;
}

/** The outbox partition of a task: its target, priority and shard (from its id). */
export function outboxKey(target: OutboxTarget, priority: Priority, taskId: string): string {
  return `${target}#${priority}#${outboxShardOf(taskId)}`;
}

/** Shard of a task's outbox entries: a stable hash of its id. */
export function outboxShardOf(taskId: string): number {
  return createHash('md5').update(taskId).digest().readUInt32BE(0) % TABLE_SCHEMA.outboxIndex.shards;
}

/**
 * Every outbox partition the sweeper reads, dead letters first: each shard of each target and
 * priority, and the unsharded `${target}#${priority}` that deployments before sharding wrote.
 */
export function outboxPartitions(): string[] {
  const out: string[] = [];
  for (const target of ['dlq', 'queue'] as const) {
    for (const priority of PRIORITIES) {
      out.push(`${target}#${priority}`);
      for (let shard = 0; shard < TABLE_SCHEMA.outboxIndex.shards; shard += 1)
        out.push(`${target}#${priority}#${shard}`);
    }
  }
  return out;
}

/** The public view of a task, as the API returns it. Internal bookkeeping stays hidden. */
export type TaskView = Pick<
  TaskRecord,
  | 'task_id'
  | 'type'
  | 'status'
  | 'priority'
  | 'tenant'
  | 'attempts'
  | 'max_attempts'
  | 'run_at'
  | 'created_at'
  | 'updated_at'
  | 'started_at'
  | 'finished_at'
  | 'result'
  | 'last_error'
  | 'cancel_requested'
  | 'history'
  | 'parent_id'
>;

export function toView(r: TaskRecord): TaskView {
  const view: TaskView = {
    task_id: r.task_id,
    type: r.type,
    status: r.status,
    priority: r.priority,
    attempts: r.attempts,
    max_attempts: r.max_attempts,
    run_at: r.run_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
    history: r.history,
  };
  if (r.tenant !== undefined) view.tenant = r.tenant;
  if (r.started_at !== undefined) view.started_at = r.started_at;
  if (r.finished_at !== undefined) view.finished_at = r.finished_at;
  if (r.result !== undefined) view.result = r.result;
  if (r.last_error !== undefined) view.last_error = r.last_error;
  if (r.cancel_requested && r.status === 'running') view.cancel_requested = true;
  if (r.parent_id !== undefined) view.parent_id = r.parent_id;
  return view;
}
