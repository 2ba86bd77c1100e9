import type { SQSRecord } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { MessageHold } from '../../../shared/service/consumer/message-hold.js';
import type { Priority } from '../../../shared/config/resources.js';
import { MessageGoneError, QueueUnavailableError } from '../../../shared/task/queue-errors.js';
import type { FailedVisibilityChange, TaskQueue, VisibilityChange } from '../../../shared/task/task-queue.js';
import { RecordingLogger } from '../../../shared/runtime/logger.js';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { lambdaContext, OWNER, sqsEvent, sqsRecord, TimerClock, unitKaj } from '../../../testing/fixtures.js';
import { MemoryTaskQueue } from '../../../testing/memory-task-queue.js';

const LEASE = 60;
const THIRD_MS = (LEASE / 3) * 1000;

/** Handlers that wait until the test lets them finish (`release()`), or finish at once. */
const gates: { wait: boolean; pending: (() => void)[] } = { wait: true, pending: [] };
function releaseAll(): void {
  for (const r of gates.pending.splice(0)) r();
}
const registry = new TaskRegistry([
  defineTask({
    type: 'held',
    schema: z.object({ n: z.number() }),
    timeoutSeconds: 200,
    handler: (p) =>
      gates.wait ? new Promise<unknown>((r) => gates.pending.push(() => r({ n: p.n }))) : Promise.resolve({ n: p.n }),
  }),
]);

/** `n` tasks submitted and received from the fake queue with `visibilitySeconds`, as SQS records with their real handles. */
async function received(n: number, visibilitySeconds: number, receiveCount?: number) {
  const u = unitKaj(registry, undefined, new TimerClock());
  for (let i = 0; i < n; i += 1) await u.kaj.submitter.submit({ type: 'held', payload: { n: i } }, OWNER);
  const got = u.queue.receive('normal', { visibilitySeconds, max: 10 });
  const records: SQSRecord[] = got.map((m) => ({
    ...sqsRecord(JSON.parse(m.body), 'normal', receiveCount ?? m.receiveCount),
    receiptHandle: m.receiptHandle,
  }));
  return { ...u, records };
}

describe('Class: TaskConsumer — holding the batch’s messages (MessageHold)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.parse('2026-03-01T00:00:00Z') });
    gates.wait = true;
    gates.pending.length = 0;
  });
  afterEach(() => {
    releaseAll();
    vi.useRealTimers();
  });

  it('on Lambda (received with the queue’s 330 s) holds every message of the batch for one lease at once: one ChangeMessageVisibilityBatch, before any has run', async () => {
    const { kaj, queue, records } = await received(10, 330);
    const done = kaj.processBatch(sqsEvent(...records), lambdaContext());
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.visibilityBatches).toEqual([
      { priority: 'normal', entries: records.map((r) => ({ receiptHandle: r.receiptHandle, seconds: LEASE })) },
    ]);
    expect(queue.visibility).toEqual([]);
    releaseAll();
    await done;
  });

  it('a consumer that can no longer extend (as if it died) gives every message back after one lease, not after the queue’s visibility timeout', async () => {
    const { kaj, queue, records } = await received(10, 330);
    const done = kaj.processBatch(sqsEvent(...records), lambdaContext());
    await vi.advanceTimersByTimeAsync(0);
    queue.available = false; // from here on nothing this consumer sends reaches the queue
    await vi.advanceTimersByTimeAsync(LEASE * 1000 - 1000);
    expect(queue.receive('normal', { max: 10 })).toEqual([]);
    await vi.advanceTimersByTimeAsync(1000);
    const again = queue.receive('normal', { max: 10 });
    expect(again).toHaveLength(10);
    expect(again.every((m) => m.receiveCount === 2)).toBe(true);
    releaseAll();
    queue.available = true;
    await done;
  });

  it('extends every message still held every lease/3 — running, and acknowledged ones until the invocation ends — and nothing after it', async () => {
    const { kaj, queue, records } = await received(2, 330);
    const [slow, quick] = records as [SQSRecord, SQSRecord];
    const done = kaj.processBatch(sqsEvent(slow, quick), lambdaContext());
    await vi.advanceTimersByTimeAsync(0);
    // The quick one finishes at once; the slow one still runs.
    gates.pending.shift()?.();
    await vi.advanceTimersByTimeAsync(THIRD_MS);
    const both = [slow.receiptHandle, quick.receiptHandle].sort();
    const handles = (i: number) => (queue.visibilityBatches[i]?.entries ?? []).map((e) => e.receiptHandle).sort();
    expect(queue.visibilityBatches).toHaveLength(2);
    expect(handles(0)).toEqual(both);
    expect(handles(1)).toEqual(both);
    expect(queue.visibilityBatches[1]?.entries.every((e) => e.seconds === LEASE)).toBe(true);
    await vi.advanceTimersByTimeAsync(THIRD_MS);
    expect(queue.visibilityBatches).toHaveLength(3);
    releaseAll();
    const res = await done;
    expect(res.batchItemFailures).toEqual([]);
    await vi.advanceTimersByTimeAsync(5 * THIRD_MS);
    expect(queue.visibilityBatches).toHaveLength(3);
    expect(queue.visibility).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('from a poller that received with one lease: nothing at the start, and a task done within lease/3 costs no visibility request at all', async () => {
    gates.wait = false;
    const { kaj, queue, records, store } = await received(3, LEASE);
    const res = await kaj.processBatch(sqsEvent(...records), { ...lambdaContext(), receivedVisibilitySeconds: LEASE });
    expect(res.batchItemFailures).toEqual([]);
    expect([...store.items.values()].map((t) => t.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(queue.visibilityBatches).toEqual([]);
    expect(queue.visibility).toEqual([]);
  });

  it('a redelivery’s written claim sends no visibility change of its own: the message is held since its receive', async () => {
    gates.wait = false;
    const { kaj, queue, records, store } = await received(1, LEASE, 2);
    await kaj.processBatch(sqsEvent(...records), { ...lambdaContext(), receivedVisibilitySeconds: LEASE });
    expect([...store.items.values()][0]).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 1 });
    expect(queue.visibility).toEqual([]);
    expect(queue.visibilityBatches).toEqual([]);
  });

  it('a message left for redelivery with its own visibility (a backoff) is no longer extended', async () => {
    const { kaj, queue, records, store } = await received(2, 330);
    const [failing, running] = records as [SQSRecord, SQSRecord];
    store.failNext.get = new StoreUnavailableError('throttled'); // the first claim read fails
    const done = kaj.processBatch(sqsEvent(failing, running), lambdaContext());
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.visibility).toHaveLength(1);
    const backedOff = queue.visibility[0]?.receiptHandle;
    await vi.advanceTimersByTimeAsync(THIRD_MS);
    const extended = queue.visibilityBatches.at(-1)?.entries.map((e) => e.receiptHandle);
    expect(extended).toHaveLength(1);
    expect(extended).not.toContain(backedOff);
    releaseAll();
    const res = await done;
    expect(res.batchItemFailures.map((f) => f.itemIdentifier)).toHaveLength(1);
  });
});

/** A queue whose batch visibility changes wait until the test lets them land. */
class SlowBatchQueue extends MemoryTaskQueue {
  readonly landed: string[] = [];
  private waiting: (() => void)[] = [];
  gone = new Set<string>();

  override async changeVisibilityMany(
    priority: Priority,
    entries: readonly VisibilityChange[],
  ): Promise<FailedVisibilityChange[]> {
    await new Promise<void>((r) => this.waiting.push(r));
    this.landed.push(...entries.map((e) => `batch ${e.receiptHandle} ${e.seconds}`));
    const failed = await super.changeVisibilityMany(priority, entries);
    return [
      ...failed,
      ...entries
        .filter((e) => this.gone.has(e.receiptHandle))
        .map((entry) => ({ entry, error: new MessageGoneError('message is no longer in flight') })),
    ];
  }

  override async changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void> {
    await super.changeVisibility(priority, receiptHandle, seconds);
    this.landed.push(`single ${receiptHandle} ${seconds}`);
  }

  /** Lets every batch request waiting now land. */
  land(): void {
    for (const r of this.waiting.splice(0)) r();
  }
}

describe('Class: MessageHold', () => {
  const settings = { leaseSeconds: LEASE, heartbeatSeconds: LEASE / 3 };
  const a = { receiptHandle: 'rh-a', priority: 'normal' as const, lane: 'default' };
  const b = { receiptHandle: 'rh-b', priority: 'normal' as const, lane: 'default' };
  const c = { receiptHandle: 'rh-c', priority: 'high' as const, lane: 'io' };

  beforeEach(() => vi.useFakeTimers({ now: Date.parse('2026-03-01T00:00:00Z') }));
  afterEach(() => vi.useRealTimers());

  it('a message given its own visibility while an extension is in flight gets it after that extension lands, never before (the extension cannot undo it)', async () => {
    const queue = new SlowBatchQueue();
    const hold = new MessageHold({ queue, settings, logger: new RecordingLogger() }, [a, b]);
    hold.start({ shorten: true });
    const deferred = hold.setVisibility(a, 3);
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.landed).toEqual([]);
    queue.land();
    await deferred;
    expect(queue.landed).toEqual(['batch rh-a 60', 'batch rh-b 60', 'single rh-a 3']);
    await vi.advanceTimersByTimeAsync(THIRD_MS);
    queue.land();
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.landed.slice(3)).toEqual(['batch rh-b 60']);
    await hold.stop();
  });

  it('one request per queue (lane and priority); a gone message is dropped, a failed extension is tried again at the next period', async () => {
    const queue = new SlowBatchQueue();
    const logger = new RecordingLogger();
    queue.gone.add('rh-b');
    queue.failNext.changeVisibilityMany = new QueueUnavailableError('throttled');
    const hold = new MessageHold({ queue, settings, logger }, [a, b, c]);
    hold.start({ shorten: false });
    await vi.advanceTimersByTimeAsync(THIRD_MS);
    queue.land();
    await vi.advanceTimersByTimeAsync(0);
    expect(queue.visibilityBatches.map((v) => v.priority).sort()).toEqual(['high', 'normal']);
    expect(hold.receiptHandles.sort()).toEqual(['rh-a', 'rh-c']);
    expect(logger.entries.filter((e) => e.message === 'could not extend message visibility')).not.toHaveLength(0);
    await vi.advanceTimersByTimeAsync(THIRD_MS);
    queue.land();
    await vi.advanceTimersByTimeAsync(0);
    expect(
      queue.visibilityBatches
        .slice(2)
        .flatMap((v) => v.entries.map((e) => e.receiptHandle))
        .sort(),
    ).toEqual(['rh-a', 'rh-c']);
    await hold.stop();
  });

  it('a queue without changeVisibilityMany gets one changeVisibility per message', async () => {
    const calls: string[] = [];
    const queue: TaskQueue = {
      send: async () => {},
      sendMany: async () => [],
      sendDead: async () => {},
      changeVisibility: async (_p, handle, seconds) => {
        calls.push(`${handle} ${seconds}`);
      },
    };
    const hold = new MessageHold({ queue, settings, logger: new RecordingLogger() }, [a, b]);
    hold.start({ shorten: true });
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.sort()).toEqual(['rh-a 60', 'rh-b 60']);
    hold.release('rh-a');
    await vi.advanceTimersByTimeAsync(THIRD_MS);
    expect(calls.slice(2)).toEqual(['rh-b 60']);
    await hold.stop();
    await vi.advanceTimersByTimeAsync(THIRD_MS * 3);
    expect(calls).toHaveLength(3);
  });
});
