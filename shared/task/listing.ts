/**
 * The listing index (`TABLE_SCHEMA.listIndex`): which tasks it holds, and how it is read.
 *
 * Which: a task is listed while it is `retrying`, `failed` or `cancelled`, and while it runs past
 * its first heartbeat. The rule follows the status a write sets, so it is applied once, to every
 * update the lifecycle makes ({@link listedStore}); the heartbeat that writes a lazy claim adds
 * the `running` entry itself ({@link runningListing}). Each of those writes changes the task's
 * status anyway: a task that succeeds at its first attempt within one heartbeat period never
 * enters the index, and the others pay one index write per listed status they enter or leave.
 *
 * How: newest first within one status, filtered by owner and type, paged by an opaque cursor
 * that is signed (a tampered or foreign cursor is refused) and bound to the query it continues.
 *
 * Delayed tasks (`queued`, waiting in the table until SQS can hold the rest of their delay) are
 * not in this index: they are in the outbox index already, keys only, sharded. The `delayed` view
 * merges the outbox's `queue#…` partitions by due time (soonest first: the order they will be
 * sent), reads the rows of one page's entries, and keeps the `queued` ones — no write at all.
 *
 * @module
 */
import type {
  ListingPage,
  ListingPosition,
  ListedTask,
  OutboxPosition,
  OutboxRangeRequest,
  OutboxRow,
  TaskChanges,
  TaskListingReader,
  TaskStore,
} from './task-store.js';
import { CursorSigner } from './cursor.js';
import { InvalidCursorError, ValidationError } from './errors.js';
import {
  LISTED_STATUSES,
  type ListedStatus,
  type ListingView,
  outboxPartitions,
  TASK_ID_PATTERN,
  type TaskRecord,
  type TaskStatus,
} from './model.js';

const LISTED: readonly TaskStatus[] = LISTED_STATUSES;

/** When a listed row entered its status: the time part of its `list_sk`. */
export function listedAt(row: Pick<TaskRecord, 'list_sk'>): string {
  const sk = row.list_sk ?? '';
  return sk.slice(0, sk.lastIndexOf('#'));
}

/** The listing key of a task entering `status` at `atIso`. */
export function listingKey(
  status: ListedStatus,
  atIso: string,
  taskId: string,
): Pick<TaskRecord, 'list_pk' | 'list_sk'> {
  return { list_pk: status, list_sk: `${atIso}#${taskId}` };
}

/**
 * `changes` with the listing fields the status it sets implies: a listed status puts the task in
 * the index (at the write's `updated_at`), any other status takes it out. A write that sets no
 * status, or sets the listing fields itself, is left as it is. Removing absent fields is free:
 * DynamoDB writes an index only for items in it before or after the write.
 */
export function withListing(taskId: string, changes: TaskChanges, now: number): TaskChanges {
  const status = changes.set?.status;
  if (status === undefined || changes.set?.list_pk !== undefined) return changes;
  if (LISTED.includes(status) && status !== 'running') {
    const at = changes.set?.updated_at ?? new Date(now).toISOString();
    return { ...changes, set: { ...changes.set, ...listingKey(status as ListedStatus, at, taskId) } };
  }
  const remove = changes.remove ?? [];
  return {
    ...changes,
    remove: [...remove, ...(['list_pk', 'list_sk'] as const).filter((k) => !remove.includes(k))],
  };
}

/**
 * The listing fields of a running task's heartbeat: the `running` entry when the task is not in
 * the index yet (its first heartbeat), nothing after that (the entry stays where it is, so later
 * heartbeats write no index).
 */
export function runningListing(record: TaskRecord, now: number): Partial<Pick<TaskRecord, 'list_pk' | 'list_sk'>> {
  if (record.list_pk === 'running') return {};
  return listingKey('running', record.started_at ?? new Date(now).toISOString(), record.task_id);
}

/** The store the lifecycle writes through: every update gets the listing fields its status implies. */
export function listedStore(store: TaskStore, clock: { now(): number }): TaskStore {
  return {
    create: (record) => store.create(record),
    get: (taskId, options) => store.get(taskId, options),
    update: (taskId, changes, condition) => store.update(taskId, withListing(taskId, changes, clock.now()), condition),
    listOutboxDue: (partition, dueBy, limit) => store.listOutboxDue(partition, dueBy, limit),
  };
}

/** A listing query: one status, optionally one type; `owner` restricts it to one owner's tasks. */
export interface ListingQuery {
  /** A listed status (newest first), or `delayed` (soonest due first). */
  readonly status: ListingView;
  readonly type?: string;
  readonly owner?: string;
  /** Rows per page (1–100). */
  readonly limit: number;
  readonly cursor?: string;
}

export interface ListingResult {
  readonly items: readonly ListedTask[];
  /** Present when more may follow: pass it back as `cursor` for the next page. */
  readonly cursor?: string;
}

export const MAX_LIST_LIMIT = 100;
/**
 * Index entries one page reads at most. A filter (type, owner) is applied by DynamoDB after
 * the read, so a rare type among many entries is found over several pages: each page answers
 * within this budget, with a cursor, instead of reading the whole status.
 */
export const LIST_READ_BUDGET = 1_000;

/** The outbox partitions that hold queue sends (delayed tasks, and retries owed a send), in merge order. */
const QUEUE_PARTITIONS: readonly string[] = outboxPartitions().filter((p) => p.startsWith('queue#'));

/** Where a delayed listing stopped: the merge order is (due, partition, the partition's own order). */
interface DelayedPosition {
  readonly due: number;
  readonly partition: number;
  readonly task_id: string;
}

/** One queue partition during a delayed listing: the entries read and not yet taken, and where to read on. */
interface PartitionHead {
  readonly partition: string;
  readonly index: number;
  readonly entries: OutboxPosition[];
  next: Pick<OutboxRangeRequest, 'from' | 'after'>;
  more: boolean;
}

/**
 * Reads the listing index. The cursor is signed (`shared/task/cursor.ts`): the position (the last
 * row's key) bound to the query it continues (status, type, owner).
 */
export class TaskListing {
  private readonly cursors: CursorSigner;

  constructor(
    private readonly reader: TaskListingReader,
    cursorKey: string,
  ) {
    this.cursors = new CursorSigner(cursorKey, 'kaj-list-cursor');
  }

  /** @throws ValidationError (field `cursor` or `limit`), StoreUnavailableError */
  async list(query: ListingQuery): Promise<ListingResult> {
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_LIST_LIMIT) {
      throw new ValidationError('limit', `limit: must be an integer from 1 to ${MAX_LIST_LIMIT}`);
    }
    if (query.status === 'delayed') return this.listDelayed(query);
    let after = query.cursor === undefined ? undefined : this.decodePosition(query.cursor, query);
    const items: ListedTask[] = [];
    let read = 0;
    for (;;) {
      const want = query.limit - items.length;
      const page: ListingPage = await this.reader.listTasks({
        status: query.status,
        ...(query.type === undefined ? {} : { type: query.type }),
        ...(query.owner === undefined ? {} : { owner: query.owner }),
        // Without a filter every entry read is a row; with one, read more per request.
        limit: query.type === undefined && query.owner === undefined ? want : Math.min(LIST_READ_BUDGET - read, 100),
        ...(after === undefined ? {} : { after }),
      });
      read += page.read;
      for (const item of page.items) {
        if (items.length === query.limit) break;
        items.push(item);
      }
      if (items.length === query.limit) {
        const last = items[items.length - 1] as ListedTask;
        // A full page: continue after its last row (unless the index had nothing after it).
        const more = page.last !== undefined || page.items.length > want;
        return more
          ? { items, cursor: this.encode({ list_sk: last.list_sk, task_id: last.task_id }, query) }
          : { items };
      }
      if (page.last === undefined) return { items };
      after = page.last;
      if (read >= LIST_READ_BUDGET) return { items, cursor: this.encode(after, query) };
    }
  }

  /**
   * The delayed view: a merge of every queue partition by due time, from the cursor on. Each
   * partition's entries are read into a buffer of their own (up to the rows still wanted) and
   * read again only when that buffer runs dry, so an entry is read once per call however many
   * rows the filters pass over. The rows of the entries taken are read with one BatchGetItem: an
   * entry whose task is no longer `queued` (claimed, cancelled; or a retry, which
   * `status=retrying` lists) or not the caller's, or not of the type, is passed over.
   */
  private async listDelayed(query: ListingQuery): Promise<ListingResult> {
    const from = query.cursor === undefined ? undefined : this.decodeDelayed(query.cursor, query);
    const heads: PartitionHead[] = QUEUE_PARTITIONS.map((partition, index) => ({
      partition,
      index,
      entries: [],
      next: rangeFrom(from, index),
      more: true,
    }));
    const items: ListedTask[] = [];
    let read = 0;
    for (;;) {
      const taken = await this.takeDelayed(heads, Math.min(query.limit - items.length, LIST_READ_BUDGET - read));
      if (taken.length === 0) return { items };
      read += taken.length;
      const rows = new Map((await this.reader.readRows(taken.map((t) => t.task_id))).map((r) => [r.task_id, r]));
      for (const t of taken) {
        const row = rows.get(t.task_id);
        if (row !== undefined && isDelayedRow(row, query)) items.push(delayedRow(row));
      }
      if (!heads.some((h) => h.entries.length > 0 || h.more)) return { items };
      const last = taken[taken.length - 1] as DelayedPosition;
      if (items.length === query.limit || read >= LIST_READ_BUDGET) return { items, cursor: this.encode(last, query) };
    }
  }

  /**
   * The next `want` entries in merge order (due time, partition, the partition's own order),
   * reading a partition again only when its buffer is empty and the index may hold more.
   */
  private async takeDelayed(heads: PartitionHead[], want: number): Promise<DelayedPosition[]> {
    const taken: DelayedPosition[] = [];
    while (taken.length < want) {
      const dry = heads.filter((h) => h.entries.length === 0 && h.more);
      await Promise.all(dry.map((h) => this.refill(h, want - taken.length)));
      let best: PartitionHead | undefined;
      for (const h of heads) {
        const head = h.entries[0];
        // Strictly earlier only: among equal due times the lower partition comes first.
        if (
          head !== undefined &&
          (best === undefined || head.outbox_due < (best.entries[0] as OutboxPosition).outbox_due)
        )
          best = h;
      }
      if (best === undefined) break;
      const e = best.entries.shift() as OutboxPosition;
      taken.push({ due: e.outbox_due, partition: best.index, task_id: e.task_id });
    }
    return taken;
  }

  private async refill(h: PartitionHead, limit: number): Promise<void> {
    const range = await this.reader.readOutbox({ partition: h.partition, limit, ...h.next });
    h.entries.push(...range.entries);
    const last = range.entries[range.entries.length - 1];
    if (last !== undefined) h.next = { after: last };
    h.more = range.more && last !== undefined;
  }

  private encode(position: ListingPosition | DelayedPosition, query: ListingQuery): string {
    const parts =
      'list_sk' in position
        ? [position.list_sk, position.task_id]
        : [position.due, position.partition, position.task_id];
    return this.cursors.encode(parts, scopeOf(query));
  }

  /** The key of the row a page ended at: `<ISO time>#<task id>`, as {@link listingKey} writes it. */
  private decodePosition(cursor: string, query: ListingQuery): ListingPosition {
    const [sk, taskId, ...rest] = this.cursors.decode(cursor, scopeOf(query));
    if (
      typeof sk !== 'string' ||
      typeof taskId !== 'string' ||
      rest.length > 0 ||
      !TASK_ID_PATTERN.test(taskId) ||
      !isIsoTime(sk.slice(0, -(taskId.length + 1))) ||
      !sk.endsWith(`#${taskId}`)
    )
      throw new InvalidCursorError();
    return { list_sk: sk, task_id: taskId };
  }

  /** Where a delayed listing stopped: a due time (epoch ms), a queue partition and a task id. */
  private decodeDelayed(cursor: string, query: ListingQuery): DelayedPosition {
    const [due, partition, taskId, ...rest] = this.cursors.decode(cursor, scopeOf(query));
    if (
      !Number.isSafeInteger(due) ||
      (due as number) < 0 ||
      !Number.isSafeInteger(partition) ||
      (partition as number) < 0 ||
      (partition as number) >= QUEUE_PARTITIONS.length ||
      typeof taskId !== 'string' ||
      !TASK_ID_PATTERN.test(taskId) ||
      rest.length > 0
    )
      throw new InvalidCursorError();
    return { due: due as number, partition: partition as number, task_id: taskId };
  }
}

/** What a listing cursor is bound to: the query it continues. */
function scopeOf(query: ListingQuery): string[] {
  return [query.status, query.type ?? '', query.owner ?? ''];
}

/** An instant as `Date.toISOString()` writes it (what every listing key starts with). */
function isIsoTime(s: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(s) && !Number.isNaN(Date.parse(s));
}

/**
 * Where partition `index` continues after `at` in the merge order (due, partition, the
 * partition's order): the partitions before `at`'s take what is due later than it, its own
 * partition continues exactly after it, the partitions after it take what is due at or after it.
 */
function rangeFrom(at: DelayedPosition | undefined, index: number): Pick<OutboxRangeRequest, 'from' | 'after'> {
  if (at === undefined) return {};
  if (index === at.partition) return { after: { outbox_due: at.due, task_id: at.task_id } };
  return { from: { due: at.due, inclusive: index > at.partition } };
}

function isDelayedRow(row: OutboxRow, query: ListingQuery): boolean {
  return (
    row.status === 'queued' &&
    row.outbox_pk?.startsWith('queue#') === true &&
    (query.type === undefined || row.type === query.type) &&
    (query.owner === undefined || row.owner === query.owner)
  );
}

/** A delayed task as a listing row: it has been waiting since it was submitted (or last moved). */
function delayedRow(row: OutboxRow): ListedTask {
  const { outbox_pk: _pk, outbox_due: _due, ...rest } = row;
  return { ...rest, list_sk: `${row.updated_at}#${row.task_id}` };
}

/** True when the store can read the listing index (DynamoDB, the test fakes; not every bench store). */
export function isListingReader(store: TaskStore): store is TaskStore & TaskListingReader {
  return typeof (store as Partial<TaskListingReader>).listTasks === 'function';
}

/** The listing over `store`, when it has the index; cursors signed under `cursorKey`. */
export function listingOf(store: TaskStore, cursorKey: string): TaskListing | undefined {
  return isListingReader(store) ? new TaskListing(store, `${cursorKey}\nlisting`) : undefined;
}

/** `{ listing }` for the API's dependencies, or nothing when the store has no index or no key is given. */
export function listingField(store: TaskStore, cursorKey: string | undefined): { listing?: TaskListing } {
  const listing = cursorKey === undefined ? undefined : listingOf(store, cursorKey);
  return listing === undefined ? {} : { listing };
}
