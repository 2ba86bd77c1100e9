import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { defineWorkflow } from '../../../shared/workflow/define.js';
import { apiEvent, lambdaContext, sqsEvent, sqsRecord, TimerClock, unitKaj } from '../../../testing/fixtures.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';

type Kaj = ReturnType<typeof unitKaj>['kaj'];

/** Hooks each test sets: what runs inside the `verify` step (a signal sent mid-invocation). */
const hooks: { duringStep: () => Promise<void> } = { duringStep: async () => {} };
const registry = new TaskRegistry([
  defineWorkflow({
    type: 'approval',
    schema: z.object({ amount: z.number() }),
    timeoutSeconds: 30,
    run: async (_input, wf) => {
      await wf.step('verify', async () => {
        await hooks.duringStep();
        return 'ok';
      });
      const decision = await wf.waitForSignal<{ approved: boolean }>('manager_approval', { timeout: '48h' });
      if (decision === null) return { outcome: 'timed_out' };
      return { outcome: decision.approved ? 'approved' : 'rejected' };
    },
  }),
  defineTask({ type: 'plain', schema: z.object({}), handler: async () => 'done' }),
]);

const HOUR = 3_600_000;

function setup() {
  const history = new MemoryHistoryStore();
  const u = unitKaj(registry, undefined, new TimerClock(), { history, defaultOwner: 'anonymous' });
  return { ...u, history };
}

async function submit(kaj: Kaj, type = 'approval', payload: unknown = { amount: 60_000 }): Promise<string> {
  const res = await kaj.handleHttp(apiEvent('POST', '/api/v1/tasks', { body: JSON.stringify({ type, payload }) }));
  expect(res.statusCode).toBe(202);
  return (JSON.parse(res.body) as { task_id: string }).task_id;
}

function signal(kaj: Kaj, id: string, name: string, body?: string, userArn?: string) {
  return kaj.handleHttp(
    apiEvent('POST', `/api/v1/tasks/${id}/signals/${name}`, {
      ...(body === undefined ? {} : { body }),
      ...(userArn === undefined ? {} : { userArn }),
    }),
  );
}

/** Delivers the newest message sent for the task (as SQS would once its delay passes). */
async function deliverLatest(u: ReturnType<typeof setup>): Promise<void> {
  await u.kaj.processBatch(sqsEvent(sqsRecord(u.queue.sent.at(-1)?.message)), lambdaContext());
}

async function get(kaj: Kaj, id: string): Promise<Record<string, unknown>> {
  const res = await kaj.handleHttp(apiEvent('GET', `/api/v1/tasks/${id}`));
  return JSON.parse(res.body) as Record<string, unknown>;
}

describe('Workflow signals (POST /api/v1/tasks/{id}/signals/{name})', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      now: Date.parse('2026-03-01T00:00:00Z'),
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
    hooks.duringStep = async () => {};
  });
  afterEach(() => vi.useRealTimers());

  it('the run waits (waiting, its deadline its timer); the signal wakes it at once and is returned', async () => {
    const u = setup();
    const id = await submit(u.kaj);
    hooks.duringStep = async () => {
      vi.setSystemTime(Date.now() + 1_000); // the step takes a second: the wait starts after it
    };
    await deliverLatest(u);
    const waiting = await get(u.kaj, id);
    expect(waiting.status).toBe('waiting');
    expect(waiting.waiting_for).toEqual({
      timer: new Date(Date.now() + 48 * HOUR).toISOString(),
      signals: [{ name: 'manager_approval', deadline: new Date(Date.now() + 48 * HOUR).toISOString() }],
    });
    hooks.duringStep = async () => {};
    const sentBefore = u.queue.sent.length;
    const res = await signal(u.kaj, id, 'manager_approval', JSON.stringify({ approved: true }));
    expect(res.statusCode).toBe(202);
    expect(JSON.parse(res.body)).toMatchObject({ task_id: id, signal: 'manager_approval', woken: true });
    // The wake: a new message due now, with a new dispatch (the 48 h one is superseded).
    expect(u.queue.sent).toHaveLength(sentBefore + 1);
    expect(u.queue.sent.at(-1)?.delaySeconds ?? 0).toBe(0);
    await deliverLatest(u);
    const done = await get(u.kaj, id);
    expect(done).toMatchObject({ status: 'succeeded', result: { outcome: 'approved' } });
    expect(done.steps).toEqual([
      expect.objectContaining({ name: 'verify', kind: 'step', status: 'succeeded' }),
      expect.objectContaining({ name: 'manager_approval', kind: 'signal', status: 'received' }),
    ]);
  });

  it('a signal sent before the wait starts is kept and consumed by it, without suspending', async () => {
    const u = setup();
    const id = await submit(u.kaj);
    const res = await signal(u.kaj, id, 'manager_approval', JSON.stringify({ approved: false }));
    expect(res.statusCode).toBe(202);
    expect(JSON.parse(res.body)).toMatchObject({ woken: false });
    await u.kaj.processBatch(sqsEvent(sqsRecord(u.queue.sent[0]?.message)), lambdaContext());
    expect(await get(u.kaj, id)).toMatchObject({ status: 'succeeded', result: { outcome: 'rejected' } });
  });

  it('a signal that arrives while the invocation runs (after its history was read) wakes the suspension at once', async () => {
    const u = setup();
    const id = await submit(u.kaj);
    hooks.duringStep = async () => {
      const res = await signal(u.kaj, id, 'manager_approval', JSON.stringify({ approved: true }));
      expect(JSON.parse(res.body)).toMatchObject({ woken: false }); // a request its invocation acts on
    };
    await deliverLatest(u);
    const record = u.store.items.get(id);
    expect(record).toMatchObject({ status: 'waiting' });
    expect(record?.wake_requested).toBeUndefined();
    expect(Date.parse(record?.run_at ?? '')).toBe(Date.now()); // not 48 h: woken at once
    hooks.duringStep = async () => {};
    await deliverLatest(u);
    expect(await get(u.kaj, id)).toMatchObject({ status: 'succeeded', result: { outcome: 'approved' } });
  });

  it('the wait times out: null; a signal after the run finished is 409 run_finished', async () => {
    const u = setup();
    const id = await submit(u.kaj);
    await deliverLatest(u);
    vi.setSystemTime(Date.now() + 48 * HOUR);
    await u.kaj.sweep(10_000); // 48 h is beyond SQS's delay: the sweeper sends the wake
    await deliverLatest(u);
    expect(await get(u.kaj, id)).toMatchObject({ status: 'succeeded', result: { outcome: 'timed_out' } });
    const late = await signal(u.kaj, id, 'manager_approval', '{"approved":true}');
    expect(late.statusCode).toBe(409);
    expect(JSON.parse(late.body).error.code).toBe('run_finished');
  });

  it('a signal racing the timeout: whichever is recorded first is what the run sees', async () => {
    const u = setup();
    const id = await submit(u.kaj);
    await deliverLatest(u);
    vi.setSystemTime(Date.now() + 48 * HOUR);
    await u.kaj.sweep(10_000);
    // The run is due at its deadline, but the signal is recorded first: the run takes it.
    expect((await signal(u.kaj, id, 'manager_approval', '{"approved":true}')).statusCode).toBe(202);
    await deliverLatest(u);
    expect(await get(u.kaj, id)).toMatchObject({ status: 'succeeded', result: { outcome: 'approved' } });
  });

  it('answers 409 to a second signal of one name, 404 to another owner and to an unknown run, 409 to a plain task or a wait that ended, 422 naming a bad name', async () => {
    const u = setup();
    const id = await submit(u.kaj);
    expect((await signal(u.kaj, id, 'manager_approval', '{"approved":true}')).statusCode).toBe(202);
    const again = await signal(u.kaj, id, 'manager_approval', '{"approved":false}');
    expect(again.statusCode).toBe(409);
    expect(JSON.parse(again.body).error.code).toBe('signal_already_received');
    const other = await signal(u.kaj, id, 'other', '{}', 'arn:aws:iam::1:user/mallory');
    expect(other.statusCode).toBe(404);
    expect((await signal(u.kaj, 't_00000000000000000000000000000000', 'x', '{}')).statusCode).toBe(404);
    const plain = await submit(u.kaj, 'plain', {});
    const notWorkflow = await signal(u.kaj, plain, 'x', '{}');
    expect(notWorkflow.statusCode).toBe(409);
    expect(JSON.parse(notWorkflow.body).error.code).toBe('not_a_workflow');
    // A wait that ended by its timeout while the run goes on: its signal comes too late.
    await u.history.append({
      run_id: id,
      key: 'signal#late',
      kind: 'signal',
      at: Date.now(),
      lease_token: 1,
      until: Date.now(),
    });
    const late = await signal(u.kaj, id, 'late', '{}');
    expect(late.statusCode).toBe(409);
    expect(JSON.parse(late.body).error.code).toBe('signal_wait_ended');
    const bad = await signal(u.kaj, id, 'Bad-Name', '{}');
    expect(bad.statusCode).toBe(422);
    expect(JSON.parse(bad.body).error).toMatchObject({ field: 'name' });
    const big = await signal(u.kaj, id, 'big', JSON.stringify({ blob: 'x'.repeat(40 * 1024) }));
    expect([413, 422]).toContain(big.statusCode);
  });
});
