/**
 * The consumer's side of flow control (shared/service/consumer/flow-control.ts, the `limited` claim
 * outcome of shared/service/consumer/consumer.ts), over in-memory fakes and vitest's fake timers: a
 * refused task's message is deferred and nothing is written; near the queue's maxReceiveCount it
 * is re-sent instead (so deferrals never dead-letter); a granted permit is given back once the
 * attempt's outcome is written, whatever the outcome; a provider's Retry-After pauses a learning
 * limit for every worker; and the two start-up / key failures are loud.
 *
 * "Another worker" is a second {@link Limiter} on the same {@link MemoryLimitStore}: what a second
 * process sharing the limits table is.
 */
import type { SQSRecord } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { METRICS } from '../../../shared/config/metrics.js';
import { DEFAULTS } from '../../../shared/config/resources.js';
import { runtimeSettings } from '../../../shared/config/settings.js';
import { MissingLimiterError } from '../../../shared/service/consumer/errors.js';
import { ExclusiveGate } from '../../../shared/service/consumer/exclusive-gate.js';
import { refreshAtReceive } from '../../../shared/service/consumer/flow-control.js';
import { Limiter } from '../../../shared/limit/limiter.js';
import type { LimitUse } from '../../../shared/limit/spec.js';
import { type Metrics, RecordingLogger } from '../../../shared/runtime/logger.js';
import type { RandomSource } from '../../../shared/runtime/random.js';
import {
  type AnyTaskDefinition,
  defineLanes,
  defineLimits,
  defineTask,
  RetryableError,
  TaskRegistry,
} from '../../../shared/task/define.js';
import { sequenceRandom } from '../../../testing/doubles.js';
import { lambdaContext, OWNER, sqsEvent, sqsRecord, TimerClock, unitKaj } from '../../../testing/fixtures.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const LEASE_SECONDS = 60;
const MAX_RECEIVE_COUNT = 5;
/** Written out, not computed with refreshAtReceive: the test says what the rule is. */
const REFRESH_AT = 3;
/** The io lane's queues, as the consumer is told them (`laneQueueNames`). */
const IO_QUEUE_NAMES = { high: 'unit-io-lane-high', normal: 'unit-io-lane-normal', low: 'unit-io-lane-low' } as const;

/** Handlers scripted per test; `runs` counts real handler starts. */
const script: { run: (signal: AbortSignal) => Promise<unknown> } = { run: async () => 'ok' };
let runs = 0;
const scripted = (_p: unknown, ctx: { signal: AbortSignal }) => {
  runs += 1;
  return script.run(ctx.signal);
};

const limits = defineLimits({
  one_slot: { concurrency: 1 },
  provider: { rate: '10/s', learnRetryAfter: true },
  keyed: { concurrency: 2 },
  three_slots: { concurrency: 3 },
});
const lanes = defineLanes({ io: {} });

const definitions: AnyTaskDefinition[] = [
  defineTask({ type: 'slotted', schema: z.object({}), timeoutSeconds: 100, uses: ['one_slot'], handler: scripted }),
  defineTask({
    type: 'io_slotted',
    lane: 'io',
    schema: z.object({}),
    timeoutSeconds: 100,
    uses: ['one_slot'],
    handler: scripted,
  }),
  defineTask({ type: 'quick', schema: z.object({}), timeoutSeconds: 5, uses: ['one_slot'], handler: scripted }),
  defineTask({ type: 'of_three', schema: z.object({}), timeoutSeconds: 100, uses: ['three_slots'], handler: scripted }),
  defineTask({
    type: 'provider_call',
    schema: z.object({}),
    timeoutSeconds: 100,
    maxAttempts: 5,
    uses: ['provider'],
    handler: scripted,
  }),
  defineTask({
    type: 'bad_key',
    schema: z.object({}),
    timeoutSeconds: 100,
    uses: [
      {
        limit: 'keyed',
        key: () => {
          throw new Error('no account on this payload');
        },
      },
    ],
    handler: scripted,
  }),
];
const registry = new TaskRegistry(definitions, { lanes, limits });

/** Metrics that remember what they were told. */
class RecordingMetrics implements Metrics {
  readonly counts: { name: string; type: string | undefined; value: number }[] = [];
  count(name: string, type: string | undefined, value = 1): void {
    this.counts.push({ name, type, value });
  }
  durationMs(): void {}
  total(name: string): number {
    return this.counts.filter((c) => c.name === name).reduce((s, c) => s + c.value, 0);
  }
}

/** A random source whose ids differ from `sequenceRandom`'s: a second process's limiter holder ids. */
function otherProcessRandom(): RandomSource {
  let n = 0;
  return { next: () => 0.5, id: () => `otherproc${(n += 1).toString().padStart(4, '0')}` };
}

function setup() {
  const limitStore = new MemoryLimitStore();
  const metrics = new RecordingMetrics();
  // A gate of its own: the process's gate is shared by every consumer of this test file.
  const gate = new ExclusiveGate();
  const u = unitKaj(registry, sequenceRandom([0.5]), new TimerClock(), {
    gate,
    limits: limitStore,
    metrics,
    settings: runtimeSettings({ leaseSeconds: LEASE_SECONDS, maxReceiveCount: MAX_RECEIVE_COUNT }),
    laneQueueNames: { io: IO_QUEUE_NAMES },
  });
  // Another worker process on the same limits table.
  const other = new Limiter({
    store: limitStore,
    clock: u.clock,
    random: otherProcessRandom(),
    logger: new RecordingLogger(),
    leaseSeconds: LEASE_SECONDS,
  });
  const usesOf = (type: string): LimitUse[] => registry.limitUses(registry.get(type), {}, {});
  const submit = async (type: string, receiveCount = 1) => {
    const { record } = await u.kaj.submitter.submit({ type, payload: {} }, OWNER);
    const sent = u.queue.sent.find((s) => s.message.task_id === record.task_id);
    if (sent === undefined) throw new Error('nothing sent');
    return { record, message: sent.message, rec: sqsRecord(sent.message, 'normal', receiveCount) };
  };
  return { ...u, gate, limitStore, metrics, other, usesOf, submit };
}

/** The SQS record of `body` as delivered from the io lane's queue of `priority`. */
function ioRecord(body: unknown, receiveCount: number): SQSRecord {
  const rec = sqsRecord(body, 'normal', receiveCount);
  return { ...rec, eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${IO_QUEUE_NAMES.normal}` };
}

function holders(store: MemoryLimitStore, pk: string): Record<string, number> {
  return { ...(store.items.get(pk)?.holders ?? {}) };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
  script.run = async () => 'ok';
  runs = 0;
});
afterEach(() => vi.useRealTimers());

describe('a task its limits refuse', () => {
  it('gets its message back after the deferral (ChangeMessageVisibility ≥ 1 s) and nothing is written: no attempt, no claim, no run', async () => {
    const { kaj, store, queue, other, usesOf, submit, metrics, logger } = setup();
    const held = await other.acquire(usesOf('slotted'), 'a-task-of-another-worker');
    expect(held.kind).toBe('granted');
    // A first delivery (lazy claim) and a redelivery (which would be claimed by a write).
    for (const receiveCount of [1, 2]) {
      const { record, rec } = await submit('slotted', receiveCount);
      const writesBefore = store.updates;
      const visibilityBefore = queue.visibility.length;
      const sentBefore = queue.sent.length;

      const res = await kaj.processBatch(sqsEvent(rec), lambdaContext());

      expect(res.batchItemFailures).toEqual([{ itemIdentifier: rec.messageId }]);
      const changed = queue.visibility.slice(visibilityBefore);
      expect(changed).toEqual([{ priority: 'normal', receiptHandle: rec.receiptHandle, seconds: expect.any(Number) }]);
      expect(changed[0]?.seconds).toBeGreaterThanOrEqual(1);
      expect(store.updates).toBe(writesBefore);
      expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0, lease_token: 0 });
      expect(store.items.get(record.task_id)?.started_at).toBeUndefined();
      expect(queue.sent).toHaveLength(sentBefore);
    }
    expect(runs).toBe(0);
    expect(metrics.total(METRICS.limitDeferrals)).toBe(2);
    expect(logger.entries.filter((e) => e.message === 'deferred: a limit is saturated')).toEqual([
      expect.objectContaining({ fields: expect.objectContaining({ limit: 'one_slot', reason: 'concurrency' }) }),
      expect.objectContaining({ fields: expect.objectContaining({ limit: 'one_slot', reason: 'concurrency' }) }),
    ]);
  });

  it('waits longer the longer its limit stays saturated (1 s, 2 s, 3 s with the median draw), and runs as attempt 1 once a slot is free', async () => {
    const { kaj, store, queue, other, usesOf, submit } = setup();
    const held = await other.acquire(usesOf('slotted'), 'a-task-of-another-worker');
    if (held.kind !== 'granted') throw new Error('expected a grant');
    const { record, message } = await submit('slotted');
    const deferrals: number[] = [];
    for (const [receiveCount, afterMs] of [
      [1, 0],
      [2, 1_000],
      [3, 2_000],
    ] as const) {
      await vi.advanceTimersByTimeAsync(afterMs);
      const [changed, sent] = [queue.visibility.length, queue.sent.length];
      await kaj.processBatch(sqsEvent(sqsRecord(message, 'normal', receiveCount)), lambdaContext());
      // The third receive is past half of maxReceiveCount (5): a fresh copy, delayed by the deferral.
      if (queue.sent.length > sent) deferrals.push(queue.sent.at(-1)?.delaySeconds ?? -1);
      else if (queue.visibility.length > changed) deferrals.push(queue.visibility.at(-1)?.seconds ?? -1);
    }
    expect(deferrals).toEqual([1, 2, 3]);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0 });

    await other.release(held.permit);
    const res = await kaj.processBatch(sqsEvent(sqsRecord(message, 'normal', 4)), lambdaContext());
    expect(res.batchItemFailures).toEqual([]);
    expect(runs).toBe(1);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(store.items.get(record.task_id)?.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'succeeded']]);
  });

  it(`from ApproximateReceiveCount = half of maxReceiveCount (${REFRESH_AT} of ${MAX_RECEIVE_COUNT}) is re-sent to its lane with the deferral as DelaySeconds (same task_id and dispatch_id) and the old message acknowledged`, async () => {
    const { kaj, store, queue, other, usesOf, submit } = setup();
    await other.acquire(usesOf('io_slotted'), 'a-task-of-another-worker');
    const { record, message } = await submit('io_slotted');
    const send = vi.spyOn(queue, 'send');
    const changeVisibility = vi.spyOn(queue, 'changeVisibility');
    const writesBefore = store.updates;

    // One receive short of the refresh: still a visibility change, on the io lane's queue.
    const early = ioRecord(message, REFRESH_AT - 1);
    expect((await kaj.processBatch(sqsEvent(early), lambdaContext())).batchItemFailures).toEqual([
      { itemIdentifier: early.messageId },
    ]);
    expect(changeVisibility).toHaveBeenCalledTimes(1);
    expect(changeVisibility.mock.calls[0]).toEqual(['normal', early.receiptHandle, expect.any(Number), 'io']);
    expect(send).not.toHaveBeenCalled();

    for (const receiveCount of [REFRESH_AT, MAX_RECEIVE_COUNT - 1, MAX_RECEIVE_COUNT + 3]) {
      send.mockClear();
      changeVisibility.mockClear();
      const late = ioRecord(message, receiveCount);
      const res = await kaj.processBatch(sqsEvent(late), lambdaContext());
      // Acknowledged (deleted by the caller): the fresh copy stands for the task now.
      expect(res.batchItemFailures).toEqual([]);
      expect(changeVisibility).not.toHaveBeenCalled();
      expect(send).toHaveBeenCalledTimes(1);
      const [priority, resent, options] = send.mock.calls[0] ?? [];
      expect(priority).toBe('normal');
      expect(resent).toMatchObject({ task_id: record.task_id, dispatch_id: record.dispatch_id });
      expect(options).toEqual({ delaySeconds: expect.any(Number), type: 'io_slotted', lane: 'io' });
      expect(options?.delaySeconds).toBeGreaterThanOrEqual(1);
      expect(queue.sent.at(-1)).toMatchObject({
        priority: 'normal',
        message: { task_id: record.task_id, dispatch_id: record.dispatch_id },
        delaySeconds: options?.delaySeconds,
      });
    }
    // Still nothing written and nothing run.
    expect(store.updates).toBe(writesBefore);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0, lane: 'io' });
    expect(runs).toBe(0);
  });
});

describe('refreshAtReceive', () => {
  it('re-sends from half of maxReceiveCount: 5 unseen receives in a row tolerated at the default 10; never later than the last receive SQS delivers', () => {
    expect([1, 2, 3, 4, 5, 10, 11].map((max) => [max, refreshAtReceive(max)])).toEqual([
      [1, 1],
      [2, 2],
      [3, 2],
      [4, 2],
      [5, 3],
      [10, 5],
      [11, 6],
    ]);
  });
});

describe('a granted task', () => {
  /**
   * Runs one `quick` task (timeout 5 s) to its end with the limit's only slot, noting the task's
   * status when the slot is removed from the limits table.
   */
  async function runHoldingTheSlot() {
    const u = setup();
    const { record, rec } = await u.submit('quick');
    const statusAtRelease: (string | undefined)[] = [];
    u.limitStore.beforeCall = (op) => {
      if (op === 'removeHolder') statusAtRelease.push(u.store.items.get(record.task_id)?.status);
    };
    const done = u.kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(1);
    // While it runs, the slot is taken: another worker is refused.
    const probe = await u.other.acquire(u.usesOf('quick'), 'probe');
    const refusedMeanwhile = probe.kind === 'refused' ? probe.refusal.reason : 'granted';
    if (probe.kind === 'granted') await u.other.release(probe.permit);
    await vi.advanceTimersByTimeAsync(30_000);
    const res = await done;
    return { ...u, record, rec, res, statusAtRelease, refusedMeanwhile };
  }

  it('gives its permit back once its success is written', async () => {
    script.run = async () => new Promise((r) => setTimeout(() => r('done'), 500));
    const { store, limitStore, record, res, statusAtRelease, refusedMeanwhile, other, usesOf } =
      await runHoldingTheSlot();
    expect(res.batchItemFailures).toEqual([]);
    expect(refusedMeanwhile).toBe('concurrency');
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(statusAtRelease).toEqual(['succeeded']);
    expect(holders(limitStore, 'c#one_slot')).toEqual({});
    expect((await other.acquire(usesOf('quick'), 'next')).kind).toBe('granted');
  });

  it('gives its permit back once the retry of a handler that threw is written', async () => {
    script.run = () =>
      new Promise((_resolve, reject) => setTimeout(() => reject(new RetryableError('the provider hiccuped')), 500));
    const { store, limitStore, record, res, statusAtRelease, refusedMeanwhile } = await runHoldingTheSlot();
    expect(res.batchItemFailures).toEqual([]);
    expect(refusedMeanwhile).toBe('concurrency');
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(statusAtRelease).toEqual(['retrying']);
    expect(holders(limitStore, 'c#one_slot')).toEqual({});
  });

  it('gives its permit back once the retry of a handler that timed out is written', async () => {
    script.run = () => new Promise(() => {});
    const { store, limitStore, record, res, statusAtRelease, refusedMeanwhile } = await runHoldingTheSlot();
    expect(res.batchItemFailures).toEqual([]);
    expect(refusedMeanwhile).toBe('concurrency');
    expect(store.items.get(record.task_id)).toMatchObject({
      status: 'retrying',
      attempts: 1,
      last_error: { name: 'TaskTimeoutError', code: 'TIMEOUT' },
    });
    expect(statusAtRelease).toEqual(['retrying']);
    expect(holders(limitStore, 'c#one_slot')).toEqual({});
  });

  it('gives its permit back when its lease is lost to another worker (nothing of its own written)', async () => {
    // Runs past its first heartbeat (lease/3 = 20 s), where the lazy claim is written: by then
    // another worker has taken the task over, so the claim is fenced off and the attempt stops.
    const u = setup();
    script.run = (signal) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    const { record, rec } = await u.submit('slotted');
    const statusAtRelease: (string | undefined)[] = [];
    u.limitStore.beforeCall = (op) => {
      if (op === 'removeHolder') statusAtRelease.push(u.store.items.get(record.task_id)?.status);
    };
    const done = u.kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(1);
    expect(Object.keys(holders(u.limitStore, 'c#one_slot'))).toHaveLength(1);
    const takenOver = {
      ...(u.store.items.get(record.task_id) as NonNullable<ReturnType<typeof u.store.items.get>>),
      status: 'running' as const,
      attempts: 1,
      lease_token: 7,
      lease_until: Date.now() + 600_000,
    };
    u.store.items.set(record.task_id, takenOver);
    await vi.advanceTimersByTimeAsync(20_000);
    const res = await done;

    // Left on the queue for its new owner; the record is the other worker's, untouched.
    expect(res.batchItemFailures).toEqual([{ itemIdentifier: rec.messageId }]);
    expect(u.store.items.get(record.task_id)).toEqual(takenOver);
    expect(u.logger.entries.some((e) => e.message === 'write fenced off: lease lost to another worker')).toBe(true);
    expect(statusAtRelease).toEqual(['running']);
    expect(holders(u.limitStore, 'c#one_slot')).toEqual({});
  });
});

describe('a task waiting behind a task that runs alone', () => {
  it('waits holding no limit: its slot stays free for another worker until the suspect has run, then it takes one and runs', async () => {
    const u = setup();
    const x = await u.submit('of_three');
    const s = await u.submit('of_three');
    const y = await u.submit('of_three');
    // s was on two workers that died under other tasks: it runs alone on its worker.
    u.store.items.set(s.record.task_id, { ...u.store.items.get(s.record.task_id)!, unattributed_crashes: 2 });
    script.run = async () => new Promise((r) => setTimeout(() => r('ok'), 1_000));
    const pk = 'c#three_slots';
    // x runs (a slot); then s takes a slot and waits for x to end; then y arrives behind s.
    const doneX = u.kaj.processBatch(sqsEvent(x.rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(1);
    const doneS = u.kaj.processBatch(sqsEvent(s.rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(1);
    const doneY = u.kaj.processBatch(sqsEvent(y.rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(1);
    expect(u.gate.state).toEqual({ shared: 1, exclusive: false, waiting: 2 });
    // y holds nothing while it waits: the third slot is another worker's to take.
    expect(Object.keys(holders(u.limitStore, pk))).toHaveLength(2);
    const probe = await u.other.acquire(u.usesOf('of_three'), 'another-workers-task');
    expect(probe.kind).toBe('granted');
    if (probe.kind === 'granted') await u.other.release(probe.permit);
    await vi.advanceTimersByTimeAsync(10_000);
    for (const done of [doneX, doneS, doneY]) expect((await done).batchItemFailures).toEqual([]);
    for (const t of [x, s, y]) expect(u.store.items.get(t.record.task_id)).toMatchObject({ status: 'succeeded' });
    expect(holders(u.limitStore, pk)).toEqual({});
    expect(u.gate.state).toEqual({ shared: 0, exclusive: false, waiting: 0 });
  });
});

describe('a task found to be a suspect only at its reclaim', () => {
  it('gives back the turn its admission took and runs alone once the task beside it has ended: no deadlock, both succeed', async () => {
    const u = setup();
    const x = await u.submit('of_three');
    const r = await u.submit('of_three', 2);
    // r's last worker died while it ran among others once before: this reclaim is its second shared crash.
    u.store.items.set(r.record.task_id, {
      ...u.store.items.get(r.record.task_id)!,
      status: 'running',
      attempts: 1,
      lease_token: 1,
      lease_until: T0 - 1,
      started_at: new Date(T0 - 60_000).toISOString(),
      unattributed_crashes: 1,
    });
    const log: string[] = [];
    let inFlight = 0;
    script.run = async () => {
      inFlight += 1;
      log.push(`start with ${inFlight} running`);
      await new Promise((done) => setTimeout(done, 1_000));
      inFlight -= 1;
      return 'ok';
    };
    const doneX = u.kaj.processBatch(sqsEvent(x.rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(1);
    const doneR = u.kaj.processBatch(sqsEvent(r.rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(10_000);
    for (const done of [doneX, doneR]) expect((await done).batchItemFailures).toEqual([]);
    expect(u.store.items.get(x.record.task_id)).toMatchObject({ status: 'succeeded' });
    expect(u.store.items.get(r.record.task_id)).toMatchObject({ status: 'succeeded', unattributed_crashes: 2 });
    expect(log).toEqual(['start with 1 running', 'start with 1 running']);
    expect(u.gate.state).toEqual({ shared: 0, exclusive: false, waiting: 0 });
    expect(holders(u.limitStore, 'c#three_slots')).toEqual({});
  });
});

describe('a provider that answers 429 with Retry-After', () => {
  it('pauses the learning limit for every worker until then (another limiter is refused as "paused"), and the task is retried as usual', async () => {
    const { kaj, store, queue, other, usesOf, submit, metrics, logger } = setup();
    script.run = async () => {
      throw new RetryableError('429 Too Many Requests', { retryAfterSeconds: 3 });
    };
    const { record, rec } = await submit('provider_call');
    // The rate start is granted DEFAULTS.limitStartLeadMs ahead; the consumer waits for it.
    const pending = kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(DEFAULTS.limitStartLeadMs);
    const res = await pending;
    const failedAt = Date.now();
    expect(failedAt).toBe(T0 + DEFAULTS.limitStartLeadMs);

    expect(res.batchItemFailures).toEqual([]);
    // Retried as usual: attempt 1 recorded, the next message sent with the Retry-After as its delay.
    expect(store.items.get(record.task_id)).toMatchObject({
      status: 'retrying',
      attempts: 1,
      last_error: { name: 'RetryableError', retryable: true },
    });
    expect(queue.sent.at(-1)).toMatchObject({ message: { task_id: record.task_id }, delaySeconds: 3 });
    expect(metrics.total(METRICS.limitPauses)).toBe(1);
    expect(logger.entries).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: 'a provider asked to slow down: limit paused for every worker',
        fields: expect.objectContaining({ limits: 'provider', seconds: 3 }),
      }),
    );

    // Another worker: refused, paused until the Retry-After is over.
    const during = await other.acquire(usesOf('provider_call'), 'elsewhere-1');
    expect(during).toEqual({
      kind: 'refused',
      refusal: { limit: 'provider', reason: 'paused', retryAt: failedAt + 3_000 },
    });
    // A message of the type arriving meanwhile here: deferred until the pause is over, no attempt.
    const second = await submit('provider_call');
    const res2 = await kaj.processBatch(sqsEvent(second.rec), lambdaContext());
    expect(res2.batchItemFailures).toEqual([{ itemIdentifier: second.rec.messageId }]);
    expect(queue.visibility.at(-1)).toEqual({
      priority: 'normal',
      receiptHandle: second.rec.receiptHandle,
      seconds: 3,
    });
    expect(store.items.get(second.record.task_id)).toMatchObject({ status: 'queued', attempts: 0 });

    await vi.advanceTimersByTimeAsync(2_900);
    expect((await other.acquire(usesOf('provider_call'), 'elsewhere-2')).kind).toBe('refused');
    await vi.advanceTimersByTimeAsync(100);
    const after = other.acquire(usesOf('provider_call'), 'elsewhere-3');
    await vi.advanceTimersByTimeAsync(DEFAULTS.limitStartLeadMs); // granted ahead, waited for
    expect((await after).kind).toBe('granted');
  });
});

describe('misconfigurations', () => {
  it('a consumer whose registry uses limits but that has no limiter (no limits store) fails at construction', () => {
    expect(() => unitKaj(registry)).toThrow(MissingLimiterError);
    expect(() => unitKaj(registry)).toThrow(/bad_key, io_slotted, of_three, provider_call, quick, slotted use limits/);
    // A registry without limit uses needs none.
    const plain = new TaskRegistry([defineTask({ type: 'plain', schema: z.object({}), handler: async () => 1 })]);
    expect(() => unitKaj(plain)).not.toThrow();
  });

  it('a limit key function that throws sends the message down the infrastructure-failure path: left for redelivery with backoff, counted and logged at error, the task never run nor failed', async () => {
    const { kaj, store, queue, submit, metrics, logger } = setup();
    const { record, message } = await submit('bad_key');
    const writesBefore = store.updates;
    for (const receiveCount of [1, MAX_RECEIVE_COUNT - 1, MAX_RECEIVE_COUNT]) {
      const rec = sqsRecord(message, 'normal', receiveCount);
      const res = await kaj.processBatch(sqsEvent(rec), lambdaContext());
      expect(res.batchItemFailures).toEqual([{ itemIdentifier: rec.messageId }]);
      expect(queue.visibility.at(-1)).toMatchObject({ receiptHandle: rec.receiptHandle });
    }
    // Backed off with the receive count (redeliveryDelaySeconds with the 0.5 draw), never re-sent:
    // at maxReceiveCount SQS's redrive dead-letters the raw message.
    expect(queue.visibility.map((v) => v.seconds)).toEqual([3, 21, 41]);
    expect(queue.sent).toHaveLength(1);
    expect(runs).toBe(0);
    expect(store.updates).toBe(writesBefore);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0 });
    // Visible: a ConsumerItemFailures count and an error line naming the type, the limit and the cause.
    expect(metrics.total(METRICS.consumerItemFailures)).toBe(3);
    expect(metrics.total(METRICS.limitDeferrals)).toBe(0);
    const errors = logger.entries.filter((e) => e.level === 'error');
    expect(errors).toHaveLength(3);
    expect(errors[0]).toMatchObject({
      message: 'infrastructure failure; message left for redelivery',
      fields: { task_id: record.task_id, retry_in_seconds: 3 },
    });
    expect(String(errors[0]?.fields?.error)).toMatch(
      /^TaskDefinitionError: task type "bad_key": the key of limit "keyed" threw: Error: no account on this payload/,
    );
  });
});
