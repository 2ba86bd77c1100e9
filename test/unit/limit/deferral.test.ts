import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../shared/config/resources.js';
import { deferralSeconds, MAX_DEFERRAL_SECONDS, RefusalStreak } from '../../../shared/limit/deferral.js';
import type { Refusal } from '../../../shared/task/admission.js';
import { cryptoRandom } from '../../../shared/runtime/random.js';
import { sequenceRandom } from '../../../testing/doubles.js';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const settings = { baseSeconds: DEFAULTS.limitDeferBaseSeconds, capSeconds: DEFAULTS.limitDeferCapSeconds };
const busy: Refusal = { limit: 'database', reason: 'concurrency', retryAt: NOW + 1000 };
const TOP = 0.999_999_999;

describe('Function: deferralSeconds', () => {
  it('grows the ceiling as base·2^(k−1) with the streak, up to the cap', () => {
    const ceilings = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((k) =>
      deferralSeconds(busy, NOW, k, sequenceRandom([TOP]), settings),
    );
    expect(ceilings).toEqual([1, 2, 4, 8, 16, 32, 64, 120, 120, 120]);
  });

  it('equal jitter: from half the ceiling (rounded up) to the ceiling', () => {
    const base = { baseSeconds: 10, capSeconds: 1000 };
    expect(deferralSeconds(busy, NOW, 3, sequenceRandom([0]), base)).toBe(20);
    expect(deferralSeconds(busy, NOW, 3, sequenceRandom([0.5]), base)).toBe(30);
    expect(deferralSeconds(busy, NOW, 3, sequenceRandom([TOP]), base)).toBe(40);
    const samples = Array.from({ length: 2000 }, () => deferralSeconds(busy, NOW, 3, cryptoRandom, base));
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(20);
    expect(Math.max(...samples)).toBeLessThanOrEqual(40);
    // Spread over the range, not stuck at one end.
    expect(samples.filter((s) => s < 30).length / samples.length).toBeGreaterThan(0.3);
    expect(samples.filter((s) => s > 30).length / samples.length).toBeGreaterThan(0.3);
  });

  it('is whole seconds, at least 1, even for a streak of 0 or a huge one', () => {
    for (const k of [0, -3, 1, 2.7, 1e6, Number.POSITIVE_INFINITY, Number.NaN]) {
      const s = deferralSeconds(busy, NOW, k, sequenceRandom([0]), settings);
      expect(Number.isInteger(s)).toBe(true);
      expect(s).toBeGreaterThanOrEqual(1);
      expect(s).toBeLessThanOrEqual(settings.capSeconds);
    }
  });

  it('never brings a rate or paused refusal back before its retryAt (rounded up), even past the cap', () => {
    const rate: Refusal = { limit: 'email_provider', reason: 'rate', retryAt: NOW + 4_200 };
    expect(deferralSeconds(rate, NOW, 1, sequenceRandom([0]), settings)).toBe(5);
    const paused: Refusal = { limit: 'email_provider', reason: 'paused', retryAt: NOW + 300_000 };
    expect(deferralSeconds(paused, NOW, 1, sequenceRandom([0]), settings)).toBe(300);
    // A retryAt already past does not shorten the backoff.
    expect(deferralSeconds({ ...rate, retryAt: NOW - 5000 }, NOW, 4, sequenceRandom([TOP]), settings)).toBe(8);
  });

  it("ignores a concurrency refusal's retryAt (only a guess)", () => {
    expect(deferralSeconds({ ...busy, retryAt: NOW + 60_000 }, NOW, 1, sequenceRandom([0]), settings)).toBe(1);
  });

  it('stays within SQS’s 900 s', () => {
    const paused: Refusal = { limit: 'x', reason: 'paused', retryAt: NOW + 3_600_000 };
    expect(deferralSeconds(paused, NOW, 1, sequenceRandom([0]), settings)).toBe(MAX_DEFERRAL_SECONDS);
    expect(deferralSeconds(busy, NOW, 50, sequenceRandom([TOP]), { baseSeconds: 60, capSeconds: 5000 })).toBe(900);
  });
});

describe('Class: RefusalStreak', () => {
  it('grows with the time a limit has refused without a grant, one doubling per base, then per twice that', () => {
    const streak = new RefusalStreak(1000);
    expect(streak.refused('a', 0)).toBe(1);
    expect(streak.refused('a', 999)).toBe(1);
    expect(streak.refused('a', 1000)).toBe(2);
    expect(streak.refused('a', 3000)).toBe(3);
    expect(streak.refused('a', 7000)).toBe(4);
    expect(streak.refused('a', 127_000)).toBe(8);
  });

  it('does not grow with the number of refusals: many at once between two grants stay at the first step', () => {
    const streak = new RefusalStreak(1000);
    const ks = Array.from({ length: 50 }, () => streak.refused('a', 5_000));
    expect(new Set(ks)).toEqual(new Set([1]));
  });

  it('keeps limits apart; a grant of a limit starts its streak over', () => {
    const streak = new RefusalStreak(1000);
    streak.refused('a', 0);
    streak.refused('b', 5_000);
    expect(streak.refused('a', 7_000)).toBe(4);
    expect(streak.refused('b', 7_000)).toBe(2);
    streak.granted('a');
    expect(streak.saturatedSince('a')).toBeUndefined();
    expect(streak.saturatedSince('b')).toBe(5_000);
    expect(streak.refused('a', 60_000)).toBe(1);
    streak.granted('unknown');
    expect(streak.saturatedSince('b')).toBe(5_000);
  });
});
