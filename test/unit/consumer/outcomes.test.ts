import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { ExclusiveGate } from '../../../shared/service/consumer/exclusive-gate.js';
import { runtimeSettings } from '../../../shared/config/settings.js';
import { StoreRejectedError } from '../../../shared/task/store-errors.js';
import { defineTask, RetryableError, TaskRegistry } from '../../../shared/task/define.js';
import { lambdaContext, OWNER, sqsEvent, sqsRecord, TimerClock, unitKaj } from '../../../testing/fixtures.js';

/**
 * Cancels, unstorable results and the crash-attribution design risk: a cancel always wins, a cancelled
 * task never runs again, and an outcome the store cannot hold ends the task after one run.
 */
const script: { run: (signal: AbortSignal) => Promise<unknown> } = { run: async () => 'ok' };
let runs = 0;
const registry = new TaskRegistry([
  defineTask({
    type: 'scripted',
    schema: z.object({}),
    timeoutSeconds: 100,
    handler: (_p, ctx) => {
      runs += 1;
      return script.run(ctx.signal);
    },
  }),
]);

async function setup() {
  const u = unitKaj(registry, undefined, new TimerClock());
  const { record } = await u.kaj.submitter.submit({ type: 'scripted', payload: {} }, OWNER);
  const msg = u.queue.sent[0]?.message;
  return { ...u, record, rec: sqsRecord(msg) };
}

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2026-03-01T00:00:00Z') });
  script.run = async () => 'ok';
  runs = 0;
});
afterEach(() => vi.useRealTimers());

describe('Cancel always wins', () => {
  it('a cancel requested while the handler finishes ends the task cancelled, not succeeded, and drops the result', async () => {
    const { kaj, store, record, rec } = await setup();
    script.run = async () => ({ sent: true });
    // The request lands between the handler's return and the success write: no poll or
    // heartbeat could have seen it; only the outcome write's condition can.
    store.beforeUpdate = (_id, changes) => {
      if (changes.set?.status === 'succeeded') {
        const cur = store.items.get(record.task_id)!;
        store.items.set(record.task_id, { ...cur, cancel_requested: true });
      }
    };
    await kaj.processBatch(sqsEvent(rec), lambdaContext());
    const stored = store.items.get(record.task_id);
    expect(stored?.status).toBe('cancelled');
    expect(stored?.result).toBeUndefined();
    expect(stored?.history.at(-1)?.outcome).toBe('cancelled');
  });

  it('a cancel of a slow task (8 s, DELETE at 2 s) reaches the handler’s signal within the 5 s poll, not at the 20 s heartbeat', async () => {
    const { kaj, store, record, rec } = await setup();
    let abortedAt: number | undefined;
    script.run = (signal) =>
      new Promise((resolve, reject) => {
        const t = setTimeout(() => resolve('sent the email'), 8_000);
        signal.addEventListener('abort', () => {
          abortedAt = Date.now();
          clearTimeout(t);
          reject(signal.reason);
        });
      });
    const started = Date.now();
    const done = kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(2_000);
    // Before its first heartbeat the claim is not written (lazy): DELETE ends the task at once.
    expect((await kaj.lifecycle.requests.cancel(record.task_id, OWNER.owner)).status).toBe('cancelled');
    await vi.advanceTimersByTimeAsync(10_000);
    await done;
    expect(abortedAt! - started).toBe(5_000);
    const stored = store.items.get(record.task_id);
    expect(stored).toMatchObject({ status: 'cancelled', attempts: 1 });
    expect(stored?.result).toBeUndefined();
    // The attempt DELETE cut short is in the history: the handler did run.
    expect(stored?.history).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'cancelled', duration_ms: 5_000 }),
    ]);
    expect(store.reads.eventual).toBe(1);
  });

  it('a cancel of a task past its first heartbeat (claim written) is a request its worker acts on within the poll', async () => {
    const { kaj, store, record, rec } = await setup();
    let abortedAt: number | undefined;
    script.run = (signal) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => {
          abortedAt = Date.now();
          reject(signal.reason);
        });
      });
    const started = Date.now();
    const done = kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(21_000);
    expect(store.items.get(record.task_id)?.status).toBe('running');
    expect((await kaj.lifecycle.requests.cancel(record.task_id, OWNER.owner)).cancel_requested).toBe(true);
    await vi.advanceTimersByTimeAsync(10_000);
    await done;
    expect(abortedAt! - started).toBe(25_000);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'cancelled', attempts: 1 });
    expect(store.items.get(record.task_id)?.history.at(-1)?.outcome).toBe('cancelled');
  });

  it('without a cancel poll, the first heartbeat finds the task cancelled: the handler stops and the cut-short attempt is in the history', async () => {
    const u = unitKaj(registry, undefined, new TimerClock(), {
      settings: runtimeSettings({ leaseSeconds: 60, cancelPollSeconds: 0 }),
    });
    const { record } = await u.kaj.submitter.submit({ type: 'scripted', payload: {} }, OWNER);
    const rec = sqsRecord(u.queue.sent[0]?.message);
    script.run = (signal) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    const done = u.kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(2_000);
    expect((await u.kaj.lifecycle.requests.cancel(record.task_id, OWNER.owner)).status).toBe('cancelled');
    await vi.advanceTimersByTimeAsync(18_000);
    expect((await done).batchItemFailures).toEqual([]);
    const stored = u.store.items.get(record.task_id);
    expect(stored).toMatchObject({ status: 'cancelled', attempts: 1 });
    expect(stored?.history).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'cancelled', duration_ms: 20_000 }),
    ]);
    expect(u.logger.entries.filter((e) => e.level === 'error')).toEqual([]);
  });

  it('a handler that returns while its first heartbeat’s claim write is in flight: the outcome waits for it and lands (no false fencing)', async () => {
    const { kaj, store, record, rec } = await setup();
    // The claim write applies at 20 s, its response arrives 800 ms later; the handler returns at 20.5 s.
    const update = store.update.bind(store);
    store.update = async (id, changes, condition) => {
      const written = await update(id, changes, condition);
      if (changes.set?.status === 'running') await new Promise((r) => setTimeout(r, 800));
      return written;
    };
    script.run = () => new Promise((r) => setTimeout(() => r('done'), 20_500));
    const done = kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(22_000);
    expect((await done).batchItemFailures).toEqual([]);
    const stored = store.items.get(record.task_id);
    expect(stored).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 1, result: 'done' });
    expect(stored?.history.map((h) => h.outcome)).toEqual(['succeeded']);
  });

  it('a task shorter than the poll period pays no read for it', async () => {
    const { kaj, store, rec } = await setup();
    script.run = () => new Promise((r) => setTimeout(() => r('ok'), 4_000));
    const done = kaj.processBatch(sqsEvent(rec), lambdaContext());
    await vi.advanceTimersByTimeAsync(4_000);
    await done;
    expect(store.reads.eventual).toBe(0);
  });

  it('a failed attempt under a cancel request ends cancelled instead of retrying', async () => {
    const { kaj, store, record, rec, queue } = await setup();
    script.run = async () => {
      store.items.set(record.task_id, { ...store.items.get(record.task_id)!, cancel_requested: true });
      throw new Error('transient');
    };
    await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(store.items.get(record.task_id)?.status).toBe('cancelled');
    // The retry's message went out first (send first, then write); its write lost to the cancel,
    // so it carries a dispatch the task never took and is dropped.
    const retry = queue.sent[1]?.message;
    expect(retry?.dispatch_id).not.toBe(store.items.get(record.task_id)?.dispatch_id);
    await kaj.processBatch(sqsEvent(sqsRecord(retry)), lambdaContext());
    expect(runs).toBe(1);
    expect(store.items.get(record.task_id)?.status).toBe('cancelled');
  });

  it('a claim of a retrying task that carries a cancel request ends it cancelled without running the handler', async () => {
    const { kaj, store, record, rec } = await setup();
    store.items.set(record.task_id, {
      ...store.items.get(record.task_id)!,
      status: 'retrying',
      cancel_requested: true,
    });
    const res = await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(res.batchItemFailures).toEqual([]);
    expect(runs).toBe(0);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'cancelled', attempts: 0 });
    expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
  });

  it('a running task with a cancel request whose worker vanished ends cancelled at reclaim, not re-run', async () => {
    const { kaj, store, record, rec } = await setup();
    const c = await kaj.lifecycle.claims.claim(record.task_id, record.dispatch_id, { receiveCount: 2 });
    // The handler started (its claim written), then the worker vanished.
    if (c.kind !== 'claimed' || c.commit === undefined) throw new Error(c.kind);
    expect((await c.commit()).kind).toBe('claimed');
    expect((await kaj.lifecycle.requests.cancel(record.task_id)).cancel_requested).toBe(true);
    vi.advanceTimersByTime(61_000);
    await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(runs).toBe(0);
    expect(store.items.get(record.task_id)?.status).toBe('cancelled');
  });
});

describe('Results and errors the store cannot hold', () => {
  it.each([
    ['NaN', { total: Number.NaN }, 'result.total: NaN is not a JSON number'],
    ['a BigInt', { id: 10n }, 'result.id: a BigInt is not JSON'],
    ['an integer above 2^53', { n: 2 ** 60 }, 'result.n: 1152921504606847000 is beyond'],
    ['an empty key', { '': 1 }, 'result."": an empty key cannot be stored'],
    ['a Map', new Map([[1, 2]]), 'result: a Map is not JSON'],
  ])(
    'fails the task permanently after exactly one run when the result holds %s, naming where',
    async (_what, value, message) => {
      const { kaj, store, record, rec, queue } = await setup();
      script.run = async () => value;
      await kaj.processBatch(sqsEvent(rec), lambdaContext());
      const stored = store.items.get(record.task_id);
      expect(runs).toBe(1);
      expect(stored?.status).toBe('failed');
      expect(stored?.last_error).toMatchObject({ retryable: false, code: 'UNSTORABLE_RESULT' });
      expect(stored?.last_error?.message).toContain(message);
      expect(queue.dead).toHaveLength(1);
    },
  );

  it('stores a Date in a result as JSON would: its ISO string', async () => {
    const { kaj, store, record, rec } = await setup();
    script.run = async () => ({ at: new Date('2026-01-02T03:04:05Z'), skipped: undefined });
    await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(store.items.get(record.task_id)).toMatchObject({
      status: 'succeeded',
      result: { at: '2026-01-02T03:04:05.000Z' },
    });
    expect(store.items.get(record.task_id)?.result).not.toHaveProperty('skipped');
  });

  it('retries a RetryableError with retryAfterSeconds: Infinity after the 12 h maximum instead of looping as an outage', async () => {
    const { kaj, store, record, rec } = await setup();
    script.run = async () => {
      throw new RetryableError('come back much later', { retryAfterSeconds: Infinity });
    };
    const res = await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(res.batchItemFailures).toEqual([]);
    const stored = store.items.get(record.task_id);
    expect(stored?.status).toBe('retrying');
    expect(Date.parse(stored!.run_at) - Date.now()).toBe(12 * 3600 * 1000);
  });

  it('stores a well-formed, bounded error whatever the handler threw', async () => {
    const { kaj, store, record, rec } = await setup();
    script.run = async () => {
      const e = new Error(`bad \ud800 surrogate ${'x'.repeat(5000)}`);
      (e as { code?: unknown }).code = 42;
      throw e;
    };
    await kaj.processBatch(sqsEvent(rec), lambdaContext());
    const err = store.items.get(record.task_id)?.last_error;
    expect(err?.message.isWellFormed()).toBe(true);
    expect(err?.message.length).toBeLessThanOrEqual(1001);
    expect(err?.code).toBeUndefined();
  });

  it('fails the task with a short reason when the store refuses the outcome itself (ValidationException), after one run', async () => {
    const { kaj, store, record, rec } = await setup();
    let refused = 0;
    store.beforeUpdate = (_id, changes) => {
      if (changes.set?.status === 'succeeded') {
        refused += 1;
        throw new StoreRejectedError(
          'DynamoDB UpdateItem rejected: ValidationException: Item size has exceeded the maximum allowed size',
        );
      }
    };
    const res = await kaj.processBatch(sqsEvent(rec), lambdaContext());
    expect(res.batchItemFailures).toEqual([]);
    expect(refused).toBe(1);
    expect(runs).toBe(1);
    expect(store.items.get(record.task_id)).toMatchObject({
      status: 'failed',
      last_error: { code: 'UNSTORABLE', retryable: false },
    });
  });
});

describe('Crash attribution: a task that crashed a worker runs alone', () => {
  it('marks the attempt solo and runs it with nothing else running in the process', async () => {
    const gate = new ExclusiveGate();
    const u = unitKaj(registry, undefined, new TimerClock(), { gate });
    const a = (await u.kaj.submitter.submit({ type: 'scripted', payload: {} }, OWNER)).record;
    const b = (await u.kaj.submitter.submit({ type: 'scripted', payload: {} }, OWNER)).record;
    // b was on two workers that died (under other tasks too): its next attempts run alone.
    u.store.items.set(b.task_id, { ...u.store.items.get(b.task_id)!, unattributed_crashes: 2 });
    let inFlight = 0;
    let maxBeside = 0;
    const order: string[] = [];
    script.run = async () => {
      inFlight += 1;
      maxBeside = Math.max(maxBeside, inFlight);
      order.push(`start@${inFlight}`);
      await new Promise((r) => setTimeout(r, 1_000));
      inFlight -= 1;
      return 'ok';
    };
    const done = u.kaj.processBatch(
      sqsEvent(sqsRecord(u.queue.sent[0]?.message), sqsRecord(u.queue.sent[1]?.message)),
      lambdaContext(),
    );
    await vi.advanceTimersByTimeAsync(3_000);
    await done;
    expect(maxBeside).toBe(1);
    expect(u.store.items.get(a.task_id)?.status).toBe('succeeded');
    expect(u.store.items.get(b.task_id)).toMatchObject({ status: 'succeeded' });
    expect(gate.state).toEqual({ shared: 0, exclusive: false, waiting: 0 });
  });

  it('a redelivered task waiting for its turn behind a solo run has nothing written: a worker dying then charges it no attempt and no crash', async () => {
    const gate = new ExclusiveGate();
    const u = unitKaj(registry, undefined, new TimerClock(), { gate });
    const a = (await u.kaj.submitter.submit({ type: 'scripted', payload: {} }, OWNER)).record;
    const b = (await u.kaj.submitter.submit({ type: 'scripted', payload: {} }, OWNER)).record;
    // a is a suspect: it runs alone; b is a redelivery (its claim has a write of its own).
    u.store.items.set(a.task_id, { ...u.store.items.get(a.task_id)!, unattributed_crashes: 2 });
    script.run = async () => {
      await new Promise((r) => setTimeout(r, 60_000));
      return 'ok';
    };
    const done = u.kaj.processBatch(
      sqsEvent(sqsRecord(u.queue.sent[0]?.message, 'normal', 2), sqsRecord(u.queue.sent[1]?.message, 'normal', 2)),
      lambdaContext(),
    );
    // Well past b's lease/3 heartbeats while a runs alone: b's record is as submitted.
    await vi.advanceTimersByTimeAsync(50_000);
    expect(u.store.items.get(a.task_id)).toMatchObject({ status: 'running', attempts: 1, solo: true });
    expect(u.store.items.get(b.task_id)).toMatchObject({ status: 'queued', attempts: 0, lease_token: 0 });
    await vi.advanceTimersByTimeAsync(130_000);
    await done;
    expect(u.store.items.get(a.task_id)).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(u.store.items.get(b.task_id)).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 1 });
  });
});
