/**
 * Counts the AWS requests a process makes, by service, command and table, and the metrics it
 * emits: what a benchmark reads from worker processes it cannot instrument from outside
 * (`local/worker.ts --counts-file`). Nothing here changes a request.
 *
 * @module
 */
import { writeFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Metrics } from '../shared/runtime/logger.js';

/** Requests (`dynamodb:UpdateItem:kaj-limits`, `sqs:ChangeMessageVisibility`) and metric counts. */
export interface RequestCounts {
  readonly requests: Record<string, number>;
  /** Requests that failed (a conditional write refused, a throttle), by the same keys. */
  readonly failed: Record<string, number>;
  readonly metrics: Record<string, number>;
  /** Counters the process keeps itself (the limiter's forfeited starts...), read at each save. */
  readonly gauges?: Record<string, number>;
}

interface Stack {
  add(
    mw: (
      next: (a: { input: Record<string, unknown> }) => Promise<unknown>,
      ctx: { commandName?: string },
    ) => (a: { input: Record<string, unknown> }) => Promise<unknown>,
    o: { step: 'initialize'; name: string },
  ): void;
}

export class RequestCounter {
  readonly counts: RequestCounts = { requests: {}, failed: {}, metrics: {} };

  /** Counts every command `client` sends from now on. */
  instrument(client: SQSClient | DynamoDBClient, service: 'sqs' | 'dynamodb'): void {
    (client.middlewareStack as unknown as Stack).add(
      (next, ctx) => async (args) => {
        const table = typeof args.input.TableName === 'string' ? `:${args.input.TableName}` : '';
        const key = `${service}:${String(ctx.commandName).replace(/Command$/, '')}${table}`;
        this.counts.requests[key] = (this.counts.requests[key] ?? 0) + 1;
        try {
          return await next(args);
        } catch (err) {
          this.counts.failed[key] = (this.counts.failed[key] ?? 0) + 1;
          throw err;
        }
      },
      { step: 'initialize', name: `kaj-request-counter-${service}` },
    );
  }

  /** A `Metrics` that counts what it is told (and passes it on to `inner`). */
  metrics(inner?: Metrics): Metrics {
    return {
      count: (name, type, value = 1) => {
        this.counts.metrics[name] = (this.counts.metrics[name] ?? 0) + value;
        inner?.count(name, type, value);
      },
      durationMs: (type, ms) => inner?.durationMs(type, ms),
    };
  }

  private gauges: (() => Record<string, number>) | undefined;

  /** Adds the counters `read` returns to every save (under `gauges`). */
  track(read: () => Record<string, number>): void {
    this.gauges = read;
  }

  /** Writes the counts so far to `path` (JSON), replacing what was there. */
  save(path: string): void {
    const gauges = this.gauges?.();
    writeFileSync(path, JSON.stringify(gauges === undefined ? this.counts : { ...this.counts, gauges }));
  }
}
