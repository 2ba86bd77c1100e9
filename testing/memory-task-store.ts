import { ConditionFailedError, StoreRejectedError, TaskAlreadyExistsError } from '../shared/task/store-errors.js';
import { TABLE_SCHEMA } from '../shared/config/resources.js';
import type {
  ListedTask,
  ListingPage,
  ListingRequest,
  OutboxEntry,
  OutboxRange,
  OutboxRangeRequest,
  OutboxRow,
  ReadOptions,
  TaskChanges,
  TaskCondition,
  TaskListingReader,
  TaskStore,
} from '../shared/task/task-store.js';
import type { TaskRecord } from '../shared/task/model.js';

export interface MemoryTaskStoreOptions {
  /**
   * Whether a failed condition's `ConditionFailedError.current` carries the item as stored.
   * DynamoDB (and moto) return it (`ReturnValuesOnConditionCheckFailure: ALL_OLD`); dynalite, which
   * `npm start` runs on, ignores that option, so the adapter's error has no item there and callers
   * must fall back to a `get` (`err.current ?? store.get(id)`). `false` behaves like dynalite, to
   * test that fallback. @default true
   */
  readonly conditionFailureReturnsItem?: boolean;
}

/** DynamoDB's item size limit (400 KB). */
const MAX_ITEM_BYTES = 400 * 1024;
/** DynamoDB's smallest non-zero magnitude. */
const MIN_MAGNITUDE = 1e-130;
const PK = 'task_id';

/**
 * The TaskStore contract in memory, for unit tests of domain logic. It behaves as
 * `DynamoTaskStore` on DynamoDB does, and `test/contract/` proves it on the same suite:
 * - conditions are evaluated as the adapter's ConditionExpression is; a missing item fails every
 *   condition, and `update` never creates an item;
 * - values are stored as the document client marshals them: `undefined` members and list
 *   elements dropped, `-0` stored as 0, a `Map` as a map; a value it cannot marshal (NaN,
 *   ±Infinity, an integer beyond ±(2^53−1), a class instance such as a Date) or that DynamoDB
 *   refuses (a number below 1e-130 in magnitude, an item over 400 KB) is a `StoreRejectedError`;
 * - an update that names one attribute twice (SET and REMOVE, SET and ADD, ...) or removes the
 *   key is a `StoreRejectedError` (DynamoDB: "Two document paths overlap", "part of the key"),
 *   checked before the condition; `set.task_id` is ignored; an update with no change left is a
 *   `RangeError`; an `add`/`append` whose value is undefined changes nothing, as such a `set` does;
 * - `listOutboxDue` and `readOutbox` read the sparse outbox index: items with both `outbox_pk`
 *   and a numeric `outbox_due`, ordered by due time and then by task id (as a DynamoDB index
 *   orders entries with equal keys: by the table key); a limit below 1 is a `StoreRejectedError`;
 * - `readRows` reads the listing attributes of up to 100 items (more is a `StoreRejectedError`).
 * Everything handed in or out is a copy.
 */
export class MemoryTaskStore implements TaskStore, TaskListingReader {
  readonly items = new Map<string, TaskRecord>();
  /** Make the next call(s) of an operation throw. */
  failNext: Partial<
    Record<'create' | 'get' | 'update' | 'listOutboxDue' | 'listTasks' | 'readOutbox' | 'readRows', Error>
  > = {};
  /** Updates applied so far. */
  updates = 0;
  /** Runs before each update (to inject a concurrent change or a failure). */
  beforeUpdate: ((taskId: string, changes: TaskChanges) => void | Promise<void>) | undefined;
  private readonly conditionFailureReturnsItem: boolean;

  constructor(options: MemoryTaskStoreOptions = {}) {
    this.conditionFailureReturnsItem = options.conditionFailureReturnsItem ?? true;
  }

  async create(record: TaskRecord): Promise<void> {
    this.maybeFail('create');
    const item = storableItem(record, 'PutItem', record.task_id);
    const existing = this.items.get(record.task_id);
    // The adapter reads the existing item back when the error does not carry it: always there.
    if (existing) throw new TaskAlreadyExistsError(record.task_id, clone(existing));
    this.items.set(record.task_id, item);
  }

  /** Reads made so far, by consistency (the cancel poll uses eventually consistent reads). */
  reads = { consistent: 0, eventual: 0 };

  async get(taskId: string, options: ReadOptions = {}): Promise<TaskRecord | undefined> {
    if (options.consistent === false) this.reads.eventual += 1;
    else this.reads.consistent += 1;
    this.maybeFail('get');
    const r = this.items.get(taskId);
    return r && clone(r);
  }

  async update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord> {
    this.maybeFail('update');
    await this.beforeUpdate?.(taskId, changes);
    const actions = planUpdate(taskId, changes);
    const current = this.items.get(taskId);
    if (!current || !holds(current, condition)) {
      throw new ConditionFailedError(taskId, current && this.conditionFailureReturnsItem ? clone(current) : undefined);
    }
    const item = storableItem(applyUpdate(current, actions), 'UpdateItem', taskId);
    this.items.set(taskId, item);
    this.updates += 1;
    return clone(item);
  }

  async listOutboxDue(partition: string, dueBy: number, limit: number): Promise<OutboxEntry[]> {
    this.maybeFail('listOutboxDue');
    if (!Number.isInteger(limit) || limit < 1) {
      throw new StoreRejectedError(
        `memory store Query rejected: ValidationException: limit must be an integer >= 1, got ${limit}`,
      );
    }
    return [...this.items.values()]
      .filter((r) => r.outbox_pk === partition && typeof r.outbox_due === 'number' && r.outbox_due <= dueBy)
      .sort((a, b) => (a.outbox_due as number) - (b.outbox_due as number))
      .slice(0, limit)
      .map((r) => ({ task_id: r.task_id, outbox_pk: r.outbox_pk, outbox_due: r.outbox_due }));
  }

  /** The listing index: items with string `list_pk` and `list_sk`, newest first, the projected attributes only. */
  async listTasks(request: ListingRequest): Promise<ListingPage> {
    this.maybeFail('listTasks');
    if (!Number.isInteger(request.limit) || request.limit < 1) {
      throw new StoreRejectedError(
        `memory store Query rejected: ValidationException: limit must be >= 1, got ${request.limit}`,
      );
    }
    const after = request.after;
    const entries = [...this.items.values()]
      .filter((r) => r.list_pk === request.status && typeof r.list_sk === 'string')
      .sort((a, b) => ((a.list_sk as string) < (b.list_sk as string) ? 1 : -1))
      .filter((r) => after === undefined || (r.list_sk as string) < after.list_sk);
    const read = entries.slice(0, request.limit);
    const lastRead = read[read.length - 1];
    const items = read
      .filter(
        (r) =>
          (request.type === undefined || r.type === request.type) &&
          (request.owner === undefined || r.owner === request.owner),
      )
      .map((r) => {
        const row: Record<string, unknown> = { task_id: r.task_id, list_sk: r.list_sk };
        for (const k of TABLE_SCHEMA.listIndex.nonKeyAttributes) if (r[k] !== undefined) row[k] = clone(r[k]);
        return row as unknown as ListedTask;
      });
    return {
      items,
      read: read.length,
      // DynamoDB returns LastEvaluatedKey whenever the Limit was reached.
      ...(lastRead !== undefined && read.length === request.limit
        ? { last: { list_sk: lastRead.list_sk as string, task_id: lastRead.task_id } }
        : {}),
    };
  }

  async readOutbox(request: OutboxRangeRequest): Promise<OutboxRange> {
    this.maybeFail('readOutbox');
    if (!Number.isInteger(request.limit) || request.limit < 1) {
      throw new StoreRejectedError(
        `memory store Query rejected: ValidationException: limit must be >= 1, got ${request.limit}`,
      );
    }
    const { from, after } = request;
    const entries = [...this.items.values()]
      .filter((r) => r.outbox_pk === request.partition && typeof r.outbox_due === 'number')
      .map((r) => ({ task_id: r.task_id, outbox_due: r.outbox_due as number }))
      .sort((a, b) => a.outbox_due - b.outbox_due || byteOrder(a.task_id, b.task_id))
      .filter((e) => from === undefined || (from.inclusive ? e.outbox_due >= from.due : e.outbox_due > from.due))
      .filter(
        (e) =>
          after === undefined ||
          e.outbox_due > after.outbox_due ||
          (e.outbox_due === after.outbox_due && byteOrder(e.task_id, after.task_id) > 0),
      );
    const read = entries.slice(0, request.limit);
    // DynamoDB returns LastEvaluatedKey whenever the Limit was reached.
    return { entries: read, more: read.length === request.limit };
  }

  async readRows(taskIds: readonly string[]): Promise<OutboxRow[]> {
    this.maybeFail('readRows');
    if (taskIds.length > 100)
      throw new StoreRejectedError(`memory store BatchGetItem rejected: at most 100 keys, got ${taskIds.length}`);
    const attributes = [...TABLE_SCHEMA.listIndex.nonKeyAttributes, 'outbox_pk', 'outbox_due'] as const;
    return [...new Set(taskIds)].flatMap((taskId) => {
      const r = this.items.get(taskId);
      if (r === undefined) return [];
      const row: Record<string, unknown> = { task_id: r.task_id };
      for (const k of attributes) if (r[k] !== undefined) row[k] = clone(r[k]);
      return [row as unknown as OutboxRow];
    });
  }

  private maybeFail(op: keyof MemoryTaskStore['failNext']): void {
    const err = this.failNext[op];
    if (err) {
      delete this.failNext[op];
      throw err;
    }
  }
}

/** An update's changes, validated; the values as they will be stored. */
export interface UpdateActions {
  readonly set: [string, unknown][];
  readonly add: [string, number][];
  readonly append: [string, unknown[]][];
  readonly remove: string[];
}

/**
 * The update as DynamoDB would receive it, validated as DynamoDB validates it (before the
 * condition). `value` turns each value into what is stored (by default: as the document client
 * marshals it, refusing what DynamoDB refuses).
 */
export function planUpdate(
  taskId: string,
  changes: TaskChanges,
  value: (v: unknown, path: string, reject: (why: string) => never) => unknown = storable,
): UpdateActions {
  const reject = (why: string): never => {
    throw new StoreRejectedError(`memory store UpdateItem rejected: ${why}`, { taskId });
  };
  const actions: UpdateActions = { set: [], add: [], append: [], remove: [] };
  const seen = new Set<string>();
  const path = (k: string): void => {
    if (seen.has(k)) reject(`ValidationException: Two document paths overlap with each other: [${k}]`);
    seen.add(k);
  };
  for (const [k, v] of Object.entries(changes.set ?? {})) {
    if (v === undefined || k === PK) continue; // as the adapter: the key is never rewritten
    path(k);
    actions.set.push([k, value(v, k, reject)]);
  }
  for (const [k, v] of Object.entries(changes.add ?? {})) {
    if (v === undefined) continue;
    path(k);
    actions.add.push([k, value(v, k, reject) as number]);
  }
  for (const [k, v] of Object.entries(changes.append ?? {})) {
    if (v === undefined) continue;
    path(k);
    actions.append.push([k, value(v, k, reject) as unknown[]]);
  }
  for (const k of changes.remove ?? []) {
    if (k === PK) reject(`ValidationException: Cannot update attribute ${PK}. This attribute is part of the key`);
    path(k);
    actions.remove.push(k);
  }
  if (seen.size === 0) throw new RangeError('update needs at least one change');
  return actions;
}

/** `current` with the update's actions applied (a new object; `current` is left as it was). */
export function applyUpdate(current: TaskRecord, actions: UpdateActions): TaskRecord {
  const next: Record<string, unknown> = { ...current };
  for (const [k, v] of actions.set) next[k] = v;
  for (const [k, v] of actions.add) next[k] = ((next[k] as number | undefined) ?? 0) + v;
  for (const [k, v] of actions.append) next[k] = [...((next[k] as unknown[] | undefined) ?? []), ...v];
  for (const k of actions.remove) delete next[k];
  return next as unknown as TaskRecord;
}

/** The item as DynamoDB would store it, or a StoreRejectedError. */
function storableItem(item: object, operation: string, taskId: string): TaskRecord {
  const reject = (why: string): never => {
    throw new StoreRejectedError(`memory store ${operation} rejected: ${why}`, { taskId });
  };
  const stored = storable(item, '', reject) as Record<string, unknown>;
  const bytes = itemSize(stored);
  if (bytes > MAX_ITEM_BYTES)
    reject(`ValidationException: Item size has exceeded the maximum allowed size (${bytes} bytes)`);
  return stored as unknown as TaskRecord;
}

/**
 * A copy of `v` as the document client (`removeUndefinedValues: true`,
 * `convertClassInstanceToMap: false`) marshals it and DynamoDB accepts it.
 */
function storable(v: unknown, path: string, reject: (why: string) => never): unknown {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return reject(`Special numeric value ${v} is not allowed (${path})`);
    if (Math.abs(v) > Number.MAX_SAFE_INTEGER) return reject(`Number ${v} is beyond Number.MAX_SAFE_INTEGER (${path})`);
    if (v !== 0 && Math.abs(v) < MIN_MAGNITUDE) return reject(`ValidationException: Number underflow (${path})`);
    return v === 0 ? 0 : v; // -0 is stored as "0"
  }
  if (typeof v === 'bigint') {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : reject(`Number ${v} is beyond Number.MAX_SAFE_INTEGER (${path})`);
  }
  if (typeof v !== 'object') return reject(`Unsupported type passed: ${typeof v} (${path})`);
  if (Array.isArray(v)) {
    return v
      .filter((e) => e !== undefined && typeof e !== 'function')
      .map((e, i) => storable(e, `${path}[${i}]`, reject));
  }
  if (v instanceof Map) return storable(Object.fromEntries(v), path, reject);
  if (v instanceof Set || ArrayBuffer.isView(v)) return structuredClone(v); // string/number sets, binary
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) {
    return reject(`Unsupported type passed: ${String(v)} (${path}); class instances are not converted to maps`);
  }
  const out: Record<string, unknown> = {};
  for (const [k, e] of Object.entries(v)) {
    if (e === undefined || typeof e === 'function') continue;
    out[k] = storable(e, path === '' ? k : `${path}.${k}`, reject);
  }
  return out;
}

/** DynamoDB's item size: attribute names plus values, with its per-type overheads. */
function itemSize(item: Record<string, unknown>): number {
  let bytes = 0;
  for (const [k, v] of Object.entries(item)) bytes += Buffer.byteLength(k) + valueSize(v);
  return bytes;
}

function valueSize(v: unknown): number {
  if (v === null || typeof v === 'boolean') return 1;
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v === 'number') {
    const digits = String(Math.abs(v)).replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').length;
    return Math.ceil(Math.max(1, digits) / 2) + 1;
  }
  if (Array.isArray(v)) return 3 + v.reduce((s: number, e) => s + 1 + valueSize(e), 0);
  if (v instanceof Set) return [...v].reduce((s: number, e) => s + valueSize(e), 0);
  if (ArrayBuffer.isView(v)) return v.byteLength;
  if (typeof v === 'object') {
    return (
      3 + Object.entries(v as object).reduce((s: number, [k, e]) => s + 1 + Buffer.byteLength(k) + valueSize(e), 0)
    );
  }
  return 0;
}

/** Whether `c` holds on the item `r`, as the adapter's ConditionExpression is evaluated. */
export function holds(r: TaskRecord, c: TaskCondition): boolean {
  const alternatives: boolean[] = [];
  if (c.status !== undefined && c.status.length > 0) alternatives.push(c.status.includes(r.status));
  if (c.orLeaseExpiredBefore !== undefined) {
    alternatives.push(
      r.status === 'running' && typeof r.lease_until === 'number' && r.lease_until < c.orLeaseExpiredBefore,
    );
  }
  if (alternatives.length > 0 && !alternatives.some(Boolean)) return false;
  if (c.dispatchId !== undefined && r.dispatch_id !== c.dispatchId) return false;
  if (c.leaseToken !== undefined && r.lease_token !== c.leaseToken) return false;
  // attribute_exists / attribute_not_exists: presence, whatever the value (`cancel_requested: false` is a request).
  if (c.outboxPending === true && r.outbox_pk === undefined) return false;
  if (c.outboxPending === false && r.outbox_pk !== undefined) return false;
  if (c.noCancelRequest === true && r.cancel_requested !== undefined) return false;
  if (c.childrenOpenAbove !== undefined && !((r.children_open ?? Number.NEGATIVE_INFINITY) > c.childrenOpenAbove)) {
    return false;
  }
  return true;
}

function clone<T>(v: T): T {
  return v === undefined ? v : (structuredClone(v) as T);
}

/** DynamoDB's order of string keys: by their UTF-8 bytes. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
