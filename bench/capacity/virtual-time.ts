/**
 * A virtual clock and timer queue for the capacity simulation: a discrete-event scheduler.
 *
 * While installed it replaces the global `setTimeout` / `setInterval` (and their `clear*`), so
 * the consumer's own timers — the task timeout, the heartbeat, the cancel poll — run in virtual
 * time exactly as they would in real time, and a handler that "takes 5 s" sleeps 5 virtual
 * seconds. `setImmediate` stays real: the scheduler uses it to let every promise chain a timer
 * started settle before it moves the clock (all simulated I/O is in memory, so nothing else can
 * be pending when the microtask queue is empty).
 *
 * @module
 */
import type { Clock } from '../../shared/runtime/clock.js';
import { MinHeap } from '../lib/min-heap.js';

interface Timer {
  at: number;
  readonly seq: number;
  readonly fn: () => void;
  /** Period for intervals; undefined for one-shot timers. */
  readonly every: number | undefined;
  cancelled: boolean;
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

const realSetImmediate = globalThis.setImmediate;

/** Lets every microtask (every promise continuation) run. */
const settle = (): Promise<void> => new Promise((resolve) => realSetImmediate(resolve));

/** The simulation's time source and timer queue. Times are epoch milliseconds. */
export class VirtualTime implements Clock {
  private nowMs: number;
  private seq = 0;
  /** Timers by due time, then creation order (FIFO among equal times). */
  private readonly timers = new MinHeap<Timer>(before);
  /** Distinct instants the clock stopped at (a measure of the simulation's work). */
  steps = 0;

  constructor(startMs: number) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  /** Runs `fn` after `ms` virtual milliseconds. */
  at(ms: number, fn: () => void): Timer {
    const t: Timer = {
      at: this.nowMs + Math.max(0, Math.round(ms)),
      seq: this.seq++,
      fn,
      every: undefined,
      cancelled: false,
    };
    this.timers.push(t);
    return t;
  }

  /** Runs `fn` every `ms` virtual milliseconds until cancelled. */
  every(ms: number, fn: () => void): Timer {
    const period = Math.max(1, Math.round(ms));
    const t: Timer = { at: this.nowMs + period, seq: this.seq++, fn, every: period, cancelled: false };
    this.timers.push(t);
    return t;
  }

  cancel(t: unknown): void {
    if (typeof t === 'object' && t !== null && 'cancelled' in t) (t as Timer).cancelled = true;
  }

  /** A promise that resolves `ms` virtual milliseconds from now. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.at(ms, resolve);
    });
  }

  /**
   * Makes the global timer functions virtual until the returned function is called. Code that
   * reads `setTimeout` at call time (all of Kaj's) then runs on this clock.
   */
  install(): () => void {
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
   * Advances the clock to `untilMs`, running every timer due on the way in order. Before the
   * clock moves past an instant, every promise chain its timers started is allowed to settle,
   * so work never "leaks" into a later instant than the one it belongs to.
   */
  async runUntil(untilMs: number): Promise<void> {
    await settle();
    for (;;) {
      const next = this.timers.peek();
      if (next === undefined || next.at > untilMs) break;
      this.nowMs = next.at;
      this.steps += 1;
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
        t.fn();
      }
      await settle();
    }
    this.nowMs = Math.max(this.nowMs, untilMs);
  }
}
