/**
 * The limiter's rate starts: taken from the store's rate items, reserved ahead and pooled in this
 * process when `reserve` > 1, asked for a lead ahead of now, forfeited and taken again when found
 * late, and paused by a provider's Retry-After.
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
import type { Clock } from '../runtime/clock.js';
import type { Refusal } from '../task/admission.js';
import { LimitError, LimitUnavailableError } from './errors.js';
import { expiresAt, micros, optional, type PlannedUse, planItems, refusalOf, remember, type Take } from './items.js';
import type { StartLead } from './lead.js';
import type { LimitStore } from './limit-store.js';
import type { HeldPermit } from './permit.js';
import type { LimitSpec, LimitUse } from './spec.js';

/** Longest pause a provider's Retry-After may impose (a broken header must not stop a limit for days). */
const MAX_PAUSE_SECONDS = 3_600;
/**
 * A start used this much after its time still counts as on time (timer granularity), when the
 * rate leaves no margin for more (no `arrivalJitterMs`; see {@link startSlackUs}).
 */
const LATE_TOLERANCE_US = 1000;
/** Times `acquire` takes a new start for one that was past when granted, before it refuses. */
const MAX_LATE_RETRIES = 2;

/** The starts one acquire holds: each rate item's start, all at `atUs` once granted. */
export type Starts =
  | { readonly kind: 'granted'; readonly atUs: number; readonly tokens: ReadonlyMap<string, number> }
  | { readonly kind: 'refused'; readonly refusal: Refusal; readonly use: PlannedUse };

export interface RateStartsDeps {
  readonly store: LimitStore;
  readonly clock: Clock;
  readonly leaseMs: number;
  /** How far ahead of now a start may be taken and waited for in-process (0: only starts due now). */
  readonly horizonUs: number;
  readonly reserve: number;
  readonly keyTtlSeconds: number;
  /** How far ahead starts are asked for: the configured lead, or the store's learnt round trip if longer. */
  readonly lead: StartLead;
}

export class RateStarts {
  private readonly store: LimitStore;
  private readonly clock: Clock;
  private readonly leaseMs: number;
  private readonly leaseUs: number;
  private readonly horizonUs: number;
  private readonly reserve: number;
  private readonly keyTtlSeconds: number;
  private readonly lead: StartLead;
  private late = 0;
  private paused = 0;
  /** Unused reserved starts (µs, ascending) by rate item. */
  private readonly pools = new Map<string, number[]>();
  /** The last `tat` seen per rate item: which conditional write to try first. */
  private readonly lastTat = new Map<string, number>();
  /** Pauses known here (ms), so pooled starts are not used during one. */
  private readonly pausedUntil = new Map<string, number>();

  constructor(d: RateStartsDeps) {
    this.store = d.store;
    this.clock = d.clock;
    this.leaseMs = d.leaseMs;
    this.leaseUs = micros(d.leaseMs);
    this.horizonUs = d.horizonUs;
    this.reserve = d.reserve;
    this.keyTtlSeconds = d.keyTtlSeconds;
    this.lead = d.lead;
  }

  /** Starts forfeited because they were past when granted (or found late before the task); for tests and benchmarks. */
  get lateStarts(): number {
    return this.late;
  }

  /** Granted starts not used because this process learnt of a pause covering them (retaken after it). */
  get pausedStarts(): number {
    return this.paused;
  }

  /** The lead starts are asked with now (ms). */
  get leadMs(): number {
    return this.lead.ms;
  }

  leadUs(): number {
    return micros(this.lead.ms);
  }

  /**
   * True when granted starts are already past (the store answered late, or the acquire waited
   * for a slot): used, they would come closer than T to the starts after them, which other
   * workers use on time.
   */
  isLate(starts: Starts & { readonly kind: 'granted' }): boolean {
    return starts.atUs < micros(this.clock.now()) - LATE_TOLERANCE_US;
  }

  /**
   * Forfeits starts found late (that only under-uses the rate) and takes new ones for `rates`,
   * further ahead at each `retry` (1, 2, …); `undefined` once `MAX_LATE_RETRIES` were taken: the
   * acquire refuses. Not an async function: the caller awaits the take itself.
   */
  retakeLate(rates: readonly PlannedUse[], retry: number): Promise<Starts> | undefined {
    if (retry > MAX_LATE_RETRIES) return undefined;
    this.late += 1;
    return this.take(rates, micros(this.clock.now()) + this.leadUs() * 2 ** (retry - 1));
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
  async waitForStart(permit: HeldPermit): Promise<void> {
    if (permit.released || permit.rates.length === 0) return;
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
      if (!refused && pausedOver) this.paused += 1;
      else if (!refused && late) this.late += 1;
      let starts: Starts;
      try {
        starts = await this.take(permit.rates, micros(this.clock.now()) + this.leadUs() * retake, this.leaseUs);
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

  /** See `Limiter.pause`. */
  async pause(uses: readonly LimitUse[], retryAfterSeconds: number): Promise<void> {
    if (!(retryAfterSeconds > 0)) return;
    const now = this.clock.now();
    const until = Math.ceil(now + Math.min(retryAfterSeconds, MAX_PAUSE_SECONDS) * 1000);
    let failure: unknown;
    for (const use of planItems(uses.filter((u) => u.spec.learnRetryAfter)).rates) {
      this.pools.delete(use.pk);
      // Known here at least this long: a start given back meanwhile is not used before it.
      remember(this.pausedUntil, use.pk, Math.max(until, this.pausedUntil.get(use.pk) ?? 0));
      try {
        await this.store.pauseRate(use.pk, until, expiresAt(use, now, this.keyTtlSeconds));
      } catch (err) {
        failure ??= err;
      }
    }
    if (failure !== undefined) {
      throw new LimitUnavailableError(`could not pause a limit: ${String(failure)}`, { cause: failure });
    }
  }

  /**
   * One start per rate item, all at the same time `atUs`: a task with two rate limits starts
   * when both allow, and a start used later than granted could come closer than T to the next.
   * A start that is not the latest is given back and taken again no earlier than it.
   */
  async take(rates: readonly PlannedUse[], nowUs: number, horizonUs = this.horizonUs): Promise<Starts> {
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

  /** Gives back the starts an acquire took and will not use: kept for this process's next acquires. */
  giveBack(tokens: ReadonlyMap<string, number>): void {
    const nowUs = micros(this.clock.now());
    for (const [pk, startUs] of tokens) this.toPool(pk, startUs, nowUs);
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
        ...optional('expiresAt', expiresAt(use, now, this.keyTtlSeconds)),
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

  /** A rate take, its round trip learnt for the lead. */
  private async timed<T>(take: () => Promise<T>): Promise<T> {
    const asked = this.clock.now();
    const answer = await take();
    this.lead.observe(this.clock.now() - asked);
    return answer;
  }
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
