/**
 * The fake time and the seeded randomness the cost and scheduler benchmarks and the soak run Kaj on, so that
 * their counts repeat exactly from run to run.
 *
 * @module
 */
import type { Clock } from '../shared/runtime/clock.js';
import type { RandomSource } from '../shared/runtime/random.js';

/** A clock the bench sets by hand (`t`). It has no `sleep`: Kaj's waits are skipped, not timed. */
export class BenchClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
}

/** mulberry32: deterministic floats; ids are 32 hex digits like `cryptoRandom`'s. */
export function seededRandom(seed: number): RandomSource {
  let s = seed >>> 0;
  const next = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const hex8 = (): string =>
    Math.floor(next() * 2 ** 32)
      .toString(16)
      .padStart(8, '0');
  return { next, id: () => hex8() + hex8() + hex8() + hex8() };
}
