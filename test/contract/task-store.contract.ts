/**
 * The `TaskStore` contract: one suite of behaviour, run against the in-memory fake most unit
 * tests use (`memory-task-store.test.ts`) and against `DynamoTaskStore` on every emulator target
 * (`dynamo-task-store.test.ts`), so that what the unit tests assume of the fake holds of DynamoDB.
 *
 * Each test works on its own task ids and its own outbox partition, so one store (one table)
 * can serve the whole file.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { partTest } from './parts.js';
import {
  ConditionFailedError,
  StoreError,
  StoreRejectedError,
  TaskAlreadyExistsError,
} from '../../shared/task/store-errors.js';
import type {
  OutboxEntry,
  OutboxRangeRequest,
  TaskChanges,
  TaskCondition,
  TaskListingReader,
  TaskStore,
} from '../../shared/task/task-store.js';
import { isListingReader } from '../../shared/task/listing.js';
import type { TaskRecord, TaskStatus } from '../../shared/task/model.js';

export interface TaskStoreUnderTest {
  readonly store: TaskStore;
  /** Releases what the factory made for one test. */
  cleanup(): Promise<void>;
}

/** Gives a store for one test (called before each). */
export type TaskStoreFactory = () => Promise<TaskStoreUnderTest>;

/**
 * Tests that may be declared known failures of one store, each with the reason (an adapter bug
 * with its proposed fix, an emulator that departs from DynamoDB). They then run with `it.fails`:
 * green while the failure persists, red once it is fixed, so the marker gets removed.
 */
export const STORE_CASES = {
  conditionWithoutStatus:
    'evaluates a condition that has no status part (dispatchId, leaseToken, outboxPending, noCancelRequest alone, or none) on an update that does not write status',
  emptyStatusList: 'treats an empty status list as no status condition',
  undefinedAddAppend: 'changes nothing for an add or append whose value is undefined, as for such a set',
  numberUnderflow:
    'rejects a non-zero number smaller in magnitude than 1e-130, on create and on update (StoreRejectedError)',
  zeroLimit: 'rejects a limit below 1 (StoreRejectedError)',
} as const;
export type StoreCase = keyof typeof STORE_CASES;

/**
 * Parts of the contract a bench model may leave out on purpose (a model lean enough for millions of
 * tasks stores only what Kaj's code writes). Each test of a part left out is skipped, visibly: its
 * title carries the reason the store's test file gives. DynamoDB and the fake run every part.
 */
export const STORE_PARTS = {
  marshalling:
    'values as the document client marshals them (undefined members dropped, -0 as 0, a Map as a map) and those DynamoDB refuses (NaN, ±Infinity, integers beyond 2^53 − 1, class instances, numbers below 1e-130, items over 400 KB)',
  listing: 'the listing reads of TaskListingReader (readOutbox, readRows)',
} as const;
export type StorePart = keyof typeof STORE_PARTS;

export interface TaskStoreContractOptions {
  /**
   * What `ConditionFailedError.current` holds when an update's condition fails on an existing item:
   * `true` the item as stored (DynamoDB, moto, the fake by default: ReturnValuesOnConditionCheckFailure),
   * `false` nothing (dynalite ignores that option; callers fall back to `get`, as the domain does with
   * `err.current ?? store.get(id)`), `undefined` either. For a missing item it is always undefined.
   */
  readonly conditionFailureReturnsItem: boolean | undefined;
  readonly knownFailures?: Partial<Record<StoreCase, string>>;
  /** Parts of the contract this store leaves out on purpose, each with the reason ({@link STORE_PARTS}). */
  readonly leftOut?: Partial<Record<StorePart, string>>;
}

const T0 = Date.UTC(2030, 0, 1);
const iso = (ms: number): string => new Date(ms).toISOString();

/** A task record with only the required fields. */
export function minimalRecord(taskId: string, overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    task_id: taskId,
    type: 'contract_job',
    priority: 'normal',
    status: 'queued',
    payload: {},
    attempts: 0,
    max_attempts: 5,
    timeout_seconds: 60,
    run_at: iso(T0),
    created_at: iso(T0),
    updated_at: iso(T0),
    history: [],
    fingerprint: 'fp-1',
    lease_token: 0,
    dispatch_id: 'dispatch-1',
    ...overrides,
  };
}

/** A task record with every field, of every type a record holds (nested maps and lists included). */
export function fullRecord(taskId: string, partition: string): TaskRecord {
  return {
    task_id: taskId,
    type: 'contract_job',
    priority: 'high',
    status: 'running',
    payload: {
      to: 'ops@example.com',
      count: 42,
      negative: -7,
      fraction: 3.25,
      largest: Number.MAX_SAFE_INTEGER,
      smallest: -Number.MAX_SAFE_INTEGER,
      tiny: 1.5e-100,
      zero: 0,
      yes: true,
      no: false,
      nothing: null,
      empty: '',
      unicode: 'Grüße, 世界 😀',
      list: [1, 'two', [3, { four: 4 }], null, {}, [], true],
      nested: { a: { b: { c: { d: 'deep' } } } },
      emptyMap: {},
      emptyList: [],
    },
    attempts: 2,
    max_attempts: 7,
    timeout_seconds: 120,
    run_at: iso(T0),
    created_at: iso(T0 - 1000),
    updated_at: iso(T0 + 5000),
    started_at: iso(T0 + 1000),
    finished_at: iso(T0 + 4000),
    result: { ok: true, items: [{ id: 1, tags: ['a', 'b'] }], score: 0.5 },
    last_error: { name: 'HttpError', message: 'upstream 503', retryable: true, code: 'HTTP_503' },
    history: [
      {
        attempt: 1,
        outcome: 'retrying',
        started_at: iso(T0),
        finished_at: iso(T0 + 900),
        duration_ms: 900,
        error: { name: 'HttpError', message: 'upstream 503', retryable: true, code: 'HTTP_503' },
      },
      { attempt: 2, outcome: 'crashed', finished_at: iso(T0 + 3000) },
    ],
    idempotency_key: 'order-8812',
    fingerprint: 'sha256:abcdef',
    lease_token: 3,
    lease_until: T0 + 60_000,
    dispatch_id: 'dispatch-7',
    cancel_requested: true,
    crashes: 1,
    unattributed_crashes: 2,
    solo: true,
    crash_limit: 4,
    owner: 'arn:aws:iam::000000000000:role/producer',
    outbox_pk: partition,
    outbox_due: T0 + 30_000,
    expires_at: Math.floor(T0 / 1000) + 7 * 86_400,
    redrive_count: 1,
    audit: [{ action: 'redrive', at: iso(T0 + 2000), by: 'ops', reason: 'downstream fixed' }],
    discarded_at: iso(T0 + 6000),
  };
}

/** What a promise rejected with (fails the test if it resolved). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => expect.fail(`expected a rejection, got ${JSON.stringify(v)}`),
    (err: unknown) => err,
  );
}

export function describeTaskStoreContract(
  name: string,
  factory: TaskStoreFactory,
  options: TaskStoreContractOptions,
): void {
  const knownFailures = options.knownFailures ?? {};
  const leftOut = options.leftOut ?? {};
  /** A test of a part of the contract the store may leave out (then skipped, with the reason in its title). */
  const partCase = (part: StorePart, title: string, fn: () => Promise<void>): void =>
    partTest(leftOut[part], title, fn);
  /** A test that may be a declared known failure of this store. */
  const contractCase = (key: StoreCase, fn: () => Promise<void>, part?: StorePart): void => {
    const reason = knownFailures[key];
    if (part !== undefined && leftOut[part] !== undefined) partCase(part, STORE_CASES[key], fn);
    else if (reason === undefined) it(STORE_CASES[key], fn);
    else it.fails(`${STORE_CASES[key]} [known failure here: ${reason}]`, fn);
  };

  describe(`Class: TaskStore contract on ${name}`, () => {
    let subject: TaskStoreUnderTest;
    let store: TaskStore;
    /** Unique per test: ids and outbox partitions never collide on a shared table. */
    let tag: string;
    const id = (n = 1): string => `t_contract_${tag}_${n}`;
    const partition = (target = 'queue'): string => `${target}#normal-${tag}`;

    beforeEach(async () => {
      subject = await factory();
      store = subject.store;
      tag = randomUUID().slice(0, 12);
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    /** Creates a record and returns it as read back. */
    async function seed(record: TaskRecord): Promise<TaskRecord> {
      await store.create(record);
      const stored = await store.get(record.task_id);
      expect(stored).toBeDefined();
      return stored as TaskRecord;
    }

    /** Expects a ConditionFailedError whose `current` is as the options say, and the item unchanged. */
    async function expectConditionFailed(
      taskId: string,
      changes: TaskChanges,
      condition: TaskCondition,
      stored: TaskRecord | undefined,
    ): Promise<ConditionFailedError> {
      const err = await rejection(store.update(taskId, changes, condition));
      expect(err).toBeInstanceOf(ConditionFailedError);
      const failed = err as ConditionFailedError;
      expect(failed).toBeInstanceOf(StoreError);
      expect(failed.taskId).toBe(taskId);
      if (stored === undefined || options.conditionFailureReturnsItem === false) {
        expect(failed.current).toBeUndefined();
      } else if (options.conditionFailureReturnsItem === true || failed.current !== undefined) {
        expect(failed.current).toStrictEqual(stored);
      }
      // The caller's fallback (`err.current ?? get`) always gives the item as stored.
      expect(failed.current ?? (await store.get(taskId))).toStrictEqual(stored);
      return failed;
    }

    async function expectRejected(p: Promise<unknown>, taskId: string | undefined): Promise<void> {
      const err = await rejection(p);
      expect(err).toBeInstanceOf(StoreRejectedError);
      expect((err as StoreRejectedError).retryable).toBe(false);
      if (taskId !== undefined) expect((err as StoreRejectedError).taskId).toBe(taskId);
    }

    const touch = { set: { updated_at: iso(T0 + 1) } } satisfies TaskChanges;

    describe('Method: create + get', () => {
      it('round-trips a record with every field type, nested payload/result/history included', async () => {
        const record = fullRecord(id(), partition());
        await store.create(record);
        expect(await store.get(record.task_id)).toStrictEqual(record);
      });

      it('round-trips a minimal record, with no optional attribute appearing', async () => {
        const record = minimalRecord(id());
        await store.create(record);
        const got = await store.get(record.task_id);
        expect(got).toStrictEqual(record);
        expect(Object.keys(got ?? {}).sort()).toEqual(Object.keys(record).sort());
      });

      partCase(
        'marshalling',
        'drops undefined members and list elements, and stores -0 as 0, as the document client marshals them',
        async () => {
          const record = minimalRecord(id(), {
            started_at: undefined,
            payload: { keep: 1, gone: undefined, list: [1, undefined, 2], zero: -0 },
          });
          await store.create(record);
          const got = await store.get(record.task_id);
          expect(got).toStrictEqual(minimalRecord(id(), { payload: { keep: 1, list: [1, 2], zero: 0 } }));
          expect(got).not.toHaveProperty('started_at');
          expect(Object.is((got!.payload as { zero: number }).zero, 0)).toBe(true);
        },
      );

      it('throws TaskAlreadyExistsError carrying the existing record, and keeps it', async () => {
        const first = await seed(minimalRecord(id(), { payload: { version: 1 } }));
        const err = await rejection(store.create(minimalRecord(id(), { status: 'running', payload: { version: 2 } })));
        expect(err).toBeInstanceOf(TaskAlreadyExistsError);
        expect((err as TaskAlreadyExistsError).taskId).toBe(id());
        expect((err as TaskAlreadyExistsError).existing).toStrictEqual(first);
        expect(await store.get(id())).toStrictEqual(first);
      });

      it('gives undefined for a missing id, consistent or not', async () => {
        expect(await store.get(id(404))).toBeUndefined();
        expect(await store.get(id(404), { consistent: false })).toBeUndefined();
      });

      it('reads with consistent: false (eventually consistent) and consistent: true alike', async () => {
        const record = await seed(fullRecord(id(), partition()));
        expect(await store.get(id(), { consistent: false })).toStrictEqual(record);
        expect(await store.get(id(), { consistent: true })).toStrictEqual(record);
      });

      it('hands out copies: changing what was created or read does not change the stored item', async () => {
        const record = minimalRecord(id(), { payload: { list: [1] } });
        await store.create(record);
        (record.payload as { list: number[] }).list.push(2);
        const read = (await store.get(id())) as TaskRecord;
        expect(read.payload).toStrictEqual({ list: [1] });
        read.history.push({ attempt: 1, outcome: 'succeeded', finished_at: iso(T0) });
        expect((await store.get(id()))?.history).toStrictEqual([]);
      });
    });

    describe('Method: create (values DynamoDB cannot hold)', () => {
      for (const [what, payload] of [
        ['NaN', { n: Number.NaN }],
        ['Infinity', { n: Number.POSITIVE_INFINITY }],
        ['an integer beyond 2^53 - 1', { n: 2 ** 53 }],
        ['a Date (a class instance, not converted to a map)', { when: new Date(T0) }],
      ] as const) {
        partCase('marshalling', `rejects a payload holding ${what} (StoreRejectedError), writing nothing`, async () => {
          await expectRejected(store.create(minimalRecord(id(), { payload })), id());
          expect(await store.get(id())).toBeUndefined();
        });
      }

      partCase(
        'marshalling',
        'rejects an item over 400 KB (StoreRejectedError), and stores one just under',
        async () => {
          await expectRejected(store.create(minimalRecord(id(1), { payload: 'x'.repeat(410 * 1024) })), id(1));
          expect(await store.get(id(1))).toBeUndefined();
          const under = minimalRecord(id(2), { payload: 'y'.repeat(380 * 1024) });
          await store.create(under);
          expect(await store.get(id(2))).toStrictEqual(under);
        },
      );

      partCase('marshalling', 'stores a Map as a map (plain object)', async () => {
        await store.create(minimalRecord(id(), { payload: new Map([['a', 1]]) }));
        expect((await store.get(id()))?.payload).toStrictEqual({ a: 1 });
      });
    });

    describe('Method: update (changes)', () => {
      it('returns the item as written, which is what get reads afterwards', async () => {
        await seed(fullRecord(id(), partition()));
        const written = await store.update(
          id(),
          {
            set: { status: 'succeeded', result: { answer: [1, { two: 2 }] }, updated_at: iso(T0 + 9000) },
            remove: ['lease_until', 'cancel_requested'],
            add: { attempts: 1 },
            append: { audit: [{ action: 'purge', at: iso(T0 + 9000), by: 'ops' }] },
          },
          { status: ['running'] },
        );
        expect(written).toStrictEqual(await store.get(id()));
        expect(written).toMatchObject({ status: 'succeeded', result: { answer: [1, { two: 2 }] }, attempts: 3 });
        expect(written).not.toHaveProperty('lease_until');
        expect(written).not.toHaveProperty('cancel_requested');
        expect(written.audit).toHaveLength(2);
      });

      it('set replaces a whole attribute (maps are not merged), can write null, and skips undefined values', async () => {
        const before = await seed(
          minimalRecord(id(), { payload: { a: 1, nested: { x: 1 } }, result: { r: 1 }, owner: 'me' }),
        );
        const written = await store.update(
          id(),
          { set: { payload: { nested: { y: 2 } }, result: null, owner: undefined } },
          { status: ['queued'] },
        );
        expect(written).toStrictEqual({ ...before, payload: { nested: { y: 2 } }, result: null, owner: 'me' });
      });

      partCase(
        'marshalling',
        'set adds attributes the item did not have, dropping undefined members inside values',
        async () => {
          const before = await seed(minimalRecord(id()));
          const written = await store.update(
            id(),
            { set: { started_at: iso(T0), result: { kept: 'yes', dropped: undefined, list: [undefined, 'x'] } } },
            { status: ['queued'] },
          );
          expect(written).toStrictEqual({ ...before, started_at: iso(T0), result: { kept: 'yes', list: ['x'] } });
        },
      );

      it('set ignores task_id (the key is never rewritten); with nothing else to change it is a RangeError', async () => {
        const before = await seed(minimalRecord(id()));
        const written = await store.update(
          id(),
          { set: { task_id: id(2), updated_at: iso(T0 + 7) } },
          { status: ['queued'] },
        );
        expect(written).toStrictEqual({ ...before, updated_at: iso(T0 + 7) });
        expect(await store.get(id(2))).toBeUndefined();
        await expect(store.update(id(), { set: { task_id: id(2) } }, { status: ['queued'] })).rejects.toBeInstanceOf(
          RangeError,
        );
      });

      it('remove deletes attributes, and removing one the item lacks is no error', async () => {
        const before = await seed(minimalRecord(id(), { owner: 'me', lease_until: T0 }));
        const written = await store.update(
          id(),
          { remove: ['owner', 'lease_until', 'result'] },
          { status: ['queued'] },
        );
        const { owner: _owner, lease_until: _lease, ...rest } = before;
        expect(written).toStrictEqual(rest);
        expect(Object.keys(written)).not.toContain('owner');
      });

      it('add increments counters atomically; a missing counter counts as 0; negative and zero amounts work', async () => {
        const before = await seed(minimalRecord(id(), { attempts: 2, lease_token: 5 }));
        const written = await store.update(
          id(),
          { add: { attempts: 1, lease_token: -2, crashes: 3, redrive_count: 0 } },
          { status: ['queued'] },
        );
        expect(written).toStrictEqual({ ...before, attempts: 3, lease_token: 3, crashes: 3, redrive_count: 0 });
        const again = await store.update(id(), { add: { crashes: 1 } }, { status: ['queued'] });
        expect(again.crashes).toBe(4);
      });

      it('append adds to the end of a list; a missing list counts as empty; an empty append makes an empty list', async () => {
        const a1 = { action: 'redrive', at: iso(T0), by: 'ops' };
        const a2 = { action: 'purge', at: iso(T0 + 1), by: 'ops', reason: 'done' };
        const a3 = { action: 'redrive', at: iso(T0 + 2), by: 'bot' };
        await seed(minimalRecord(id(1)));
        expect((await store.update(id(1), { append: { audit: [a1] } }, { status: ['queued'] })).audit).toStrictEqual([
          a1,
        ]);
        expect(
          (await store.update(id(1), { append: { audit: [a2, a3] } }, { status: ['queued'] })).audit,
        ).toStrictEqual([a1, a2, a3]);
        await seed(minimalRecord(id(2)));
        expect((await store.update(id(2), { append: { audit: [] } }, { status: ['queued'] })).audit).toStrictEqual([]);
      });

      it('rejects an update naming one attribute twice (SET and REMOVE, SET and ADD), changing nothing', async () => {
        const before = await seed(minimalRecord(id(), { started_at: iso(T0) }));
        await expectRejected(
          store.update(id(), { set: { started_at: iso(T0 + 1) }, remove: ['started_at'] }, { status: ['queued'] }),
          id(),
        );
        await expectRejected(
          store.update(id(), { set: { attempts: 4 }, add: { attempts: 1 } }, { status: ['queued'] }),
          id(),
        );
        expect(await store.get(id())).toStrictEqual(before);
      });

      it('rejects removing the key (StoreRejectedError), changing nothing', async () => {
        const before = await seed(minimalRecord(id()));
        await expectRejected(store.update(id(), { remove: ['task_id'] }, { status: ['queued'] }), id());
        expect(await store.get(id())).toStrictEqual(before);
      });

      it('throws RangeError for an update with no change', async () => {
        const before = await seed(minimalRecord(id()));
        await expect(store.update(id(), {}, { status: ['queued'] })).rejects.toBeInstanceOf(RangeError);
        await expect(store.update(id(), { set: { owner: undefined } }, { status: ['queued'] })).rejects.toBeInstanceOf(
          RangeError,
        );
        expect(await store.get(id())).toStrictEqual(before);
      });

      for (const [what, set] of [
        ['NaN', { result: Number.NaN }],
        ['an integer beyond 2^53 - 1', { result: { n: -(2 ** 53) } }],
        ['a Date', { result: new Date(T0) }],
        ['an item over 400 KB', { result: 'z'.repeat(410 * 1024) }],
      ] as const) {
        partCase('marshalling', `rejects writing ${what} (StoreRejectedError), changing nothing`, async () => {
          const before = await seed(minimalRecord(id()));
          await expectRejected(store.update(id(), { set }, { status: ['queued'] }), id());
          expect(await store.get(id())).toStrictEqual(before);
        });
      }

      contractCase(
        'numberUnderflow',
        async () => {
          await expectRejected(store.create(minimalRecord(id(1), { payload: { n: 1e-131 } })), id(1));
          expect(await store.get(id(1))).toBeUndefined();
          const before = await seed(minimalRecord(id(2)));
          await expectRejected(store.update(id(2), { set: { result: { n: -1e-131 } } }, { status: ['queued'] }), id(2));
          expect(await store.get(id(2))).toStrictEqual(before);
        },
        'marshalling',
      );

      contractCase('undefinedAddAppend', async () => {
        const before = await seed(minimalRecord(id()));
        const written = await store.update(
          id(),
          { set: { updated_at: iso(T0 + 3) }, add: { crashes: undefined }, append: { audit: undefined } },
          { status: ['queued'] },
        );
        expect(written).toStrictEqual({ ...before, updated_at: iso(T0 + 3) });
      });

      it('never creates an item: an update of a missing id fails its condition, even an empty one', async () => {
        await expectConditionFailed(id(404), { set: { status: 'queued' } }, {}, undefined);
        await expectConditionFailed(id(404), { set: { status: 'running' } }, { status: ['queued'] }, undefined);
        expect(await store.get(id(404))).toBeUndefined();
      });
    });

    describe('Method: update (conditions)', () => {
      /** Seeds a record and checks `condition` holds (the update applies) or fails (error, item unchanged). */
      async function check(record: TaskRecord, condition: TaskCondition, expected: 'holds' | 'fails'): Promise<void> {
        const before = await seed(record);
        const changes: TaskChanges = { set: { updated_at: iso(T0 + 42) } };
        if (expected === 'holds') {
          const written = await store.update(record.task_id, changes, condition);
          expect(written).toStrictEqual({ ...before, updated_at: iso(T0 + 42) });
        } else {
          await expectConditionFailed(record.task_id, changes, condition, before);
        }
      }
      const running = (n: number, o: Partial<TaskRecord> = {}): TaskRecord =>
        minimalRecord(id(n), { status: 'running', lease_token: 4, lease_until: T0, ...o });

      it('status: holds when the status is one of the list, fails otherwise', async () => {
        await check(minimalRecord(id(1)), { status: ['queued'] }, 'holds');
        await check(minimalRecord(id(2), { status: 'retrying' }), { status: ['queued', 'retrying'] }, 'holds');
        await check(minimalRecord(id(3)), { status: ['running', 'retrying'] }, 'fails');
        await check(minimalRecord(id(4), { status: 'succeeded' }), { status: ['queued'] }, 'fails');
      });

      it('orLeaseExpiredBefore alone: holds only for a running task whose lease ended strictly before the time', async () => {
        await check(running(1), { orLeaseExpiredBefore: T0 + 1 }, 'holds');
        await check(running(2), { orLeaseExpiredBefore: T0 }, 'fails'); // lease_until == time: not before
        await check(running(3), { orLeaseExpiredBefore: T0 - 1 }, 'fails'); // lease still live
        await check(
          minimalRecord(id(4), { status: 'retrying', lease_until: T0 }),
          { orLeaseExpiredBefore: T0 + 1 },
          'fails',
        );
        await check(minimalRecord(id(5), { status: 'running' }), { orLeaseExpiredBefore: T0 + 1 }, 'fails'); // no lease_until
      });

      it('status OR orLeaseExpiredBefore: holds when either holds, fails when neither does', async () => {
        await check(
          running(1, { lease_until: T0 + 10_000 }),
          { status: ['running'], orLeaseExpiredBefore: T0 },
          'holds',
        );
        await check(running(2), { status: ['queued'], orLeaseExpiredBefore: T0 + 1 }, 'holds');
        await check(
          running(3, { lease_until: T0 + 10_000 }),
          { status: ['queued'], orLeaseExpiredBefore: T0 },
          'fails',
        );
        await check(
          minimalRecord(id(4), { status: 'failed', lease_until: 1 }),
          { status: ['queued'], orLeaseExpiredBefore: T0 },
          'fails',
        );
      });

      it('dispatchId: holds when it equals the stored one, fails otherwise', async () => {
        await check(minimalRecord(id(1)), { status: ['queued'], dispatchId: 'dispatch-1' }, 'holds');
        await check(minimalRecord(id(2)), { status: ['queued'], dispatchId: 'dispatch-0' }, 'fails');
      });

      it('leaseToken: holds when it equals the stored fencing token, fails otherwise', async () => {
        await check(running(1), { status: ['running'], leaseToken: 4 }, 'holds');
        await check(running(2), { status: ['running'], leaseToken: 3 }, 'fails');
        await check(running(3), { status: ['running'], leaseToken: 5 }, 'fails');
      });

      it('outboxPending true: holds only with an outbox entry; false: only without one', async () => {
        const owed = (n: number): TaskRecord => minimalRecord(id(n), { outbox_pk: partition(), outbox_due: T0 });
        await check(owed(1), { status: ['queued'], outboxPending: true }, 'holds');
        await check(minimalRecord(id(2)), { status: ['queued'], outboxPending: true }, 'fails');
        await check(minimalRecord(id(3)), { status: ['queued'], outboxPending: false }, 'holds');
        await check(owed(4), { status: ['queued'], outboxPending: false }, 'fails');
      });

      it('noCancelRequest: holds without cancel_requested; any stored cancel_requested (even false) fails it', async () => {
        await check(running(1), { status: ['running'], noCancelRequest: true }, 'holds');
        await check(running(2, { cancel_requested: true }), { status: ['running'], noCancelRequest: true }, 'fails');
        await check(running(3, { cancel_requested: false }), { status: ['running'], noCancelRequest: true }, 'fails');
      });

      it('childrenOpenAbove: holds when children_open is greater; a missing children_open fails it', async () => {
        const waiting = (n: number, open?: number): TaskRecord =>
          minimalRecord(id(n), { status: 'waiting', ...(open === undefined ? {} : { children_open: open }) });
        await check(waiting(1, 3), { status: ['waiting'], childrenOpenAbove: 1 }, 'holds');
        await check(waiting(2, 1), { status: ['waiting'], childrenOpenAbove: 1 }, 'fails');
        await check(waiting(3), { status: ['waiting'], childrenOpenAbove: 1 }, 'fails');
        await check(waiting(4, 0), { status: ['waiting'], childrenOpenAbove: -1 }, 'holds');
      });

      it('all given parts must hold: one failing part fails the whole condition', async () => {
        const all = {
          status: ['running'] as TaskStatus[],
          dispatchId: 'dispatch-1',
          leaseToken: 4,
          outboxPending: false,
          noCancelRequest: true,
        };
        await check(running(1), all, 'holds');
        await check(running(2), { ...all, dispatchId: 'other' }, 'fails');
        await check(running(3), { ...all, leaseToken: 9 }, 'fails');
        await check(running(4, { outbox_pk: partition(), outbox_due: T0 }), all, 'fails');
        await check(running(5, { cancel_requested: true }), all, 'fails');
        await check(running(6), { ...all, status: ['queued'] }, 'fails');
      });

      it('a failed condition reports the whole item as stored, nested values included', async () => {
        const stored = await seed(fullRecord(id(), partition()));
        await expectConditionFailed(
          id(),
          { set: { status: 'succeeded' } },
          { status: ['running'], leaseToken: 99 },
          stored,
        );
      });

      contractCase('conditionWithoutStatus', async () => {
        const record = minimalRecord(id(), { outbox_pk: partition(), outbox_due: T0 });
        const before = await seed(record);
        for (const holding of [
          {},
          { dispatchId: 'dispatch-1' },
          { leaseToken: 0 },
          { outboxPending: true },
          { noCancelRequest: true },
        ]) {
          await store.update(id(), touch, holding);
        }
        expect(await store.get(id())).toStrictEqual({ ...before, ...touch.set });
        for (const failing of [{ dispatchId: 'x' }, { leaseToken: 1 }, { outboxPending: false }]) {
          await expectConditionFailed(id(), touch, failing, { ...before, ...touch.set });
        }
        // Remove-only, with no condition part at all.
        const written = await store.update(id(), { remove: ['outbox_pk', 'outbox_due'] }, {});
        expect(written).not.toHaveProperty('outbox_pk');
      });

      contractCase('emptyStatusList', async () => {
        const before = await seed(minimalRecord(id()));
        expect(await store.update(id(), touch, { status: [] })).toStrictEqual({ ...before, ...touch.set });
      });
    });

    describe('Method: listOutboxDue', () => {
      const ids = (records: OutboxEntry[]): string[] => records.map((r) => r.task_id);
      const due = (p: string, dueBy: number, limit: number): Promise<string[]> =>
        store.listOutboxDue(p, dueBy, limit).then(ids);
      // The outbox is a GSI, eventually consistent on AWS: after a write, poll (expect.poll) rather than read once.

      it("returns only the partition's entries due at or before dueBy, oldest first, as their keys", async () => {
        const mine = partition();
        await store.create(minimalRecord(id(1), { outbox_pk: mine, outbox_due: T0 + 300 }));
        await store.create(minimalRecord(id(2), { outbox_pk: mine, outbox_due: T0 + 100 }));
        await store.create(minimalRecord(id(3), { outbox_pk: mine, outbox_due: T0 + 200 }));
        await store.create(minimalRecord(id(4), { outbox_pk: mine, outbox_due: T0 + 301 })); // not yet due
        await store.create(minimalRecord(id(5), { outbox_pk: partition('dlq'), outbox_due: T0 })); // another partition
        await store.create(minimalRecord(id(6))); // no entry
        const full = fullRecord(id(7), mine);
        await store.create({ ...full, outbox_due: T0 + 150 });
        await expect.poll(() => due(mine, T0 + 300, 10)).toEqual([id(2), id(7), id(3), id(1)]);
        const records = await store.listOutboxDue(mine, T0 + 300, 10);
        expect(records[1]).toStrictEqual({ task_id: full.task_id, outbox_pk: mine, outbox_due: T0 + 150 });
        expect(await due(partition('dlq'), T0 + 300, 10)).toEqual([id(5)]);
        expect(await due(`queue#high-${tag}`, T0 + 300, 10)).toEqual([]);
      });

      it('returns at most limit entries, the oldest; removing their outbox attributes pages on to the next', async () => {
        const mine = partition();
        for (let n = 1; n <= 5; n += 1)
          await store.create(minimalRecord(id(n), { outbox_pk: mine, outbox_due: T0 + n * 10 }));
        await expect.poll(() => due(mine, T0 + 1000, 2)).toEqual([id(1), id(2)]);
        for (const n of [1, 2])
          await store.update(
            id(n),
            { remove: ['outbox_pk', 'outbox_due'] },
            { status: ['queued'], outboxPending: true },
          );
        await expect.poll(() => due(mine, T0 + 1000, 2)).toEqual([id(3), id(4)]);
        for (const n of [3, 4])
          await store.update(
            id(n),
            { remove: ['outbox_pk', 'outbox_due'] },
            { status: ['queued'], outboxPending: true },
          );
        await expect.poll(() => due(mine, T0 + 1000, 2)).toEqual([id(5)]);
        await store.update(id(5), { remove: ['outbox_pk', 'outbox_due'] }, { status: ['queued'] });
        await expect.poll(() => due(mine, T0 + 1000, 2)).toEqual([]);
      });

      it('follows an entry whose due time moves, and one that moves to another partition', async () => {
        const mine = partition();
        await store.create(minimalRecord(id(1), { outbox_pk: mine, outbox_due: T0 + 10 }));
        await store.create(minimalRecord(id(2), { outbox_pk: mine, outbox_due: T0 + 20 }));
        await store.create(minimalRecord(id(3), { outbox_pk: mine, outbox_due: T0 + 30 }));
        await expect.poll(() => due(mine, T0 + 100, 10)).toEqual([id(1), id(2), id(3)]);
        await store.update(id(1), { set: { outbox_due: T0 + 25 } }, { status: ['queued'] });
        await store.update(id(3), { set: { outbox_due: T0 + 1000 } }, { status: ['queued'] });
        await store.update(id(2), { set: { outbox_pk: partition('dlq') } }, { status: ['queued'] });
        await expect.poll(() => due(mine, T0 + 100, 10)).toEqual([id(1)]);
        await expect.poll(() => due(partition('dlq'), T0 + 100, 10)).toEqual([id(2)]);
      });

      it('lists only items that carry both outbox_pk and outbox_due (the index is sparse)', async () => {
        const mine = partition();
        await store.create(minimalRecord(id(1), { outbox_pk: mine }));
        await store.create(minimalRecord(id(2), { outbox_due: T0 }));
        await store.create(minimalRecord(id(3), { outbox_pk: mine, outbox_due: T0 }));
        await expect.poll(() => due(mine, T0 + 100, 10)).toEqual([id(3)]);
      });

      contractCase('zeroLimit', async () => {
        await expectRejected(store.listOutboxDue(partition(), T0, 0), undefined);
      });
    });

    describe('Method: readOutbox (the delayed listing)', () => {
      const reader = (): TaskListingReader => {
        if (!isListingReader(store)) throw new Error('the store under test does not read the listing');
        return store;
      };
      const read = (request: OutboxRangeRequest): Promise<string[]> =>
        reader()
          .readOutbox(request)
          .then((r) => r.entries.map((e) => e.task_id));

      partCase(
        'listing',
        'reads one partition oldest due first, as keys; from a due time inclusive or not',
        async () => {
          const mine = partition();
          await store.create(minimalRecord(id(1), { outbox_pk: mine, outbox_due: T0 + 300 }));
          await store.create(minimalRecord(id(2), { outbox_pk: mine, outbox_due: T0 + 100 }));
          await store.create(minimalRecord(id(3), { outbox_pk: mine, outbox_due: T0 + 200 }));
          await store.create(minimalRecord(id(4), { outbox_pk: partition('dlq'), outbox_due: T0 }));
          await store.create(minimalRecord(id(5), { outbox_pk: mine }));
          await expect.poll(() => read({ partition: mine, limit: 10 })).toEqual([id(2), id(3), id(1)]);
          const range = await reader().readOutbox({ partition: mine, limit: 10 });
          expect(range.entries[0]).toStrictEqual({ task_id: id(2), outbox_due: T0 + 100 });
          expect(await read({ partition: mine, limit: 10, from: { due: T0 + 200, inclusive: true } })).toEqual([
            id(3),
            id(1),
          ]);
          expect(await read({ partition: mine, limit: 10, from: { due: T0 + 200, inclusive: false } })).toEqual([
            id(1),
          ]);
          expect(await read({ partition: `queue#high-${tag}`, limit: 10 })).toEqual([]);
        },
      );

      partCase(
        'listing',
        'continues exactly after an entry, through entries with equal due times, one at a time',
        async () => {
          const mine = partition();
          for (let n = 1; n <= 5; n += 1)
            await store.create(minimalRecord(id(n), { outbox_pk: mine, outbox_due: T0 + (n === 5 ? 50 : 10) }));
          await expect.poll(() => read({ partition: mine, limit: 10 }).then((r) => r.length)).toBe(5);
          const seen: { task_id: string; outbox_due: number }[] = [];
          for (;;) {
            const last = seen[seen.length - 1];
            const range = await reader().readOutbox({ partition: mine, limit: 1, ...(last ? { after: last } : {}) });
            seen.push(...range.entries);
            // DynamoDB says "maybe more" whenever the limit was reached: the next read is then empty.
            if (!range.more) break;
            expect(range.entries).toHaveLength(1);
            expect(seen.length).toBeLessThanOrEqual(5);
          }
          expect(new Set(seen.map((e) => e.task_id))).toEqual(new Set([1, 2, 3, 4, 5].map((n) => id(n))));
          expect(seen).toHaveLength(5);
          expect(seen[4]).toStrictEqual({ task_id: id(5), outbox_due: T0 + 50 });
        },
      );

      partCase(
        'listing',
        'readRows: the listing attributes and the outbox entry, never the payload; absent ids left out',
        async () => {
          const mine = partition();
          const full = fullRecord(id(1), mine);
          await store.create(full);
          await store.create(minimalRecord(id(2)));
          const rows = await reader().readRows([id(1), id(2), id(3), id(1)]);
          expect(rows.map((r) => r.task_id).sort()).toEqual([id(1), id(2)]);
          const row = rows.find((r) => r.task_id === id(1));
          expect(row).toMatchObject({
            type: full.type,
            status: full.status,
            priority: full.priority,
            attempts: full.attempts,
            run_at: full.run_at,
            outbox_pk: mine,
            outbox_due: full.outbox_due,
          });
          expect(row).not.toHaveProperty('payload');
          expect(row).not.toHaveProperty('history');
          expect(row).not.toHaveProperty('result');
        },
      );

      partCase(
        'listing',
        'readRows refuses more than 100 ids (StoreRejectedError) before sending anything',
        async () => {
          await expectRejected(reader().readRows(Array.from({ length: 101 }, (_, n) => id(n))), undefined);
        },
      );
    });
  });
}
