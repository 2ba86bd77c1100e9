/**
 * The simulated email provider of the payroll run: it accepts at most `limit` emails in any
 * sliding window of `windowMs` (a call at t counts the accepted calls in (t − windowMs, t]) and
 * answers any call beyond with 429 and a Retry-After; it records every call and every accepted
 * idempotency key, so a key accepted twice is a duplicate email.
 *
 * @module
 */

/** A growable array of numbers (the provider's: whole microseconds). */
export class Times {
  private a = new Float64Array(1024);
  length = 0;

  push(us: number): void {
    if (this.length === this.a.length) {
      const b = new Float64Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.length++] = us;
  }

  /** The values, in the order pushed. */
  values(): Float64Array {
    return this.a.subarray(0, this.length);
  }

  sorted(): Float64Array {
    return this.a.slice(0, this.length).sort();
  }
}

/**
 * Most times in any window [x, x + window) of `times` (ascending, in the window's unit): what a
 * provider counting a sliding window of that length saw at its busiest.
 */
export function maxInWindow(times: ArrayLike<number>, window: number): number {
  let most = 0;
  let j = 0;
  for (let i = 0; i < times.length; i += 1) {
    const end = (times[i] as number) + window;
    while (j < times.length && (times[j] as number) < end) j += 1;
    if (j - i > most) most = j - i;
  }
  return most;
}

/**
 * Values per second of ascending `times` (in `perSecond`ths of a second) between their 10th and
 * 90th percentiles: the pace once under way, without the ramp-up and the tail (0 when too few).
 */
export function steadyRate(times: ArrayLike<number>, perSecond = 1000): number {
  const lo = Math.floor(times.length * 0.1);
  const hi = Math.floor(times.length * 0.9);
  const span = (times[hi] ?? 0) - (times[lo] ?? 0);
  return hi > lo && span > 0 ? ((hi - lo) * perSecond) / span : 0;
}

export type ProviderAnswer = { readonly ok: true } | { readonly ok: false; readonly retryAfterSeconds: number };

export class SimProvider {
  /** Every call (accepted or refused), µs, in time order. */
  readonly calls = new Times();
  readonly accepted = new Times();
  refused = 0;
  duplicates = 0;
  /** Accepted emails per key (slip index). */
  private readonly sent: Uint8Array;
  private readonly windowUs: number;
  /** Index in `accepted` of the oldest call still in the window. */
  private head = 0;

  constructor(
    slips: number,
    private readonly limit: number,
    windowMs: number,
    private readonly retryAfterSeconds: number,
  ) {
    this.sent = new Uint8Array(slips);
    this.windowUs = Math.round(windowMs * 1000);
  }

  /** A call at `nowMs` for slip `slip` (idempotency key `slip:2026-11:emp-<slip>`). */
  send(slip: number, nowMs: number): ProviderAnswer {
    const now = Math.round(nowMs * 1000);
    this.calls.push(now);
    const acc = this.accepted.values();
    while (this.head < acc.length && (acc[this.head] as number) <= now - this.windowUs) this.head += 1;
    if (acc.length - this.head >= this.limit) {
      this.refused += 1;
      return { ok: false, retryAfterSeconds: this.retryAfterSeconds };
    }
    this.accepted.push(now);
    const n = this.sent[slip] ?? 0;
    if (n > 0) this.duplicates += 1;
    this.sent[slip] = Math.min(255, n + 1);
    return { ok: true };
  }

  /** Slips emailed at least once. */
  emailed(): number {
    let n = 0;
    for (const v of this.sent) if (v > 0) n += 1;
    return n;
  }

  /** The most calls (all, or accepted only) in any window of the provider's length. */
  peakPerWindow(which: 'calls' | 'accepted'): number {
    return maxInWindow((which === 'calls' ? this.calls : this.accepted).values(), this.windowUs);
  }
}
