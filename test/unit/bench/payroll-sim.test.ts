/**
 * The payroll simulation (bench/payroll/simulate.ts) at small sizes: its checks hold on Kaj's
 * flow control, fail without it, and its parts (clock, limits table, provider) are what they
 * claim to be. The limits table runs the `LimitStore` contract the in-memory double and DynamoDB
 * run.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../testing/virtual-clock.js';
import { newTally, SimLimitStore } from '../../../bench/payroll/sim-limit-store.js';
import { maxInWindow, SimProvider } from '../../../bench/payroll/sim-provider.js';
import {
  floorSeconds,
  goalViolations,
  PAYROLL_CONFIGS,
  type PayrollConfig,
  type PayrollReport,
  safetyViolations,
  simulatePayroll,
} from '../../../bench/payroll/simulate.js';
import { limitStoreContract } from '../../contract/limit-store.contract.js';

limitStoreContract('SimLimitStore (bench/payroll)', async () => ({
  store: new SimLimitStore(),
  cleanup: async () => {},
}));

const SLIPS = 2000;
const T0 = Date.UTC(2026, 10, 30);

/** The kaj configuration with a concurrency cap that cannot bind (40/s × 2.2 s of holding < 90). */
const KAJ_C90: PayrollConfig = {
  name: 'kaj-c90',
  limits: {
    ...PAYROLL_CONFIGS.kaj.limits,
    email_provider: { ...PAYROLL_CONFIGS.kaj.limits.email_provider, concurrency: 90 },
  },
};

/** The safety invariants, asserted one by one (a failure names the one broken). */
function expectSafe(r: PayrollReport, emailCap: number): void {
  expect(r.complete).toBe(true);
  expect(r.provider.status429).toBe(0);
  expect(r.provider.peakCallsPerWindow).toBeLessThanOrEqual(40);
  expect(r.peaks.emails).toBeLessThanOrEqual(emailCap);
  expect(r.peaks.emailHolders).toBeLessThanOrEqual(emailCap);
  expect(r.peaks.renders).toBeLessThanOrEqual(60);
  expect(r.peaks.databaseHolders).toBeLessThanOrEqual(60);
  expect(r.provider.emailed).toBe(r.slips);
  expect(r.provider.calls).toBe(r.slips);
  expect(r.provider.duplicates).toBe(0);
  expect(r.failed).toBe(0);
  expect(safetyViolations(r)).toEqual([]);
}

describe('Function: simulatePayroll', () => {
  it('kaj (rate 40/s + concurrency 50): never 41 calls in a 1-s window, caps held, every slip emailed once', async () => {
    const r = await simulatePayroll({ config: PAYROLL_CONFIGS.kaj, slips: SLIPS, seed: 1 });
    expectSafe(r, 50);
    // The rate is what the provider sees: exactly 40 in the busiest window, not fewer.
    expect(r.provider.peakCallsPerWindow).toBe(40);
    expect(r.peaks.emailHolders).toBe(50);
    expect(r.peaks.databaseHolders).toBe(60);
    expect(r.deferrals.total).toBeGreaterThan(0);
    expect(r.store.totalCalls).toBeGreaterThan(0);
  });

  it('kaj with a cap that does not bind: makespan within 1.05× the floor, safely', async () => {
    const r = await simulatePayroll({ config: KAJ_C90, slips: SLIPS, seed: 2 });
    expectSafe(r, 90);
    expect(r.floorS).toBe(SLIPS / 40);
    expect(r.ratio).toBeLessThanOrEqual(1.05);
    expect(r.provider.steadyRate).toBeGreaterThan(39.9);
    expect(goalViolations(r)).toEqual([]);
  });

  it('kaj as declared (concurrency 50 beside the rate): within 1.05× the floor — a slot is taken at the start, not held through the wait for it', async () => {
    const r = await simulatePayroll({ config: PAYROLL_CONFIGS.kaj, slips: 5000, seed: 1 });
    expectSafe(r, 50);
    expect(r.ratio).toBeLessThanOrEqual(1.05);
    // Held through a wait of up to localWaitMs (1 s), 50 slots carried about 31/s.
    expect(r.provider.steadyRate).toBeGreaterThan(38.5);
  });

  it('the checks fail without flow control: bypassing the limiter brings 429s, > 40 per window, > 50 emails at once', async () => {
    const r = await simulatePayroll({ config: PAYROLL_CONFIGS.kaj, slips: SLIPS, seed: 1, bypassLimiter: true });
    expect(r.bypassed).toBe(true);
    expect(r.store.totalCalls).toBe(0);
    expect(r.provider.status429).toBeGreaterThan(0);
    expect(r.provider.peakCallsPerWindow).toBeGreaterThan(40);
    expect(r.peaks.emails).toBeGreaterThan(50);
    expect(r.peaks.renders).toBeGreaterThan(60);
    const broken = safetyViolations(r);
    expect(broken).toContain(`${r.provider.status429} calls answered 429`);
    expect(broken.some((v) => v.includes('calls in one window'))).toBe(true);
    expect(broken.some((v) => v.includes('emails at once'))).toBe(true);
    expect(() => expectSafe(r, 50)).toThrow();
  });

  it('seed (concurrency 45 as a proxy for the rate): the provider sees bursts over 40 and answers 429', async () => {
    const r = await simulatePayroll({ config: PAYROLL_CONFIGS.seed, slips: SLIPS, seed: 1 });
    expect(r.floorS).toBeCloseTo(SLIPS / 37.5, 6);
    expect(r.peaks.emails).toBeLessThanOrEqual(45);
    expect(r.provider.status429).toBeGreaterThan(0);
    expect(r.provider.peakCallsPerWindow).toBeGreaterThan(40);
    // Retried after Retry-After: still every slip emailed once.
    expect(r.provider.emailed).toBe(SLIPS);
    expect(r.provider.duplicates).toBe(0);
    expect(r.retries).toBe(r.provider.status429);
  });

  it('replays: the same seed gives the same run', async () => {
    const a = await simulatePayroll({ config: PAYROLL_CONFIGS.kaj, slips: 300, seed: 7 });
    const b = await simulatePayroll({ config: PAYROLL_CONFIGS.kaj, slips: 300, seed: 7 });
    expect({ ...a, sim: undefined }).toEqual({ ...b, sim: undefined });
  });
});

describe('Function: floorSeconds', () => {
  it('is slips ÷ the binding email rate: 45 / 1.2 s for seed, 40/s for kaj', () => {
    expect(floorSeconds(PAYROLL_CONFIGS.seed, 50_000)).toBeCloseTo(1333.333, 3);
    expect(floorSeconds(PAYROLL_CONFIGS.kaj, 50_000)).toBe(1250);
  });
});

describe('Class: SimLimitStore', () => {
  it('takes its latency on the clock per request, each decided at its midpoint', async () => {
    const clock = new VirtualClock(T0);
    const store = new SimLimitStore({ clock, latencyMs: 5 });
    let answeredAt = 0;
    // On a new item, as on DynamoDB: the add into the map fails (no map), then the map is made.
    void store.addHolder('c#x', 'a.1', T0 + 60_000, 1).then(() => {
      answeredAt = clock.now();
    });
    // A call 1 ms later is one step behind: it finds the map made (at +7.5 ms) and full.
    let second: string | undefined;
    clock.at(1, () => {
      void store.addHolder('c#x', 'b.1', T0 + 60_000, 1).then((r) => {
        second = r.kind;
      });
    });
    await clock.run();
    expect(answeredAt).toBe(T0 + 10);
    expect(second).toBe('full');
    expect(store.tally.calls.addHolder).toBe(2);
  });

  it('bills write units as AWS does: 1 for a failed write on no item, 2 for an item over 1 KB', async () => {
    const store = new SimLimitStore();
    await store.removeHolder('c#none', 'a.1'); // condition fails, no item: 1 unit
    expect(store.tally).toMatchObject({ updateItems: 1, failedConditions: 1, writeUnits: 1 });
    const lease = 1_796_083_200_123.5;
    for (let i = 0; i < 50; i += 1) await store.addHolder('c#big', `abcdef012345.${i.toString(36)}`, lease, 60);
    const before = store.tally.writeUnits;
    // 50 holders of ~25 bytes each: the item is over 1 KB, so even a refused add costs 2 units.
    expect((await store.addHolder('c#big', 'abcdef012345.zz', lease, 50)).kind).toBe('full');
    expect(store.tally.writeUnits - before).toBe(2);
    expect(store.tally.peakHolders.get('c#big')).toBe(50);
  });

  it('makes the two writes of DynamoLimitStore when the tat hint is stale, and attributes them', async () => {
    const mine = newTally();
    const store = new SimLimitStore({ attribute: () => mine });
    await store.takeRate('r#x', { now: T0, count: 1, intervalMs: 25, toleranceMs: 0, horizonMs: 1000 });
    // Says idle (lastTat in the past) while the item is busy: the idle write fails, the busy one succeeds.
    const answer = await store.takeRate('r#x', {
      now: T0,
      count: 1,
      intervalMs: 25,
      toleranceMs: 0,
      horizonMs: 1000,
      lastTat: T0 - 1,
    });
    expect(answer).toEqual({ kind: 'granted', tat: T0 + 50 });
    expect(store.tally.calls.takeRate).toBe(2);
    expect(store.tally.updateItems).toBe(3);
    expect(mine).toEqual({ calls: 2, updateItems: 3, writeUnits: 3 });
  });
});

describe('Class: SimProvider', () => {
  it('accepts 40 in any sliding second, answers the 41st 429, and counts a key accepted twice', () => {
    const p = new SimProvider(100, 40, 1000, 1);
    for (let i = 0; i < 40; i += 1) expect(p.send(i, T0 + i * 10).ok).toBe(true);
    expect(p.send(40, T0 + 999)).toEqual({ ok: false, retryAfterSeconds: 1 });
    // The first call leaves the window (t − 1000, t] at T0 + 1000 exactly.
    expect(p.send(40, T0 + 1000).ok).toBe(true);
    expect(p.send(3, T0 + 1015).ok).toBe(true);
    expect(p.duplicates).toBe(1);
    expect(p.emailed()).toBe(41);
    expect(p.peakPerWindow('calls')).toBe(41);
    expect(p.peakPerWindow('accepted')).toBe(40);
  });

  it('maxInWindow counts [x, x + window) to the microsecond', () => {
    const starts = Float64Array.from([0, 250_000, 500_000, 750_000, 1_000_000]);
    expect(maxInWindow(starts, 1_000_000)).toBe(4);
    expect(maxInWindow(starts, 1_000_001)).toBe(5);
  });
});
