/**
 * The `HistoryStore` contract: one suite of behaviour, run against the in-memory fake the workflow
 * runner's unit tests use (`memory-history-store.test.ts`) and against `DynamoHistoryStore` on
 * every emulator target (`dynamo-history-store.test.ts`), so that what the unit tests assume of
 * the fake holds of DynamoDB.
 *
 * Each test works on its own run ids, so one store (one table) can serve the whole file.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreRejectedError } from '../../shared/task/store-errors.js';
import type { HistoryEntry, HistoryStore } from '../../shared/workflow/history-store.js';

export interface HistoryStoreUnderTest {
  readonly store: HistoryStore;
  /** Releases what the factory made for one test. */
  cleanup(): Promise<void>;
}

/** Gives a store for one test (called before each). */
export type HistoryStoreFactory = () => Promise<HistoryStoreUnderTest>;

/**
 * Tests that may be declared known failures of one store, each with the reason (an emulator that
 * departs from DynamoDB). They then run with `it.fails`: green while the failure persists, red
 * once it is fixed, so the marker gets removed.
 */
export const HISTORY_STORE_CASES = {
  emptyKey: 'rejects an entry whose key is empty (StoreRejectedError), storing nothing',
  concurrentAppends: 'concurrent appends of one key: exactly one writes, every call gets the entry that won',
} as const;
export type HistoryStoreCase = keyof typeof HISTORY_STORE_CASES;

export interface HistoryStoreContractOptions {
  readonly knownFailures?: Partial<Record<HistoryStoreCase, string>>;
}

const T0 = Date.UTC(2030, 0, 1);

/** A step entry with only the required fields and a value. */
export function stepEntry(runId: string, name: string, value: unknown, overrides: Partial<HistoryEntry> = {}) {
  const entry: HistoryEntry = { run_id: runId, key: `step#${name}`, kind: 'step', at: T0, lease_token: 1, value };
  return { ...entry, ...overrides } as HistoryEntry;
}

/** A JSON value with every kind of member: what a step may return. */
export const NESTED_VALUE = {
  count: 42,
  negative: -7,
  zero: 0,
  fraction: 3.25,
  tiny: 1e-7,
  large: 1.5e300,
  largest: Number.MAX_SAFE_INTEGER,
  smallest: Number.MIN_SAFE_INTEGER,
  yes: true,
  no: false,
  nothing: null,
  empty: '',
  unicode: 'Grüße, 世界 😀 \u0000 \u2028 "quoted" \\ back',
  list: [1, 'two', [3, { four: 4 }], null, {}, []],
  nested: { a: { b: { c: { d: ['deep'] } } } },
  emptyObject: {},
  emptyList: [],
} as const;

/** What a promise rejected with (fails the test if it resolved). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => expect.fail(`expected a rejection, got ${JSON.stringify(v)?.slice(0, 200)}`),
    (err: unknown) => err,
  );
}

export function historyStoreContract(
  name: string,
  factory: HistoryStoreFactory,
  options: HistoryStoreContractOptions = {},
): void {
  const knownFailures = options.knownFailures ?? {};
  /** A test that may be a declared known failure of this store. */
  const contractCase = (key: HistoryStoreCase, fn: () => Promise<void>, timeout?: number): void => {
    const reason = knownFailures[key];
    if (reason === undefined) it(HISTORY_STORE_CASES[key], fn, timeout);
    else it.fails(`${HISTORY_STORE_CASES[key]} [known failure here: ${reason}]`, fn, timeout);
  };

  describe(`Class: HistoryStore contract on ${name}`, () => {
    let subject: HistoryStoreUnderTest;
    let store: HistoryStore;
    /** Unique per test: run ids never collide on a shared table. */
    let tag: string;
    const run = (n = 1): string => `wf-${tag}-${n}`;

    beforeEach(async () => {
      subject = await factory();
      store = subject.store;
      tag = randomUUID().slice(0, 12);
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    async function expectRejected(p: Promise<unknown>): Promise<void> {
      const err = await rejection(p);
      expect(err).toBeInstanceOf(StoreRejectedError);
      expect((err as StoreRejectedError).retryable).toBe(false);
    }

    describe('Method: append + read', () => {
      it('append then read: the entry is written and read back as it was given', async () => {
        const entry = stepEntry(run(), 'verify_documents', { ok: true }, { started_at: T0 - 1500, attempt: 1 });
        const r = await store.append(entry);
        expect(r).toStrictEqual({ written: true, entry });
        expect(await store.read(run())).toStrictEqual([entry]);
      });

      it('reads [] for a run that has no entry', async () => {
        expect(await store.read(run(404))).toStrictEqual([]);
      });

      it('first write wins: a second append of the key writes nothing and returns the first entry, unchanged', async () => {
        const first = stepEntry(run(), 'charge', { charge_id: 'ch_1' }, { lease_token: 3 });
        await store.append(first);
        const second = stepEntry(run(), 'charge', { charge_id: 'ch_2' }, { lease_token: 4, at: T0 + 60_000 });
        expect(await store.append(second)).toStrictEqual({ written: false, entry: first });
        // Another kind under the same key is refused the same way.
        const failure: HistoryEntry = {
          run_id: run(),
          key: first.key,
          kind: 'step_failure',
          at: T0 + 1,
          lease_token: 5,
          error: { name: 'Error', message: 'late', retryable: true },
          attempt: 2,
        };
        expect(await store.append(failure)).toStrictEqual({ written: false, entry: first });
        expect(await store.read(run())).toStrictEqual([first]);
      });

      it('returns only the entries of the run asked for (not of a run whose id starts with it)', async () => {
        const mine = stepEntry(run(1), 'a', 1);
        const longer = stepEntry(run(10), 'a', 10);
        const other = stepEntry(run(2), 'a', 2);
        for (const e of [mine, longer, other]) await store.append(e);
        expect(await store.read(run(1))).toStrictEqual([mine]);
        expect(await store.read(run(10))).toStrictEqual([longer]);
        expect(await store.read(run(2))).toStrictEqual([other]);
      });

      it('reads entries in key order (byte order of the key), whatever order they were appended in', async () => {
        const keys = [
          'step#verify_documents',
          'fail#charge#2',
          'sleep#cool_off',
          'fail#charge#10',
          'step#charge',
          'fail#charge#1',
          'step#Charge',
          'step#charge_2',
          'step#é',
          'step#z',
        ];
        for (const [i, key] of keys.entries()) {
          await store.append({ run_id: run(), key, kind: 'step', at: T0 + i, lease_token: 1, value: i });
        }
        const read = await store.read(run());
        expect(read.map((e) => e.key)).toEqual([
          'fail#charge#1',
          'fail#charge#10',
          'fail#charge#2',
          'sleep#cool_off',
          'step#Charge',
          'step#charge',
          'step#charge_2',
          'step#verify_documents',
          'step#z',
          'step#é',
        ]);
        expect(read.map((e) => e.value)).toEqual(read.map((e) => keys.indexOf(e.key)));
      });
    });

    describe('Storage: what round-trips', () => {
      it('a nested JSON value, with unicode, numbers of every kind, null, empty strings, objects and lists', async () => {
        const entry = stepEntry(run(), 'nested', NESTED_VALUE);
        expect((await store.append(entry)).entry).toStrictEqual(entry);
        const [got] = await store.read(run());
        expect(got).toStrictEqual(entry);
        expect(JSON.stringify(got?.value)).toBe(JSON.stringify(NESTED_VALUE));
      });

      it('values that are not objects: null, a number, a string, a boolean, a list', async () => {
        const values: unknown[] = [null, 0, -1.25, 'text', '', true, false, [], [null, 'x']];
        for (const [i, value] of values.entries()) await store.append(stepEntry(run(), `v${i}`, value));
        const read = await store.read(run());
        expect(read.map((e) => e.value)).toStrictEqual(values);
      });

      it('a 30 KB string value', async () => {
        // Multi-byte characters too: 1,024 × (2 + 3) bytes, then one byte each.
        const value = 'ü€'.repeat(1024) + 'x'.repeat(30 * 1024 - 5 * 1024);
        expect(Buffer.byteLength(value)).toBe(30 * 1024);
        const entry = stepEntry(run(), 'big', value);
        await store.append(entry);
        expect(await store.read(run())).toStrictEqual([entry]);
      });

      it('an entry with every field (an error with and without a code, a sleep, a TTL)', async () => {
        const entries: HistoryEntry[] = [
          {
            run_id: run(),
            key: 'fail#charge#1',
            kind: 'step_failure',
            at: T0 + 10,
            lease_token: 2,
            error: { name: 'RetryableError', message: 'provider 503: «busy»', retryable: true, code: 'HTTP_503' },
            started_at: T0,
            attempt: 1,
            expires_at: Math.floor(T0 / 1000) + 7 * 86_400,
          },
          {
            run_id: run(),
            key: 'step#charge',
            kind: 'step',
            at: T0 + 20,
            lease_token: 2,
            error: { name: 'PermanentError', message: 'card declined', retryable: false },
            started_at: T0 + 15,
            attempt: 3,
          },
          { run_id: run(), key: 'sleep#cool_off', kind: 'sleep', at: T0 + 30, lease_token: 3, until: T0 + 86_400_000 },
        ];
        for (const e of entries) expect(await store.append(e)).toStrictEqual({ written: true, entry: e });
        // In key order: fail#…, sleep#…, step#….
        expect(await store.read(run())).toStrictEqual([entries[0], entries[2], entries[1]]);
      });

      it('a child’s start and end: child_id and child_status read back as written', async () => {
        const start: HistoryEntry = {
          run_id: run(),
          key: 'child_start#resize_0',
          kind: 'child_start',
          at: T0,
          lease_token: 1,
          child_id: 't_0123456789abcdef0123456789abcdef',
          seq: 0,
        };
        const end: HistoryEntry = {
          run_id: run(),
          key: 'child#resize_0',
          kind: 'child',
          at: T0 + 5,
          lease_token: 0,
          child_id: 't_0123456789abcdef0123456789abcdef',
          child_status: 'succeeded',
          value: { px: 10 },
        };
        for (const e of [start, end]) expect(await store.append(e)).toStrictEqual({ written: true, entry: e });
        expect(await store.read(run())).toStrictEqual([end, start]);
      });

      it('an entry never carries undefined members: those given are dropped, absent ones stay absent', async () => {
        const minimal: HistoryEntry = { run_id: run(), key: 'sleep#a', kind: 'sleep', at: T0, lease_token: 1 };
        const withUndefined = {
          ...stepEntry(run(), 'b', undefined),
          error: undefined,
          started_at: undefined,
          attempt: undefined,
          until: undefined,
          expires_at: undefined,
        } as HistoryEntry;
        const written = [await store.append(minimal), await store.append(withUndefined)];
        const expectedB: HistoryEntry = { run_id: run(), key: 'step#b', kind: 'step', at: T0, lease_token: 1 };
        expect(written.map((w) => w.entry)).toStrictEqual([minimal, expectedB]);
        const read = await store.read(run());
        expect(read).toStrictEqual([minimal, expectedB]);
        for (const e of [...read, ...written.map((w) => w.entry)]) {
          expect(Object.values(e)).not.toContain(undefined);
        }
        expect(Object.keys(read[1] ?? {}).sort()).toEqual(['at', 'key', 'kind', 'lease_token', 'run_id']);
      });

      it('copies in and out: changing an entry after appending it, or one read back, changes nothing stored', async () => {
        const value = { list: [1, 2], nested: { a: 'b' } };
        const entry = stepEntry(run(), 'copied', value);
        const { entry: returned } = await store.append(entry);
        value.list.push(3);
        value.nested.a = 'changed';
        (returned.value as { list: number[] }).list.push(4);
        const [read] = await store.read(run());
        expect(read).toBeDefined();
        (read!.value as { list: number[] }).list.push(5);
        expect((await store.read(run()))[0]?.value).toStrictEqual({ list: [1, 2], nested: { a: 'b' } });
      });
    });

    describe('Storage: size', () => {
      it('reads every entry of a long history: 300 entries of 4 KB each (more than one page of 1 MB)', async () => {
        const filler = (i: number) => `${String(i).padStart(4, '0')}:${'h'.repeat(4 * 1024 - 5)}`;
        const entries: HistoryEntry[] = [];
        for (let i = 0; i < 300; i += 1) {
          entries.push(stepEntry(run(), `s${String(i).padStart(4, '0')}`, filler(i), { at: T0 + i }));
        }
        // Appended ten at a time (a workflow appends one at a time; the emulators take it either way).
        for (let i = 0; i < entries.length; i += 10) {
          await Promise.all(entries.slice(i, i + 10).map((e) => store.append(e)));
        }
        const read = await store.read(run());
        expect(read).toHaveLength(300);
        expect(read.map((e) => e.key)).toEqual(entries.map((e) => e.key));
        expect(read).toStrictEqual(entries);
      }, 60_000);

      it('rejects an entry over 400 KB with StoreRejectedError, storing nothing; the key stays free', async () => {
        const entry = stepEntry(run(), 'huge', 'x'.repeat(410 * 1024));
        await expectRejected(store.append(entry));
        expect(await store.read(run())).toStrictEqual([]);
        const small = stepEntry(run(), 'huge', 'fits');
        expect(await store.append(small)).toStrictEqual({ written: true, entry: small });
      });

      it('rejects a value that is no JSON (a BigInt) with StoreRejectedError, storing nothing', async () => {
        await expectRejected(store.append(stepEntry(run(), 'bigint', { n: 10n })));
        expect(await store.read(run())).toStrictEqual([]);
      });

      contractCase('emptyKey', async () => {
        await expectRejected(store.append({ run_id: run(), key: '', kind: 'step', at: T0, lease_token: 1, value: 1 }));
        expect(await store.read(run())).toStrictEqual([]);
      });
    });

    describe('Concurrency', () => {
      contractCase('concurrentAppends', async () => {
        const attempts = Array.from({ length: 5 }, (_, i) => stepEntry(run(), 'race', { by: i }, { lease_token: i }));
        const results = await Promise.all(attempts.map((e) => store.append(e)));
        const winners = results.filter((r) => r.written);
        expect(winners).toHaveLength(1);
        const won = winners[0]?.entry;
        for (const r of results) expect(r.entry).toStrictEqual(won);
        expect(await store.read(run())).toStrictEqual([won]);
      });
    });
  });
}
