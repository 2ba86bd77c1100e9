/**
 * The `LimitStore` contract: one suite of behaviour, run against the in-memory fake the
 * limiter's unit tests use (`memory-limit-store.test.ts`) and against `DynamoLimitStore` on every
 * emulator target (`dynamo-limit-store.test.ts`), so that what the limiter's tests assume of the
 * fake holds of DynamoDB.
 *
 * Each test works on its own item keys (a unique tag), so one store (one table) serves the whole
 * file; `list` (a Scan of the whole table) is checked on the test's own items.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreRejectedError } from '../../shared/task/store-errors.js';
import type { LimitItem, LimitStore, RateRequest, SlotHolders } from '../../shared/limit/limit-store.js';

/**
 * Like `Promise.all`, but waits for every call to settle before rejecting with the first error: a
 * concurrent case that fails leaves no request in flight when the suite stops the emulator.
 */
async function settleAll<T>(calls: readonly Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(calls);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

export interface LimitStoreUnderTest {
  readonly store: LimitStore;
  /** Releases what the factory made for one test. */
  cleanup(): Promise<void>;
}

/** Gives a store for one test (called before each). */
export type LimitStoreFactory = () => Promise<LimitStoreUnderTest>;

/**
 * Tests that may be declared known failures of one store, each with the reason. They then run
 * with `it.fails`: green while the failure persists, red once it is fixed, so the marker goes.
 */
export const LIMIT_STORE_CASES = {
  concurrentAdds: 'grants exactly `capacity` of 20 concurrent addHolder calls on a new item',
  concurrentTakes: 'grants 30 concurrent takeRate calls each its own n·T: tat ends exactly 30·n·T on',
} as const;
export type LimitStoreCase = keyof typeof LIMIT_STORE_CASES;

export interface LimitStoreContractOptions {
  readonly knownFailures?: Partial<Record<LimitStoreCase, string>>;
}

const T0 = Date.UTC(2030, 0, 1);
const LEASE = T0 + 60_000;

/** A rate request at `now` with T = 2.5 ms, no tolerance, and a 1 s horizon, unless overridden. */
function rate(now: number, overrides: Partial<RateRequest> = {}): RateRequest {
  return { now, count: 1, intervalMs: 2.5, toleranceMs: 0, horizonMs: 1000, ...overrides };
}

export function limitStoreContract(
  name: string,
  factory: LimitStoreFactory,
  options: LimitStoreContractOptions = {},
): void {
  const knownFailures = options.knownFailures ?? {};
  const contractCase = (key: LimitStoreCase, fn: () => Promise<void>): void => {
    const reason = knownFailures[key];
    if (reason === undefined) it(LIMIT_STORE_CASES[key], fn);
    else it.fails(`${LIMIT_STORE_CASES[key]} [known failure here: ${reason}]`, fn);
  };

  describe(`Class: LimitStore contract on ${name}`, () => {
    let subject: LimitStoreUnderTest;
    let store: LimitStore;
    let tag: string;
    /** Item keys unique to this test. */
    const c = (n = 1): string => `c#t_${tag}_${n}`;
    const r = (n = 1): string => `r#t_${tag}_${n}`;

    beforeEach(async () => {
      subject = await factory();
      store = subject.store;
      tag = randomUUID().replaceAll('-', '').slice(0, 12);
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    /** This test's items, as `list` gives them. */
    async function mine(): Promise<LimitItem[]> {
      return (await store.list()).filter((i) => i.pk.includes(`t_${tag}_`)).sort((a, b) => (a.pk < b.pk ? -1 : 1));
    }
    async function item(pk: string): Promise<LimitItem | undefined> {
      return (await mine()).find((i) => i.pk === pk);
    }

    describe('Method: addHolder', () => {
      it('creates the item on first use, grants up to capacity, then answers full with the holders', async () => {
        expect(await store.addHolder(c(), 'p1.1', LEASE, 3)).toEqual({ kind: 'granted' });
        expect(await item(c())).toStrictEqual({ pk: c(), holders: { 'p1.1': LEASE } });
        expect(await store.addHolder(c(), 'p1.2', LEASE + 1, 3)).toEqual({ kind: 'granted' });
        expect(await store.addHolder(c(), 'p2.1', LEASE + 2, 3)).toEqual({ kind: 'granted' });
        const full = await store.addHolder(c(), 'p2.2', LEASE + 3, 3);
        expect(full).toStrictEqual({ kind: 'full', holders: { 'p1.1': LEASE, 'p1.2': LEASE + 1, 'p2.1': LEASE + 2 } });
        expect((await item(c()))?.holders).toStrictEqual({ 'p1.1': LEASE, 'p1.2': LEASE + 1, 'p2.1': LEASE + 2 });
      });

      it('grants again once a holder is removed, and counts an emptied map as empty', async () => {
        await store.addHolder(c(), 'a.1', LEASE, 1);
        expect((await store.addHolder(c(), 'b.1', LEASE, 1)).kind).toBe('full');
        await store.removeHolder(c(), 'a.1');
        expect((await item(c()))?.holders).toStrictEqual({});
        expect(await store.addHolder(c(), 'b.1', LEASE, 1)).toEqual({ kind: 'granted' });
        expect(await store.addHolder(c(), 'c.1', LEASE, 1)).toStrictEqual({ kind: 'full', holders: { 'b.1': LEASE } });
      });

      it('adds into an item that exists without holders (made by noteRefusals), keeping its attributes', async () => {
        await store.noteRefusals(c(), 4, T0);
        expect(await store.addHolder(c(), 'a.1', LEASE, 2)).toEqual({ kind: 'granted' });
        expect(await item(c())).toStrictEqual({ pk: c(), holders: { 'a.1': LEASE }, refused: 4, refused_at: T0 });
      });

      it('sets expires_at when given (keyed limits), and leaves it out otherwise', async () => {
        await store.addHolder(c(1), 'a.1', LEASE, 2, 1_900_000_000);
        await store.addHolder(c(2), 'a.2', LEASE, 2);
        expect((await item(c(1)))?.expires_at).toBe(1_900_000_000);
        expect(await item(c(2))).not.toHaveProperty('expires_at');
        await store.addHolder(c(1), 'a.3', LEASE, 2, 1_900_000_100);
        expect((await item(c(1)))?.expires_at).toBe(1_900_000_100);
      });

      it('keeps holder ids with dots and lease ends with decimals as given', async () => {
        await store.addHolder(c(), 'abcdef012345.zz', LEASE + 0.5, 2);
        expect((await item(c()))?.holders).toStrictEqual({ 'abcdef012345.zz': LEASE + 0.5 });
      });

      contractCase('concurrentAdds', async () => {
        const answers = await settleAll(
          Array.from({ length: 20 }, (_, i) => store.addHolder(c(), `w.${i}`, LEASE + i, 5)),
        );
        expect(answers.filter((a) => a.kind === 'granted')).toHaveLength(5);
        expect(Object.keys((await item(c()))?.holders ?? {})).toHaveLength(5);
        for (const a of answers) if (a.kind === 'full') expect(Object.keys(a.holders).length).toBeGreaterThanOrEqual(5);
      });
    });

    describe('Method: renewHolder', () => {
      it('sets a present holder’s lease end (and expires_at when given)', async () => {
        await store.addHolder(c(), 'a.1', LEASE, 2);
        await store.addHolder(c(), 'a.2', LEASE, 2);
        expect(await store.renewHolder(c(), 'a.1', LEASE + 30_000, 1_900_000_000)).toBe(true);
        expect(await item(c())).toStrictEqual({
          pk: c(),
          holders: { 'a.1': LEASE + 30_000, 'a.2': LEASE },
          expires_at: 1_900_000_000,
        });
      });

      it('answers false for a holder that is gone, and creates nothing for a missing item', async () => {
        await store.addHolder(c(1), 'a.1', LEASE, 2);
        expect(await store.renewHolder(c(1), 'gone.1', LEASE + 1)).toBe(false);
        expect((await item(c(1)))?.holders).toStrictEqual({ 'a.1': LEASE });
        expect(await store.renewHolder(c(2), 'a.1', LEASE + 1)).toBe(false);
        await store.noteRefusals(c(3), 1, T0);
        expect(await store.renewHolder(c(3), 'a.1', LEASE + 1)).toBe(false);
        expect((await mine()).map((i) => i.pk)).toEqual([c(1), c(3)]);
      });
    });

    describe('Method: removeHolder', () => {
      it('removes only that holder; again, it does nothing', async () => {
        await store.addHolder(c(), 'a.1', LEASE, 3);
        await store.addHolder(c(), 'a.2', LEASE, 3);
        await store.removeHolder(c(), 'a.1');
        await store.removeHolder(c(), 'a.1');
        expect((await item(c()))?.holders).toStrictEqual({ 'a.2': LEASE });
      });

      it('creates nothing for a missing item, and leaves an item without holders as it is', async () => {
        await store.removeHolder(c(1), 'a.1');
        await store.noteRefusals(c(2), 2, T0);
        await store.removeHolder(c(2), 'a.1');
        expect(await mine()).toStrictEqual([{ pk: c(2), refused: 2, refused_at: T0 }]);
      });
    });

    describe('Method: evictHolders', () => {
      it('removes the holders whose lease ends are as seen, and only them', async () => {
        for (const [id, until] of [
          ['dead.1', T0 - 5],
          ['dead.2', T0 - 1],
          ['live.1', LEASE],
        ] as const) {
          await store.addHolder(c(), id, until, 5);
        }
        expect(await store.evictHolders(c(), { 'dead.1': T0 - 5, 'dead.2': T0 - 1 })).toBe(true);
        expect((await item(c()))?.holders).toStrictEqual({ 'live.1': LEASE });
      });

      it('removes nothing if one lease end changed (renewed) or one holder is gone', async () => {
        await store.addHolder(c(), 'a.1', T0 - 5, 5);
        await store.addHolder(c(), 'a.2', T0 - 5, 5);
        await store.renewHolder(c(), 'a.2', LEASE);
        expect(await store.evictHolders(c(), { 'a.1': T0 - 5, 'a.2': T0 - 5 })).toBe(false);
        expect((await item(c()))?.holders).toStrictEqual({ 'a.1': T0 - 5, 'a.2': LEASE });
        await store.removeHolder(c(), 'a.2');
        expect(await store.evictHolders(c(), { 'a.1': T0 - 5, 'a.2': LEASE })).toBe(false);
        expect((await item(c()))?.holders).toStrictEqual({ 'a.1': T0 - 5 });
      });

      it('answers true for no holders, false on a missing item (creating nothing)', async () => {
        expect(await store.evictHolders(c(1), {})).toBe(true);
        expect(await store.evictHolders(c(2), { 'a.1': T0 })).toBe(false);
        expect(await mine()).toEqual([]);
      });

      it('refuses more than 50 holders in one call (StoreRejectedError)', async () => {
        const many: SlotHolders = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`h.${i}`, T0]));
        await expect(store.evictHolders(c(), many)).rejects.toBeInstanceOf(StoreRejectedError);
      });
    });

    describe('Method: takeRate', () => {
      it('idle (no item): tat = now + n·T, exactly, with expires_at when given', async () => {
        expect(await store.takeRate(r(1), rate(T0, { count: 3 }))).toEqual({ kind: 'granted', tat: T0 + 7.5 });
        expect(await item(r(1))).toStrictEqual({ pk: r(1), tat: T0 + 7.5 });
        await store.takeRate(r(2), rate(T0, { expiresAt: 1_900_000_000 }));
        expect((await item(r(2)))?.expires_at).toBe(1_900_000_000);
      });

      it('busy (tat at or after now): tat advances by n·T from tat; idle again once tat is past', async () => {
        await store.takeRate(r(), rate(T0));
        expect(await store.takeRate(r(), rate(T0, { count: 2 }))).toEqual({ kind: 'granted', tat: T0 + 7.5 });
        expect(await store.takeRate(r(), rate(T0 + 7.5))).toEqual({ kind: 'granted', tat: T0 + 10 });
        expect(await store.takeRate(r(), rate(T0 + 10.001))).toEqual({ kind: 'granted', tat: T0 + 12.501 });
      });

      it('gives the same answer whatever the lastTat hint says', async () => {
        await store.takeRate(r(), rate(T0, { lastTat: T0 + 999 })); // says busy: it is idle
        expect((await item(r()))?.tat).toBe(T0 + 2.5);
        expect(await store.takeRate(r(), rate(T0, { lastTat: T0 - 999 }))).toEqual({ kind: 'granted', tat: T0 + 5 });
        expect(await store.takeRate(r(), rate(T0 + 100, { lastTat: T0 + 5 }))).toEqual({
          kind: 'granted',
          tat: T0 + 102.5,
        });
      });

      it('refuses a first start beyond the horizon with the stored tat, changing nothing', async () => {
        const req = rate(T0, { intervalMs: 100, horizonMs: 250 });
        expect(await store.takeRate(r(), req)).toEqual({ kind: 'granted', tat: T0 + 100 });
        expect(await store.takeRate(r(), req)).toEqual({ kind: 'granted', tat: T0 + 200 });
        // tat = now + 200: start at +200 is within 250.
        expect(await store.takeRate(r(), req)).toEqual({ kind: 'granted', tat: T0 + 300 });
        // tat = now + 300: the next start would be at +300.
        expect(await store.takeRate(r(), req)).toEqual({ kind: 'wait', tat: T0 + 300 });
        expect(await store.takeRate(r(), req)).toEqual({ kind: 'wait', tat: T0 + 300 });
        expect((await item(r()))?.tat).toBe(T0 + 300);
        // Exactly at the horizon is in.
        expect(await store.takeRate(r(), { ...req, now: T0 + 50 })).toEqual({ kind: 'granted', tat: T0 + 400 });
      });

      it('lets tat run ahead of the horizon by the tolerance (burst)', async () => {
        const req = rate(T0, { intervalMs: 100, toleranceMs: 200, horizonMs: 0 });
        const answers = [];
        for (let i = 0; i < 4; i += 1) answers.push(await store.takeRate(r(), req));
        expect(answers).toEqual([
          { kind: 'granted', tat: T0 + 100 },
          { kind: 'granted', tat: T0 + 200 },
          { kind: 'granted', tat: T0 + 300 },
          { kind: 'wait', tat: T0 + 300 },
        ]);
      });

      it('adds decimals exactly: 400 takes of T = 2.5 ms and of T = 333.334 ms stay on the microsecond', async () => {
        let last = 0;
        for (let i = 0; i < 400; i += 1) {
          const a = await store.takeRate(r(1), rate(T0, { horizonMs: 86_400_000 }));
          if (a.kind === 'granted') last = a.tat;
        }
        expect(last).toBe(T0 + 1000);
        for (let i = 0; i < 3; i += 1) {
          const a = await store.takeRate(r(2), rate(T0, { intervalMs: 333.334, horizonMs: 86_400_000 }));
          if (a.kind === 'granted') last = a.tat;
        }
        expect(last).toBe(T0 + 1000.002);
        expect((await item(r(2)))?.tat).toBe(T0 + 1000.002);
        // 403 requests one after another: on moto, which serves one request at a time, a loaded
        // machine can need minutes, and a case cut off by its timeout would go on taking from
        // the next case's keys.
      }, 300_000);

      contractCase('concurrentTakes', async () => {
        const req = rate(T0, { count: 2, horizonMs: 86_400_000 });
        const answers = await settleAll(Array.from({ length: 30 }, () => store.takeRate(r(), req)));
        const tats = answers.map((a) => (a.kind === 'granted' ? a.tat : Number.NaN)).sort((a, b) => a - b);
        expect(tats).toEqual(Array.from({ length: 30 }, (_, i) => T0 + (i + 1) * 5));
      });
    });

    describe('Method: pauseRate', () => {
      it('blocks takeRate until untilMs (answering it and the tat), then grants', async () => {
        await store.takeRate(r(), rate(T0));
        await store.pauseRate(r(), T0 + 30_000);
        expect(await store.takeRate(r(), rate(T0 + 10))).toEqual({
          kind: 'wait',
          tat: T0 + 2.5,
          pausedUntil: T0 + 30_000,
        });
        expect(await store.takeRate(r(), rate(T0 + 29_999.999, { lastTat: T0 + 29_999.999 }))).toEqual({
          kind: 'wait',
          tat: T0 + 2.5,
          pausedUntil: T0 + 30_000,
        });
        expect(await store.takeRate(r(), rate(T0 + 30_000))).toEqual({ kind: 'granted', tat: T0 + 30_002.5 });
      });

      it('never shortens a longer pause; a longer one extends it', async () => {
        await store.pauseRate(r(), T0 + 30_000);
        await store.pauseRate(r(), T0 + 5_000);
        expect((await item(r()))?.paused_until).toBe(T0 + 30_000);
        expect((await store.takeRate(r(), rate(T0 + 10_000))).kind).toBe('wait');
        await store.pauseRate(r(), T0 + 60_000, 1_900_000_000);
        expect(await item(r())).toStrictEqual({ pk: r(), paused_until: T0 + 60_000, expires_at: 1_900_000_000 });
        expect(await store.takeRate(r(), rate(T0 + 59_000))).toEqual({ kind: 'wait', pausedUntil: T0 + 60_000 });
        expect(await store.takeRate(r(), rate(T0 + 60_000))).toEqual({ kind: 'granted', tat: T0 + 60_002.5 });
      });
    });

    describe('Method: noteRefusals + list', () => {
      it('adds up refusals and keeps the time of the last note', async () => {
        await store.noteRefusals(r(), 3, T0);
        await store.noteRefusals(r(), 4, T0 + 10_000, 1_900_000_000);
        expect(await item(r())).toStrictEqual({
          pk: r(),
          refused: 7,
          refused_at: T0 + 10_000,
          expires_at: 1_900_000_000,
        });
      });

      it('lists every item with the attributes it has', async () => {
        await store.addHolder(c(1), 'a.1', LEASE, 2);
        await store.takeRate(r(1), rate(T0));
        await store.pauseRate(r(1), T0 + 1000);
        await store.noteRefusals(c(2), 1, T0);
        expect(await mine()).toStrictEqual([
          { pk: c(1), holders: { 'a.1': LEASE } },
          { pk: c(2), refused: 1, refused_at: T0 },
          { pk: r(1), tat: T0 + 2.5, paused_until: T0 + 1000 },
        ]);
      });
    });
  });
}
