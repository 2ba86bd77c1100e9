/**
 * Test doubles for the domain's injected clock and random source: a clock moved by hand and a
 * scripted random sequence. Production code gets `systemClock` and `cryptoRandom`.
 */
import type { Clock } from '../shared/runtime/clock.js';
import type { RandomSource } from '../shared/runtime/random.js';

/** A clock tests move by hand. */
export class FakeClock implements Clock {
  constructor(private current: number = Date.parse('2026-01-01T00:00:00.000Z')) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
  /** Waiting on a fake clock moves it on at once. */
  async sleep(ms: number): Promise<void> {
    this.current += ms;
  }
}

/** Deterministic source for tests: cycles through the given values; ids count up. */
export function sequenceRandom(values: readonly number[]): RandomSource {
  let i = 0;
  let n = 0;
  return {
    next: () => {
      const v = values[i % values.length];
      i += 1;
      if (v === undefined || v < 0 || v >= 1) throw new RangeError('sequenceRandom values must be in [0, 1)');
      return v;
    },
    id: () => (n += 1).toString(16).padStart(32, '0'),
  };
}
