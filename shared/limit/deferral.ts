/**
 * How long a task refused by a limit waits before its message comes back (SQS
 * ChangeMessageVisibility, whole seconds), and the per-limit streak of refusals that makes the
 * wait grow while a limit stays saturated. Pure, with an injected random source.
 *
 * @module
 */
import type { RandomSource } from '../runtime/random.js';
import type { Refusal } from '../task/admission.js';

/** SQS's longest visibility change / message delay. */
export const MAX_DEFERRAL_SECONDS = 900;

export interface DeferralSettings {
  /** The first deferral's ceiling. @see DEFAULTS.limitDeferBaseSeconds */
  readonly baseSeconds: number;
  /** The ceiling's cap, however long the streak. @see DEFAULTS.limitDeferCapSeconds */
  readonly capSeconds: number;
}

/**
 * Whole seconds (1 … 900) until a refused task is tried again.
 *
 * Exponential with equal jitter: the ceiling is `min(cap, base · 2^(k−1))` for the k-th refusal
 * in a row, and the wait is drawn from `[ceiling/2, ceiling]`, rounded up. Equal rather than
 * full jitter: a saturated limit must not see half its deferred tasks come back at once (full
 * jitter draws near 0 as often as near the ceiling), yet the spread still breaks up herds.
 * A rate or pause refusal knows when a start can be had (`retryAt`, exact), so the wait is never
 * shorter than that (rounded up), even past the cap; a concurrency refusal's `retryAt` is only a
 * guess and does not bound it.
 *
 * @param consecutiveRefusals refusals of this limit in a row, this one included (≥ 1)
 * @example deferralSeconds(refusal, clock.now(), streak.refused(refusal.limit), random, { baseSeconds: 1, capSeconds: 120 })
 */
export function deferralSeconds(
  refusal: Refusal,
  now: number,
  consecutiveRefusals: number,
  random: RandomSource,
  settings: DeferralSettings,
): number {
  const k = Number.isFinite(consecutiveRefusals) ? Math.max(1, Math.floor(consecutiveRefusals)) : 1;
  // 2^(k−1) overflows to Infinity for a long streak; min() with the cap keeps it finite.
  const ceiling = Math.min(settings.capSeconds, settings.baseSeconds * 2 ** (k - 1));
  const jittered = Math.ceil(ceiling / 2 + (random.next() * ceiling) / 2);
  const known = refusal.reason === 'concurrency' ? 0 : Math.ceil((refusal.retryAt - now) / 1000);
  return Math.min(MAX_DEFERRAL_SECONDS, Math.max(1, jittered, known));
}

/**
 * How long each limit has refused without a grant, in one process (the consumer keeps one), as
 * the `k` of {@link deferralSeconds}: `1 + floor(log2(1 + saturatedFor / base))`, so the
 * deferral's ceiling stays about as long as the limit has been saturated (1 s, then 2 s after
 * a second, 4 s after three, ...). Time, not a count: a process refuses many tasks at once
 * between two grants of a busy limit (its backlog), and counting those would push the next
 * deferrals to the cap while the limit still grants several times a second.
 */
export class RefusalStreak {
  /** When each limit's current refusals began (epoch ms). */
  private readonly since = new Map<string, number>();

  /** @param baseMs the deferral base (one doubling per `baseMs` of saturation, then per twice that...) */
  constructor(private readonly baseMs = 1000) {}

  /** Notes a refusal of `limit` at `now`; the streak's `k` (≥ 1). */
  refused(limit: string, now: number): number {
    let start = this.since.get(limit);
    if (start === undefined) {
      start = now;
      this.since.set(limit, now);
    }
    const saturatedFor = Math.max(0, now - start);
    return 1 + Math.floor(Math.log2(1 + saturatedFor / this.baseMs));
  }

  /** `limit` was granted: it is not saturated (its next refusal starts a new streak). */
  granted(limit: string): void {
    this.since.delete(limit);
  }

  /** Since when `limit` has refused without a grant (undefined: its last answer was a grant, or none). */
  saturatedSince(limit: string): number | undefined {
    return this.since.get(limit);
  }
}
