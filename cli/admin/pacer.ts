import type { Clock } from '../../shared/runtime/clock.js';

/** Waits `ms` milliseconds (resolves early when `signal` aborts). Injected so tests never sleep. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const realSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Spaces operations `1000 / ratePerSecond` ms apart (no bursts), shared by concurrent callers:
 * each `take()` reserves the next free slot and waits for it.
 */
export class Pacer {
  private next = Number.NEGATIVE_INFINITY;
  private readonly intervalMs: number;

  constructor(
    ratePerSecond: number | undefined,
    private readonly clock: Clock,
    private readonly sleep: Sleep,
  ) {
    if (ratePerSecond !== undefined && !(ratePerSecond > 0)) throw new RangeError('rate must be > 0');
    this.intervalMs = ratePerSecond === undefined ? 0 : 1000 / ratePerSecond;
  }

  async take(signal?: AbortSignal): Promise<void> {
    if (this.intervalMs === 0) return;
    const now = this.clock.now();
    const at = Math.max(now, this.next);
    this.next = at + this.intervalMs;
    if (at > now) await this.sleep(at - now, signal);
  }
}
