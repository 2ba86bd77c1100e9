/**
 * DynamoDB capacity accounting with AWS's own rules, computed from item images rather than taken
 * from an emulator (dynalite reports table units only, and knows nothing of index writes).
 *
 * - Item size: attribute names + values, with DynamoDB's per-type overheads
 *   (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
 * - Writes: PutItem / UpdateItem consume ceil(larger of the item before and after / 1 KB), at least
 *   one unit; a write whose condition fails still consumes units — one if the item does not exist,
 *   else by the larger of the existing item and the one attempted
 *   (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html,
 *   WorkingWithItems.html#WorkingWithItems.ConditionalWrites.ReturnConsumedCapacity).
 * - Reads: ceil(size / 4 KB) units strongly consistent, half of that eventually consistent; a Query
 *   sums the sizes of what it returns (an index Query: the projected entries) before rounding, and
 *   GSI queries are eventually consistent; an empty result still costs the minimum.
 * - Global secondary indexes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html,
 *   "Write capacity units"): an item is in a (sparse) index only while it has every index key
 *   attribute. Absent → present: 1 put; present → absent: 1 delete; present → present with a key
 *   changed: delete + put (2); keys unchanged but a projected attribute changed: 1 update; else
 *   nothing. Each index write is sized by the projected entry (table key + index key + projected
 *   attributes), one unit per started KB.
 *
 * {@link AccountingTaskStore} applies them to every call of the `TaskStore` port it wraps (the
 * benches wrap the contract-tested fake, `testing/memory-task-store.ts`).
 *
 * @module
 */
import { ConditionFailedError, TaskAlreadyExistsError } from '../../shared/task/store-errors.js';
import type { OutboxEntry, ReadOptions, TaskChanges, TaskCondition, TaskStore } from '../../shared/task/task-store.js';
import type { TaskRecord } from '../../shared/task/model.js';

/** An item as the document client hands it over: plain JS values. */
export type Item = Readonly<Record<string, unknown>>;

export type Projection =
  | { readonly type: 'ALL' }
  | { readonly type: 'KEYS_ONLY' }
  | { readonly type: 'INCLUDE'; readonly nonKeyAttributes: readonly string[] };

export interface IndexModel {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly projection: Projection;
}

export interface TableModel {
  readonly partitionKey: string;
  readonly sortKey?: string;
  /** Global secondary indexes. */
  readonly indexes: readonly IndexModel[];
}

export const WRITE_UNIT_BYTES = 1024;
export const READ_UNIT_BYTES = 4096;

/** Size of one attribute value (its name not included). `undefined` is not stored: 0. */
export function valueSize(v: unknown): number {
  if (v === undefined || typeof v === 'function') return 0;
  if (v === null || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (typeof v === 'number' || typeof v === 'bigint') return numberSize(v);
  if (v instanceof Uint8Array) return v.byteLength;
  if (v instanceof Set) {
    let total = 0;
    for (const e of v) total += valueSize(e);
    return total;
  }
  if (Array.isArray(v)) {
    // List: 3 bytes, plus 1 byte per element; the document client drops undefined elements.
    let total = 3;
    for (const e of v) if (e !== undefined && typeof e !== 'function') total += 1 + valueSize(e);
    return total;
  }
  if (v instanceof Map) return valueSize(Object.fromEntries(v));
  if (typeof v === 'object') {
    // Map: 3 bytes, plus per element 1 byte, its name and its value.
    let total = 3;
    for (const [k, e] of Object.entries(v)) {
      if (e === undefined || typeof e === 'function') continue;
      total += 1 + Buffer.byteLength(k, 'utf8') + valueSize(e);
    }
    return total;
  }
  return 0;
}

/**
 * A number: about 1 byte per two significant digits, plus 1 (leading and trailing zeros trimmed).
 * "Approximately", the documentation says; this is its formula.
 */
export function numberSize(n: number | bigint): number {
  const text = typeof n === 'bigint' ? (n < 0n ? -n : n).toString() : Math.abs(n).toString();
  const mantissa = (text.split('e')[0] ?? '').replace('.', '');
  const significant = mantissa.replace(/^0+/, '').replace(/0+$/, '').length;
  return Math.ceil(Math.max(1, significant) / 2) + 1;
}

/** DynamoDB's size of an item: every attribute's UTF-8 name plus its value. Absent item: 0. */
export function itemSize(item: object | undefined): number {
  if (item === undefined) return 0;
  let total = 0;
  for (const [k, v] of Object.entries(item)) {
    if (v === undefined || typeof v === 'function') continue;
    total += Buffer.byteLength(k, 'utf8') + valueSize(v);
  }
  return total;
}

/** Write units for `bytes`: one per started KB, at least one. */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));
}

/** Read units for `bytes` read: one per started 4 KB (at least one), half of that eventually consistent. */
export function readUnits(bytes: number, consistent: boolean): number {
  const units = Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES));
  return consistent ? units : units / 2;
}

/** Read units of a GSI Query returning `totalBytes` of index entries (always eventually consistent). */
export function queryReadUnits(totalBytes: number): number {
  return readUnits(totalBytes, false);
}

/** Whether an item has an entry in a sparse index: only with every index key attribute present. */
export function isInIndex(item: object | undefined, index: IndexModel): boolean {
  if (item === undefined) return false;
  const present = (a: string): boolean => (item as Item)[a] !== undefined && (item as Item)[a] !== null;
  return present(index.partitionKey) && (index.sortKey === undefined || present(index.sortKey));
}

/** The index entry of an item: table key, index key, and the projected attributes. */
export function projectedItem(item: Item, table: TableModel, index: IndexModel): Item {
  if (index.projection.type === 'ALL') return item;
  const names = [table.partitionKey, table.sortKey, index.partitionKey, index.sortKey];
  if (index.projection.type === 'INCLUDE') names.push(...index.projection.nonKeyAttributes);
  const out: Record<string, unknown> = {};
  for (const n of names) if (n !== undefined && item[n] !== undefined) out[n] = item[n];
  return out;
}

/**
 * The bytes a Query of `index` reads to return `entries` (what the port hands over: the keys):
 * each entry as the index projects it, taken from the whole item (`load`) when the index projects
 * more than the keys.
 */
export async function queryBytes(
  entries: readonly object[],
  table: TableModel,
  index: IndexModel | undefined,
  load: (entry: Item) => Promise<Item | undefined>,
): Promise<number> {
  let bytes = 0;
  for (const entry of entries as Item[]) {
    const keysOnly = index === undefined || index.projection.type === 'KEYS_ONLY';
    const source = keysOnly ? entry : ((await load(entry)) ?? entry);
    bytes += itemSize(index === undefined ? source : projectedItem(source, table, index));
  }
  return bytes;
}

/** What a table write did to one index. */
export type IndexChange = 'none' | 'put' | 'delete' | 'move' | 'update';

export interface IndexWrite {
  readonly index: string;
  readonly change: IndexChange;
  /** Index write units consumed. */
  readonly units: number;
}

/** The index writes one successful table write causes, by AWS's GSI rules. */
export function indexWrite(
  before: Item | undefined,
  after: Item | undefined,
  table: TableModel,
  index: IndexModel,
): IndexWrite {
  const wasIn = isInIndex(before, index);
  const isIn = isInIndex(after, index);
  const entryUnits = (item: Item): number => writeUnits(itemSize(projectedItem(item, table, index)));
  const none: IndexWrite = { index: index.name, change: 'none', units: 0 };
  if (!wasIn && !isIn) return none;
  if (!wasIn && after !== undefined) return { index: index.name, change: 'put', units: entryUnits(after) };
  if (!isIn && before !== undefined) return { index: index.name, change: 'delete', units: entryUnits(before) };
  if (before === undefined || after === undefined) return none;
  const keys = [index.partitionKey, index.sortKey].filter((k): k is string => k !== undefined);
  if (keys.some((k) => !sameValue(before[k], after[k]))) {
    return { index: index.name, change: 'move', units: entryUnits(before) + entryUnits(after) };
  }
  const old = projectedItem(before, table, index);
  const now = projectedItem(after, table, index);
  if (sameValue(old, now)) return none;
  return {
    index: index.name,
    change: 'update',
    units: writeUnits(Math.max(itemSize(old), itemSize(now))),
  };
}

export interface WriteCost {
  readonly tableUnits: number;
  readonly index: readonly IndexWrite[];
  readonly indexUnits: number;
}

/** Units of a PutItem/UpdateItem that succeeded, turning `before` into `after`. */
export function successfulWriteCost(before: Item | undefined, after: Item, table: TableModel): WriteCost {
  const index = table.indexes.map((i) => indexWrite(before, after, table, i));
  return {
    tableUnits: writeUnits(Math.max(itemSize(before), itemSize(after))),
    index,
    indexUnits: index.reduce((s, w) => s + w.units, 0),
  };
}

/**
 * Units of a PutItem/UpdateItem whose condition failed: one if no item exists, else by the larger
 * of the existing item and the one attempted. Nothing is written to any index.
 */
export function failedWriteCost(existing: Item | undefined, attempted: Item | undefined): number {
  if (existing === undefined) return 1;
  return writeUnits(Math.max(itemSize(existing), itemSize(attempted)));
}

/**
 * The item `changes` turn `item` into, as the DynamoDB adapter's UpdateExpression does: `set`
 * (undefined values skipped, the key never rewritten), `add` (missing counts as 0), `append`
 * (missing list counts as empty), `remove`. Undefined members are dropped, as the document client
 * (`removeUndefinedValues`) drops them.
 */
export function applyChanges(item: Item, changes: TaskChanges, partitionKey: string): Record<string, unknown> {
  const next: Record<string, unknown> = { ...item };
  for (const [k, v] of Object.entries(changes.set ?? {})) if (v !== undefined && k !== partitionKey) next[k] = v;
  for (const [k, v] of Object.entries(changes.add ?? {})) {
    if (v !== undefined) next[k] = ((next[k] as number | undefined) ?? 0) + v;
  }
  for (const [k, v] of Object.entries(changes.append ?? {})) {
    if (v !== undefined) next[k] = [...((next[k] as unknown[] | undefined) ?? []), ...v];
  }
  for (const k of changes.remove ?? []) delete next[k];
  return withoutUndefined(next) as Record<string, unknown>;
}

/** A deep copy without undefined members or list elements (what the document client marshals). */
export function withoutUndefined(v: unknown): unknown {
  if (Array.isArray(v)) return v.filter((e) => e !== undefined).map(withoutUndefined);
  if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, e] of Object.entries(v)) if (e !== undefined) out[k] = withoutUndefined(e);
    return out;
  }
  return v;
}

/** Deep equality of stored values (attribute order does not matter in a map). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((e, i) => sameValue(e, b[i]));
  }
  const ka = Object.keys(a).filter((k) => (a as Item)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Item)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => sameValue((a as Item)[k], (b as Item)[k]));
}

/** One request to DynamoDB, as AWS would bill it. */
export interface DynamoOp {
  readonly api: 'PutItem' | 'UpdateItem' | 'GetItem' | 'Query';
  readonly taskId: string | undefined;
  /** The request succeeded (false: its condition failed, or it was rejected/unavailable). */
  readonly ok: boolean;
  readonly conditionFailed: boolean;
  readonly tableWru: number;
  readonly indexWru: number;
  readonly index: readonly IndexWrite[];
  readonly rru: number;
  /** Items a Query returned. */
  readonly items: number;
  /** What the request did, for the write log: `set a,b +c -d` or the condition that failed. */
  readonly label: string;
  /** Who made it (set by the caller of the bench: `api`, `consumer`, `sweeper`). */
  readonly tag: string;
}

const NOTHING = { ok: true, conditionFailed: false, tableWru: 0, indexWru: 0, index: [], rru: 0 } as const;

/** Every DynamoDB request made through an {@link AccountingTaskStore} (or `AccountingScheduleStore`). */
export class DynamoLedger {
  readonly ops: DynamoOp[] = [];
  /** Stamped on every op recorded from now on. */
  tag = 'untagged';

  record(op: Omit<DynamoOp, 'tag'>): void {
    this.ops.push({ ...op, tag: this.tag });
  }

  /** A GetItem that found `item` (or nothing). */
  read(key: string, item: object | undefined, consistent: boolean): void {
    this.record({
      ...NOTHING,
      api: 'GetItem',
      taskId: key,
      rru: readUnits(itemSize(item), consistent),
      items: item === undefined ? 0 : 1,
      label: consistent ? 'strongly consistent' : 'eventually consistent',
    });
  }

  /** An index Query that returned `items` entries of `bytes` in all. */
  query(label: string, items: number, bytes: number): void {
    this.record({ ...NOTHING, api: 'Query', taskId: undefined, rru: queryReadUnits(bytes), items, label });
  }

  /** A write that succeeded, turning `before` into `after`. */
  written(
    api: 'PutItem' | 'UpdateItem',
    key: string,
    before: Item | undefined,
    after: Item,
    table: TableModel,
    label: string,
  ): void {
    const c = successfulWriteCost(before, after, table);
    this.record({
      ...NOTHING,
      api,
      taskId: key,
      tableWru: c.tableUnits,
      indexWru: c.indexUnits,
      index: c.index,
      items: 1,
      label,
    });
  }

  /** A write that did not happen: its condition failed (`units` consumed), or it was rejected (0). */
  failed(api: 'PutItem' | 'UpdateItem', key: string, units: number, label: string, conditionFailed = true): void {
    this.record({ ...NOTHING, api, taskId: key, ok: false, conditionFailed, tableWru: units, items: 0, label });
  }
}

/** Requests, units and index writes of a run of ops, summed. */
export interface DynamoSummary {
  readonly requests: Readonly<Record<DynamoOp['api'], number>>;
  readonly rru: number;
  readonly rruByApi: Readonly<Record<DynamoOp['api'], number>>;
  readonly tableWru: number;
  readonly indexWru: number;
  readonly indexChanges: Readonly<Record<IndexChange, number>>;
  readonly conditionFailed: number;
}

export function summarize(ops: readonly DynamoOp[]): DynamoSummary {
  const requests = { PutItem: 0, UpdateItem: 0, GetItem: 0, Query: 0 };
  const rruByApi = { PutItem: 0, UpdateItem: 0, GetItem: 0, Query: 0 };
  const indexChanges = { none: 0, put: 0, delete: 0, move: 0, update: 0 };
  let rru = 0;
  let tableWru = 0;
  let indexWru = 0;
  let conditionFailed = 0;
  for (const o of ops) {
    requests[o.api] += 1;
    rruByApi[o.api] += o.rru;
    rru += o.rru;
    tableWru += o.tableWru;
    indexWru += o.indexWru;
    if (o.conditionFailed) conditionFailed += 1;
    for (const w of o.index) indexChanges[w.change] += 1;
  }
  return { requests, rru, rruByApi, tableWru, indexWru, indexChanges, conditionFailed };
}

/**
 * A `TaskStore` decorator that bills every call by AWS's rules ({@link DynamoLedger}). For each
 * write it reads the item before (a strongly consistent `get` on the inner store, not counted) and
 * takes the item after from the write's own result (or, for `create`, a read-back, not counted).
 */
export class AccountingTaskStore implements TaskStore {
  constructor(
    private readonly inner: TaskStore,
    private readonly table: TableModel,
    readonly ledger: DynamoLedger,
    /** The index `listOutboxDue` queries. */
    private readonly outboxIndex: string,
  ) {}

  async create(record: TaskRecord): Promise<void> {
    const taskId = record.task_id;
    const before = await this.peek(taskId);
    const attempted = withoutUndefined(record) as Item;
    try {
      await this.inner.create(record);
    } catch (err) {
      if (err instanceof TaskAlreadyExistsError) {
        const existing = (err.existing as Item | undefined) ?? before;
        this.ledger.failed('PutItem', taskId, failedWriteCost(existing, attempted), 'attribute_not_exists(pk) failed');
      } else {
        this.ledger.failed('PutItem', taskId, 0, `error: ${errorName(err)}`, false);
      }
      throw err;
    }
    const after = (await this.peek(taskId)) ?? attempted;
    this.ledger.written('PutItem', taskId, before, after, this.table, 'put new item');
  }

  async get(taskId: string, options: ReadOptions = {}): Promise<TaskRecord | undefined> {
    const consistent = options.consistent ?? true;
    const item = await this.inner.get(taskId, options);
    this.ledger.read(taskId, item, consistent);
    return item;
  }

  async update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord> {
    const before = await this.peek(taskId);
    let after: TaskRecord;
    try {
      after = await this.inner.update(taskId, changes, condition);
    } catch (err) {
      if (err instanceof ConditionFailedError) {
        const existing = (err.current as Item | undefined) ?? before;
        const attempted = existing === undefined ? undefined : applyChanges(existing, changes, this.table.partitionKey);
        const units = failedWriteCost(existing, attempted);
        this.ledger.failed('UpdateItem', taskId, units, `failed ${describeCondition(condition)}`);
      } else {
        this.ledger.failed('UpdateItem', taskId, 0, `error: ${errorName(err)}`, false);
      }
      throw err;
    }
    const label = describeChanges(changes);
    this.ledger.written('UpdateItem', taskId, before, after as unknown as Item, this.table, label);
    return after;
  }

  async listOutboxDue(partition: string, dueBy: number, limit: number): Promise<OutboxEntry[]> {
    const entries = await this.inner.listOutboxDue(partition, dueBy, limit);
    const index = this.table.indexes.find((i) => i.name === this.outboxIndex);
    const bytes = await queryBytes(entries, this.table, index, (e) => this.peek(String(e.task_id)));
    this.ledger.query(`${this.outboxIndex} ${partition}`, entries.length, bytes);
    return entries;
  }

  private async peek(taskId: string): Promise<Item | undefined> {
    return (await this.inner.get(taskId, { consistent: true })) as Item | undefined;
  }
}

function describeChanges(c: TaskChanges): string {
  const parts: string[] = [];
  const set = Object.entries(c.set ?? {})
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k);
  if (set.length > 0) parts.push(`set ${set.join(',')}`);
  const add = Object.keys(c.add ?? {});
  if (add.length > 0) parts.push(`+${add.join(',')}`);
  const append = Object.keys(c.append ?? {});
  if (append.length > 0) parts.push(`append ${append.join(',')}`);
  if ((c.remove ?? []).length > 0) parts.push(`-${(c.remove ?? []).join(',')}`);
  return parts.join(' ');
}

function describeCondition(c: TaskCondition): string {
  return Object.entries(c)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('|') : String(v)}`)
    .join(' ');
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : String(err);
}
