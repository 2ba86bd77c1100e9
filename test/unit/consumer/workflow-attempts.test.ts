import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { TaskRegistry } from '../../../shared/task/define.js';
import { defineWorkflow } from '../../../shared/workflow/define.js';
import { MissingHistoryStoreError } from '../../../shared/service/consumer/errors.js';
import { lambdaContext, OWNER, sqsEvent, sqsRecord, TimerClock, unitKaj } from '../../../testing/fixtures.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';

const runs: string[] = [];
const registry = new TaskRegistry([
  defineWorkflow({
    type: 'napper',
    schema: z.object({ nap: z.string() }),
    timeoutSeconds: 30,
    run: async (input, wf) => {
      await wf.step('before', async () => runs.push('before'));
      await wf.sleep('nap', input.nap);
      await wf.step('after', async () => runs.push('after'));
      return { done: true };
    },
  }),
]);

async function setup() {
  const history = new MemoryHistoryStore();
  const u = unitKaj(registry, undefined, new TimerClock(), { history });
  const { record } = await u.kaj.submitter.submit({ type: 'napper', payload: { nap: '10m' } }, OWNER);
  return { ...u, history, record };
}

describe('Class: TaskConsumer — workflow runs', () => {
  beforeEach(() => {
    // setImmediate stays real: the runner suspends a run once its code's reactions have settled.
    vi.useFakeTimers({
      now: Date.parse('2026-03-01T00:00:00Z'),
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
    runs.length = 0;
  });
  afterEach(() => vi.useRealTimers());

  it('a sleep suspends the run: waiting, its next message sent with the delay, attempts from 0; the wake finishes it', async () => {
    const { kaj, store, queue, record } = await setup();
    const first = queue.sent[0]?.message;
    await kaj.processBatch(sqsEvent(sqsRecord(first)), lambdaContext());
    const waiting = store.items.get(record.task_id);
    expect(waiting).toMatchObject({ status: 'waiting', attempts: 0, list_pk: 'waiting' });
    expect(waiting?.lease_until).toBeUndefined();
    expect(waiting?.run_at).toBe(new Date(Date.now() + 600_000).toISOString());
    expect(runs).toEqual(['before']);
    // The wake: one message, sent first, due when the sleep ends (SQS holds the 10 minutes).
    const wake = queue.sent[1];
    expect(queue.sent).toHaveLength(2);
    expect(wake?.delaySeconds).toBe(600);
    expect(wake?.message).toMatchObject({ task_id: record.task_id, dispatch_id: waiting?.dispatch_id });
    // Delivered early (a duplicate): the run waits again for the same time, running nothing.
    await kaj.processBatch(sqsEvent(sqsRecord(wake?.message)), lambdaContext());
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'waiting', run_at: waiting?.run_at });
    expect(runs).toEqual(['before']);
    vi.setSystemTime(Date.now() + 600_000);
    const again = queue.sent.at(-1)?.message;
    await kaj.processBatch(sqsEvent(sqsRecord(again)), lambdaContext());
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'succeeded', result: { done: true } });
    expect(runs).toEqual(['before', 'after']);
  });

  it('a sleep beyond SQS’s 15 minutes waits in the outbox', async () => {
    const history = new MemoryHistoryStore();
    const { kaj, store, queue } = unitKaj(registry, undefined, new TimerClock(), { history });
    const { record } = await kaj.submitter.submit({ type: 'napper', payload: { nap: '2d' } }, OWNER);
    await kaj.processBatch(sqsEvent(sqsRecord(queue.sent[0]?.message)), lambdaContext());
    const waiting = store.items.get(record.task_id);
    expect(waiting).toMatchObject({ status: 'waiting' });
    expect(queue.sent).toHaveLength(1); // nothing sent: the sweeper sends it 15 minutes before the wake
    expect(waiting?.outbox_pk).toMatch(/^queue#normal#\d$/);
    expect(waiting?.outbox_due).toBe(Date.now() + 2 * 86_400_000 - 900_000);
  });

  it('a cancel of a waiting run ends it cancelled at once', async () => {
    const { kaj, store, queue, record } = await setup();
    await kaj.processBatch(sqsEvent(sqsRecord(queue.sent[0]?.message)), lambdaContext());
    const cancelled = await kaj.lifecycle.requests.cancel(record.task_id, OWNER.owner);
    expect(cancelled.status).toBe('cancelled');
    vi.setSystemTime(Date.now() + 600_000);
    await kaj.processBatch(sqsEvent(sqsRecord(queue.sent.at(-1)?.message)), lambdaContext());
    expect(store.items.get(record.task_id)?.status).toBe('cancelled');
    expect(runs).toEqual(['before']);
  });

  it('a consumer for a registry with workflows and no history store is refused at start-up', () => {
    expect(() => unitKaj(registry)).toThrow(MissingHistoryStoreError);
  });
});
