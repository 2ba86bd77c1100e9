/**
 * The limiter on the in-memory store (proved equal to DynamoDB's by test/contract/), driven by a
 * fake clock: no real time passes, so thousands of starts are checked to the microsecond.
 */
import { describe, expect, it } from 'vitest';
import { KajError } from '../../../shared/errors.js';
import { deferralSeconds, RefusalStreak } from '../../../shared/limit/deferral.js';
import { LimitDefinitionError, LimitUnavailableError } from '../../../shared/limit/errors.js';
import { Limiter } from '../../../shared/limit/limiter.js';
import type { LimiterDeps } from '../../../shared/limit/options.js';
import { type LimitUse, resolveLimits } from '../../../shared/limit/spec.js';
import { RecordingLogger } from '../../../shared/runtime/logger.js';
import type { Admission, Permit } from '../../../shared/task/admission.js';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { FakeClock, sequenceRandom } from '../../../testing/doubles.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const LEASE_MS = 60_000;

/**
 * The repository's FakeClock, with sleeps that wake in time order: `sleep(ms)` waits until the
 * clock reaches now + ms, and `run(work)` moves the clock from one wake-up to the next (letting
 * every ready promise run in between) until `work` settles. Concurrent sleepers therefore each
 * wake at their own time, as on a real clock, where FakeClock's own sleep adds them up.
 */
class TimerClock extends FakeClock {
  private timers: { at: number; seq: number; wake: () => void }[] = [];
  private seq = 0;

  override sleep(ms: number): Promise<void> {
    return new Promise((wake) => {
      this.timers.push({ at: this.now() + Math.max(0, ms), seq: this.seq++, wake });
    });
  }

  async run<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    work.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (settled) return work;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift();
      if (next === undefined) throw new Error('nothing to wait for, and the work is not done (a deadlock)');
      if (next.at > this.now()) this.set(next.at);
      next.wake();
    }
  }
}

const specs = resolveLimits({
  email_provider: { rate: '40/s', concurrency: 50, learnRetryAfter: true },
  database: { concurrency: 60 },
  per_tenant: { concurrency: 5 },
  forty: { rate: '40/s' },
  fast: { rate: '400/s' },
  bursty: { rate: '10/s', burst: 5 },
  slow: { rate: '1/s' },
  tenth: { rate: '10/s', learnRetryAfter: true },
  tenth_quiet: { rate: '10/s' },
  forty_margin: { rate: '40/s', arrivalJitterMs: 25 },
  quarter: { rate: '4/s' },
  one_slot: { concurrency: 1 },
  two_slots: { concurrency: 2 },
  five_slots: { concurrency: 5 },
  spaced_slot: { rate: '10/s', concurrency: 1 },
  learning_slot: { rate: '10/s', concurrency: 1, learnRetryAfter: true },
  keyed_rate: { rate: '1/s' },
});

function use(name: string, key?: string): LimitUse {
  const spec = specs.get(name);
  if (spec === undefined) throw new Error(`no limit ${name} in this test`);
  return key === undefined ? { spec } : { spec, key };
}

interface World {
  readonly clock: TimerClock;
  readonly store: MemoryLimitStore;
  readonly logger: RecordingLogger;
  readonly limiters: Limiter[];
  /** The first limiter. */
  readonly limiter: Limiter;
}

/** `count` limiters (processes) sharing one store and one clock. */
function world(count = 1, deps: Partial<LimiterDeps> = {}): World {
  const clock = new TimerClock(T0);
  const store = new MemoryLimitStore();
  const logger = new RecordingLogger();
  const random = sequenceRandom([0.5]); // one source: every process gets its own id
  const limiters = Array.from(
    { length: count },
    () => new Limiter({ store, clock, random, logger, leaseSeconds: LEASE_MS / 1000, leadMs: 0, ...deps }),
  );
  return { clock, store, logger, limiters, limiter: limiters[0] as Limiter };
}

function granted(a: Admission): Permit {
  if (a.kind !== 'granted') return expect.fail(`refused: ${JSON.stringify(a.refusal)}`);
  return a.permit;
}

function refusal(a: Admission) {
  if (a.kind !== 'refused') return expect.fail('granted, expected a refusal');
  return a.refusal;
}

/** Most start times (ms) in any window [x, x + windowMs), to the microsecond. */
function maxInWindow(starts: readonly number[], windowMs: number): number {
  const s = starts.map((t) => Math.round(t * 1000)).sort((a, b) => a - b);
  const w = Math.round(windowMs * 1000);
  let max = 0;
  let j = 0;
  for (let i = 0; i < s.length; i += 1) {
    while (j < s.length && (s[j] as number) < (s[i] as number) + w) j += 1;
    max = Math.max(max, j - i);
  }
  return max;
}

/** Gaps (µs) between consecutive start times, sorted. */
function gapsUs(starts: readonly number[]): number[] {
  const s = starts.map((t) => Math.round(t * 1000)).sort((a, b) => a - b);
  return s.slice(1).map((t, i) => t - (s[i] as number));
}

interface Drive {
  readonly uses: readonly LimitUse[];
  readonly callers: number;
  /** Stop once this many tasks have started. */
  readonly total: number;
  /** How long task i of caller c runs. */
  readonly workMs: (c: number, i: number) => number;
  /** How long caller c idles before its task i (default none). */
  readonly idleMs?: (c: number, i: number, now: number) => number;
  /**
   * How a refused task waits: until its `retryAt` (default), or as the consumer defers its message
   * (`deferralSeconds` with a per-process `RefusalStreak`: whole seconds, growing while refused).
   */
  readonly retry?: 'retryAt' | 'deferral';
}

/**
 * Callers spread over the world's limiters, each running tasks one after another: acquire, run,
 * release; a refused task waits until its `retryAt` (as its deferred message would). Returns the
 * start times and the most tasks that ran at once.
 */
async function drive(w: World, d: Drive): Promise<{ starts: number[]; mostRunning: number; refusals: number }> {
  const starts: number[] = [];
  let begun = 0;
  let running = 0;
  let mostRunning = 0;
  let refusals = 0;
  const streaks = new Map(w.limiters.map((l) => [l, new RefusalStreak()]));
  const random = sequenceRandom([0.1, 0.7, 0.4, 0.9, 0.25]);
  const caller = async (limiter: Limiter, c: number): Promise<void> => {
    const streak = streaks.get(limiter) as RefusalStreak;
    for (let i = 0; begun < d.total; i += 1) {
      const idle = d.idleMs?.(c, i, w.clock.now()) ?? 0;
      if (idle > 0) await w.clock.sleep(idle);
      for (;;) {
        const a = await limiter.acquire(d.uses, `task-${c}-${i}`);
        if (a.kind === 'granted') {
          for (const u of d.uses) streak.granted(u.spec.name);
          expect(w.clock.now()).toBe(a.permit.startAt);
          begun += 1;
          starts.push(w.clock.now());
          running += 1;
          mostRunning = Math.max(mostRunning, running);
          await w.clock.sleep(d.workMs(c, i));
          running -= 1;
          await limiter.release(a.permit);
          break;
        }
        refusals += 1;
        const now = w.clock.now();
        expect(a.refusal.retryAt).toBeGreaterThanOrEqual(now);
        if (d.retry === 'deferral') {
          const k = streak.refused(a.refusal.limit, now);
          await w.clock.sleep(deferralSeconds(a.refusal, now, k, random, { baseSeconds: 1, capSeconds: 120 }) * 1000);
        } else {
          await w.clock.sleep(Math.max(1, a.refusal.retryAt - now));
        }
      }
    }
  };
  await w.clock.run(
    Promise.all(Array.from({ length: d.callers }, (_, c) => caller(w.limiters[c % w.limiters.length] as Limiter, c))),
  );
  return { starts, mostRunning, refusals };
}

describe('Class: Limiter', () => {
  describe('Constructor', () => {
    it.each([
      ['leaseSeconds', { leaseSeconds: 0 }],
      ['localWaitMs', { localWaitMs: -1 }],
      ['leadMs', { leadMs: -1 }],
      ['reserve', { reserve: 1.5 }],
      ['keyTtlSeconds', { keyTtlSeconds: Number.NaN }],
    ] as const)('a bad %s is a LimitDefinitionError naming that option, never retried', (field, bad) => {
      let thrown: unknown;
      try {
        world(1, bad);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(LimitDefinitionError);
      expect(thrown).toMatchObject({ field, retryable: false });
      expect((thrown as Error).message).toMatch(new RegExp(`^${field}: `));
    });
  });

  describe('Method: acquire (rate)', () => {
    it('the reference workload: 5,000 starts of 60 callers on 3 limiters, never 41 in any 1 s window', async () => {
      const w = world(3);
      const inUse = { c: 0, most: 0 };
      w.store.beforeCall = () => {
        // Every holder write checks the shared state: the concurrency limits hold too.
        const held = (pk: string) => Object.keys(w.store.items.get(pk)?.holders ?? {}).length;
        inUse.most = Math.max(inUse.most, held('c#email_provider'));
        expect(held('c#email_provider')).toBeLessThanOrEqual(50);
        expect(held('c#database')).toBeLessThanOrEqual(60);
      };
      const { starts, mostRunning } = await drive(w, {
        uses: [use('email_provider'), use('database')],
        callers: 60,
        total: 5000,
        workMs: (c, i) => ((c * 7919 + i * 104_729) % 1500) + 1,
        retry: 'deferral',
      });
      expect(starts.length).toBeGreaterThanOrEqual(5000);
      expect(maxInWindow(starts, 1000)).toBe(40);
      // Burst 1: no two starts closer than T = 25 ms, whichever limiter gave them.
      expect(Math.min(...gapsUs(starts))).toBeGreaterThanOrEqual(25_000);
      // And the rate is used, not just respected: at least 95 % of 40/s.
      const spanMs = Math.max(...starts) - Math.min(...starts);
      expect(((starts.length - 1) * 25) / spanMs).toBeGreaterThan(0.95);
      expect(mostRunning).toBeLessThanOrEqual(50);
    });

    it("'400/s' (T = 2.5 ms): every start exactly 2.5 ms after the one before, 400 in every 1 s window", async () => {
      const w = world(1);
      const { starts } = await drive(w, { uses: [use('fast')], callers: 20, total: 4000, workMs: () => 0 });
      const gaps = gapsUs(starts);
      expect(new Set(gaps)).toEqual(new Set([2500]));
      expect(maxInWindow(starts, 1000)).toBe(400);
      expect(maxInWindow(starts, 999.999)).toBe(400);
      expect(maxInWindow(starts, 1000.001)).toBe(401);
    });

    it('burst 5 of 10/s: 5 start at once after an idle spell, never more than 14 (count + burst − 1) in 1 s', async () => {
      const w = world(3);
      // Waves of 60 tasks every 10 s: the bucket is idle (and full) when each wave arrives.
      const { starts } = await drive(w, {
        uses: [use('bursty')],
        callers: 60,
        total: 600,
        workMs: () => 10,
        idleMs: (_c, _i, now) => 10_000 - ((now - T0) % 10_000),
      });
      expect(maxInWindow(starts, 1000)).toBe(14);
      expect(maxInWindow(starts, 0.001)).toBe(5); // at one instant: the burst
      expect(maxInWindow(starts, 100)).toBe(5);
    });

    it('a refused start says exactly when it is worth trying again', async () => {
      const w = world(1);
      const [a, b, c] = await w.clock.run(Promise.all([0, 1, 2].map((i) => w.limiter.acquire([use('slow')], `t${i}`))));
      expect(granted(a as Admission).startAt).toBe(T0);
      expect(granted(b as Admission).startAt).toBe(T0 + 1000); // due within the 1 s local wait
      // The third start would be due at T0 + 2000: worth asking again once that is within 1 s.
      expect(refusal(c as Admission)).toEqual({ limit: 'slow', reason: 'rate', retryAt: T0 + 1000 });
      expect(w.clock.now()).toBe(T0 + 1000);
      const again = granted(await w.clock.run(w.limiter.acquire([use('slow')], 't2')));
      expect(again.startAt).toBe(T0 + 2000);
      expect(w.clock.now()).toBe(T0 + 2000);
    });

    it('a start the store grants after its time is forfeited, never used late; asked ahead by leadMs it is kept exactly', async () => {
      // Every store call takes 30 ms; the rate's interval is 25 ms.
      const late = world(1, { leadMs: 0 });
      late.store.beforeCall = () => late.clock.advance(30);
      const first = granted(await late.clock.run(late.limiter.acquire([use('forty')], 'a')));
      // The start asked for "now" came 30 ms late: forfeited once; the lead learnt the store's
      // 30 ms round trip (asked 30 + 4 · 15 = 90 ms ahead), so the retaken start was used at its
      // time; after that second 30 ms round trip the lead is 30 + 4 · 11.25 = 75 ms.
      expect(late.limiter.lateStarts).toBe(1);
      expect(late.limiter.leadMs).toBe(75);
      expect(first.startAt).toBe(late.clock.now());
      for (const id of ['b', 'c', 'd']) {
        const p = granted(await late.clock.run(late.limiter.acquire([use('forty')], id)));
        expect(p.startAt).toBe(late.clock.now());
      }
      expect(late.limiter.lateStarts).toBe(1);
      expect(late.limiter.leadMs).toBeGreaterThanOrEqual(30);

      const ahead = world(1, { leadMs: 50 });
      ahead.store.beforeCall = () => ahead.clock.advance(30);
      const starts: number[] = [];
      for (const id of ['a', 'b', 'c', 'd', 'e', 'f']) {
        const p = granted(await ahead.clock.run(ahead.limiter.acquire([use('forty')], id)));
        expect(p.startAt).toBe(ahead.clock.now()); // used at its time, not after it
        starts.push(p.startAt);
      }
      expect(ahead.limiter.lateStarts).toBe(0);
      const gaps = starts.slice(1).map((s, i) => s - (starts[i] as number));
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(25);
    });

    it('without a sleep on the clock, takes only starts due now', async () => {
      const clock = { now: () => T0 };
      const limiter = new Limiter({
        store: new MemoryLimitStore(),
        clock,
        random: sequenceRandom([0.5]),
        logger: new RecordingLogger(),
        leaseSeconds: 60,
      });
      expect(granted(await limiter.acquire([use('slow')], 'a')).startAt).toBe(T0);
      expect(refusal(await limiter.acquire([use('slow')], 'b'))).toEqual({
        limit: 'slow',
        reason: 'rate',
        retryAt: T0 + 1000,
      });
    });

    it('two rate limits: the task starts when both allow, each start granted at that very time', async () => {
      const w = world(1);
      // 'tenth_quiet' is busy for 300 ms; 'quarter' is idle.
      for (let i = 0; i < 3; i += 1) await w.clock.run(w.limiter.acquire([use('tenth_quiet')], `warm${i}`));
      w.clock.set(T0);
      w.store.items.set('r#tenth_quiet', { pk: 'r#tenth_quiet', tat: T0 + 300 });
      const permit = granted(await w.clock.run(w.limiter.acquire([use('quarter'), use('tenth_quiet')], 't')));
      expect(permit.startAt).toBe(T0 + 300);
      expect(w.clock.now()).toBe(T0 + 300);
      // 'quarter' was asked for its start no earlier than T0 + 300, and gave exactly that.
      expect(w.store.items.get('r#quarter')?.tat).toBe(T0 + 300 + 250);
      expect(w.store.items.get('r#tenth_quiet')?.tat).toBe(T0 + 400);
    });

    it('reservations (reserve 10) on 3 limiters: over 4× fewer store calls, and still never 41 in 1 s', async () => {
      const run = async (reserve: number) => {
        const w = world(3, { reserve });
        const { starts } = await drive(w, {
          uses: [use('forty')],
          callers: 60,
          total: 3000,
          workMs: (c, i) => (c * 31 + i * 17) % 200,
          // Callers come back when a start can be had (not after a jittered deferral): the calls
          // counted are then the grants, which reservations batch, not the refusals of a backlog.
          retry: 'retryAt',
        });
        return { starts, calls: w.store.calls.takeRate };
      };
      const single = await run(1);
      const batched = await run(10);
      for (const { starts } of [single, batched]) {
        expect(maxInWindow(starts, 1000)).toBeLessThanOrEqual(40);
        expect(Math.min(...gapsUs(starts))).toBeGreaterThanOrEqual(25_000);
      }
      expect(maxInWindow(batched.starts, 1000)).toBeGreaterThanOrEqual(35); // still using the rate
      expect(batched.calls * 4).toBeLessThan(single.calls);
    });

    it('a reserved start is used at its time or not at all: one already past is dropped, not used late', async () => {
      const w = world(1, { reserve: 3 });
      // T = 100 ms: one store call reserves T0, T0 + 100, T0 + 200.
      expect(granted(await w.clock.run(w.limiter.acquire([use('tenth_quiet')], 'a'))).startAt).toBe(T0);
      expect(w.store.calls.takeRate).toBe(1);
      w.clock.advance(150); // T0 + 100 passes unused
      expect(granted(await w.clock.run(w.limiter.acquire([use('tenth_quiet')], 'b'))).startAt).toBe(T0 + 200);
      expect(w.store.calls.takeRate).toBe(1);
      // The pool is empty: the store's next start is T0 + 300.
      expect(granted(await w.clock.run(w.limiter.acquire([use('tenth_quiet')], 'c'))).startAt).toBe(T0 + 300);
      expect(w.store.calls.takeRate).toBe(2);
    });

    it('a refused acquire gives its rate start back: the next acquire here uses it, without a store call', async () => {
      const w = world(2);
      const [a, b] = w.limiters as [Limiter, Limiter];
      const held = granted(await w.clock.run(b.acquire([use('spaced_slot')], 'b'))); // start T0, the slot
      // a: start T0 + 100 taken, then no slot (a holds none, so it does not wait): refused.
      expect(refusal(await w.clock.run(a.acquire([use('spaced_slot')], 'a1'))).reason).toBe('concurrency');
      const calls = w.store.calls.takeRate;
      await b.release(held);
      expect(granted(await w.clock.run(a.acquire([use('spaced_slot')], 'a2'))).startAt).toBe(T0 + 100);
      expect(w.store.calls.takeRate).toBe(calls);
    });

    it('keyed uses are independent per key, and their items expire a day after their last use', async () => {
      const w = world(1, { localWaitMs: 0 });
      expect(granted(await w.clock.run(w.limiter.acquire([use('keyed_rate', 'a')], 'a1'))).startAt).toBe(T0);
      expect(refusal(await w.clock.run(w.limiter.acquire([use('keyed_rate', 'a')], 'a2')))).toMatchObject({
        limit: 'keyed_rate',
        key: 'a',
        reason: 'rate',
      });
      expect(granted(await w.clock.run(w.limiter.acquire([use('keyed_rate', 'b')], 'b1'))).startAt).toBe(T0);
      expect(w.store.items.get('r#keyed_rate#a')?.expires_at).toBe(T0 / 1000 + 86_400);
      expect(w.store.items.get('r#keyed_rate')).toBeUndefined();
    });
  });

  describe('Method: acquire (concurrency)', () => {
    it('3 limiters × 20 concurrent callers never run more than 5 at once, and do run 5', async () => {
      const w = world(3);
      w.store.beforeCall = () => {
        expect(Object.keys(w.store.items.get('c#five_slots')?.holders ?? {}).length).toBeLessThanOrEqual(5);
      };
      const { starts, mostRunning } = await drive(w, {
        uses: [use('five_slots')],
        callers: 60,
        total: 300,
        workMs: (c, i) => 10 + ((c * 37 + i * 101) % 290),
      });
      expect(starts.length).toBeGreaterThanOrEqual(300);
      expect(mostRunning).toBe(5);
      expect(w.store.items.get('c#five_slots')?.holders).toEqual({});
    });

    it('a slot another task of this process releases is handed over: no store write', async () => {
      const w = world(1);
      const first = granted(await w.clock.run(w.limiter.acquire([use('one_slot')], 'a')));
      const second = w.limiter.acquire([use('one_slot')], 'b');
      await w.clock.run(new Promise((r) => setImmediate(r))); // b has found the item full
      const before = { ...w.store.calls };
      const holders = { ...w.store.items.get('c#one_slot')?.holders };
      w.clock.advance(100);
      await w.limiter.release(first);
      const permit = granted(await w.clock.run(second));
      expect(w.clock.now()).toBe(T0 + 100);
      expect(w.store.calls).toEqual(before);
      expect(w.store.items.get('c#one_slot')?.holders).toEqual(holders); // the same holder entry
      await w.limiter.release(permit);
      expect(w.store.calls.removeHolder).toBe(1);
      expect(w.store.items.get('c#one_slot')?.holders).toEqual({});
    });

    it('renews the lease on hand-over only when less than half a lease is left', async () => {
      const w = world(1);
      const first = granted(await w.clock.run(w.limiter.acquire([use('one_slot')], 'a')));
      w.clock.advance(35_000); // 25 s of the 60 s lease left
      const second = w.limiter.acquire([use('one_slot')], 'b');
      await w.clock.run(new Promise((r) => setImmediate(r)));
      await w.limiter.release(first);
      granted(await w.clock.run(second));
      expect(w.store.calls.renewHolder).toBe(1);
      expect(Object.values(w.store.items.get('c#one_slot')?.holders ?? {})).toEqual([T0 + 35_000 + LEASE_MS]);
    });

    it('waits at most localWaitMs for a local release, then refuses with a retryAt', async () => {
      const w = world(2);
      const [mine, other] = w.limiters as [Limiter, Limiter];
      granted(await w.clock.run(mine.acquire([use('one_slot')], 'a')));
      // Another process holds nothing here: nothing local to wait for, refused at once.
      expect(refusal(await w.clock.run(other.acquire([use('one_slot')], 'b')))).toEqual({
        limit: 'one_slot',
        reason: 'concurrency',
        retryAt: T0 + 1000,
      });
      expect(w.clock.now()).toBe(T0);
      // This process holds the slot: it waits the local second for it, then refuses.
      const r = refusal(await w.clock.run(mine.acquire([use('one_slot')], 'c')));
      expect(w.clock.now()).toBe(T0 + 1000);
      expect(r).toEqual({ limit: 'one_slot', reason: 'concurrency', retryAt: T0 + 2000 });
    });

    it('a rate start that passes while waiting for a slot is not used late: a new one is taken', async () => {
      const w = world(1);
      const first = granted(await w.clock.run(w.limiter.acquire([use('spaced_slot')], 'a')));
      expect(first.startAt).toBe(T0);
      const second = w.limiter.acquire([use('spaced_slot')], 'b'); // start T0 + 100, then no slot
      await w.clock.run(new Promise((r) => setImmediate(r)));
      w.clock.advance(500);
      await w.limiter.release(first);
      const permit = granted(await w.clock.run(second));
      expect(permit.startAt).toBe(T0 + 500);
      expect(w.store.items.get('r#spaced_slot')?.tat).toBe(T0 + 600);
    });

    it('a dead worker’s slots free themselves one lease later', async () => {
      const w = world(2);
      const [dying, other] = w.limiters as [Limiter, Limiter];
      for (let i = 0; i < 5; i += 1) granted(await w.clock.run(dying.acquire([use('five_slots')], `d${i}`)));
      // `dying` never renews nor releases again.
      expect(refusal(await w.clock.run(other.acquire([use('five_slots')], 'x'))).reason).toBe('concurrency');
      w.clock.advance(LEASE_MS - 1);
      expect(refusal(await w.clock.run(other.acquire([use('five_slots')], 'x'))).reason).toBe('concurrency');
      expect(w.store.calls.evictHolders).toBe(0);
      w.clock.advance(2);
      const permit = granted(await w.clock.run(other.acquire([use('five_slots')], 'x')));
      expect(w.store.calls.evictHolders).toBe(1);
      expect(Object.keys(w.store.items.get('c#five_slots')?.holders ?? {})).toHaveLength(1);
      await other.release(permit);
      for (let i = 0; i < 5; i += 1) granted(await w.clock.run(other.acquire([use('five_slots')], `y${i}`)));
    });

    it('keyed uses: each key has the whole limit (per tenant 5), and its item expires', async () => {
      const w = world(1, { localWaitMs: 0 });
      for (let i = 0; i < 5; i += 1) granted(await w.clock.run(w.limiter.acquire([use('per_tenant', 'a')], `a${i}`)));
      expect(refusal(await w.clock.run(w.limiter.acquire([use('per_tenant', 'a')], 'a5')))).toMatchObject({
        limit: 'per_tenant',
        key: 'a',
        reason: 'concurrency',
      });
      for (let i = 0; i < 5; i += 1) granted(await w.clock.run(w.limiter.acquire([use('per_tenant', 'b')], `b${i}`)));
      expect(w.store.items.get('c#per_tenant#b')?.expires_at).toBe(T0 / 1000 + 86_400);
    });

    it('rejects a key that is not 1-128 characters, taking nothing', async () => {
      const w = world(1);
      await expect(w.limiter.acquire([use('per_tenant', '')], 't')).rejects.toBeInstanceOf(LimitDefinitionError);
      await expect(w.limiter.acquire([use('per_tenant', 'x'.repeat(129))], 't')).rejects.toThrow(
        /limits\.per_tenant\.key/,
      );
      expect(w.store.totalCalls).toBe(0);
    });

    it('no uses: granted at once without a store call', async () => {
      const w = world(1);
      expect(granted(await w.limiter.acquire([], 't')).startAt).toBe(T0);
      expect(w.store.totalCalls).toBe(0);
    });
  });

  describe('Method: acquire (failures)', () => {
    it('a store failure mid-way: LimitUnavailableError with the cause, and nothing left held', async () => {
      const w = world(1);
      const outage = new StoreUnavailableError('DynamoDB UpdateItem failed: ThrottlingException');
      w.store.failWhen = (op, pk) => (op === 'addHolder' && pk === 'c#email_provider' ? outage : undefined);
      const err = await w.clock
        .run(w.limiter.acquire([use('email_provider'), use('database')], 't-1'))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LimitUnavailableError);
      expect(err).toBeInstanceOf(KajError);
      expect((err as LimitUnavailableError).retryable).toBe(true);
      expect((err as LimitUnavailableError).taskId).toBe('t-1');
      expect((err as LimitUnavailableError).cause).toBe(outage);
      // c#database (taken first, in key order) was given back.
      expect(w.store.calls.addHolder).toBe(2);
      expect(w.store.items.get('c#database')?.holders).toEqual({});
      w.store.failWhen = undefined;
      granted(await w.clock.run(w.limiter.acquire([use('email_provider'), use('database')], 't-1')));
    });

    it('a failing rate store: LimitUnavailableError, no slot taken', async () => {
      const w = world(1);
      w.store.failNext.takeRate = new StoreUnavailableError('down');
      await expect(w.clock.run(w.limiter.acquire([use('email_provider')], 't'))).rejects.toBeInstanceOf(
        LimitUnavailableError,
      );
      expect(w.store.calls.addHolder).toBe(0);
    });

    it('notes refusals in the store at most every 10 s per item', async () => {
      const w = world(1, { localWaitMs: 0 });
      granted(await w.clock.run(w.limiter.acquire([use('slow')], 'a')));
      for (let i = 0; i < 3; i += 1) await w.clock.run(w.limiter.acquire([use('slow')], 'b'));
      expect(w.store.calls.noteRefusals).toBe(1);
      expect(w.store.items.get('r#slow')).toMatchObject({ refused: 1, refused_at: T0 });
      w.clock.advance(10_000);
      w.store.items.set('r#slow', { ...(w.store.items.get('r#slow') ?? { pk: 'r#slow' }), tat: T0 + 60_000 });
      await w.clock.run(w.limiter.acquire([use('slow')], 'b'));
      expect(w.store.calls.noteRefusals).toBe(2);
      expect(w.store.items.get('r#slow')).toMatchObject({ refused: 4, refused_at: T0 + 10_000 });
      // Best effort: a failing note does not fail the refusal.
      w.clock.advance(10_000);
      w.store.failNext.noteRefusals = new StoreUnavailableError('down');
      expect((await w.clock.run(w.limiter.acquire([use('slow')], 'b'))).kind).toBe('refused');
    });
  });

  describe('Method: release', () => {
    it('is idempotent: a second release removes nothing (not even a slot taken since)', async () => {
      const w = world(2);
      const [a, b] = w.limiters as [Limiter, Limiter];
      const permit = granted(await w.clock.run(a.acquire([use('one_slot')], 't')));
      await a.release(permit);
      await a.release(permit);
      expect(w.store.calls.removeHolder).toBe(1);
      const other = granted(await w.clock.run(b.acquire([use('one_slot')], 'u')));
      await a.release(permit);
      expect(Object.keys(w.store.items.get('c#one_slot')?.holders ?? {})).toHaveLength(1);
      await b.release(other);
      expect(w.store.items.get('c#one_slot')?.holders).toEqual({});
    });

    it('ignores a permit another limiter gave, and never throws when the store fails', async () => {
      const w = world(2);
      const [a, b] = w.limiters as [Limiter, Limiter];
      const permit = granted(await w.clock.run(a.acquire([use('one_slot')], 't')));
      await b.release(permit);
      expect(w.store.calls.removeHolder).toBe(0);
      w.store.failNext.removeHolder = new StoreUnavailableError('down');
      await expect(a.release(permit)).resolves.toBeUndefined();
      expect(w.logger.entries.map((e) => e.message)).toContain(
        'could not release a limit slot; its lease will free it',
      );
    });
  });

  describe('Method: waitForStart', () => {
    it('resolves at the start of a permit acquired without waiting', async () => {
      const w = world(1, { leadMs: 50 });
      const p = granted(await w.clock.run(w.limiter.acquire([use('forty')], 'a', { waitForStart: false })));
      expect(p.startAt).toBe(T0 + 50);
      expect(w.clock.now()).toBe(T0);
      await w.clock.run(w.limiter.waitForStart(p));
      expect(w.clock.now()).toBe(T0 + 50);
      expect(w.limiter.lateStarts).toBe(0);
    });

    it('a store slower than the lead: the lead learns its round trip, so a start missed during the claim is retaken once, on time', async () => {
      // Store calls take 120 ms and the claim between acquire and waitForStart 300 ms (a loaded
      // emulator). With the fixed 50 ms lead every take would come back late, and so would the
      // retakes 50 and 100 ms ahead: the task would be refused (what moto showed).
      const w = world(1, { leadMs: 50 });
      w.store.beforeCall = () => w.clock.advance(120);
      const starts: number[] = [];
      const forfeits: number[] = [];
      for (let i = 0; i < 6; i += 1) {
        const p = granted(await w.clock.run(w.limiter.acquire([use('forty')], `t${i}`, { waitForStart: false })));
        w.clock.advance(300); // the claim write and the message hold
        await w.clock.run(w.limiter.waitForStart(p));
        expect(p.startAt).toBe(w.clock.now()); // used at its time, never late
        starts.push(p.startAt);
        forfeits.push(w.limiter.lateStarts);
      }
      // The first take came late (before the round trip was known); after it, only the start the
      // 300 ms claim makes each task miss, retaken once and on time.
      expect(forfeits).toEqual([2, 3, 4, 5, 6, 7]);
      expect(w.limiter.leadMs).toBeGreaterThanOrEqual(120);
      const gaps = starts.slice(1).map((t, i) => t - (starts[i] as number));
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(25);
    });

    it('a start missed while the caller claimed is taken again after the next worker’s, never used late', async () => {
      const w = world(2, { leadMs: 50 });
      const [a, b] = w.limiters as [Limiter, Limiter];
      const pa = granted(await w.clock.run(a.acquire([use('forty')], 'a', { waitForStart: false })));
      // a's claim write takes 80 ms: its start (T0 + 50) passes; b takes the next one on time.
      w.clock.advance(80);
      const pb = granted(await w.clock.run(b.acquire([use('forty')], 'b')));
      await w.clock.run(a.waitForStart(pa));
      expect(a.lateStarts).toBe(1);
      expect(pa.startAt).toBe(w.clock.now());
      expect(pa.startAt - pb.startAt).toBeGreaterThanOrEqual(25);
    });

    it('a start missed during a pause waits the pause out before its new start', async () => {
      const w = world(1, { leadMs: 50 });
      const p = granted(await w.clock.run(w.limiter.acquire([use('tenth')], 'a', { waitForStart: false })));
      await w.limiter.pause([use('tenth')], 2);
      w.clock.advance(100);
      await w.clock.run(w.limiter.waitForStart(p));
      expect(p.startAt).toBeGreaterThanOrEqual(T0 + 2_000);
      expect(w.clock.now()).toBe(p.startAt);
    });

    it('a pause this process learns while a permit waits for its start moves the start after the pause', async () => {
      const w = world(1, { leadMs: 50 });
      const p = granted(await w.clock.run(w.limiter.acquire([use('tenth')], 'a', { waitForStart: false })));
      expect(p.startAt).toBe(T0 + 50);
      const waiting = w.limiter.waitForStart(p);
      // Another task of this process got a 429 while p sleeps towards T0 + 50.
      await w.limiter.pause([use('tenth')], 2);
      await w.clock.run(waiting);
      expect(p.startAt).toBeGreaterThanOrEqual(T0 + 2_000);
      expect(w.clock.now()).toBe(p.startAt);
      expect(w.limiter.pausedStarts).toBe(1);
      expect(w.limiter.lateStarts).toBe(0);
    });

    it('a timer firing within half the rate’s arrivalJitterMs after the start is not taken for a missed start', async () => {
      // forty_margin: T = 25.625 ms, so 41 starts span 1,025 ms: 12.5 ms of the 25 ms margin may go to the timer.
      const w = world(1, { leadMs: 50 });
      const p = granted(await w.clock.run(w.limiter.acquire([use('forty_margin')], 'a', { waitForStart: false })));
      const sleep = w.clock.sleep.bind(w.clock);
      w.clock.sleep = (ms: number) => sleep(ms + 12);
      await w.clock.run(w.limiter.waitForStart(p));
      expect(p.startAt).toBe(T0 + 50);
      expect(w.clock.now()).toBe(T0 + 62);
      expect(w.limiter.lateStarts).toBe(0);
    });

    it('a timer firing later than its slack (1 ms without arrivalJitterMs, half of it with) is a missed start: retaken, not used', async () => {
      for (const [name, lateMs] of [
        ['forty', 2],
        ['forty_margin', 13],
      ] as const) {
        const w = world(1, { leadMs: 50 });
        const p = granted(await w.clock.run(w.limiter.acquire([use(name)], 'a', { waitForStart: false })));
        const sleep = w.clock.sleep.bind(w.clock);
        let lateOnce: number = lateMs;
        w.clock.sleep = (ms: number) => {
          const extra = lateOnce;
          lateOnce = 0;
          return sleep(ms + extra);
        };
        await w.clock.run(w.limiter.waitForStart(p));
        expect(w.limiter.lateStarts).toBe(1);
        expect(p.startAt).toBeGreaterThan(T0 + 50 + lateMs);
        expect(w.clock.now()).toBe(p.startAt); // the new start, used at its time
      }
    });

    it('a timer firing early is slept out: the start is never used before its time', async () => {
      const w = world(1, { leadMs: 50 });
      const p = granted(await w.clock.run(w.limiter.acquire([use('forty')], 'a', { waitForStart: false })));
      const sleep = w.clock.sleep.bind(w.clock);
      // Node's timers may fire up to 1 ms early by Date.now() (a timeout under 1 ms is 1 ms).
      w.clock.sleep = (ms: number) => sleep(ms >= 1 ? ms - 0.7 : 1);
      await w.clock.run(w.limiter.waitForStart(p));
      expect(w.clock.now()).toBeGreaterThanOrEqual(p.startAt);
      expect(p.startAt).toBe(T0 + 50);
      expect(w.limiter.lateStarts).toBe(0);
    });

    it('two processes, one whose timer fires 250 ms late: its start is retaken, and no 1-s window holds more than 10 starts', async () => {
      // The issue: `rate: '10/s'` across two workers held 12 starts in one window, because a grant
      // whose timer fired late still started, in the same second as the other worker's next grants.
      const w = world(1, { leadMs: 50 });
      const b = w.limiter;
      let lateOnce = 250; // a's process is starved once: the timer to its start fires 250 ms late
      const starvedClock = {
        now: () => w.clock.now(),
        sleep: (ms: number) => {
          const extra = lateOnce;
          lateOnce = 0;
          return w.clock.sleep(ms + extra);
        },
      };
      const a = new Limiter({
        store: w.store,
        clock: starvedClock,
        random: { next: () => 0.5, id: () => 'starved-process' },
        logger: w.logger,
        leaseSeconds: LEASE_MS / 1000,
        leadMs: 50,
      });
      const starts: number[] = [];
      const pa = granted(await w.clock.run(a.acquire([use('tenth_quiet')], 'a', { waitForStart: false })));
      expect(pa.startAt).toBe(T0 + 50);
      let aStarted = 0;
      const runA = (async () => {
        await a.waitForStart(pa);
        aStarted = w.clock.now();
        starts.push(aStarted);
      })();
      const runB = (async () => {
        for (let i = 0; i < 12; i += 1) {
          const p = granted(await b.acquire([use('tenth_quiet')], `b${i}`, { waitForStart: false }));
          await b.waitForStart(p);
          starts.push(w.clock.now());
        }
      })();
      await w.clock.run(Promise.all([runA, runB]));
      expect(starts).toHaveLength(13);
      expect(maxInWindow(starts, 1000)).toBeLessThanOrEqual(10);
      expect(Math.min(...gapsUs(starts))).toBeGreaterThanOrEqual(100_000);
      expect(a.lateStarts).toBe(1);
      expect(aStarted).toBe(pa.startAt); // its new start, used at its time
    });
  });

  describe('Method: renew', () => {
    it('extends every slot’s lease by leaseSeconds from now', async () => {
      const w = world(1);
      const permit = granted(await w.clock.run(w.limiter.acquire([use('one_slot'), use('two_slots')], 't')));
      w.clock.advance(20_000);
      await w.limiter.renew(permit);
      expect(Object.values(w.store.items.get('c#one_slot')?.holders ?? {})).toEqual([T0 + 20_000 + LEASE_MS]);
      expect(Object.values(w.store.items.get('c#two_slots')?.holders ?? {})).toEqual([T0 + 20_000 + LEASE_MS]);
    });

    it('takes an evicted slot again when there is room; else the task runs on, logged; never throws', async () => {
      const w = world(2);
      const [a, b] = w.limiters as [Limiter, Limiter];
      const permit = granted(await w.clock.run(a.acquire([use('one_slot')], 't')));
      w.clock.advance(LEASE_MS + 1); // the heartbeat came too late
      const item = () => w.store.items.get('c#one_slot')?.holders ?? {};
      await w.store.evictHolders('c#one_slot', { ...item() });
      await a.renew(permit);
      expect(Object.values(item())).toEqual([w.clock.now() + LEASE_MS]);
      expect(w.logger.entries.map((e) => e.message)).toContain(
        'a limit slot was evicted (its lease ended before a heartbeat); taken again',
      );

      await w.store.evictHolders('c#one_slot', { ...item() });
      granted(await w.clock.run(b.acquire([use('one_slot')], 'u'))); // the slot went elsewhere
      await a.renew(permit);
      expect(w.logger.entries.map((e) => e.message)).toContain(
        'a limit slot was evicted and the limit is full: the task runs on without it',
      );
      w.store.failNext.renewHolder = new StoreUnavailableError('down');
      await expect(a.renew(permit)).resolves.toBeUndefined();
    });

    it('does nothing for a released permit', async () => {
      const w = world(1);
      const permit = granted(await w.clock.run(w.limiter.acquire([use('one_slot')], 't')));
      await w.limiter.release(permit);
      const calls = w.store.totalCalls;
      await w.limiter.renew(permit);
      expect(w.store.totalCalls).toBe(calls);
    });
  });

  describe('Method: pause', () => {
    it('blocks every limiter until the time; a shorter pause does not shorten it', async () => {
      const w = world(3, { localWaitMs: 0 });
      const [a, b, c] = w.limiters as [Limiter, Limiter, Limiter];
      granted(await w.clock.run(b.acquire([use('tenth')], 'warm')));
      await a.pause([use('tenth')], 30);
      expect(refusal(await w.clock.run(b.acquire([use('tenth')], 't')))).toEqual({
        limit: 'tenth',
        reason: 'paused',
        retryAt: T0 + 30_000,
      });
      w.clock.advance(6_000);
      await c.pause([use('tenth')], 5);
      expect(refusal(await w.clock.run(c.acquire([use('tenth')], 't')))).toMatchObject({ retryAt: T0 + 30_000 });
      expect(refusal(await w.clock.run(a.acquire([use('tenth')], 't')))).toMatchObject({ reason: 'paused' });
      w.clock.set(T0 + 30_000);
      for (const l of [a, b, c]) {
        granted(await w.clock.run(l.acquire([use('tenth')], 't')));
        w.clock.advance(100);
      }
    });

    it('drops this process’s reserved starts, and pauses only limits that learn Retry-After', async () => {
      const w = world(1, { reserve: 5, localWaitMs: 0 });
      granted(await w.clock.run(w.limiter.acquire([use('tenth')], 'a')));
      w.clock.advance(100); // the next reserved start is due now
      await w.limiter.pause([use('tenth'), use('tenth_quiet'), use('database')], 10);
      expect(refusal(await w.clock.run(w.limiter.acquire([use('tenth')], 'b'))).reason).toBe('paused');
      expect(w.store.calls.pauseRate).toBe(1);
      expect(w.store.items.get('r#tenth_quiet')).toBeUndefined();
    });

    it('a start given back during a pause is not used before the pause ends', async () => {
      const w = world(2);
      const [a, b] = w.limiters as [Limiter, Limiter];
      granted(await w.clock.run(b.acquire([use('learning_slot')], 'b'))); // b holds the slot
      let armed = true;
      w.store.beforeCall = async (op) => {
        // While a's acquire is between its rate start and its slot, a 429 pauses the limit.
        if (op === 'addHolder' && armed) {
          armed = false;
          await a.pause([use('learning_slot')], 10);
        }
      };
      // a takes the start T0 + 100, waits for it before asking for a slot (the pause comes then,
      // at T0 + 100), finds no slot and gives the start back, after the pause.
      expect(refusal(await w.clock.run(a.acquire([use('learning_slot')], 'a1'))).reason).toBe('concurrency');
      w.store.beforeCall = undefined;
      expect(refusal(await w.clock.run(a.acquire([use('learning_slot')], 'a2')))).toEqual({
        limit: 'learning_slot',
        reason: 'paused',
        retryAt: T0 + 100 + 10_000,
      });
    });

    it('ignores a Retry-After of 0 or less; caps a huge one at an hour; reports a store failure', async () => {
      const w = world(1);
      await w.limiter.pause([use('tenth')], 0);
      await w.limiter.pause([use('tenth')], -5);
      expect(w.store.calls.pauseRate).toBe(0);
      await w.limiter.pause([use('tenth')], 10 ** 9);
      expect(w.store.items.get('r#tenth')?.paused_until).toBe(T0 + 3_600_000);
      w.store.failNext.pauseRate = new StoreUnavailableError('down');
      await expect(w.limiter.pause([use('tenth')], 10)).rejects.toBeInstanceOf(LimitUnavailableError);
    });
  });
});
