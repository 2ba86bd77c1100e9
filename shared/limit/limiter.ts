/**
 * The flow-control limiter: one per process (Lambda instance, local worker), shared by every
 * task the process runs at once. It asks the limits store (`shared/limit/limit-store.ts`) for a
 * task's concurrency slots and rate starts right before the task is claimed, and gives them back
 * when the attempt ends. Every rule is here; the store only makes single-item conditional writes.
 *
 * Rates are GCRA (generic cell rate algorithm) on one item per limit: a start is granted at
 * `max(now, base + i·T − τ)` with `base = max(tat, now)`, and `tat` advances by T per start.
 * Whatever the order in which workers reach the item (and whatever their clocks say), two starts
 * k tokens apart are at least `k·T − τ` apart, so a window of `perMs` (≤ count·T, see
 * `RateSpec.intervalMs`) holds at most `count + burst − 1` starts: `count` with burst 1.
 * Every time is computed in whole microseconds, so T = 2.5 ms stays 2.5 ms.
 *
 * @module
 */
import { DEFAULTS } from '../config/resources.js';
import { StartLead } from './lead.js';
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { RandomSource } from '../runtime/random.js';
import { type LimitStore, MAX_EVICT_PER_CALL } from './limit-store.js';
import { LimitDefinitionError, LimitError, LimitUnavailableError } from './errors.js';
import type { LimitSpec, LimitUse } from './spec.js';
import type { Admission, Permit, Refusal } from '../task/admission.js';

export interface LimiterDeps {
  readonly store: LimitStore;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly logger: Logger;
  /** Lease of a concurrency slot; the task's heartbeat renews it (`renew`). */
  readonly leaseSeconds: number;
  /**
   * How long an acquire may wait in-process: for a rate start due within it, or for a slot
   * another task of this process releases. @default DEFAULTS.limitLocalWaitMs
   */
  readonly localWaitMs?: number;
  /**
   * Rate starts reserved per store call. Above 1, the unused ones wait in this process for its
   * next acquires (fewer writes; a process that gets no more tasks forfeits them). @default 1
   */
  readonly reserve?: number;
  /**
   * Rate starts are asked for at least this far ahead. A start is "now" only when the store says
   * so, and its answer comes a round trip later: a start used late sits closer than T to the next
   * one, which another worker may use on time. Asked ahead by more than the round trip, a start
   * is waited for instead, and kept exactly. The floor of the lead: the limiter asks further
   * ahead when the store's measured round trip is longer (`StartLead`). @default DEFAULTS.limitStartLeadMs
   */
  readonly leadMs?: number;
  /** Items of keyed uses expire this long after their last use. @default DEFAULTS.limitKeyTtlSeconds */
  readonly keyTtlSeconds?: number;
}

/** Refusals are noted in the store at most this often per item (stats only). */
const REFUSAL_NOTE_MS = 10_000;
/** A concurrency refusal's guess at when a slot may be free. */
const CONCURRENCY_RETRY_MS = 1_000;
/** Longest pause a provider's Retry-After may impose (a broken header must not stop a limit for days). */
const MAX_PAUSE_SECONDS = 3_600;
/** Items whose local state (pooled starts, tat hints, refusal counts) one process keeps at most. */
const MAX_LOCAL_ITEMS = 10_000;
/**
 * A start used this much after its time still counts as on time (timer granularity), when the
 * rate leaves no margin for more (no `arrivalJitterMs`; see {@link startSlackUs}).
 */
const LATE_TOLERANCE_US = 1000;
/** Times `acquire` takes a new start for one that was past when granted, before it refuses. */
const MAX_LATE_RETRIES = 2;

/** A concurrency slot: one holder entry in a concurrency item. */
interface Slot {
  readonly pk: string;
  readonly id: string;
  readonly use: PlannedUse;
  leaseUntil: number;
}

/** One item a call touches (a use of a limit with both concurrency and rate touches two). */
interface PlannedUse {
  readonly pk: string;
  readonly spec: LimitSpec;
  readonly key: string | undefined;
}

interface Waiter {
  settled: boolean;
  resolve(slot: Slot | undefined): void;
}

/** The starts one acquire holds: each rate item's start, all at `atUs` once granted. */
type Starts =
  | { readonly kind: 'granted'; readonly atUs: number; readonly tokens: ReadonlyMap<string, number> }
  | { readonly kind: 'refused'; readonly refusal: Refusal; readonly use: PlannedUse };

type Take<T> =
  | { readonly kind: 'granted'; readonly value: T }
  | { readonly kind: 'refused'; readonly refusal: Refusal };

class HeldPermit implements Permit {
  released = false;
  renewing: Promise<void> | undefined;
  constructor(
    readonly owner: Limiter,
    readonly taskId: string,
    public startAt: number,
    public slots: Slot[],
    /** The rate uses the start was taken for (a start missed is taken again for them). */
    readonly rates: readonly PlannedUse[],
  ) {}
}

/**
 * Enforces the limits a task uses, for every task of this process.
 *
 * Store calls in the common cases (one use with both a rate and a concurrency): a grant costs
 * one rate write and one holder write (a second rate write when the cached `tat` hint is stale);
 * `release` one removal, none when the slot goes to a task of this process waiting for it; a
 * refusal one write per item asked, plus a refusal note at most every 10 s per item.
 *
 * @example
 * const limiter = new Limiter({ store, clock: systemClock, random: cryptoRandom, logger, leaseSeconds: 60 });
 * const admission = await limiter.acquire(registry.limitUses(def, payload, {}), taskId);
 * if (admission.kind === 'granted') {
 *   try { await run(); } finally { await limiter.release(admission.permit); }
 * }
 */
export class Limiter {
  private readonly store: LimitStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly leaseMs: number;
  private readonly localWaitMs: number;
  private readonly horizonUs: number;
  private readonly leaseUs: number;
  /** How far ahead starts are asked for: the configured lead, or the store's learnt round trip if longer. */
  private readonly lead: StartLead;
  /** Starts forfeited because they were past when granted (see `acquire`); for tests and benchmarks. */
  lateStarts = 0;
  /** Granted starts not used because this process learnt of a pause covering them (retaken after it). */
  pausedStarts = 0;
  /** Acquires that waited in-process for a slot another task of this process released. */
  localWaits = 0;
  private readonly reserve: number;
  private readonly keyTtlSeconds: number;
  private readonly processId: string;
  private holderCount = 0;
  /** Unused reserved starts (µs, ascending) by rate item. */
  private readonly pools = new Map<string, number[]>();
  /** The last `tat` seen per rate item: which conditional write to try first. */
  private readonly lastTat = new Map<string, number>();
  /** Pauses known here (ms), so pooled starts are not used during one. */
  private readonly pausedUntil = new Map<string, number>();
  /** Slots held by this process's tasks, by concurrency item: a waiter here can get one. */
  private readonly held = new Map<string, number>();
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly refusals = new Map<string, { pending: number; notedAt: number }>();

  constructor(d: LimiterDeps) {
    this.store = d.store;
    this.clock = d.clock;
    this.logger = d.logger;
    this.leaseMs = checkPositive('leaseSeconds', d.leaseSeconds) * 1000;
    this.localWaitMs = d.localWaitMs ?? DEFAULTS.limitLocalWaitMs;
    if (!(this.localWaitMs >= 0)) throw new RangeError(`localWaitMs must be >= 0, got ${this.localWaitMs}`);
    // Without a sleep nothing can be waited for: only starts due now are taken.
    this.horizonUs = d.clock.sleep === undefined ? 0 : micros(this.localWaitMs);
    this.leaseUs = micros(this.leaseMs);
    const leadFloorMs = d.clock.sleep === undefined ? 0 : (d.leadMs ?? DEFAULTS.limitStartLeadMs);
    this.lead = new StartLead(leadFloorMs, d.clock.sleep === undefined ? 0 : Math.max(leadFloorMs, this.leaseMs / 4));
    this.reserve = d.reserve ?? 1;
    if (!Number.isInteger(this.reserve) || this.reserve < 1) {
      throw new RangeError(`reserve must be an integer >= 1, got ${this.reserve}`);
    }
    this.keyTtlSeconds = checkPositive('keyTtlSeconds', d.keyTtlSeconds ?? DEFAULTS.limitKeyTtlSeconds);
    // Short holder ids keep a concurrency item of 60 holders under 2 KB (two write units). The
    // end of the id: a counting source (tests) differs there, a random one anywhere.
    this.processId = d.random
      .id()
      .replace(/[^A-Za-z0-9]/g, '')
      .slice(-12);
  }

  /**
   * Takes what `uses` need for one task, or nothing: rate starts first (a start due within
   * `localWaitMs` is taken and waited for here, so the caller starts the task as soon as this
   * resolves), then — once the start is no more than the lead away — concurrency slots in a fixed
   * order (by item key, so no two processes wait on each other). A refusal gives back what the
   * call had taken.
   *
   * @throws LimitUnavailableError when the store fails (whatever was taken is given back)
   * @throws LimitDefinitionError for a key that is not 1-128 characters
   */
  async acquire(
    uses: readonly LimitUse[],
    taskId: string,
    options: {
      /**
       * Sleep here until the permit's `startAt` (a rate start may lie up to `localWaitMs` ahead).
       * The consumer says false and waits itself right before the handler, after its claim write,
       * so that nothing but the timer stands between the start and the call. @default true
       */
      readonly waitForStart?: boolean;
    } = {},
  ): Promise<Admission> {
    const { rates, slots } = plan(uses);
    const taken: Slot[] = [];
    try {
      const leadUs = rates.length > 0 ? this.leadUs() : 0;
      let starts = await this.takeStarts(rates, micros(this.clock.now()) + leadUs);
      if (starts.kind === 'refused') return await this.refuse(starts.refusal, starts.use);
      // A slot counts a running task, not one waiting for its start: the rate start is waited for
      // (all but the lead) before the slots are taken. Held through the wait, a slot would cap
      // the rate at concurrency ÷ (wait + duration): 45 slots, 1 s waits, 1.2 s calls = 20/s.
      const early = starts.atUs - leadUs - micros(this.clock.now());
      if (slots.length > 0 && early > 0) await this.clock.sleep?.(early / 1000);
      let waited = false;
      for (const use of slots) {
        const slot = await this.takeSlot(use);
        if (slot.kind === 'refused') {
          this.giveBack(starts.tokens);
          await this.letGoAll(taken);
          return await this.refuse(slot.refusal, use);
        }
        taken.push(slot.value.slot);
        waited ||= slot.value.waited;
      }
      // A start already past (the store answered late, or this call waited for a slot) would be
      // used late: closer than T to the starts after it, which other workers use on time. Forfeit
      // it (that only under-uses the rate) and take a new one, further ahead; twice at most.
      for (let retry = 1; rates.length > 0 && starts.atUs < micros(this.clock.now()) - LATE_TOLERANCE_US; retry += 1) {
        if (retry > MAX_LATE_RETRIES) {
          await this.letGoAll(taken);
          const use = rates[0] as PlannedUse;
          return await this.refuse(refusalOf(use, 'rate', this.clock.now()), use);
        }
        this.lateStarts += 1;
        starts = await this.takeStarts(rates, micros(this.clock.now()) + this.leadUs() * 2 ** (retry - 1));
        if (starts.kind === 'refused') {
          await this.letGoAll(taken);
          return await this.refuse(starts.refusal, starts.use);
        }
      }
      if (waited) this.localWaits += 1;
      // The granted time itself, not the time it was found on time: lateness is judged from it.
      const startAt = rates.length > 0 ? starts.atUs / 1000 : this.clock.now();
      const permit = new HeldPermit(this, taskId, startAt, taken, rates);
      if (options.waitForStart !== false) await this.waitForStart(permit);
      return { kind: 'granted', permit };
    } catch (err) {
      await this.letGoAll(taken);
      if (err instanceof LimitError) throw err;
      throw new LimitUnavailableError(`the limits store failed: ${err instanceof Error ? err.message : String(err)}`, {
        taskId,
        cause: err,
      });
    }
  }

  /**
   * Resolves at the permit's start, right before the task's first call: what a caller that
   * acquired with `waitForStart: false` (the consumer: its claim write comes in between) calls
   * last, with nothing but microtasks between its return and the call. It returns only when the
   * clock is at the start or after it by no more than the start's slack ({@link startSlackUs}):
   * a timer that fires early is slept out, and a start found later than its slack — missed
   * during the claim, or a timer fired late (event-loop lag, CPU starvation) — is not used: used
   * late, it would land closer than T to the next start, which another worker uses on time, and
   * a provider would count both in one window. It is forfeited (tat has moved on: only that slot
   * of the rate goes unused) and a new start is taken for the permit's rate uses, ahead by the
   * lead times the number of retakes and with no horizon (the task is claimed and holds its
   * slots), then waited for and judged the same way; a pause is waited out. A pause this process
   * learns of while the permit waits (a 429 of one of its own tasks) is honoured the same way; a
   * pause another process learnt is seen at the next start taken, so starts granted before it
   * still go out (at most one horizon of the rate).
   *
   * @throws LimitUnavailableError when the store fails while taking a new start
   */
  async waitForStart(permit: Permit): Promise<void> {
    if (!this.owns(permit) || permit.released || permit.rates.length === 0) return;
    const slackUs = startSlackUs(permit.rates);
    let refused = false;
    for (let retake = 1; ; ) {
      const now = this.clock.now();
      // A pause this process learnt after the grant (a 429 of one of its tasks) covers the start too.
      const pausedOver = permit.rates.some((u) => (this.pausedUntil.get(u.pk) ?? 0) > permit.startAt);
      const late = micros(now) - micros(permit.startAt) > slackUs;
      if (!refused && !pausedOver && !late) {
        const wait = permit.startAt - now;
        if (wait <= 0 || this.clock.sleep === undefined) return;
        // Judged again when the timer fires: early, the rest is slept; late, the start is retaken.
        await this.clock.sleep(wait);
        continue;
      }
      if (!refused && pausedOver) this.pausedStarts += 1;
      else if (!refused && late) this.lateStarts += 1;
      let starts: Starts;
      try {
        starts = await this.takeStarts(permit.rates, micros(this.clock.now()) + this.leadUs() * retake, this.leaseUs);
      } catch (err) {
        throw new LimitUnavailableError(
          `the limits store failed: ${err instanceof Error ? err.message : String(err)}`,
          {
            taskId: permit.taskId,
            cause: err,
          },
        );
      }
      retake += 1;
      refused = starts.kind === 'refused';
      if (starts.kind === 'granted') {
        permit.startAt = starts.atUs / 1000;
      } else {
        // Paused (a provider's Retry-After) or beyond a lease: wait until worth asking again.
        if (this.clock.sleep === undefined) return;
        const until = Math.min(starts.refusal.retryAt, this.clock.now() + this.leaseMs / 2);
        await this.clock.sleep(Math.max(1, until - this.clock.now()));
      }
    }
  }

  /** The lead starts are asked with now (ms): the configured one, or the store's learnt round trip if longer. */
  get leadMs(): number {
    return this.lead.ms;
  }

  private leadUs(): number {
    return micros(this.lead.ms);
  }

  /** A rate take, its round trip learnt for the lead. */
  private async timed<T>(take: () => Promise<T>): Promise<T> {
    const asked = this.clock.now();
    const answer = await take();
    this.lead.observe(this.clock.now() - asked);
    return answer;
  }

  /**
   * The heartbeat of a running task: extends the lease of each of its slots by `leaseSeconds`.
   * A slot found evicted (its lease ended: a heartbeat came too late) is taken again if the limit
   * has room; if not, the task runs on without it and a warning is logged. Never throws.
   */
  async renew(permit: Permit): Promise<void> {
    if (!this.owns(permit) || permit.released) return;
    const previous = permit.renewing ?? Promise.resolve();
    const run = previous.then(async () => {
      for (const slot of permit.slots) await this.renewSlot(permit, slot);
    });
    permit.renewing = run;
    await run;
    if (permit.renewing === run) permit.renewing = undefined;
  }

  /**
   * Gives back what a permit holds, in `finally`: each slot goes to the first task of this
   * process waiting for that limit (no store write), or is removed from the store. Idempotent;
   * never throws (a slot it could not remove frees itself when its lease ends).
   */
  async release(permit: Permit): Promise<void> {
    if (!this.owns(permit)) {
      this.logger.warn('a permit another limiter gave was released here; ignored', { task_id: permit.taskId });
      return;
    }
    if (permit.released) return;
    permit.released = true;
    // A renewal in flight could otherwise re-add a slot after it is removed.
    await permit.renewing;
    const slots = permit.slots;
    permit.slots = [];
    await this.letGoAll(slots);
  }

  /**
   * A provider asked to slow down (a 429 with Retry-After): pauses the rate of each use whose
   * limit learns from it (`learnRetryAfter`), for every worker, for `retryAfterSeconds` (at most
   * an hour). Never shortens a longer pause. Starts this process had reserved are dropped; other
   * processes may still use the ones they reserved (at most `reserve − 1` each).
   *
   * @throws LimitUnavailableError when the store fails (after trying every use)
   */
  async pause(uses: readonly LimitUse[], retryAfterSeconds: number): Promise<void> {
    if (!(retryAfterSeconds > 0)) return;
    const now = this.clock.now();
    const until = Math.ceil(now + Math.min(retryAfterSeconds, MAX_PAUSE_SECONDS) * 1000);
    let failure: unknown;
    for (const use of plan(uses.filter((u) => u.spec.learnRetryAfter)).rates) {
      this.pools.delete(use.pk);
      // Known here at least this long: a start given back meanwhile is not used before it.
      remember(this.pausedUntil, use.pk, Math.max(until, this.pausedUntil.get(use.pk) ?? 0));
      try {
        await this.store.pauseRate(use.pk, until, this.expiresAt(use, now));
      } catch (err) {
        failure ??= err;
      }
    }
    if (failure !== undefined) {
      throw new LimitUnavailableError(`could not pause a limit: ${String(failure)}`, { cause: failure });
    }
  }

  // ---- rate -----------------------------------------------------------------------------------

  /**
   * One start per rate item, all at the same time `atUs`: a task with two rate limits starts
   * when both allow, and a start used later than granted could come closer than T to the next.
   * A start that is not the latest is given back and taken again no earlier than it.
   */
  private async takeStarts(rates: readonly PlannedUse[], nowUs: number, horizonUs = this.horizonUs): Promise<Starts> {
    const tokens = new Map<string, number>();
    let target = nowUs;
    for (let pass = 0; pass <= rates.length + 1; pass += 1) {
      for (const use of rates) {
        const held = tokens.get(use.pk);
        if (held === target) continue;
        if (held !== undefined) {
          this.toPool(use.pk, held, nowUs);
          tokens.delete(use.pk);
        }
        const start = await this.takeStart(use, nowUs, target, horizonUs);
        if (start.kind === 'refused') {
          this.giveBack(tokens);
          return { kind: 'refused', refusal: start.refusal, use };
        }
        tokens.set(use.pk, start.value);
        target = Math.max(target, start.value);
      }
      if ([...tokens.values()].every((t) => t === target)) return { kind: 'granted', atUs: target, tokens };
    }
    // The limits keep pushing each other's start on: give up for now, until the latest is near.
    this.giveBack(tokens);
    const use = rates[0] as PlannedUse;
    return { kind: 'refused', refusal: refusalOf(use, 'rate', Math.max(nowUs, target - horizonUs) / 1000), use };
  }

  /** A start for one rate item, at or after `notBeforeUs` and within the horizon of `nowUs`. */
  private async takeStart(
    use: PlannedUse,
    nowUs: number,
    notBeforeUs: number,
    horizonUs = this.horizonUs,
  ): Promise<Take<number>> {
    const rate = use.spec.rate;
    if (rate === undefined) throw new LimitError(`limit "${use.spec.name}" has no rate`, { limit: use.spec.name });
    const T = micros(rate.intervalMs);
    const tau = (rate.burst - 1) * T;
    const latestUs = nowUs + horizonUs;
    // While a pause is known here, reserved starts wait and the store answers (exactly, as
    // another worker may have made the pause longer than this process knows).
    const paused = this.pausedUntil.get(use.pk);
    const pool = paused !== undefined && micros(paused) > notBeforeUs ? undefined : this.pools.get(use.pk);
    if (pool !== undefined) {
      while (pool.length > 0 && (pool[0] as number) < nowUs) pool.shift();
      const i = pool.findIndex((s) => s >= notBeforeUs);
      if (i >= 0) {
        const s = pool[i] as number;
        // Later starts of this item are all beyond this one (the store's next included).
        if (s > latestUs) return { kind: 'refused', refusal: refusalOf(use, 'rate', (s - horizonUs) / 1000) };
        pool.splice(i, 1);
        return { kind: 'granted', value: s };
      }
    }

    const now = this.clock.now();
    const lastTat = this.lastTat.get(use.pk);
    const answer = await this.timed(() =>
      this.store.takeRate(use.pk, {
        now: notBeforeUs / 1000,
        count: this.reserve,
        intervalMs: T / 1000,
        toleranceMs: tau / 1000,
        horizonMs: Math.max(0, latestUs - notBeforeUs) / 1000,
        ...(lastTat === undefined ? {} : { lastTat }),
        ...optional('expiresAt', this.expiresAt(use, now)),
      }),
    );
    if (answer.tat !== undefined) remember(this.lastTat, use.pk, answer.tat);
    if (answer.kind === 'wait') {
      if (answer.pausedUntil !== undefined && micros(answer.pausedUntil) > notBeforeUs) {
        remember(this.pausedUntil, use.pk, answer.pausedUntil);
        return { kind: 'refused', refusal: refusalOf(use, 'paused', answer.pausedUntil) };
      }
      // Worth trying again once the first start, tat − τ, is within the horizon.
      const dueUs = answer.tat === undefined ? nowUs : micros(answer.tat) - tau - horizonUs;
      return { kind: 'refused', refusal: refusalOf(use, 'rate', Math.max(nowUs, dueUs) / 1000) };
    }
    this.pausedUntil.delete(use.pk);
    const base = micros(answer.tat) - this.reserve * T;
    const first = Math.max(notBeforeUs, base - tau);
    for (let i = 1; i < this.reserve; i += 1) this.toPool(use.pk, Math.max(notBeforeUs, base + i * T - tau), nowUs);
    return { kind: 'granted', value: first };
  }

  /** Keeps an unused start for this process's next acquires, unless it is past. */
  private toPool(pk: string, startUs: number, nowUs: number): void {
    if (startUs < nowUs) return; // a start used late would come closer than T to the next
    const pool = this.pools.get(pk) ?? [];
    const at = pool.findIndex((s) => s > startUs);
    if (at < 0) pool.push(startUs);
    else pool.splice(at, 0, startUs);
    remember(this.pools, pk, pool);
  }

  private giveBack(tokens: ReadonlyMap<string, number>): void {
    const nowUs = micros(this.clock.now());
    for (const [pk, startUs] of tokens) this.toPool(pk, startUs, nowUs);
  }

  // ---- concurrency ----------------------------------------------------------------------------

  /**
   * A slot of one concurrency item: from the store; else, after evicting dead workers' ended
   * leases, from the store again; else from a task of this process that releases one within
   * `localWaitMs` (only waited for when this process holds one).
   */
  private async takeSlot(use: PlannedUse): Promise<Take<{ slot: Slot; waited: boolean }>> {
    const capacity = use.spec.concurrency;
    if (capacity === undefined) throw new LimitError(`limit "${use.spec.name}" has no concurrency`);
    const now = this.clock.now();
    // As many tasks of this process wait already as it holds slots: the item is full (they found
    // it so) and every slot it will hand over has a taker. Refuse without asking the store, so a
    // backlog behind a saturated limit (a noisy tenant) costs no DynamoDB request per message.
    if (this.localQueueFull(use.pk)) {
      return { kind: 'refused', refusal: refusalOf(use, 'concurrency', now + CONCURRENCY_RETRY_MS) };
    }
    const slot: Slot = { pk: use.pk, id: this.nextHolderId(), use, leaseUntil: now + this.leaseMs };
    const expiresAt = this.expiresAt(use, now);
    let added = await this.store.addHolder(use.pk, slot.id, slot.leaseUntil, capacity, expiresAt);
    if (added.kind === 'full') {
      const ended = Object.entries(added.holders).filter(([, until]) => until < now);
      if (ended.length > 0) {
        const evicted = await this.store.evictHolders(use.pk, Object.fromEntries(ended.slice(0, MAX_EVICT_PER_CALL)));
        this.logger.info('limit slots of a dead worker freed (their leases ended)', {
          limit: use.spec.name,
          slots: ended.length,
          evicted,
        });
        added = await this.store.addHolder(use.pk, slot.id, slot.leaseUntil, capacity, expiresAt);
      }
    }
    if (added.kind === 'granted') {
      this.held.set(use.pk, (this.held.get(use.pk) ?? 0) + 1);
      return { kind: 'granted', value: { slot, waited: false } };
    }
    if (
      (this.held.get(use.pk) ?? 0) > 0 &&
      !this.localQueueFull(use.pk) &&
      this.clock.sleep !== undefined &&
      this.localWaitMs > 0
    ) {
      const handed = await this.waitForSlot(use.pk);
      if (handed !== undefined) return { kind: 'granted', value: { slot: handed, waited: true } };
    }
    const after = this.clock.now();
    const leaseEnds = Object.values(added.holders).filter((until) => until >= after);
    return {
      kind: 'refused',
      refusal: refusalOf(use, 'concurrency', Math.min(after + CONCURRENCY_RETRY_MS, ...leaseEnds)),
    };
  }

  /** True when this process holds slots of `pk` and has a waiter for each of them already. */
  private localQueueFull(pk: string): boolean {
    const held = this.held.get(pk) ?? 0;
    return held > 0 && (this.waiters.get(pk)?.length ?? 0) >= held;
  }

  /** Waits (at most `localWaitMs`) for a slot a task of this process releases; FIFO per item. */
  private waitForSlot(pk: string): Promise<Slot | undefined> {
    return new Promise((resolve) => {
      const waiter: Waiter = { settled: false, resolve };
      const queue = this.waiters.get(pk) ?? [];
      queue.push(waiter);
      this.waiters.set(pk, queue);
      void this.clock.sleep?.(this.localWaitMs).then(() => {
        if (waiter.settled) return;
        waiter.settled = true;
        this.dropWaiter(pk, waiter);
        resolve(undefined);
      });
    });
  }

  private dropWaiter(pk: string, waiter: Waiter): void {
    const queue = (this.waiters.get(pk) ?? []).filter((w) => w !== waiter);
    if (queue.length === 0) this.waiters.delete(pk);
    else this.waiters.set(pk, queue);
  }

  private async letGoAll(slots: readonly Slot[]): Promise<void> {
    for (const slot of slots) await this.letGo(slot);
  }

  /** Hands a slot to the first local waiter (same holder entry, no write), or removes it. Never throws. */
  private async letGo(slot: Slot): Promise<void> {
    const waiter = this.waiters.get(slot.pk)?.[0];
    if (waiter !== undefined) {
      waiter.settled = true;
      this.dropWaiter(slot.pk, waiter);
      waiter.resolve(await this.handOver(slot));
      return;
    }
    this.held.set(slot.pk, (this.held.get(slot.pk) ?? 1) - 1);
    if (this.held.get(slot.pk) === 0) this.held.delete(slot.pk);
    try {
      await this.store.removeHolder(slot.pk, slot.id);
    } catch (err) {
      this.logger.warn('could not release a limit slot; its lease will free it', {
        limit: slot.use.spec.name,
        error: String(err),
      });
    }
  }

  /**
   * The slot as the next task gets it: its lease renewed first only when less than half of it is
   * left (the new task's heartbeat takes over from there). `undefined` if it turned out evicted
   * and the limit has no room to take it again.
   */
  private async handOver(slot: Slot): Promise<Slot | undefined> {
    const now = this.clock.now();
    if (slot.leaseUntil - now >= this.leaseMs / 2) return slot;
    const kept = await this.extend(slot, now);
    if (kept) return slot;
    this.held.set(slot.pk, (this.held.get(slot.pk) ?? 1) - 1);
    if (this.held.get(slot.pk) === 0) this.held.delete(slot.pk);
    return undefined;
  }

  private async renewSlot(permit: HeldPermit, slot: Slot): Promise<void> {
    if (permit.released) return;
    await this.extend(slot, this.clock.now());
  }

  /**
   * Extends a slot's lease; re-adds it if it was evicted (and the limit has room). Whether the
   * slot is held now. Never throws: a store failure leaves the lease as it was (still held).
   */
  private async extend(slot: Slot, now: number): Promise<boolean> {
    const until = now + this.leaseMs;
    const expiresAt = this.expiresAt(slot.use, now);
    const fields = { limit: slot.use.spec.name, ...optional('key', slot.use.key) };
    try {
      if (await this.store.renewHolder(slot.pk, slot.id, until, expiresAt)) {
        slot.leaseUntil = until;
        return true;
      }
      const again = await this.store.addHolder(slot.pk, slot.id, until, slot.use.spec.concurrency ?? 1, expiresAt);
      if (again.kind === 'granted') {
        slot.leaseUntil = until;
        this.logger.warn('a limit slot was evicted (its lease ended before a heartbeat); taken again', fields);
        return true;
      }
      this.logger.warn('a limit slot was evicted and the limit is full: the task runs on without it', fields);
      return false;
    } catch (err) {
      this.logger.warn('could not renew a limit slot', { ...fields, error: String(err) });
      return true;
    }
  }

  // ---- bookkeeping ----------------------------------------------------------------------------

  /** Counts a refusal and notes the count in the store at most every 10 s per item (best effort). */
  private async refuse(refusal: Refusal, use: PlannedUse): Promise<Admission> {
    const now = this.clock.now();
    const state = this.refusals.get(use.pk) ?? { pending: 0, notedAt: Number.NEGATIVE_INFINITY };
    state.pending += 1;
    remember(this.refusals, use.pk, state);
    if (now - state.notedAt >= REFUSAL_NOTE_MS) {
      const count = state.pending;
      state.pending = 0;
      state.notedAt = now;
      try {
        await this.store.noteRefusals(use.pk, count, now, this.expiresAt(use, now));
      } catch (err) {
        this.logger.debug('could not note limit refusals', { limit: use.spec.name, error: String(err) });
      }
    }
    return { kind: 'refused', refusal };
  }

  private expiresAt(use: PlannedUse, now: number): number | undefined {
    return use.key === undefined ? undefined : Math.ceil(now / 1000) + this.keyTtlSeconds;
  }

  private nextHolderId(): string {
    this.holderCount += 1;
    return `${this.processId}.${this.holderCount.toString(36)}`;
  }

  private owns(permit: Permit): permit is HeldPermit {
    return permit instanceof HeldPermit && permit.owner === this;
  }
}

/**
 * The items a set of uses touches: rate items and concurrency items, each once, each in key
 * order (a fixed order for every process, so none waits for a slot another holds while that
 * one waits for its slot).
 */
function plan(uses: readonly LimitUse[]): { rates: PlannedUse[]; slots: PlannedUse[] } {
  const rates = new Map<string, PlannedUse>();
  const slots = new Map<string, PlannedUse>();
  for (const { spec, key } of uses) {
    if (key !== undefined && (typeof key !== 'string' || key.length === 0 || key.length > 128)) {
      throw new LimitDefinitionError(`limits.${spec.name}.key`, 'a key must be a string of 1-128 characters', {
        limit: spec.name,
      });
    }
    const suffix = key === undefined ? '' : `#${key}`;
    if (spec.rate !== undefined) rates.set(`r#${spec.name}${suffix}`, { pk: `r#${spec.name}${suffix}`, spec, key });
    if (spec.concurrency !== undefined) {
      slots.set(`c#${spec.name}${suffix}`, { pk: `c#${spec.name}${suffix}`, spec, key });
    }
  }
  const byPk = (a: PlannedUse, b: PlannedUse) => (a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0);
  return { rates: [...rates.values()].sort(byPk), slots: [...slots.values()].sort(byPk) };
}

/**
 * How late (µs) a start of these rate uses may still be used: half the margin each rate's
 * interval leaves beyond its period — `count · T − perMs`, that is its `arrivalJitterMs` — and
 * at least the timer's granularity (1 ms). N + 1 starts of one item are granted at least
 * `perMs + margin` apart; used up to half the margin late, they still span `perMs` plus half the
 * margin, which is left for the way from the start to the provider. The smallest over the uses.
 */
export function startSlackUs(rates: readonly { readonly spec: LimitSpec }[]): number {
  let slack = Number.POSITIVE_INFINITY;
  for (const { spec } of rates) {
    if (spec.rate === undefined) continue;
    const marginUs = spec.rate.count * micros(spec.rate.intervalMs) - micros(spec.rate.perMs);
    slack = Math.min(slack, Math.max(LATE_TOLERANCE_US, Math.floor(marginUs / 2)));
  }
  return Number.isFinite(slack) ? slack : LATE_TOLERANCE_US;
}

function refusalOf(use: PlannedUse, reason: Refusal['reason'], retryAt: number): Refusal {
  return { limit: use.spec.name, ...optional('key', use.key), reason, retryAt };
}

/** Epoch ms → whole microseconds: the grid every time is computed on. */
function micros(ms: number): number {
  return Math.round(ms * 1000);
}

function optional<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}

/** Sets `key` in a map of per-item local state, forgetting the oldest items past the bound. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_LOCAL_ITEMS) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}

function checkPositive(name: string, value: number): number {
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
    throw new RangeError(`${name} must be a number > 0, got ${value}`);
  }
  return value;
}
