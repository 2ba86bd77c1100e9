import { describe, expect, it } from 'vitest';
import { backoffCeilingMs, fullJitterDelayMs } from '../../../shared/retry/backoff.js';
import { cryptoRandom } from '../../../shared/runtime/random.js';
import { sequenceRandom } from '../../../testing/doubles.js';

const policy = { baseSeconds: 2, capSeconds: 300 };

describe('Function: fullJitterDelayMs', () => {
  it('grows the ceiling as base·2^attempt until the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9].map((a) => backoffCeilingMs(a, policy))).toEqual([
      4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000,
    ]);
  });

  it('uses the full range from 0 to the ceiling', () => {
    expect(fullJitterDelayMs(3, policy, sequenceRandom([0]))).toBe(0);
    expect(fullJitterDelayMs(3, policy, sequenceRandom([0.5]))).toBe(8_000);
    expect(fullJitterDelayMs(3, policy, sequenceRandom([0.999999999]))).toBe(16_000);
  });

  it('never exceeds the cap, even for huge attempt numbers', () => {
    for (const attempt of [10, 100, 1024, 5000]) {
      expect(fullJitterDelayMs(attempt, policy, sequenceRandom([0.999999999]))).toBeLessThanOrEqual(300_000);
    }
  });

  it('spreads real random delays over the whole interval', () => {
    const samples = Array.from({ length: 2000 }, () => fullJitterDelayMs(2, policy, cryptoRandom));
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...samples)).toBeLessThanOrEqual(8_000);
    // Each quarter of [0, 8 s] gets a fair share: full jitter, not "base plus a little".
    for (let q = 0; q < 4; q += 1) {
      const share = samples.filter((s) => s >= q * 2_000 && s < (q + 1) * 2_000).length / samples.length;
      expect(share).toBeGreaterThan(0.15);
    }
  });

  it('rejects an attempt number below 1', () => {
    expect(() => fullJitterDelayMs(0, policy, cryptoRandom)).toThrow(/attempt must be an integer >= 1/);
    expect(() => fullJitterDelayMs(1.5, policy, cryptoRandom)).toThrow(RangeError);
  });
});
