import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { defineTask, PermanentError, TaskRegistry } from '../../../shared/task/define.js';
import { lambdaContext, sqsEvent, sqsRecord, TimerClock, unitKaj, OWNER } from '../../../testing/fixtures.js';

/** Handlers whose behaviour each test scripts through `script`. */
const script: { run: (signal: AbortSignal) => Promise<unknown> } = { run: async () => 'ok' };
const registry = new TaskRegistry([
  defineTask({
    type: 'scripted',
    schema: z.object({ n: z.number().optional() }),
    timeoutSeconds: 100,
    handler: (_p, ctx) => script.run(ctx.signal),
  }),
]);

function until(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
}

async function setup() {
  const u = unitKaj(registry, undefined, new TimerClock());
  const { record } = await u.kaj.submitter.submit({ type: 'scripted', payload: {} }, OWNER);
  const msg = u.queue.sent[0]?.message;
  return { ...u, record, rec: sqsRecord(msg) };
}

describe('Class: TaskConsumer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.parse('2026-03-01T00:00:00Z') });
    script.run = async () => 'ok';
  });
  afterEach(() => vi.useRealTimers());

  it('runs a task, records success and acknowledges the message', async () => {
    const { kaj, store, record, rec, queue } = await setup();
    script.run = async () => ({ sent: true });
    const res = await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(res.batchItemFailures).toEqual([]);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'succeeded', result: { sent: true }, attempts: 1 });
    // A lazy claim: one read, one write (the outcome), no visibility change.
    expect(store.updates).toBe(1);
    expect(store.reads.consistent).toBe(1);
    expect(queue.visibility).toEqual([]);
  });

  it('heartbeats every lease/3 while the handler runs and stops in the end', async () => {
    const { kaj, store, record, rec, queue } = await setup();
    let finish: (v: unknown) => void = () => {};
    script.run = () => new Promise((r) => (finish = r));
    const done = kaj.processBatch(sqsEvent(rec), lambdaContext());
    const held = { priority: 'normal', entries: [{ receiptHandle: rec.receiptHandle, seconds: 60 }] };
    await vi.advanceTimersByTimeAsync(19_999);
    // Not written before the first heartbeat: the table still says queued. The message is held for
    // one lease from the start of the invocation (Lambda received it with the queue's 330 s).
    expect(queue.visibilityBatches).toEqual([held]);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0 });
    await vi.advanceTimersByTimeAsync(1);
    // The first heartbeat writes the claim; the message is held for one lease again.
    expect(queue.visibilityBatches).toEqual([held, held]);
    expect(store.items.get(record.task_id)).toMatchObject({
      status: 'running',
      attempts: 1,
      lease_token: 1,
      lease_until: Date.now() + 60_000,
    });
    await vi.advanceTimersByTimeAsync(40_000);
    expect(queue.visibilityBatches).toHaveLength(4);
    finish('done');
    await done;
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 1 });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(queue.visibilityBatches).toHaveLength(4);
    expect(queue.visibility).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('times a handler out, aborts its signal and schedules a retry', async () => {
    const { kaj, store, record, rec } = await setup();
    let aborted = false;
    script.run = (signal) => {
      signal.addEventListener('abort', () => (aborted = true));
      return new Promise(() => {});
    };
    const done = kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(100_000);
    expect((await done).batchItemFailures).toEqual([]);
    expect(aborted).toBe(true);
    expect(store.items.get(record.task_id)).toMatchObject({
      status: 'retrying',
      last_error: { name: 'TaskTimeoutError', code: 'TIMEOUT', retryable: true },
    });
  });

  it('cancels a running task whose handler honours the signal', async () => {
    const { kaj, store, record, rec } = await setup();
    script.run = (signal) => until(signal);
    const done = kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(1);
    await kaj.lifecycle.requests.cancel(record.task_id);
    await vi.advanceTimersByTimeAsync(20_000);
    await done;
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'cancelled' });
    expect(store.items.get(record.task_id)?.history.at(-1)?.outcome).toBe('cancelled');
  });

  it('records a task as cancelled even when its handler ignores the signal, discarding the result', async () => {
    const { kaj, store, record, rec } = await setup();
    script.run = () => new Promise((r) => setTimeout(() => r('finished anyway'), 30_000));
    const done = kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(1);
    await kaj.lifecycle.requests.cancel(record.task_id);
    await vi.advanceTimersByTimeAsync(30_000);
    await done;
    const stored = store.items.get(record.task_id);
    expect(stored?.status).toBe('cancelled');
    expect(stored?.result).toBeUndefined();
  });

  it('releases a message it has no time left to run, without counting an attempt', async () => {
    const { kaj, store, record, rec, queue } = await setup();
    const res = await kaj.processBatch(sqsEvent(rec), lambdaContext(100_000));
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: rec.messageId }]);
    expect(queue.visibility).toEqual([{ priority: 'normal', receiptHandle: rec.receiptHandle, seconds: 0 }]);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0 });
  });

  it('leaves the message for redelivery when the store is down, without counting an attempt', async () => {
    const { kaj, store, record, rec, queue } = await setup();
    store.failNext.update = new StoreUnavailableError('throttled');
    const res = await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: rec.messageId }]);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0 });
    // Back in a few seconds (random 0.5 × 5 s on the first receive), not after the queue's 330 s.
    expect(queue.visibility).toEqual([{ priority: 'normal', receiptHandle: rec.receiptHandle, seconds: 3 }]);
  });

  it('backs the redelivery off with the receive count, up to 5 minutes', async () => {
    const { kaj, store, record, queue } = await setup();
    const msg = { task_id: record.task_id, dispatch_id: record.dispatch_id };
    for (const receives of [4, 20]) {
      store.failNext.update = new StoreUnavailableError('throttled');
      await kaj.processBatch(sqsEvent(sqsRecord(msg, 'normal', receives)), lambdaContext());
    }
    expect(queue.visibility.map((v) => v.seconds)).toEqual([1 + Math.floor(0.5 * 40), 1 + Math.floor(0.5 * 300)]);
  });

  it('reports only the failed records of a mixed batch', async () => {
    const { kaj, store, rec } = await setup();
    const junk = sqsRecord('not json');
    const alien = sqsRecord({ hello: 'world' });
    const res = await kaj.processBatch(sqsEvent(rec, junk, alien), lambdaContext());
    expect(res.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual([alien.messageId, junk.messageId].sort());
    expect([...store.items.values()][0]?.status).toBe('succeeded');
  });

  it('acknowledges a duplicate of a finished task without running it again', async () => {
    const { kaj, rec } = await setup();
    let runs = 0;
    script.run = async () => (runs += 1);
    await kaj.processBatch(sqsEvent(rec), lambdaContext());
    const dup = await kaj.processBatch(
      sqsEvent({ ...rec, messageId: 'dup', receiptHandle: 'rh-dup' }),
      lambdaContext(),
    );
    expect(dup.batchItemFailures).toEqual([]);
    expect(runs).toBe(1);
  });

  it('fails a task permanently when its payload no longer fits the schema', async () => {
    const { kaj, store, record, rec } = await setup();
    store.items.set(record.task_id, { ...store.items.get(record.task_id)!, payload: { n: 'x' } });
    await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'failed', last_error: { retryable: false } });
  });

  it('dead-letters a permanent error with its code', async () => {
    const { kaj, queue, rec } = await setup();
    script.run = async () => {
      throw new PermanentError('nope', { code: 'E1' });
    };
    await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(queue.dead[0]).toMatchObject({ last_error: { code: 'E1', message: 'nope' }, attempts: 1 });
  });
});
