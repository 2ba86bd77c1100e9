/**
 * `api: 'rest'` end to end on each emulator: the API function's entry (`handle`, what
 * `functions/api.ts` exports) given REST API (payload format 1.0) events, over the real DynamoDB
 * and SQS adapters of the local runtime's resources, whose consumers run the tasks. Submit, run,
 * read, retry to failure, the listing, cancel, and owner isolation between IAM principals — the
 * handler path of a REST deployment, which LocalStack's free edition runs and this project cannot
 * (no Docker here).
 *
 * Then the API steps of `npm run localstack:smoke` (scripts/localstack-smoke-api.ts: submit and
 * wait through `KajClient`) against the runtime's own HTTP API.
 */
import type { APIGatewayProxyResult } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../local/runtime.js';
import { main as smokeApi } from '../../scripts/localstack-smoke-api.js';
import { type ApiFunction, createApiFunction } from '../../shared/service/app/api.js';
import { restApiEvent } from '../support/rest-events.js';
import { startOnTarget, targets } from '../support/targets.js';
import { TaskProbe, testRegistry } from '../support/test-tasks.js';
import { uniquePrefix } from '../../testing/wait.js';

const probe = new TaskProbe();
const registry = testRegistry(probe);

const PRODUCER = 'arn:aws:sts::111122223333:assumed-role/Producer';
const OTHER = 'arn:aws:iam::111122223333:user/mallory';
const bodyOf = (r: { body: string }) => JSON.parse(r.body) as Record<string, any>;

describe.each(targets())('the API function behind a REST API on $name', (target) => {
  let runtime: LocalRuntime;
  let stop: () => Promise<void> = async () => {};
  let api: ApiFunction;

  beforeAll(async () => {
    ({ runtime, stop } = await startOnTarget(target, {
      registry,
      prefix: uniquePrefix('rest'),
      port: 0,
      sweepIntervalMs: 500,
      waitTimeSeconds: 1,
    }));
    // The Lambda function's composition root on the runtime's resources and clients, with a
    // deployment's own id secret (the stack sets KAJ_ID_SECRET; the runtime has none).
    api = createApiFunction({ ...runtime.config, idSecret: 'rest-test-secret' }, registry, {
      ...runtime.clients,
      defaultOwner: 'anonymous',
    });
  }, 60_000);
  afterAll(async () => {
    await stop();
  }, 60_000);

  const call = async (...args: Parameters<typeof restApiEvent>) =>
    (await api.handle(restApiEvent(...args))) as APIGatewayProxyResult;

  /** Polls GET through the REST path until the task is in `status`. */
  async function until(id: string, status: string, userArn = `${PRODUCER}/s-1`): Promise<Record<string, any>> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = await call('GET', `/api/v1/tasks/${id}`, { userArn });
      expect(r.statusCode).toBe(200);
      const task = bodyOf(r);
      if (task.status === status) return task;
      if (Date.now() > deadline) throw new Error(`task ${id} is ${task.status}, not ${status}`);
      await new Promise((res) => setTimeout(res, 100));
    }
  }

  it('submits through a REST event (1.0 answer), the consumer runs it, GET through REST reads the result', async () => {
    const r = await call('POST', '/api/v1/tasks', {
      userArn: `${PRODUCER}/s-1`,
      body: JSON.stringify({ type: 'echo', payload: { value: { n: 7 } }, priority: 'high' }),
    });
    expect(r.statusCode).toBe(202);
    expect(r.isBase64Encoded).toBe(false);
    const id = bodyOf(r).task_id as string;
    expect(r.headers?.location).toBe(`/api/v1/tasks/${id}`);
    const done = await until(id, 'succeeded');
    expect(done).toMatchObject({ priority: 'high', result: { echoed: { n: 7 }, attempt: 1 } });
    expect(probe.runs(id)).toBe(1);
  });

  it('owner isolation: another session of the role sees the task, another principal gets 404, cannot cancel', async () => {
    const r = await call('POST', '/api/v1/tasks', {
      userArn: `${PRODUCER}/s-2`,
      body: JSON.stringify({ type: 'sleepy', payload: { ms: 3_000 }, delay_seconds: 30, idempotency_key: 'rest-k1' }),
    });
    expect(r.statusCode).toBe(202);
    const id = bodyOf(r).task_id as string;
    expect((await call('GET', `/api/v1/tasks/${id}`, { userArn: `${PRODUCER}/s-3` })).statusCode).toBe(200);
    expect((await call('GET', `/api/v1/tasks/${id}`, { userArn: OTHER })).statusCode).toBe(404);
    expect((await call('DELETE', `/api/v1/tasks/${id}`, { userArn: OTHER })).statusCode).toBe(404);
    expect((await call('GET', `/api/v1/tasks/${id}`)).statusCode).toBe(404);
    // The same key from another principal is another task; from the owner, a replay.
    const again = await call('POST', '/api/v1/tasks', {
      userArn: `${PRODUCER}/s-4`,
      body: JSON.stringify({ type: 'sleepy', payload: { ms: 3_000 }, delay_seconds: 30, idempotency_key: 'rest-k1' }),
    });
    expect([again.statusCode, bodyOf(again).task_id, again.headers?.['idempotent-replayed']]).toEqual([
      200,
      id,
      'true',
    ]);
    const theirs = await call('POST', '/api/v1/tasks', {
      userArn: OTHER,
      body: JSON.stringify({ type: 'sleepy', payload: { ms: 3_000 }, delay_seconds: 30, idempotency_key: 'rest-k1' }),
    });
    expect(theirs.statusCode).toBe(202);
    expect(bodyOf(theirs).task_id).not.toBe(id);
    const cancelled = await call('DELETE', `/api/v1/tasks/${id}`, { userArn: `${PRODUCER}/s-2` });
    expect([cancelled.statusCode, bodyOf(cancelled).status]).toEqual([200, 'cancelled']);
  });

  it('a task that fails for good is listed by GET /api/v1/tasks?status=failed through the REST path, for its owner only', async () => {
    const r = await call('POST', '/api/v1/tasks', {
      userArn: `${PRODUCER}/s-5`,
      body: JSON.stringify({ type: 'always_fails', payload: {}, max_attempts: 2 }),
    });
    const id = bodyOf(r).task_id as string;
    const failed = await until(id, 'failed');
    expect(failed.attempts).toBe(2);
    const deadline = Date.now() + 10_000;
    let ids: string[] = [];
    while (!ids.includes(id) && Date.now() < deadline) {
      const page = await call('GET', '/api/v1/tasks', { userArn: `${PRODUCER}/s-6`, query: { status: 'failed' } });
      expect(page.statusCode).toBe(200);
      ids = (bodyOf(page).items as { task_id: string }[]).map((i) => i.task_id);
      if (!ids.includes(id)) await new Promise((res) => setTimeout(res, 200));
    }
    expect(ids).toContain(id);
    const others = await call('GET', '/api/v1/tasks', { userArn: OTHER, query: { status: 'failed' } });
    expect((bodyOf(others).items as { task_id: string }[]).map((i) => i.task_id)).not.toContain(id);
  });

  it('refuses bad input the same way: 422 naming the field, in the 1.0 shape', async () => {
    const r = await call('POST', '/api/v1/tasks', {
      userArn: `${PRODUCER}/s-1`,
      body: JSON.stringify({ type: 'echo', payload: { value: 1 }, max_attempts: 99 }),
    });
    expect([r.statusCode, bodyOf(r).error.field]).toEqual([422, 'max_attempts']);
  });

  it("the smoke's API steps: submit and wait through KajClient on the runtime's HTTP API", async () => {
    const out: string[] = [];
    const code = await smokeApi(
      ['submit', '--api-url', runtime.url, '--type', 'echo', '--payload', '{"value":"smoke"}'],
      (s) => {
        out.push(s);
      },
    );
    expect(code).toBe(0);
    const id = out.join('').trim();
    expect(id).toMatch(/^t_[0-9a-f]{32}$/);
    expect(await smokeApi(['wait', '--api-url', runtime.url, '--task-id', id, '--expect', 'succeeded'])).toBe(0);

    const dead: string[] = [];
    await smokeApi(
      ['submit', '--api-url', runtime.url, '--type', 'always_fails', '--payload', '{}', '--max-attempts', '1'],
      (s) => {
        dead.push(s);
      },
    );
    const deadId = dead.join('').trim();
    // Ends failed: waiting for success says so (exit 1) instead of hanging; waiting for failed passes.
    expect(await smokeApi(['wait', '--api-url', runtime.url, '--task-id', deadId, '--expect', 'succeeded'])).toBe(1);
    expect(await smokeApi(['wait', '--api-url', runtime.url, '--task-id', deadId, '--expect', 'failed'])).toBe(0);
    await expect(smokeApi(['wait', '--api-url', runtime.url])).rejects.toThrow(/--task-id is required/);
    await expect(smokeApi(['nope'])).rejects.toThrow(/usage/);
  }, 60_000);
});
