/**
 * Kaj on the in-memory fakes, driven by hand: the API called as API Gateway would, and a drain
 * that delivers the queue's due messages one at a time (in an order the caller may choose) to the
 * consumer, sweeping the outbox between, until none is left. What the unit tests of workflows and
 * pipelines run whole processes on.
 *
 * @module
 */
import type { KajDeps } from '../shared/service/all-in-one.js';
import type { TaskRegistry } from '../shared/task/define.js';
import { apiEvent, lambdaContext, sqsEvent, sqsRecord, TimerClock, unitKaj } from './fixtures.js';
import type { MemoryTaskQueue } from './memory-task-queue.js';
import type { MemoryTaskStore } from './memory-task-store.js';

export interface DrainOptions {
  /** Which of the `n` due messages goes next. @default the oldest */
  readonly pick?: (n: number) => number;
  /** Moves the (fake) time on when only delayed messages are left. */
  readonly advance?: (ms: number) => Promise<unknown>;
  /** Most deliveries. @default 500 */
  readonly maxDeliveries?: number;
}

/** What a second deployment takes over from a first (a deploy): its table, queue and what was delivered. */
export interface DrivenState {
  readonly store: MemoryTaskStore;
  readonly queue: MemoryTaskQueue;
  readonly seen: Map<unknown, number>;
  readonly delivered: Set<unknown>;
}

/**
 * `unitKaj` on a timer clock, with `api(method, path, body)` and `drain(options)`. `from`: the
 * state of an earlier one, for a new deployment (another registry) over the same table and queue.
 */
export function drivenKaj(registry: TaskRegistry, extra: Partial<KajDeps> = {}, from?: DrivenState) {
  const base = unitKaj(registry, undefined, new TimerClock(), {
    ...extra,
    ...(from === undefined ? {} : { store: from.store, queue: from.queue }),
  });
  const u = from === undefined ? base : { ...base, store: from.store, queue: from.queue };
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await u.kaj.handleHttp(
      apiEvent(method, path, body === undefined ? {} : { body: JSON.stringify(body) }),
    );
    return { status: res.statusCode, json: JSON.parse(res.body) as Record<string, any> };
  };
  const seen = from?.seen ?? new Map<unknown, number>();
  const delivered = from?.delivered ?? new Set<unknown>();
  /** Delivers every message due by now until none is left (delayed ones once `advance` moved time). */
  const drain = async (o: DrainOptions = {}): Promise<number> => {
    let deliveries = 0;
    while (deliveries < (o.maxDeliveries ?? 500)) {
      await u.kaj.sweep(10_000);
      for (const m of u.queue.sent) if (!seen.has(m)) seen.set(m, Date.now());
      const left = u.queue.sent.filter((m) => !delivered.has(m));
      const due = left.filter((m) => (seen.get(m) ?? 0) + m.delaySeconds * 1000 <= Date.now());
      if (due.length === 0) {
        if (left.length === 0 || o.advance === undefined) return deliveries;
        await o.advance(5_000);
        continue;
      }
      const picked = due[(o.pick?.(due.length) ?? 0) % due.length] as (typeof due)[number];
      delivered.add(picked);
      deliveries += 1;
      await u.kaj.processBatch(sqsEvent(sqsRecord(picked.message)), lambdaContext());
    }
    return deliveries;
  };
  const state: DrivenState = { store: u.store, queue: u.queue, seen, delivered };
  return { ...u, api, drain, state };
}
