import type { AuditEntry, ListedStatus, TaskRecord, TaskStatus } from './model.js';

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
  /** `children_open` is greater than this (a missing attribute is not). */
  readonly childrenOpenAbove?: number;
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

export type Counter =
  | 'attempts'
  | 'lease_token'
  | 'crashes'
  | 'unattributed_crashes'
  | 'redrive_count'
  | 'children_open';

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

/** A row of the listing index: the attributes it projects (`TABLE_SCHEMA.listIndex`). */
export type ListedTask = Pick<
  TaskRecord,
  | 'task_id'
  | 'type'
  | 'status'
  | 'priority'
  | 'attempts'
  | 'max_attempts'
  | 'created_at'
  | 'updated_at'
  | 'run_at'
  | 'owner'
  | 'tenant'
  | 'started_at'
  | 'finished_at'
  | 'last_error'
  | 'cancel_requested'
> & { readonly list_sk: string };

/** Where a listing page ended: the index key of its last entry. */
export interface ListingPosition {
  readonly list_sk: string;
  readonly task_id: string;
}

export interface ListingRequest {
  readonly status: ListedStatus;
  readonly type?: string;
  readonly owner?: string;
  /** Index entries to read (before the filter), 1–100. */
  readonly limit: number;
  /** Continue after this entry. */
  readonly after?: ListingPosition;
}

export interface ListingPage {
  /** The entries read that match the filter, newest first. */
  readonly items: ListedTask[];
  /** Entries read (before the filter). */
  readonly read: number;
  /** Present when the index may hold more entries after these. */
  readonly last?: ListingPosition;
}

/** An entry of the outbox index, in its order (due time, then the index's order among equal times). */
export interface OutboxPosition {
  readonly outbox_due: number;
  readonly task_id: string;
}

/**
 * A read of one outbox partition, oldest due first: from a due time (`from`, inclusive or not),
 * or exactly after one entry (`after`, the index's own continuation), or from the start.
 */
export interface OutboxRangeRequest {
  readonly partition: string;
  readonly from?: { readonly due: number; readonly inclusive: boolean };
  readonly after?: OutboxPosition;
  /** Entries to read, 1–100. */
  readonly limit: number;
}

export interface OutboxRange {
  readonly entries: OutboxPosition[];
  /** True when the partition may hold more entries after these. */
  readonly more: boolean;
}

/** A delayed task's row: the listing's attributes read from the item, with its outbox entry. */
export type OutboxRow = Omit<ListedTask, 'list_sk'> & Pick<TaskRecord, 'outbox_pk' | 'outbox_due'>;

/**
 * Reads the sparse listing index: one request per call (a Query newest first, the filter applied
 * by the store). The paging and its budget are the domain's (`shared/task/listing.ts`).
 * The delayed view reads the outbox index (keys only) and then the rows of the entries it found.
 */
export interface TaskListingReader {
  listTasks(request: ListingRequest): Promise<ListingPage>;
  /** One Query of one outbox partition. */
  readOutbox(request: OutboxRangeRequest): Promise<OutboxRange>;
  /**
   * The listing attributes (and outbox entry) of these tasks, eventually consistent, in no
   * particular order; a task that no longer exists is absent. At most 100 ids.
   */
  readRows(taskIds: readonly string[]): Promise<OutboxRow[]>;
}
