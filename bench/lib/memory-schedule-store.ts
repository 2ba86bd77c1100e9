/**
 * A minimal in-memory `ScheduleStore` for the scheduler benchmark (`bench/schedules.ts`), beside
 * the contract-tested fake (`testing/memory-schedule-store.ts`). It keeps the port's contract as
 * `shared/schedule/schedule-store.ts` documents it and `DynamoScheduleStore` implements it, and is
 * built to cost next to nothing itself, so that a timed tick over it measures Kaj's code:
 * - an item is stored as the document client would marshal the record (undefined members dropped);
 * - `put` / `delete` hold only if the stored record is at the expected version (`'absent'`: none
 *   is stored), else a `ScheduleVersionConflictError` carrying a copy of the stored record (ALL_OLD);
 * - `listDue` reads the sparse `due` index, kept per partition (an item is in it only with both
 *   index keys), earliest first and then by name, as the index projects it (keys only); as
 *   DynamoDB, a page that reaches the limit carries a cursor (the next page may be empty), and the
 *   cursor is the last entry's key, so a page resumes after it whatever changed meanwhile;
 * - `list` goes by name, a page at a time.
 *
 * @module
 */
import { SCHEDULE_TABLE_SCHEMA } from '../../shared/config/resources.js';
import type { ScheduleRecord } from '../../shared/schedule/model.js';
import { ScheduleVersionConflictError } from '../../shared/schedule/store-errors.js';
import { StoreRejectedError } from '../../shared/task/store-errors.js';
import type {
  ScheduleDueEntry,
  SchedulePage,
  ScheduleReadOptions,
  ScheduleStore,
} from '../../shared/schedule/schedule-store.js';
import { withoutUndefined } from './dynamo-accounting.js';

type StoredItem = Record<string, unknown>;

const DUE = SCHEDULE_TABLE_SCHEMA.dueIndex;

export class BenchScheduleStore implements ScheduleStore {
  /** The items as stored (the document client's image of each record). */
  readonly items = new Map<string, StoredItem>();
  /** The `due` index: partition → name → due_at. */
  private readonly due = new Map<string, Map<string, number>>();

  /** A store holding copies of `records` (as stored), without going through `put`. */
  static of(records: Iterable<ScheduleRecord | StoredItem>): BenchScheduleStore {
    const store = new BenchScheduleStore();
    for (const r of records) store.store(withoutUndefined(r) as StoredItem);
    return store;
  }

  async get(name: string, _options?: ScheduleReadOptions): Promise<ScheduleRecord | undefined> {
    const item = this.items.get(name);
    return item === undefined ? undefined : copy(item);
  }

  async put(record: ScheduleRecord, expectedVersion: number | 'absent'): Promise<void> {
    this.check(record.name, expectedVersion);
    this.store(withoutUndefined(record) as StoredItem);
  }

  async delete(name: string, expectedVersion: number): Promise<void> {
    this.check(name, expectedVersion);
    this.unindex(name);
    this.items.delete(name);
  }

  async listDue(
    partition: string,
    dueBy: number,
    limit: number,
    cursor?: string,
  ): Promise<SchedulePage<ScheduleDueEntry>> {
    checkLimit(limit);
    const after = cursor === undefined ? undefined : positionOf(cursor, partition);
    const entries: ScheduleDueEntry[] = [];
    for (const [name, due_at] of this.due.get(partition) ?? []) {
      if (due_at > dueBy) continue;
      if (after !== undefined && byDue({ name, due_at }, after) <= 0) continue;
      entries.push({ name, due_pk: partition, due_at });
    }
    entries.sort(byDue);
    const items = entries.slice(0, limit);
    const last = items.at(-1);
    if (items.length < limit || last === undefined) return { items };
    return { items, cursor: cursorOf(last) };
  }

  async list(limit: number, cursor?: string): Promise<SchedulePage> {
    checkLimit(limit);
    const after = cursor === undefined ? undefined : Buffer.from(cursor, 'base64url').toString('utf8');
    const names = [...this.items.keys()].filter((n) => after === undefined || n > after).sort();
    const page = names.slice(0, limit);
    const items = page.map((n) => copy(this.items.get(n) as StoredItem));
    const last = page.at(-1);
    if (page.length < limit || last === undefined) return { items };
    return { items, cursor: Buffer.from(last, 'utf8').toString('base64url') };
  }

  private check(name: string, expected: number | 'absent'): void {
    const current = this.items.get(name);
    const holds = expected === 'absent' ? current === undefined : current?.version === expected;
    if (!holds) throw new ScheduleVersionConflictError(name, current === undefined ? undefined : copy(current));
  }

  private store(item: StoredItem): void {
    const name = item[SCHEDULE_TABLE_SCHEMA.partitionKey];
    if (typeof name !== 'string') throw new StoreRejectedError('bench schedule store: an item without its name');
    this.unindex(name);
    this.items.set(name, item);
    const pk = item[DUE.partitionKey];
    const at = item[DUE.sortKey];
    if (pk === undefined && at === undefined) return;
    if (typeof pk !== 'string' || pk === '' || typeof at !== 'number') {
      throw new StoreRejectedError('bench schedule store: Type mismatch for Index Key');
    }
    let partition = this.due.get(pk);
    if (partition === undefined) {
      partition = new Map();
      this.due.set(pk, partition);
    }
    partition.set(name, at);
  }

  private unindex(name: string): void {
    const pk = this.items.get(name)?.[DUE.partitionKey];
    if (typeof pk === 'string') this.due.get(pk)?.delete(name);
  }
}

interface Position {
  readonly name: string;
  readonly due_at: number;
}

/** Index order: `due_at`, then the table key. */
function byDue(a: Position, b: Position): number {
  return a.due_at - b.due_at || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

function cursorOf(entry: ScheduleDueEntry): string {
  return Buffer.from(JSON.stringify(entry), 'utf8').toString('base64url');
}

function positionOf(cursor: string, partition: string): Position {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch (err) {
    throw new StoreRejectedError('bench schedule store: the cursor is not one this store gave', { cause: err });
  }
  const k = key as Partial<ScheduleDueEntry> | null;
  if (k === null || typeof k.name !== 'string' || typeof k.due_at !== 'number' || k.due_pk !== partition) {
    throw new StoreRejectedError('bench schedule store: the cursor is not one this store gave');
  }
  return { name: k.name, due_at: k.due_at };
}

function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new StoreRejectedError(`bench schedule store: limit must be an integer >= 1, got ${limit}`);
  }
}

function copy(item: StoredItem): ScheduleRecord {
  return structuredClone(item) as unknown as ScheduleRecord;
}
