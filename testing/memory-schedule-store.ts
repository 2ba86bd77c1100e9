import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { ScheduleRecord } from '../shared/schedule/model.js';
import { OwnerScheduleLimitError, ScheduleVersionConflictError } from '../shared/schedule/store-errors.js';
import { StoreRejectedError } from '../shared/task/store-errors.js';
import type {
  OwnerSlot,
  ScheduleDueEntry,
  SchedulePage,
  ScheduleReadOptions,
  ScheduleStore,
} from '../shared/schedule/schedule-store.js';

type Operation = 'get' | 'put' | 'delete' | 'listDue' | 'list';

/** As the adapter marshals records (`dynamo-schedule-store.ts`). */
const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/** A position in a listing: the last item's key attributes, as DynamoDB's `LastEvaluatedKey`. */
interface Position {
  readonly name: string;
  readonly due_at?: number;
}

/**
 * The ScheduleStore contract in memory, for unit tests of the scheduler. It behaves as
 * `DynamoScheduleStore` on DynamoDB does, and `test/contract/` proves it on the same suite:
 * - a record is stored as the adapter marshals it (`@aws-sdk/util-dynamodb` with the same
 *   options: `undefined` members dropped, `-0` stored as 0); a value it cannot marshal (NaN, an
 *   unsafe integer, a class instance) or a due index key of the wrong type is a `StoreRejectedError`;
 * - `put` / `delete` hold only if the stored record is at the expected version (`'absent'`: none
 *   is stored); otherwise a `ScheduleVersionConflictError` carrying a copy of the stored record;
 * - a `put` with a slot also needs the owner's count below the slot's max (the version is checked
 *   first), else an `OwnerScheduleLimitError`; the count and the record change together or not at
 *   all, as in the adapter's transaction; a `delete` with `releaseOwner` takes one from the count;
 * - `listDue` reads the sparse `due` index: records with both `due_pk` and `due_at`, earliest
 *   first (ties by name); `list` goes by name. As DynamoDB, a full page always carries a cursor
 *   (the next page may be empty), the cursor is the last item's key (so a page resumes after it
 *   whatever changed meanwhile), and a limit below 1 or a cursor no page gave is a `StoreRejectedError`.
 * Everything handed in or out is a copy.
 */
export class MemoryScheduleStore implements ScheduleStore {
  readonly items = new Map<string, ScheduleRecord>();
  /** Each owner's count of schedules (counted creates minus counted deletes). */
  readonly owners = new Map<string, number>();
  /** Make the next call of an operation throw. */
  failNext: Partial<Record<Operation, Error>> = {};
  /** Runs before each put / delete is decided (to inject a concurrent change or a failure). */
  beforeWrite: ((name: string, expectedVersion: number | 'absent') => void | Promise<void>) | undefined;
  /** Successful puts and deletes so far. */
  writes = 0;
  /** Reads made so far, by consistency. */
  reads = { consistent: 0, eventual: 0 };

  async get(name: string, options: ScheduleReadOptions = {}): Promise<ScheduleRecord | undefined> {
    if (options.consistent === false) this.reads.eventual += 1;
    else this.reads.consistent += 1;
    this.maybeFail('get');
    const r = this.items.get(name);
    return r && structuredClone(r);
  }

  async put(record: ScheduleRecord, expectedVersion: number | 'absent', slot?: OwnerSlot): Promise<void> {
    this.maybeFail('put');
    const item = storable(record);
    await this.beforeWrite?.(record.name, expectedVersion);
    this.check(record.name, expectedVersion);
    if (slot !== undefined) {
      const count = this.owners.get(slot.owner) ?? 0;
      if (count >= slot.max) throw new OwnerScheduleLimitError(record.name, slot.owner, slot.max);
      this.owners.set(slot.owner, count + 1);
    }
    this.items.set(record.name, item);
    this.writes += 1;
  }

  async delete(name: string, expectedVersion: number, releaseOwner?: string): Promise<void> {
    this.maybeFail('delete');
    await this.beforeWrite?.(name, expectedVersion);
    this.check(name, expectedVersion);
    if (releaseOwner !== undefined) this.owners.set(releaseOwner, (this.owners.get(releaseOwner) ?? 0) - 1);
    this.items.delete(name);
    this.writes += 1;
  }

  async listDue(
    partition: string,
    dueBy: number,
    limit: number,
    cursor?: string,
  ): Promise<SchedulePage<ScheduleDueEntry>> {
    this.maybeFail('listDue');
    checkLimit(limit, 'Query');
    const after =
      cursor === undefined
        ? undefined
        : positionOf(cursor, 'Query', (k) => Object.keys(k).length === 3 && k.due_pk === partition);
    const entries = [...this.items.values()]
      .filter((r) => r.due_pk === partition && typeof r.due_at === 'number' && r.due_at <= dueBy)
      .sort(byDue)
      .filter((r) => after === undefined || byDue(r, after) > 0);
    // Only the keys are copied out (the index projects nothing else).
    const keys = entries.map((r) => ({ name: r.name, due_pk: r.due_pk as string, due_at: r.due_at as number }));
    return page(keys, limit, (k) => k);
  }

  async list(limit: number, cursor?: string): Promise<SchedulePage> {
    this.maybeFail('list');
    checkLimit(limit, 'Scan');
    const after = cursor === undefined ? undefined : positionOf(cursor, 'Scan', (k) => Object.keys(k).length === 1);
    const entries = [...this.items.values()]
      .sort((a, b) => compare(a.name, b.name))
      .filter((r) => after === undefined || r.name > after.name);
    return page(entries, limit, (r) => ({ name: r.name }));
  }

  private check(name: string, expected: number | 'absent'): void {
    const current = this.items.get(name);
    const holds = expected === 'absent' ? current === undefined : current?.version === expected;
    if (!holds) throw new ScheduleVersionConflictError(name, current && structuredClone(current));
  }

  private maybeFail(op: Operation): void {
    const err = this.failNext[op];
    if (err) {
      delete this.failNext[op];
      throw err;
    }
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Index order: `due_at`, then (DynamoDB: in an order of its own) the table key. */
function byDue(a: Position, b: Position): number {
  return (a.due_at ?? 0) - (b.due_at ?? 0) || compare(a.name, b.name);
}

function page<T extends object>(
  entries: T[],
  limit: number,
  keyOf: (r: T) => Record<string, unknown>,
): SchedulePage<T> {
  const items = entries.slice(0, limit).map((r) => structuredClone(r));
  const last = items.at(-1);
  // As DynamoDB: a page that reached the limit has a LastEvaluatedKey, whether or not more follow.
  if (items.length < limit || last === undefined) return { items };
  return { items, cursor: Buffer.from(JSON.stringify(keyOf(last)), 'utf8').toString('base64url') };
}

/** Where a cursor resumes; a StoreRejectedError for anything no page of this listing gave. */
function positionOf(cursor: string, operation: string, fits: (key: Record<string, unknown>) => boolean): Position {
  const invalid = (): never => reject(operation, 'The provided starting key is invalid');
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return invalid();
  }
  if (typeof key !== 'object' || key === null || Array.isArray(key)) return invalid();
  const k = key as Record<string, unknown>;
  // As DynamoDBScheduleStore: no key is empty or over 1,024 bytes.
  if (typeof k.name !== 'string' || k.name === '' || Buffer.byteLength(k.name) > 1024 || !fits(k)) return invalid();
  if (operation === 'Query' && typeof k.due_at !== 'number') return invalid();
  return typeof k.due_at === 'number' ? { name: k.name, due_at: k.due_at } : { name: k.name };
}

function checkLimit(limit: number, operation: string): void {
  if (!Number.isInteger(limit) || limit < 1) reject(operation, `limit must be an integer >= 1, got ${limit}`);
}

function reject(operation: string, why: string): never {
  throw new StoreRejectedError(`memory store ${operation} rejected: ValidationException: ${why}`);
}

/** The record as the adapter would store it and read it back, or a StoreRejectedError. */
function storable(record: ScheduleRecord): ScheduleRecord {
  let item: ScheduleRecord;
  try {
    item = unmarshall(marshall(record, MARSHALL)) as ScheduleRecord;
  } catch (err) {
    throw new StoreRejectedError(`memory store PutItem rejected: ${err instanceof Error ? err.message : err}`, {
      cause: err,
    });
  }
  const { due_pk, due_at } = item as { due_pk?: unknown; due_at?: unknown };
  if ((due_pk !== undefined && typeof due_pk !== 'string') || (due_at !== undefined && typeof due_at !== 'number')) {
    reject('PutItem', 'One or more parameter values were invalid: Type mismatch for Index Key');
  }
  if (due_pk === '') {
    reject(
      'PutItem',
      'One or more parameter values are not valid. A value specified for a secondary index key is empty',
    );
  }
  return item;
}
