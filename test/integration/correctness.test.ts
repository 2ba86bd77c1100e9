/**
 * Correctness regressions end to end, on the embedded emulators and on moto: a cancel of a running
 * send_email wins, payloads the store would refuse are 422, unstorable results fail once, the
 * store maps DynamoDB's ValidationException to a permanent error, and owners are isolated.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { LocalRuntime } from '../../local/runtime.js';
import { DynamoTaskStore } from '../../shared/aws/dynamo-task-store.js';
import { StoreRejectedError } from '../../shared/task/store-errors.js';
import { defineTask, TaskRegistry } from '../../shared/task/define.js';
import type { TaskView } from '../../shared/task/model.js';
import { limits } from '../../tasks/limits.js';
import { sendEmail } from '../../tasks/send-email.js';
import { runtimeForSuite } from '../support/suite-runtime.js';
import { targets } from '../support/targets.js';
import { waitFor } from '../../testing/wait.js';

let runs = 0;
/** Tasks whose send_email handler has started. */
const emailStarts = new Set<string>();
const registry = new TaskRegistry(
  [
    defineTask({
      ...sendEmail,
      handler: (payload, ctx) => {
        emailStarts.add(ctx.taskId);
        return sendEmail.handler(payload, ctx);
      },
    }),
    defineTask({ type: 'amount', schema: z.object({ n: z.number() }), handler: async (p) => ({ n: p.n }) }),
    defineTask({
      type: 'bad_result',
      schema: z.object({}),
      handler: async () => {
        runs += 1;
        return { total: Number.NaN };
      },
    }),
  ],
  { limits },
);

describe.each(targets())('correctness on $name', (target) => {
  let runtime: LocalRuntime;

  runtimeForSuite(
    target,
    'fix',
    {
      registry,
      sweepIntervalMs: 500,
      waitTimeSeconds: 1,
    },
    (r) => (runtime = r),
  );

  async function call(method: string, path: string, body?: unknown, identity?: string) {
    const res = await fetch(`${runtime.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(identity === undefined ? {} : { 'x-kaj-identity': identity }),
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as any };
  }

  const until = (id: string, statuses: string[], timeoutMs = 30_000) =>
    waitFor(
      `task ${id} to reach ${statuses.join('/')}`,
      async () => {
        const { json } = await call('GET', `/api/v1/tasks/${id}`);
        return statuses.includes(json.status) ? (json as TaskView) : undefined;
      },
      { timeoutMs },
    );

  /** The handler's length in the cancel case: past the 5 s cancel poll, short of the 20 s heartbeat. */
  const HANDLER_MS = 10_000; // the most send_email's simulate.latency_ms allows

  it('send_email taking 10 s, DELETE once it runs → cut short by the 5 s cancel poll, no result stored', async () => {
    const res = await call('POST', '/api/v1/tasks', {
      type: 'send_email',
      payload: { to: 'ada@example.com', subject: 'hi', simulate: { latency_ms: HANDLER_MS } },
    });
    expect(res.status).toBe(202);
    const id = res.json.task_id as string;
    // Until its first heartbeat (20 s) the claim of a running handler is not written (lazy), so
    // the table says queued and DELETE ends the task at once (200). On a machine slow enough that
    // the heartbeat wrote the claim before the DELETE, the task is running and DELETE asks for its
    // cancel (202). Either way the worker's cancel poll cuts the handler short.
    // When it starts is the machine's speed (and send_email's limits): it only has to start.
    await waitFor('the handler to start', () => emailStarts.has(id) || undefined, { timeoutMs: 90_000 });
    const del = await call('DELETE', `/api/v1/tasks/${id}`);
    expect([200, 202]).toContain(del.status);
    expect(del.json.status).toBe(del.status === 200 ? 'cancelled' : 'running');
    // The worker's cancel poll (every 5 s) stops the handler and records the attempt it cut short,
    // before the handler's 10 s or the heartbeat's 20 s.
    const done = await waitFor('the cut-short attempt in the history', async () => {
      const r = await call('GET', `/api/v1/tasks/${id}`);
      return (r.json.history as { outcome: string }[] | undefined)?.length ? (r.json as TaskView) : undefined;
    });
    expect(done.status).toBe('cancelled');
    expect(done.result).toBeUndefined();
    expect(done.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'cancelled' })]);
    // Cut short: the handler ran less than its 10 s (an attempt left to finish is recorded after
    // them). The bound is the handler's own length, twice the poll's period.
    expect(done.history[0]?.duration_ms).toBeLessThan(HANDLER_MS);
  }, 150_000);

  it('a payload the store would refuse is 422 naming the field, never 503', async () => {
    for (const raw of ['{"type":"amount","payload":{"n":1e16}}', '{"type":"amount","payload":{"n":1.5e300}}']) {
      const res = await call('POST', '/api/v1/tasks', raw);
      expect(res.status).toBe(422);
      expect(res.json.error).toMatchObject({ code: 'validation_error', field: 'payload.n' });
    }
    const ok = await call('POST', '/api/v1/tasks', { type: 'amount', payload: { n: 2 ** 53 - 1 } });
    expect(ok.status).toBe(202);
    expect((await until(ok.json.task_id, ['succeeded'])).result).toEqual({ n: 2 ** 53 - 1 });
  });

  it('a result the store cannot hold fails the task after exactly one run, naming the problem', async () => {
    runs = 0;
    const res = await call('POST', '/api/v1/tasks', { type: 'bad_result', payload: {} });
    const done = await until(res.json.task_id, ['failed', 'succeeded']);
    expect(done.status).toBe('failed');
    expect(done.attempts).toBe(1);
    expect(runs).toBe(1);
    expect(done.last_error).toMatchObject({
      code: 'UNSTORABLE_RESULT',
      retryable: false,
      message: 'result.total: NaN is not a JSON number',
    });
  });

  it('DynamoDB’s ValidationException (an item over 400 KB) is a permanent StoreRejectedError, not an outage', async () => {
    const res = await call('POST', '/api/v1/tasks', { type: 'amount', payload: { n: 1 } });
    const id = res.json.task_id as string;
    await until(id, ['succeeded']);
    const store = new DynamoTaskStore(runtime.clients.dynamodb, runtime.config.tableName);
    const err = await store
      .update(id, { set: { result: 'x'.repeat(410 * 1024) } }, { status: ['succeeded'] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreRejectedError);
    expect((err as Error).message).toMatch(/ValidationException/);
  });

  it('owner model: two identities on the local runtime; the other one gets 404, keys are per owner', async () => {
    const body = { type: 'amount', payload: { n: 7 }, idempotency_key: 'slip:2026-11:emp-48213' };
    const a = await call('POST', '/api/v1/tasks', body, 'alice');
    const b = await call('POST', '/api/v1/tasks', { ...body, payload: { n: 8 } }, 'bob');
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.json.task_id).not.toBe(b.json.task_id);
    expect((await call('GET', `/api/v1/tasks/${a.json.task_id}`, undefined, 'bob')).status).toBe(404);
    expect((await call('DELETE', `/api/v1/tasks/${a.json.task_id}`, undefined, 'bob')).status).toBe(404);
    expect((await call('GET', `/api/v1/tasks/${a.json.task_id}`, undefined, 'alice')).status).toBe(200);
    // Without the header, requests are the local identity's: alice's task is not theirs either.
    expect((await call('GET', `/api/v1/tasks/${a.json.task_id}`)).status).toBe(404);
    expect((await runtime.kaj.lifecycle.requests.find(a.json.task_id)).owner).toBe('alice');
  });
});
