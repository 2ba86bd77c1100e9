import { describe, expect, it } from 'vitest';
import {
  AccountingTaskStore,
  applyChanges,
  DynamoLedger,
  failedWriteCost,
  type IndexModel,
  indexWrite,
  isInIndex,
  itemSize,
  numberSize,
  projectedItem,
  queryReadUnits,
  readUnits,
  successfulWriteCost,
  type TableModel,
  valueSize,
  writeUnits,
} from '../../../bench/lib/dynamo-accounting.js';
import { rateSeconds, tableModel } from '../../../bench/lib/deployment.js';
import { ConditionFailedError, TaskAlreadyExistsError } from '../../../shared/task/store-errors.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { MemoryTaskStore } from '../../../testing/memory-task-store.js';

const OUTBOX_ALL: IndexModel = {
  name: 'outbox',
  partitionKey: 'outbox_pk',
  sortKey: 'outbox_due',
  projection: { type: 'ALL' },
};
const OUTBOX_KEYS: IndexModel = { ...OUTBOX_ALL, projection: { type: 'KEYS_ONLY' } };
const tableWith = (index: IndexModel): TableModel => ({ partitionKey: 'task_id', indexes: [index] });
const ALL = tableWith(OUTBOX_ALL);
const KEYS = tableWith(OUTBOX_KEYS);

/** An attribute holding `bytes` bytes (a 3-byte name + a string). */
const blob = (bytes: number): string => 'x'.repeat(bytes - 3);

describe('Function: itemSize', () => {
  it('counts UTF-8 bytes of attribute names and string values', () => {
    expect(itemSize({ abc: 'defg' })).toBe(7);
    expect(itemSize({ é: 'ü' })).toBe(4);
  });

  it('sizes numbers at 1 byte per two significant digits plus 1, zeros trimmed', () => {
    expect(numberSize(7)).toBe(2);
    expect(numberSize(27)).toBe(2);
    expect(numberSize(123)).toBe(3);
    expect(numberSize(1000)).toBe(2); // trailing zeros trimmed: "1"
    expect(numberSize(0.001)).toBe(2); // leading zeros trimmed: "1"
    expect(numberSize(1_767_225_600_123)).toBe(8); // 13 significant digits
    expect(numberSize(-42)).toBe(2);
    expect(numberSize(0)).toBe(2);
  });

  it('sizes booleans and null at 1 byte', () => {
    expect(itemSize({ ok: true, no: false, nil: null })).toBe(2 + 1 + 2 + 1 + 3 + 1);
  });

  it('adds 3 bytes per list or map and 1 byte per element', () => {
    expect(itemSize({ l: [] })).toBe(1 + 3);
    expect(itemSize({ m: {} })).toBe(1 + 3);
    expect(itemSize({ l: ['a', 'bc'] })).toBe(1 + 3 + (1 + 1) + (1 + 2));
    // A map element is an attribute: its name counts too.
    expect(itemSize({ m: { a: 1 } })).toBe(1 + 3 + (1 + 1 + 2));
    expect(valueSize([{ k: 'v' }])).toBe(3 + 1 + (3 + 1 + 1 + 1));
  });

  it('skips undefined members, as the document client does', () => {
    expect(itemSize({ a: 'x', b: undefined })).toBe(2);
    expect(itemSize({ l: ['a', undefined] })).toBe(1 + 3 + 2);
    expect(itemSize(undefined)).toBe(0);
  });

  it('agrees with published item-size calculators', () => {
    // dyno-item-size's README example: 32 bytes.
    expect(itemSize({ string: 'string', number: 27, buffer: Buffer.from('buffer', 'utf8') })).toBe(32);
    // ddbitemsizer's README example (it mimics the DynamoDB item size calculator): 141 bytes.
    expect(
      itemSize({
        itemType: 'SLOT',
        id: 'abc1231',
        hostName: 'Harry Mason',
        timeSlot: 'February 23, 1999',
        slotStatus: 'OPEN',
        createdAt: 'February 1, 1999',
        updatedAt: 'February 1, 1999',
        expiresAt: 2099,
      }),
    ).toBe(141);
  });
});

describe('Function: writeUnits / readUnits / queryReadUnits', () => {
  it('charges one write unit per started KB, at least one', () => {
    expect(writeUnits(0)).toBe(1);
    expect(writeUnits(1024)).toBe(1);
    expect(writeUnits(1025)).toBe(2);
    expect(writeUnits(3 * 1024)).toBe(3);
  });

  it('charges one read unit per started 4 KB strongly consistent, half eventually consistent', () => {
    expect(readUnits(0, true)).toBe(1);
    expect(readUnits(4096, true)).toBe(1);
    expect(readUnits(4097, true)).toBe(2);
    expect(readUnits(8 * 1024, false)).toBe(1); // the docs' 8 KB example
    expect(readUnits(100, false)).toBe(0.5);
  });

  it("sums a Query's results before rounding (the GSI docs' example: 8 × 2,000 B → 2 units)", () => {
    expect(queryReadUnits(8 * 2000)).toBe(2);
    expect(queryReadUnits(0)).toBe(0.5);
  });
});

describe('Function: indexWrite', () => {
  const base = { task_id: 't_1', status: 'queued', payload: { a: 1 } };
  const entry = { ...base, outbox_pk: 'queue#normal', outbox_due: 1000 };

  it('is in a sparse index only with every index key attribute', () => {
    expect(isInIndex(entry, OUTBOX_ALL)).toBe(true);
    expect(isInIndex(base, OUTBOX_ALL)).toBe(false);
    expect(isInIndex({ ...base, outbox_pk: 'queue#normal' }, OUTBOX_ALL)).toBe(false);
  });

  it('costs nothing when the item is in the index neither before nor after', () => {
    expect(indexWrite(base, { ...base, status: 'running' }, ALL, OUTBOX_ALL)).toEqual({
      index: 'outbox',
      change: 'none',
      units: 0,
    });
    expect(indexWrite(undefined, base, ALL, OUTBOX_ALL).units).toBe(0);
  });

  it('puts an entry when the item gains the index keys (new item or update)', () => {
    expect(indexWrite(undefined, entry, ALL, OUTBOX_ALL)).toMatchObject({ change: 'put', units: 1 });
    expect(indexWrite(base, entry, ALL, OUTBOX_ALL)).toMatchObject({ change: 'put', units: 1 });
  });

  it('deletes the entry when an index key attribute is removed', () => {
    expect(indexWrite(entry, base, ALL, OUTBOX_ALL)).toMatchObject({ change: 'delete', units: 1 });
  });

  it('deletes and puts (2 writes) when an index key value changes', () => {
    expect(indexWrite(entry, { ...entry, outbox_due: 2000 }, ALL, OUTBOX_ALL)).toMatchObject({
      change: 'move',
      units: 2,
    });
    expect(indexWrite(entry, { ...entry, outbox_pk: 'dlq#normal' }, KEYS, OUTBOX_KEYS)).toMatchObject({
      change: 'move',
      units: 2,
    });
  });

  it('updates the entry (1 write) when only a projected attribute changes', () => {
    expect(indexWrite(entry, { ...entry, status: 'running' }, ALL, OUTBOX_ALL)).toMatchObject({
      change: 'update',
      units: 1,
    });
  });

  it('writes nothing for a change to an attribute the index does not project', () => {
    expect(indexWrite(entry, { ...entry, status: 'running' }, KEYS, OUTBOX_KEYS)).toMatchObject({
      change: 'none',
      units: 0,
    });
    const include: IndexModel = { ...OUTBOX_ALL, projection: { type: 'INCLUDE', nonKeyAttributes: ['priority'] } };
    const t = tableWith(include);
    expect(indexWrite(entry, { ...entry, status: 'running' }, t, include).change).toBe('none');
    expect(indexWrite(entry, { ...entry, priority: 'high' }, t, include).change).toBe('update');
  });

  it('sizes an index write by the projected entry', () => {
    const big = { ...entry, payload: blob(1500) };
    expect(indexWrite(undefined, big, ALL, OUTBOX_ALL).units).toBe(2);
    expect(indexWrite(undefined, big, KEYS, OUTBOX_KEYS).units).toBe(1);
    expect(indexWrite(big, { ...big, outbox_due: 5 }, ALL, OUTBOX_ALL).units).toBe(4);
    expect(projectedItem(big, KEYS, OUTBOX_KEYS)).toEqual({
      task_id: 't_1',
      outbox_pk: 'queue#normal',
      outbox_due: 1000,
    });
  });
});

describe('Function: successfulWriteCost / failedWriteCost', () => {
  it('charges the larger of the item before and after', () => {
    const large = { task_id: 't_1', p: blob(1500) };
    const small = { task_id: 't_1' };
    expect(successfulWriteCost(large, small, KEYS).tableUnits).toBe(2);
    expect(successfulWriteCost(small, large, KEYS).tableUnits).toBe(2);
    expect(successfulWriteCost(undefined, small, KEYS).tableUnits).toBe(1);
  });

  it('adds the index units to the table units', () => {
    const c = successfulWriteCost(undefined, { task_id: 't', outbox_pk: 'q', outbox_due: 1 }, ALL);
    expect(c).toMatchObject({ tableUnits: 1, indexUnits: 1 });
  });

  it('charges a failed conditional write: 1 unit without an item, else by the larger item', () => {
    expect(failedWriteCost(undefined, { p: blob(3000) })).toBe(1);
    expect(failedWriteCost({ p: blob(1500) }, { p: 'x' })).toBe(2);
    expect(failedWriteCost({ p: 'x' }, { p: blob(2500) })).toBe(3);
  });
});

describe('Function: applyChanges', () => {
  it('sets, adds, appends and removes as the adapter does, never rewriting the key', () => {
    const next = applyChanges(
      { task_id: 't', attempts: 1, history: ['a'], solo: true },
      {
        set: { task_id: 'other', status: 'running', result: undefined },
        add: { attempts: 1, lease_token: 1 },
        append: { audit: [{ action: 'x', at: 'now', by: 'me' }] },
        remove: ['solo'],
      },
      'task_id',
    );
    expect(next).toEqual({
      task_id: 't',
      attempts: 2,
      lease_token: 1,
      history: ['a'],
      status: 'running',
      audit: [{ action: 'x', at: 'now', by: 'me' }],
    });
  });
});

/** A task record as the submit path wrote it before the write-path redesign (outbox entry at once). */
function preRedesignRecord(payload: unknown): TaskRecord {
  const now = Date.parse('2026-12-01T00:00:00.000Z');
  return {
    task_id: `t_${'a'.repeat(32)}`,
    owner: 'arn:aws:iam::123456789012:role/kaj-producer',
    type: 'send_email',
    priority: 'normal',
    status: 'queued',
    payload,
    attempts: 0,
    max_attempts: 5,
    timeout_seconds: 60,
    run_at: new Date(now).toISOString(),
    created_at: new Date(now).toISOString(),
    updated_at: new Date(now).toISOString(),
    history: [],
    fingerprint: 'f'.repeat(64),
    lease_token: 0,
    dispatch_id: 'd'.repeat(32),
    outbox_pk: 'queue#normal',
    outbox_due: now + 30_000,
  };
}

/** The pre-redesign write path of a first-attempt success: put, send confirmation, claim, outcome. */
async function preRedesignSuccess(payload: unknown): Promise<DynamoLedger> {
  const ledger = new DynamoLedger();
  const store = new AccountingTaskStore(new MemoryTaskStore(), ALL, ledger, 'outbox');
  const r = preRedesignRecord(payload);
  const now = Date.parse(r.created_at);
  await store.create(r);
  await store.update(
    r.task_id,
    { set: { outbox_due: now + 3_600_000 } },
    { dispatchId: r.dispatch_id, status: ['queued', 'retrying'], outboxPending: true },
  );
  await store.update(
    r.task_id,
    {
      set: { status: 'running', lease_until: now + 60_000, started_at: r.created_at, updated_at: r.created_at },
      add: { attempts: 1, lease_token: 1 },
      remove: ['solo'],
    },
    { status: ['queued', 'retrying'], dispatchId: r.dispatch_id, noCancelRequest: true },
  );
  await store.update(
    r.task_id,
    {
      set: {
        status: 'succeeded',
        result: { sent: true },
        finished_at: r.created_at,
        updated_at: r.created_at,
        history: [{ attempt: 1, outcome: 'succeeded', started_at: r.created_at, finished_at: r.created_at }],
        expires_at: Math.floor(now / 1000) + 7 * 86_400,
      },
      remove: ['lease_until', 'outbox_pk', 'outbox_due'],
    },
    { leaseToken: 1, status: ['running'] },
  );
  return ledger;
}

const total = (l: DynamoLedger, f: 'tableWru' | 'indexWru' | 'rru'): number => l.ops.reduce((s, o) => s + o[f], 0);

describe('Class: AccountingTaskStore', () => {
  it('reproduces the pre-redesign figure: 9 WRU for a small task (4 table + 5 outbox index)', async () => {
    const ledger = await preRedesignSuccess({ to: 'ada@example.com', subject: 'hi' });
    expect(total(ledger, 'tableWru')).toBe(4);
    expect(ledger.ops.map((o) => o.index.map((w) => w.change).join())).toEqual(['put', 'move', 'update', 'delete']);
    expect(total(ledger, 'indexWru')).toBe(5);
    // The accounting's own reads of the item before each write are not requests.
    expect(ledger.ops.map((o) => o.api)).toEqual(['PutItem', 'UpdateItem', 'UpdateItem', 'UpdateItem']);
    expect(total(ledger, 'rru')).toBe(0);
  });

  it('reproduces 18 WRU with a 1 KB payload (every write and index entry takes 2 units)', async () => {
    const ledger = await preRedesignSuccess({ body: 'x'.repeat(1010) });
    expect(total(ledger, 'tableWru')).toBe(8);
    expect(total(ledger, 'indexWru')).toBe(10);
  });

  it('charges a replayed create as a failed conditional write, by the larger item', async () => {
    const ledger = new DynamoLedger();
    const store = new AccountingTaskStore(new MemoryTaskStore(), KEYS, ledger, 'outbox');
    const r = preRedesignRecord({});
    await store.create(r);
    await expect(store.create({ ...r, payload: { body: blob(1500) } })).rejects.toBeInstanceOf(TaskAlreadyExistsError);
    expect(ledger.ops.map((o) => [o.api, o.ok, o.conditionFailed, o.tableWru, o.indexWru])).toEqual([
      ['PutItem', true, false, 1, 1],
      ['PutItem', false, true, 2, 0],
    ]);
  });

  it('charges a failed update of a missing item 1 unit and writes no index', async () => {
    const ledger = new DynamoLedger();
    const store = new AccountingTaskStore(new MemoryTaskStore(), ALL, ledger, 'outbox');
    await expect(store.update('t_missing', { set: { status: 'running' } }, {})).rejects.toBeInstanceOf(
      ConditionFailedError,
    );
    expect(ledger.ops).toMatchObject([
      { api: 'UpdateItem', ok: false, conditionFailed: true, tableWru: 1, indexWru: 0 },
    ]);
  });

  it('charges reads by consistency and tags each request with who made it', async () => {
    const ledger = new DynamoLedger();
    const store = new AccountingTaskStore(new MemoryTaskStore(), KEYS, ledger, 'outbox');
    await store.create(preRedesignRecord({}));
    ledger.tag = 'consumer';
    await store.get(`t_${'a'.repeat(32)}`);
    await store.get(`t_${'a'.repeat(32)}`, { consistent: false });
    await store.get('t_missing');
    expect(ledger.ops.slice(1).map((o) => [o.tag, o.rru])).toEqual([
      ['consumer', 1],
      ['consumer', 0.5],
      ['consumer', 1],
    ]);
  });

  it('charges an outbox Query by the projected entries it reads (the whole item under ALL)', async () => {
    const ledger = new DynamoLedger();
    const inner = new MemoryTaskStore();
    const store = new AccountingTaskStore(inner, ALL, ledger, 'outbox');
    for (let i = 0; i < 8; i++) {
      await store.create({ ...preRedesignRecord({ body: blob(1900) }), task_id: `t_${i}`, outbox_due: i });
    }
    const due = await store.listOutboxDue('queue#normal', 100, 100);
    expect(due).toHaveLength(8);
    // 8 entries of ~2.3 KB: 18+ KB → 5 × 4 KB → 2.5 units (eventually consistent).
    expect(ledger.ops.at(-1)).toMatchObject({ api: 'Query', items: 8, rru: 2.5 });
    const keysLedger = new DynamoLedger();
    const keysStore = new AccountingTaskStore(new MemoryTaskStore(), KEYS, keysLedger, 'outbox');
    await keysStore.create(preRedesignRecord({ body: blob(1900) }));
    const [entry] = await keysStore.listOutboxDue('queue#normal', Number.MAX_SAFE_INTEGER, 10);
    expect(Object.keys(entry ?? {}).sort()).toEqual(['outbox_due', 'outbox_pk', 'task_id']);
    expect(keysLedger.ops.at(-1)).toMatchObject({ api: 'Query', rru: 0.5 });
  });
});

describe('Function: tableModel / rateSeconds (the synthesized template)', () => {
  it('reads the key schema, the GSIs and their projections', () => {
    expect(
      tableModel({
        KeySchema: [{ AttributeName: 'task_id', KeyType: 'HASH' }],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'outbox',
            KeySchema: [
              { AttributeName: 'outbox_pk', KeyType: 'HASH' },
              { AttributeName: 'outbox_due', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['priority'] },
          },
        ],
      }),
    ).toEqual({
      partitionKey: 'task_id',
      indexes: [
        {
          name: 'outbox',
          partitionKey: 'outbox_pk',
          sortKey: 'outbox_due',
          projection: { type: 'INCLUDE', nonKeyAttributes: ['priority'] },
        },
      ],
    });
  });

  it('reads an EventBridge rate', () => {
    expect(rateSeconds('rate(1 minute)')).toBe(60);
    expect(rateSeconds('rate(5 minutes)')).toBe(300);
    expect(rateSeconds('rate(30 seconds)')).toBe(30);
  });
});
