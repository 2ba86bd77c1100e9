/**
 * The flow-control limiter: one per process (Lambda instance, local worker), shared by every
 * task the process runs at once. It asks the limits store (`shared/limit/limit-store.ts`) for a
 * task's concurrency slots and rate starts right before the task is claimed, and gives them back
 * when the attempt ends. Every rule is here and in its parts; the store only makes single-item
 * conditional writes. The parts: rate starts (GCRA, `rate.ts`), concurrency slots (`slots.ts`),
 * refusal counts (`refusals.ts`), the permit (`permit.ts`), the items a call touches (`items.ts`),
 * the options (`options.ts`). This file orders them: no store call of its own.
 *
 * @module
 */
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { Admission, Permit } from '../task/admission.js';
import { LimitError, LimitUnavailableError } from './errors.js';
import { micros, type PlannedUse, planItems, refusalOf, type Slot } from './items.js';
import { type LimiterDeps, limiterSettings } from './options.js';
import { HeldPermit } from './permit.js';
import { RateStarts } from './rate.js';
import { RefusalNotes } from './refusals.js';
import { SlotLeases } from './slots.js';
import type { LimitUse } from './spec.js';

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
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly rate: RateStarts;
  private readonly slots: SlotLeases;
  private readonly refusals: RefusalNotes;

  /** @throws LimitDefinitionError naming the option (`leaseSeconds`, `localWaitMs`, `leadMs`, `reserve`, `keyTtlSeconds`) */
  constructor(d: LimiterDeps) {
    const { store, clock, logger } = d;
    const { leaseMs, localWaitMs, horizonUs, lead, reserve, keyTtlSeconds } = limiterSettings(d);
    this.clock = clock;
    this.logger = logger;
    this.rate = new RateStarts({ store, clock, leaseMs, horizonUs, reserve, keyTtlSeconds, lead });
    this.slots = new SlotLeases({ store, clock, random: d.random, logger, leaseMs, localWaitMs, keyTtlSeconds });
    this.refusals = new RefusalNotes({ store, clock, logger, keyTtlSeconds });
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
    const { rates, slots } = planItems(uses);
    const taken: Slot[] = [];
    try {
      const leadUs = rates.length > 0 ? this.rate.leadUs() : 0;
      let starts = await this.rate.take(rates, micros(this.clock.now()) + leadUs);
      if (starts.kind === 'refused') return await this.refusals.note(starts.refusal, starts.use);
      // A slot counts a running task, not one waiting for its start: the rate start is waited for
      // (all but the lead) before the slots are taken. Held through the wait, a slot would cap
      // the rate at concurrency ÷ (wait + duration): 45 slots, 1 s waits, 1.2 s calls = 20/s.
      const early = starts.atUs - leadUs - micros(this.clock.now());
      if (slots.length > 0 && early > 0) await this.clock.sleep?.(early / 1000);
      let waited = false;
      for (const use of slots) {
        const slot = await this.slots.take(use);
        if (slot.kind === 'refused') {
          this.rate.giveBack(starts.tokens);
          await this.slots.letGoAll(taken);
          return await this.refusals.note(slot.refusal, use);
        }
        taken.push(slot.value.slot);
        waited ||= slot.value.waited;
      }
      // A start already past (the store answered late, or this call waited for a slot) is retaken.
      for (let retry = 1; rates.length > 0 && this.rate.isLate(starts); retry += 1) {
        const retaken = this.rate.retakeLate(rates, retry);
        if (retaken === undefined) {
          await this.slots.letGoAll(taken);
          const use = rates[0] as PlannedUse;
          return await this.refusals.note(refusalOf(use, 'rate', this.clock.now()), use);
        }
        starts = await retaken;
        if (starts.kind === 'refused') {
          await this.slots.letGoAll(taken);
          return await this.refusals.note(starts.refusal, starts.use);
        }
      }
      if (waited) this.slots.countLocalWait();
      // The granted time itself, not the time it was found on time: lateness is judged from it.
      const startAt = rates.length > 0 ? starts.atUs / 1000 : this.clock.now();
      const permit = new HeldPermit(this, taskId, startAt, taken, rates);
      if (options.waitForStart !== false) await this.waitForStart(permit);
      return { kind: 'granted', permit };
    } catch (err) {
      await this.slots.letGoAll(taken);
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
   * last. A start found late is not used but taken again, and a pause is waited out
   * ({@link RateStarts.waitForStart}).
   *
   * @throws LimitUnavailableError when the store fails while taking a new start
   */
  waitForStart(permit: Permit): Promise<void> {
    return this.owns(permit) ? this.rate.waitForStart(permit) : Promise.resolve();
  }

  /**
   * The heartbeat of a running task: extends the lease of each of its slots by `leaseSeconds`.
   * A slot found evicted (its lease ended: a heartbeat came too late) is taken again if the limit
   * has room; if not, the task runs on without it and a warning is logged. Never throws.
   */
  renew(permit: Permit): Promise<void> {
    return this.owns(permit) ? this.slots.renew(permit) : Promise.resolve();
  }

  /**
   * Gives back what a permit holds, in `finally`: each slot goes to the first task of this
   * process waiting for that limit (no store write), or is removed from the store. Idempotent;
   * never throws (a slot it could not remove frees itself when its lease ends).
   */
  release(permit: Permit): Promise<void> {
    if (this.owns(permit)) return this.slots.release(permit);
    this.logger.warn('a permit another limiter gave was released here; ignored', { task_id: permit.taskId });
    return Promise.resolve();
  }

  /**
   * A provider asked to slow down (a 429 with Retry-After): pauses the rate of each use whose
   * limit learns from it (`learnRetryAfter`), for every worker, for `retryAfterSeconds` (at most
   * an hour). Never shortens a longer pause. Starts this process had reserved are dropped; other
   * processes may still use the ones they reserved (at most `reserve − 1` each).
   *
   * @throws LimitUnavailableError when the store fails (after trying every use)
   */
  pause(uses: readonly LimitUse[], retryAfterSeconds: number): Promise<void> {
    return this.rate.pause(uses, retryAfterSeconds);
  }

  /** The lead starts are asked with now (ms): the configured one, or the store's learnt round trip if longer. */
  get leadMs(): number {
    return this.rate.leadMs;
  }

  /** Starts forfeited because they were past when granted (see `acquire`); for tests and benchmarks. */
  get lateStarts(): number {
    return this.rate.lateStarts;
  }

  /** Granted starts not used because this process learnt of a pause covering them (retaken after it). */
  get pausedStarts(): number {
    return this.rate.pausedStarts;
  }

  /** Acquires that waited in-process for a slot another task of this process released. */
  get localWaits(): number {
    return this.slots.localWaits;
  }

  private owns(permit: Permit): permit is HeldPermit {
    return permit instanceof HeldPermit && permit.owner === this;
  }
}
