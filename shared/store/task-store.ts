import type { AuditEntry, TaskRecord, TaskStatus } from '../task/model.js';

/**
 * A precondition for an update. All given parts must hold (AND); `status` and
 * `orLeaseExpiredBefore` are alternatives (OR) when both are given.
 */
export interface TaskCondition {
  /** The task's status is one of these. */
  readonly status?: readonly TaskStatus[];
  /** Or: the task is `running` and its lease ended before this time (epoch ms). */
  readonly orLeaseExpiredBefore?: number;
  readonly dispatchId?: string;
  /** Fencing: the writer still holds the lease it claimed. */
  readonly leaseToken?: number;
  /** An outbox entry is (true) or is not (false) present. */
  readonly outboxPending?: boolean;
  /** No cancel request is recorded: an attempt's outcome may land only then (a cancel always wins). */
  readonly noCancelRequest?: boolean;
}

/** An outbox index entry: the task's key and its index keys. */
export type OutboxEntry = Pick<TaskRecord, 'task_id' | 'outbox_pk' | 'outbox_due'>;

export interface ReadOptions {
  /**
   * Strongly consistent (the default) or eventually consistent (half the read cost; may miss
   * a write made in the last second or so). Polls that tolerate lag use `false`.
   */
  readonly consistent?: boolean;
}

export type Counter = 'attempts' | 'lease_token' | 'crashes' | 'unattributed_crashes' | 'redrive_count';

export interface TaskChanges {
  readonly set?: Partial<TaskRecord>;
  readonly remove?: readonly (keyof TaskRecord)[];
  /** Atomic increments (a missing attribute counts as 0). */
  readonly add?: Partial<Record<Counter, number>>;
  /** Atomic appends to list attributes (a missing list counts as empty), so concurrent writers lose nothing. */
  readonly append?: { readonly audit?: readonly AuditEntry[] };
}

/**
 * The storage contract. Every lifecycle rule lives in the domain (`shared/task/lifecycle.ts`);
 * an implementation only turns these calls into single-item conditional requests.
 */
export interface TaskStore {
  /** Writes a new task. @throws TaskAlreadyExistsError when the id is taken (with the existing record). */
  create(record: TaskRecord): Promise<void>;
  get(taskId: string, options?: ReadOptions): Promise<TaskRecord | undefined>;
  /**
   * Applies `changes` if `condition` holds; returns the task as written.
   * @throws ConditionFailedError, StoreRejectedError (the request can never succeed), StoreUnavailableError
   */
  update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord>;
  /**
   * The entries of one outbox partition due at or before `dueBy`, oldest first: their keys only
   * (the index projects nothing else; the sweeper reads each item itself before acting).
   */
  listOutboxDue(partition: string, dueBy: number, limit: number): Promise<OutboxEntry[]>;
}
