/**
 * Task outcomes per minute over the last hour, counted in this process from the metrics the
 * consumer emits (`TasksSucceeded`, `TasksFailed`, `TasksRetried`: the names CloudWatch gets on
 * AWS). The local runtime passes {@link ThroughputRecorder.metrics} as its `Metrics`, so the
 * console's chart shows what this runtime did since it started; nothing is kept across restarts.
 *
 * @module
 */
import { METRICS } from '../shared/config/metrics.js';
import type { Clock } from '../shared/runtime/clock.js';
import type { Metrics } from '../shared/runtime/logger.js';
import type { Throughput, ThroughputBucket } from './model.js';

export const BUCKET_MS = 60_000;
export const WINDOW_BUCKETS = 60;

type Kind = 'succeeded' | 'failed' | 'retried';
const KIND_OF: Readonly<Record<string, Kind>> = {
  [METRICS.succeeded]: 'succeeded',
  [METRICS.failed]: 'failed',
  [METRICS.retried]: 'retried',
};

export class ThroughputRecorder {
  /** Bucket start (epoch ms) → counts. */
  private readonly buckets = new Map<number, { succeeded: number; failed: number; retried: number }>();
  readonly startedAt: number;

  constructor(private readonly clock: Clock) {
    this.startedAt = clock.now();
  }

  /** A `Metrics` that counts task outcomes here and passes everything on to `inner`. */
  metrics(inner?: Metrics): Metrics {
    return {
      count: (name, type, value = 1) => {
        const kind = KIND_OF[name];
        if (kind !== undefined) this.add(kind, value);
        inner?.count(name, type, value);
      },
      durationMs: (type, ms) => inner?.durationMs(type, ms),
    };
  }

  add(kind: Kind, value = 1): void {
    const start = Math.floor(this.clock.now() / BUCKET_MS) * BUCKET_MS;
    const b = this.buckets.get(start) ?? { succeeded: 0, failed: 0, retried: 0 };
    b[kind] += value;
    this.buckets.set(start, b);
    const oldest = start - WINDOW_BUCKETS * BUCKET_MS;
    for (const k of this.buckets.keys()) if (k <= oldest) this.buckets.delete(k);
  }

  /** The last hour, one bucket a minute, oldest first (empty minutes as zeros). */
  series(): Throughput {
    return {
      available: true,
      source: `this runtime's own counters (since it started, ${new Date(this.startedAt).toISOString()})`,
      bucketSeconds: BUCKET_MS / 1000,
      buckets: lastHour(this.clock.now(), (start) => this.buckets.get(start)),
    };
  }
}

/** The {@link WINDOW_BUCKETS} one-minute buckets ending with the current one, filled by `at`. */
export function lastHour(
  now: number,
  at: (start: number) => Omit<ThroughputBucket, 'start'> | undefined,
): ThroughputBucket[] {
  const current = Math.floor(now / BUCKET_MS) * BUCKET_MS;
  const out: ThroughputBucket[] = [];
  for (let i = WINDOW_BUCKETS - 1; i >= 0; i -= 1) {
    const start = current - i * BUCKET_MS;
    const b = at(start);
    out.push({ start, succeeded: b?.succeeded ?? 0, failed: b?.failed ?? 0, retried: b?.retried ?? 0 });
  }
  return out;
}
