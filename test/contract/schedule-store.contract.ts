/**
 * The `ScheduleStore` contract: one suite of behaviour, run against the in-memory fake the
 * scheduler's unit tests use (`memory-schedule-store.test.ts`) and against `DynamoScheduleStore`
 * on every emulator target (`dynamo-schedule-store.test.ts`), so that what the unit tests assume
 * of the fake holds of DynamoDB.
 *
 * Each test works on its own schedule names and its own due partitions, so one store (one table)
 * can serve the whole file; `list` (a Scan of the whole table) is checked on the test's own names.
 * The emulators update a GSI with the item (no propagation delay), so `listDue` is read at once.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ScheduleRecord } from '../../shared/schedule/model.js';
import { OwnerScheduleLimitError, ScheduleVersionConflictError } from '../../shared/schedule/store-errors.js';
import { StoreError, StoreRejectedError } from '../../shared/task/store-errors.js';
import type { SchedulePage, ScheduleStore } from '../../shared/schedule/schedule-store.js';

export interface ScheduleStoreUnderTest {
  readonly store: ScheduleStore;
  /** Releases what the factory made for one test. */
  cleanup(): Promise<void>;
}

/** Gives a store for one test (called before each). */
export type ScheduleStoreFactory = () => Promise<ScheduleStoreUnderTest>;

/**
 * Tests that may be declared known failures of one store, each with the reason (an adapter bug
 * with its proposed fix, an emulator that departs from DynamoDB). They then run with `it.fails`:
 * green while the failure persists, red once it is fixed, so the marker gets removed.
 */
export const SCHEDULE_STORE_CASES = {
  indexKeyType: 'rejects a due index key of the wrong type (StoreRejectedError), storing nothing',
  emptyIndexKey: 'rejects an empty due_pk (an index key string must not be empty), storing nothing',
} as const;
export type ScheduleStoreCase = keyof typeof SCHEDULE_STORE_CASES;

export interface ScheduleStoreContractOptions {
  readonly knownFailures?: Partial<Record<ScheduleStoreCase, string>>;
}

const T0 = Date.UTC(2030, 0, 1);
const iso = (ms: number): string => new Date(ms).toISOString();

/** A schedule record with only the required fields (no due index keys: not listed by `listDue`). */
export function minimalSchedule(name: string, overrides: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    name,
    owner: 'kaj:code',
    source: 'code',
    spec: {
      every_ms: 60_000,
      timezone: 'UTC',
      jitter_ms: 0,
      overlap: 'forbid',
      misfire: 'skip',
      catchup_window_ms: 3_600_000,
      task: { type: 'contract_job', payload: {}, priority: 'normal' },
    },
    spec_hash: 'sha256:0000',
    uid: 'uid-1',
    state: 'finished',
    fired: 0,
    missed: 0,
    recent: [],
    version: 1,
    created_at: iso(T0),
    updated_at: iso(T0),
    ...overrides,
  };
}

/** A schedule record with every field, nested spec and recent runs included, due in `partition` at `dueAt`. */
export function fullSchedule(name: string, partition: string, dueAt: number): ScheduleRecord {
  return {
    name,
    owner: 'arn:aws:iam::000000000000:role/producer',
    source: 'api',
    spec: {
      cron: '*/5 * * * *',
      timezone: 'Europe/Copenhagen',
      start_at: T0 - 86_400_000,
      end_at: T0 + 365 * 86_400_000,
      limit: 1000,
      jitter_ms: 30_000,
      overlap: 'buffer_one',
      misfire: 'catch_up',
      catchup_window_ms: 7_200_000,
      task: {
        type: 'contract_job',
        payload: {
          to: 'ops@example.com',
          count: 42,
          fraction: 3.25,
          largest: Number.MAX_SAFE_INTEGER,
          yes: true,
          nothing: null,
          empty: '',
          unicode: 'Grüße, 世界 😀',
          list: [1, 'two', [3, { four: 4 }], null, {}, []],
          nested: { a: { b: { c: 'deep' } } },
        },
        priority: 'high',
        max_attempts: 7,
        timeout_seconds: 120,
      },
      description: 'every five minutes, in Copenhagen',
    },
    spec_hash: 'sha256:abcdef',
    uid: 'uid-7f3a',
    state: 'active',
    pause_note: 'resumed after the migration',
    paused_at: iso(T0 - 60_000),
    next_time: dueAt - 12_000,
    fired: 17,
    buffered: T0 - 300_000,
    last_run: { task_id: 't_sched_0001', scheduled_time: iso(T0 - 300_000) },
    missed: 3,
    recent: [
      {
        scheduled_time: iso(T0 - 600_000),
        outcome: 'created',
        kind: 'scheduled',
        task_id: 't_1',
        at: iso(T0 - 599_000),
      },
      {
        scheduled_time: iso(T0 - 300_000),
        outcome: 'skipped_misfire',
        kind: 'scheduled',
        at: iso(T0 - 1000),
        reason: 'missed',
        count: 2,
      },
      { scheduled_time: iso(T0), outcome: 'invalid', kind: 'trigger', at: iso(T0), reason: 'payload too large' },
    ],
    due_pk: partition,
    due_at: dueAt,
    version: 12,
    created_at: iso(T0 - 86_400_000),
    updated_at: iso(T0),
  };
}

/** What a promise rejected with (fails the test if it resolved). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => expect.fail(`expected a rejection, got ${JSON.stringify(v)}`),
    (err: unknown) => err,
  );
}

export function scheduleStoreContract(
  name: string,
  factory: ScheduleStoreFactory,
  options: ScheduleStoreContractOptions = {},
): void {
  const knownFailures = options.knownFailures ?? {};
  /** A test that may be a declared known failure of this store. */
  const contractCase = (key: ScheduleStoreCase, fn: () => Promise<void>): void => {
    const reason = knownFailures[key];
    if (reason === undefined) it(SCHEDULE_STORE_CASES[key], fn);
    else it.fails(`${SCHEDULE_STORE_CASES[key]} [known failure here: ${reason}]`, fn);
  };

  describe(`Class: ScheduleStore contract on ${name}`, () => {
    let subject: ScheduleStoreUnderTest;
    let store: ScheduleStore;
    /** Unique per test: names and due partitions never collide on a shared table. */
    let tag: string;
    const sched = (n = 1): string => `c-${tag}-${n}`;
    const partition = (shard = 0): string => `due#${tag}-${shard}`;

    beforeEach(async () => {
      subject = await factory();
      store = subject.store;
      tag = randomUUID().slice(0, 12);
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    /** Expects a ScheduleVersionConflictError carrying `current`, and the record left as it was. */
    async function expectConflict(p: Promise<unknown>, scheduleName: string, current: ScheduleRecord | undefined) {
      const err = await rejection(p);
      expect(err).toBeInstanceOf(ScheduleVersionConflictError);
      expect(err).toBeInstanceOf(StoreError);
      const conflict = err as ScheduleVersionConflictError;
      expect(conflict.scheduleName).toBe(scheduleName);
      expect(conflict.current).toStrictEqual(current);
      expect(await store.get(scheduleName)).toStrictEqual(current);
    }

    async function expectRejected(p: Promise<unknown>): Promise<void> {
      const err = await rejection(p);
      expect(err).toBeInstanceOf(StoreRejectedError);
      expect((err as StoreRejectedError).retryable).toBe(false);
    }

    /** Every page of a listing, each checked against the limit, until the cursor runs out. */
    async function allPages<T>(next: (cursor: string | undefined) => Promise<SchedulePage<T>>, limit: number) {
      const pages: T[][] = [];
      let cursor: string | undefined;
      do {
        const page = await next(cursor);
        expect(page.items.length).toBeLessThanOrEqual(limit);
        pages.push(page.items);
        cursor = page.cursor;
        expect(pages.length).toBeLessThan(1000);
      } while (cursor !== undefined);
      return pages;
    }

    describe('Method: put + get', () => {
      it('round-trips a record with every field, nested spec and recent runs included', async () => {
        const record = fullSchedule(sched(), partition(), T0);
        await store.put(record, 'absent');
        expect(await store.get(record.name)).toStrictEqual(record);
        expect(await store.get(record.name, { consistent: false })).toStrictEqual(record);
      });

      it('round-trips a minimal record, with no optional attribute appearing', async () => {
        const record = minimalSchedule(sched());
        await store.put(record, 'absent');
        const got = await store.get(record.name);
        expect(got).toStrictEqual(record);
        expect(Object.keys(got ?? {}).sort()).toEqual(Object.keys(record).sort());
        expect(Object.keys(got?.spec ?? {}).sort()).toEqual(Object.keys(record.spec).sort());
      });

      it('drops undefined fields, as the adapter marshals them', async () => {
        const record = minimalSchedule(sched(), { pause_note: undefined, due_pk: undefined, due_at: undefined });
        await store.put(record, 'absent');
        const got = await store.get(record.name);
        expect(got).toStrictEqual(minimalSchedule(sched()));
        expect(got).not.toHaveProperty('due_pk');
      });

      it('gives undefined for a schedule that does not exist', async () => {
        expect(await store.get(sched(404))).toBeUndefined();
        expect(await store.get(sched(404), { consistent: false })).toBeUndefined();
      });

      it("put 'absent' twice: a conflict carrying the record stored first, which stays", async () => {
        const first = minimalSchedule(sched(), { uid: 'first' });
        await store.put(first, 'absent');
        await expectConflict(store.put(minimalSchedule(sched(), { uid: 'second' }), 'absent'), sched(), first);
      });

      it('put at the stored version replaces the whole record (fields it no longer has are gone)', async () => {
        const v1 = fullSchedule(sched(), partition(), T0);
        await store.put(v1, 'absent');
        const v2 = minimalSchedule(sched(), { version: v1.version + 1, state: 'paused', fired: 18 });
        await store.put(v2, v1.version);
        expect(await store.get(sched())).toStrictEqual(v2);
        const v3 = { ...v2, version: v2.version + 1, fired: 19 };
        await store.put(v3, v2.version);
        expect(await store.get(sched())).toStrictEqual(v3);
      });

      it('put at another version: a conflict carrying the stored record, which stays', async () => {
        const stored = minimalSchedule(sched(), { version: 5 });
        await store.put(stored, 'absent');
        await expectConflict(store.put({ ...stored, version: 5, fired: 1 }, 4), sched(), stored);
        await expectConflict(store.put({ ...stored, version: 7, fired: 1 }, 6), sched(), stored);
      });

      it('put at a version of a schedule that does not exist: a conflict with no record, nothing stored', async () => {
        await expectConflict(store.put(minimalSchedule(sched(), { version: 2 }), 1), sched(), undefined);
      });

      it('rejects a value DynamoDB cannot hold (StoreRejectedError), storing nothing', async () => {
        const bad = minimalSchedule(sched());
        const withNaN = { ...bad, spec: { ...bad.spec, task: { ...bad.spec.task, payload: { n: Number.NaN } } } };
        await expectRejected(store.put(withNaN, 'absent'));
        await expectRejected(store.put({ ...bad, fired: 2 ** 60 }, 'absent'));
        expect(await store.get(sched())).toBeUndefined();
      });

      contractCase('indexKeyType', async () => {
        const bad = { ...minimalSchedule(sched()), due_pk: partition(), due_at: '123' } as unknown as ScheduleRecord;
        await expectRejected(store.put(bad, 'absent'));
        expect(await store.get(sched())).toBeUndefined();
      });

      contractCase('emptyIndexKey', async () => {
        await expectRejected(store.put(minimalSchedule(sched(), { due_pk: '', due_at: T0 }), 'absent'));
        expect(await store.get(sched())).toBeUndefined();
      });
    });

    describe('Method: delete', () => {
      it('at the stored version: the record is gone, and can be created afresh', async () => {
        const stored = fullSchedule(sched(), partition(), T0);
        await store.put(stored, 'absent');
        await store.delete(sched(), stored.version);
        expect(await store.get(sched())).toBeUndefined();
        expect((await store.listDue(partition(), T0, 10)).items).toEqual([]);
        const again = minimalSchedule(sched(), { uid: 'again' });
        await store.put(again, 'absent');
        expect(await store.get(sched())).toStrictEqual(again);
      });

      it('at another version: a conflict carrying the stored record, which stays', async () => {
        const stored = minimalSchedule(sched(), { version: 3 });
        await store.put(stored, 'absent');
        await expectConflict(store.delete(sched(), 2), sched(), stored);
        await expectConflict(store.delete(sched(), 4), sched(), stored);
      });

      it('of a schedule that does not exist: a conflict with no record', async () => {
        await expectConflict(store.delete(sched(404), 1), sched(404), undefined);
      });
    });

    describe('Method: listDue', () => {
      it('lists the partition’s schedules due by `dueBy` (inclusive), earliest first, as index keys', async () => {
        const a = fullSchedule(sched(1), partition(0), T0 + 3000);
        const b = fullSchedule(sched(2), partition(0), T0 + 1000);
        const c = fullSchedule(sched(3), partition(0), T0 + 2000);
        const later = fullSchedule(sched(4), partition(0), T0 + 2001);
        const elsewhere = fullSchedule(sched(5), partition(1), T0);
        for (const r of [a, b, c, later, elsewhere]) await store.put(r, 'absent');

        const page = await store.listDue(partition(0), T0 + 2000, 10);
        expect(page.items).toStrictEqual([b, c].map(keysOf));
        expect(page.cursor).toBeUndefined();
        expect((await store.listDue(partition(0), T0 + 3000, 10)).items.map((r) => r.name)).toEqual([
          sched(2),
          sched(3),
          sched(4),
          sched(1),
        ]);
        expect((await store.listDue(partition(1), T0 + 3000, 10)).items).toStrictEqual([keysOf(elsewhere)]);
        expect(await store.listDue(partition(2), T0 + 3000, 10)).toStrictEqual({ items: [] });
        expect((await store.listDue(partition(0), T0 + 999, 10)).items).toEqual([]);
      });

      it('pages with limit and cursor: every due schedule exactly once, in order (ties included)', async () => {
        const dues = [5, 1, 3, 3, 2, 3, 8, 4, 9];
        const records = dues.map((d, i) => fullSchedule(sched(i), partition(), T0 + d * 1000));
        for (const r of records) await store.put(r, 'absent');
        await store.put(fullSchedule(sched(99), partition(), T0 + 60_000), 'absent'); // not due
        const due = records.filter((r) => (r.due_at ?? 0) <= T0 + 9000);

        for (const limit of [1, 2, 4, 9, 20]) {
          const pages = await allPages((cursor) => store.listDue(partition(), T0 + 9000, limit, cursor), limit);
          const items = pages.flat();
          expect(items.map((r) => r.name).sort()).toEqual(due.map((r) => r.name).sort());
          expect(new Set(items.map((r) => r.name)).size).toBe(items.length);
          const times = items.map((r) => r.due_at ?? Number.NaN);
          expect(times).toEqual([...times].sort((x, y) => x - y));
          // Every page but the last is full.
          for (const p of pages.slice(0, -1)) expect(p.length).toBe(limit);
        }
      });

      it('does not list schedules without both due keys (paused, finished: the index is sparse)', async () => {
        const listed = fullSchedule(sched(1), partition(), T0);
        const { due_pk: _pk, due_at: _at, ...paused } = fullSchedule(sched(2), partition(), T0);
        const noDueAt = minimalSchedule(sched(3), { due_pk: partition() });
        for (const r of [listed, paused, noDueAt]) await store.put(r, 'absent');
        expect((await store.listDue(partition(), T0 + 86_400_000, 10)).items).toStrictEqual([keysOf(listed)]);
      });

      it('follows later puts: due keys removed, moved past dueBy, moved to another partition', async () => {
        const names = [sched(1), sched(2), sched(3), sched(4)];
        for (const n of names) await store.put(fullSchedule(n, partition(0), T0), 'absent');
        const [one, two, three] = names as [string, string, string, string];
        const current = async (n: string): Promise<ScheduleRecord> => (await store.get(n)) as ScheduleRecord;

        const { due_pk: _pk, due_at: _at, ...paused } = await current(one);
        await store.put({ ...paused, state: 'paused', version: paused.version + 1 }, paused.version);
        const r2 = await current(two);
        await store.put({ ...r2, due_at: T0 + 60_000, version: r2.version + 1 }, r2.version);
        const r3 = await current(three);
        const moved = { ...r3, due_pk: partition(1), version: r3.version + 1 };
        await store.put(moved, r3.version);

        expect((await store.listDue(partition(0), T0, 10)).items.map((r) => r.name)).toEqual([sched(4)]);
        expect((await store.listDue(partition(1), T0, 10)).items).toStrictEqual([keysOf(moved)]);
        const r4 = await current(sched(4));
        await store.delete(sched(4), r4.version);
        expect((await store.listDue(partition(0), T0 + 60_000, 10)).items.map((r) => r.name)).toEqual([two]);
      });

      it('gives the keys as last written, not as first indexed', async () => {
        const r = fullSchedule(sched(), partition(), T0);
        await store.put(r, 'absent');
        const updated = { ...r, fired: r.fired + 1, version: r.version + 1, recent: [], due_at: T0 - 5 };
        await store.put(updated, r.version);
        expect((await store.listDue(partition(), T0, 10)).items).toStrictEqual([keysOf(updated)]);
      });

      it('rejects a limit below 1 and a cursor no page of this partition gave (StoreRejectedError)', async () => {
        for (const n of [1, 2]) await store.put(fullSchedule(sched(n), partition(0), T0), 'absent');
        await store.put(minimalSchedule(sched(3)), 'absent');
        const dueCursor = (await store.listDue(partition(0), T0, 1)).cursor;
        const listCursor = (await store.list(1)).cursor;
        expect(dueCursor).toBeDefined();
        expect(listCursor).toBeDefined();

        await expectRejected(store.listDue(partition(0), T0, 0));
        await expectRejected(store.listDue(partition(0), T0, 1.5));
        await expectRejected(store.listDue(partition(0), T0, 10, 'not a cursor'));
        await expectRejected(store.listDue(partition(0), T0, 10, Buffer.from('[1]').toString('base64url')));
        await expectRejected(store.listDue(partition(1), T0, 10, dueCursor));
        await expectRejected(store.listDue(partition(0), T0, 10, listCursor));
      });
    });

    describe('Owner slots: put with a slot, delete releasing it', () => {
      const owner = () => `arn:aws:iam::000000000000:role/owner-${tag}`;
      const owned = (n: number) => minimalSchedule(sched(n), { owner: owner(), source: 'api', counted: true });

      it('counted creates up to max; the next is an OwnerScheduleLimitError and stores nothing; other owners are apart', async () => {
        const slot = { owner: owner(), max: 2 };
        await store.put(owned(1), 'absent', slot);
        await store.put(owned(2), 'absent', slot);
        const err = await rejection(store.put(owned(3), 'absent', slot));
        expect(err).toBeInstanceOf(OwnerScheduleLimitError);
        expect(err).toBeInstanceOf(StoreError);
        expect(err).toMatchObject({ scheduleName: sched(3), owner: owner(), max: 2 });
        expect(await store.get(sched(3))).toBeUndefined();
        // Another owner's count is its own; an uncounted put ignores the count.
        await store.put(minimalSchedule(sched(4)), 'absent', { owner: `${owner()}-other`, max: 1 });
        await store.put(minimalSchedule(sched(5)), 'absent');
        // The count items are not schedules: neither listed nor read.
        const names = (await allPages((cursor) => store.list(1000, cursor), 1000)).flat().map((r) => r.name);
        expect(names.filter((n) => n.includes(tag)).sort()).toEqual([1, 2, 4, 5].map(sched));
        expect(names.every((n) => /^[A-Za-z0-9]/.test(n))).toBe(true);
        expect(await store.get(`#owner:${owner()}`)).toBeUndefined();
      });

      it('a counted create of a name that exists is a conflict (even at the cap), and takes no slot', async () => {
        const slot = { owner: owner(), max: 2 };
        await store.put(owned(1), 'absent', slot);
        await expectConflict(store.put(owned(1), 'absent', slot), sched(1), owned(1));
        await store.put(owned(2), 'absent', slot);
        await expectConflict(store.put(owned(1), 'absent', slot), sched(1), owned(1));
        expect(await rejection(store.put(owned(3), 'absent', slot))).toBeInstanceOf(OwnerScheduleLimitError);
      });

      it('a delete releasing the owner frees one slot; a delete that loses its condition frees none', async () => {
        const slot = { owner: owner(), max: 1 };
        await store.put(owned(1), 'absent', slot);
        await expectConflict(store.delete(sched(1), 7, owner()), sched(1), owned(1));
        expect(await rejection(store.put(owned(2), 'absent', slot))).toBeInstanceOf(OwnerScheduleLimitError);
        await store.delete(sched(1), 1, owner());
        expect(await store.get(sched(1))).toBeUndefined();
        await store.put(owned(2), 'absent', slot);
        expect(await rejection(store.put(owned(3), 'absent', slot))).toBeInstanceOf(OwnerScheduleLimitError);
      });

      it('two concurrent counted creates at max - 1: exactly one is stored', async () => {
        const slot = { owner: owner(), max: 2 };
        await store.put(owned(1), 'absent', slot);
        const results = await Promise.allSettled([
          store.put(owned(2), 'absent', slot),
          store.put(owned(3), 'absent', slot),
        ]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(refused?.reason).toBeInstanceOf(OwnerScheduleLimitError);
        const stored = [await store.get(sched(2)), await store.get(sched(3))].filter((r) => r !== undefined);
        expect(stored).toHaveLength(1);
      });
    });

    describe('Method: list', () => {
      it('pages over every schedule exactly once, due or not', async () => {
        const records = [
          fullSchedule(sched(1), partition(0), T0),
          fullSchedule(sched(2), partition(1), T0 + 5),
          minimalSchedule(sched(3)),
          minimalSchedule(sched(4), { state: 'paused' }),
          fullSchedule(sched(5), partition(0), T0 - 5),
        ];
        for (const r of records) await store.put(r, 'absent');
        const mine = (items: ScheduleRecord[]) => items.filter((r) => r.name.startsWith(`c-${tag}-`));

        for (const limit of [1, 2, 3, 1000]) {
          const pages = await allPages((cursor) => store.list(limit, cursor), limit);
          const items = mine(pages.flat());
          expect(items.map((r) => r.name).sort()).toEqual(records.map((r) => r.name).sort());
          expect(new Set(pages.flat().map((r) => r.name)).size).toBe(pages.flat().length);
          for (const r of items) expect(r).toStrictEqual(records.find((x) => x.name === r.name));
        }
      });

      it('rejects a limit below 1 and a cursor no page of a listing gave (StoreRejectedError)', async () => {
        for (const n of [1, 2]) await store.put(fullSchedule(sched(n), partition(0), T0), 'absent');
        const dueCursor = (await store.listDue(partition(0), T0, 1)).cursor;
        expect(dueCursor).toBeDefined();

        await expectRejected(store.list(0));
        await expectRejected(store.list(10, '%%%'));
        await expectRejected(store.list(10, Buffer.from('{"name":7}').toString('base64url')));
        await expectRejected(store.list(10, dueCursor));
        // Keys no schedule has: empty, or longer than any key of the table.
        await expectRejected(store.list(10, Buffer.from('{"name":""}').toString('base64url')));
        await expectRejected(
          store.list(10, Buffer.from(JSON.stringify({ name: 'n'.repeat(1100) })).toString('base64url')),
        );
      });
    });
  });
}

/** What the keys-only `due` index returns for a record. */
function keysOf(r: ScheduleRecord): { name: string; due_pk: string; due_at: number } {
  return { name: r.name, due_pk: r.due_pk as string, due_at: r.due_at as number };
}
