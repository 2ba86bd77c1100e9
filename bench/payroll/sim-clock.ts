/**
 * The payroll simulation's clock: a discrete-event scheduler in exact virtual milliseconds.
 *
 * The idea of the limiter tests' `TimerClock` (test/unit/limit/limiter.test.ts): `sleep(ms)` wakes
 * when the clock reaches now + ms, and concurrent sleepers each wake at their own time, in time
 * order (FIFO among equal times). Unlike `bench/capacity/virtual-time.ts` it never rounds a time:
 * the limiter computes starts on a microsecond grid (a start at T0 + 12.5 ms must wake at exactly
 * that), and the simulated provider counts calls in a 1-s window to the microsecond, so a wake-up
 * rounded by half a millisecond could put a 41st call in a window that holds 40.
 *
 * Between two instants every promise chain the wake-ups started runs to its next sleep (one
 * `setImmediate`: all simulated I/O is in memory, so nothing else can be pending once the
 * microtask queue is empty). Global timers are not replaced: the Kaj code the simulation drives
 * (the limiter, `FlowControl`) sleeps through the injected clock only.
 *
 * @module
 */
import type { Clock } from '../../shared/runtime/clock.js';
import { MinHeap } from '../lib/min-heap.js';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
}

function earlier(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Lets every pending promise continuation run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Why {@link SimClock.run} returned. */
export type RunEnd = 'done' | 'idle' | 'limit';

export class SimClock implements Clock {
  private nowMs: number;
  private seq = 0;
  private readonly timers = new MinHeap<Timer>(earlier);
  /** Distinct instants the clock stopped at. */
  instants = 0;
  /** Timer callbacks run (wake-ups). */
  events = 0;

  constructor(startMs: number) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  /** Runs `fn` `ms` virtual milliseconds from now (exactly; a negative delay counts as 0). */
  at(ms: number, fn: () => void): void {
    this.timers.push({ at: this.nowMs + Math.max(0, ms), seq: this.seq++, fn });
  }

  /** Resolves `ms` virtual milliseconds from now. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.at(ms, resolve));
  }

  /**
   * Moves the clock from one wake-up to the next until `done()` says so after an instant
   * (`'done'`), nothing is left to wake (`'idle'`), or the next wake-up lies beyond `untilMs`
   * (`'limit'`; the clock stays at the last instant run).
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
      for (;;) {
        const t = this.timers.peek();
        if (t === undefined || t.at !== this.nowMs) break;
        this.timers.pop();
        this.events += 1;
        t.fn();
      }
      await settle();
    }
  }
}
