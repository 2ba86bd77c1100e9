/**
 * The simulations' clock (bench/capacity, bench/payroll): a discrete-event scheduler in virtual
 * epoch milliseconds that implements shared/runtime's `Clock`.
 *
 * `sleep(ms)` wakes when the clock reaches now + ms, and concurrent sleepers each wake at their own
 * time, in time order (FIFO among equal times). Times are exact by default — the limiter computes
 * starts on a microsecond grid (a start at T0 + 12.5 ms must wake at exactly that), and a window
 * counted to the microsecond must not gain a call through a rounded wake-up. `wholeMilliseconds`
 * rounds every delay to the millisecond instead, as Node's own timers do.
 *
 * Between two instants every promise chain the wake-ups started runs to its next sleep (one real
 * `setImmediate`: all simulated I/O is in memory, so nothing else can be pending once the microtask
 * queue is empty), so work never leaks into a later instant than the one it belongs to.
 *
 * `installGlobalTimers()` makes `setTimeout` / `setInterval` (and their `clear*`) virtual, for code
 * that sleeps on the global timers rather than on an injected clock — the consumer's task timeout,
 * heartbeat and cancel poll. `setImmediate` stays real: the scheduler needs it to settle.
 *
 * The limiter's unit tests have their own small variant (`TimerClock` in
 * test/unit/limit/limiter.test.ts), built on `FakeClock` to run one piece of work to its end.
 *
 * @module
 */
import type { Clock } from '../shared/runtime/clock.js';
import { MinHeap } from './min-heap.js';

/** A scheduled callback; pass it to {@link VirtualClock.cancel}. */
export interface VirtualTimer {
  at: number;
  readonly seq: number;
  readonly fn: () => void;
  /** Period of an interval; undefined for a one-shot timer. */
  readonly every: number | undefined;
  cancelled: boolean;
}

export interface VirtualClockOptions {
  /** Round every delay to a whole millisecond (intervals: at least 1 ms). @default false */
  readonly wholeMilliseconds?: boolean;
}

/** Why {@link VirtualClock.run} returned. */
export type RunEnd = 'done' | 'idle' | 'limit';

function earlier(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

const realSetImmediate = globalThis.setImmediate;

/** Lets every pending promise continuation run. */
const settle = (): Promise<void> => new Promise((resolve) => realSetImmediate(resolve));

export class VirtualClock implements Clock {
  private nowMs: number;
  private seq = 0;
  private readonly timers = new MinHeap<VirtualTimer>(earlier);
  private readonly round: (ms: number) => number;
  /** Distinct instants the clock stopped at (a measure of the simulation's work). */
  instants = 0;
  /** Timer callbacks run (wake-ups). */
  events = 0;

  constructor(startMs: number, options: VirtualClockOptions = {}) {
    this.nowMs = startMs;
    this.round = options.wholeMilliseconds === true ? Math.round : (ms) => ms;
  }

  now(): number {
    return this.nowMs;
  }

  /** Runs `fn` `ms` virtual milliseconds from now (a negative delay counts as 0). */
  at(ms: number, fn: () => void): VirtualTimer {
    return this.schedule(Math.max(0, this.round(ms)), fn, undefined);
  }

  /** Runs `fn` every `ms` virtual milliseconds until cancelled. */
  every(ms: number, fn: () => void): VirtualTimer {
    const period = Math.max(1, this.round(ms));
    return this.schedule(period, fn, period);
  }

  /** Cancels a timer of {@link at} or {@link every} (anything else is ignored, as `clearTimeout` ignores it). */
  cancel(timer: unknown): void {
    if (typeof timer === 'object' && timer !== null && 'cancelled' in timer) (timer as VirtualTimer).cancelled = true;
  }

  /** Resolves `ms` virtual milliseconds from now. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.at(ms, resolve);
    });
  }

  /**
   * Makes the global timer functions virtual until the returned function is called. Code that
   * reads `setTimeout` at call time (all of Kaj's) then runs on this clock.
   */
  installGlobalTimers(): () => void {
    const g = globalThis as unknown as Record<string, unknown>;
    const saved = {
      setTimeout: g.setTimeout,
      clearTimeout: g.clearTimeout,
      setInterval: g.setInterval,
      clearInterval: g.clearInterval,
    };
    g.setTimeout = (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      this.at(ms ?? 0, () => fn(...args));
    g.setInterval = (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      this.every(ms ?? 0, () => fn(...args));
    g.clearTimeout = (t: unknown) => this.cancel(t);
    g.clearInterval = (t: unknown) => this.cancel(t);
    return () => Object.assign(g, saved);
  }

  /**
   * Moves the clock from one wake-up to the next, running every timer due at each instant in
   * order, until `done()` says so after an instant (`'done'`), nothing is left to wake (`'idle'`),
   * or the next wake-up lies beyond `untilMs` (`'limit'`; the clock stays at the last instant run).
   */
  async run(untilMs = Number.POSITIVE_INFINITY, done: () => boolean = () => false): Promise<RunEnd> {
    await settle();
    for (;;) {
      if (done()) return 'done';
      const next = this.timers.peek();
      if (next === undefined) return 'idle';
      if (next.at > untilMs) return 'limit';
      this.nowMs = next.at;
      this.instants += 1;
      // Everything due at this instant, including zero-delay timers those callbacks start.
      for (;;) {
        const t = this.timers.peek();
        if (t === undefined || t.at !== this.nowMs) break;
        this.timers.pop();
        if (t.cancelled) continue;
        if (t.every !== undefined) {
          t.at += t.every;
          this.timers.push(t);
        }
        this.events += 1;
        t.fn();
      }
      await settle();
    }
  }

  /** Runs every timer due up to `untilMs` ({@link run}), then moves the clock to `untilMs`. */
  async runUntil(untilMs: number): Promise<void> {
    await this.run(untilMs);
    this.nowMs = Math.max(this.nowMs, untilMs);
  }

  private schedule(delay: number, fn: () => void, every: number | undefined): VirtualTimer {
    const t: VirtualTimer = { at: this.nowMs + delay, seq: this.seq++, fn, every, cancelled: false };
    this.timers.push(t);
    return t;
  }
}
