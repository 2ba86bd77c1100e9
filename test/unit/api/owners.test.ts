import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { ownerOf } from '../../../shared/service/api/http.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { unitKaj, apiEvent } from '../../../testing/fixtures.js';

/**
 * The owner model: tasks belong to the IAM principal that submitted them,
 * idempotency keys are scoped per owner, ids cannot be derived from keys, and any payload the
 * store would refuse is a 422 naming the field — never a 503.
 */
const registry = new TaskRegistry([
  defineTask({ type: 'job', schema: z.object({ n: z.number().optional() }).passthrough(), handler: async () => ({}) }),
  defineTask({
    type: 'when',
    schema: z.object({ at: z.coerce.date() }),
    handler: async (p) => ({ year: p.at.getUTCFullYear() }),
  }),
]);

const ALICE = 'arn:aws:iam::111122223333:user/alice';
const BOB = 'arn:aws:iam::111122223333:user/bob';

function event(method: string, path: string, userArn?: string, body?: unknown): APIGatewayProxyEventV2 {
  return apiEvent(method, path, {
    ...(userArn === undefined ? {} : { userArn }),
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

const json = (r: { body: string }) => JSON.parse(r.body) as Record<string, any>;

describe('Owner model', () => {
  it('records the caller as owner; another caller gets 404 on GET and DELETE, the owner 200', async () => {
    const { kaj, store } = unitKaj(registry);
    const res = await kaj.handleHttp(event('POST', '/api/v1/tasks', ALICE, { type: 'job', payload: {} }));
    expect(res.statusCode).toBe(202);
    const id = json(res).task_id as string;
    expect(store.items.get(id)?.owner).toBe(ALICE);
    expect((await kaj.handleHttp(event('GET', `/api/v1/tasks/${id}`, BOB))).statusCode).toBe(404);
    expect((await kaj.handleHttp(event('DELETE', `/api/v1/tasks/${id}`, BOB))).statusCode).toBe(404);
    expect(store.items.get(id)?.status).toBe('queued');
    expect((await kaj.handleHttp(event('GET', `/api/v1/tasks/${id}`, ALICE))).statusCode).toBe(200);
    expect((await kaj.handleHttp(event('DELETE', `/api/v1/tasks/${id}`, ALICE))).statusCode).toBe(200);
  });

  it('scopes idempotency keys per owner: the same key gives two callers two tasks, not a 409 or a replay', async () => {
    const { kaj } = unitKaj(registry);
    const body = { type: 'job', payload: { n: 1 }, idempotency_key: 'slip:2026-11:emp-48213' };
    const a = await kaj.handleHttp(event('POST', '/api/v1/tasks', ALICE, body));
    const b = await kaj.handleHttp(event('POST', '/api/v1/tasks', BOB, { ...body, payload: { n: 2 } }));
    expect([a.statusCode, b.statusCode]).toEqual([202, 202]);
    expect(json(a).task_id).not.toBe(json(b).task_id);
    const again = await kaj.handleHttp(event('POST', '/api/v1/tasks', ALICE, body));
    expect(again.statusCode).toBe(200);
    expect(json(again).task_id).toBe(json(a).task_id);
  });

  it('derives key-based ids with an HMAC under the deployment secret: another secret gives another id', () => {
    const one = unitKaj(registry, undefined, undefined, { idSecret: 'one' }).kaj.submitter;
    const two = unitKaj(registry, undefined, undefined, { idSecret: 'two' }).kaj.submitter;
    expect(one.idempotentTaskId(ALICE, 'job', 'k')).toMatch(/^t_[0-9a-f]{32}$/);
    expect(one.idempotentTaskId(ALICE, 'job', 'k')).not.toBe(two.idempotentTaskId(ALICE, 'job', 'k'));
    expect(one.idempotentTaskId(ALICE, 'job', 'k')).not.toBe(one.idempotentTaskId(BOB, 'job', 'k'));
  });

  it('treats every session of one assumed role as one owner', () => {
    const s1 = event('GET', '/', 'arn:aws:sts::111122223333:assumed-role/producer/i-0abc');
    const s2 = event('GET', '/', 'arn:aws:sts::111122223333:assumed-role/producer/lambda-session-9');
    expect(ownerOf(s1, 'x')).toBe('arn:aws:sts::111122223333:assumed-role/producer');
    expect(ownerOf(s2, 'x')).toBe(ownerOf(s1, 'x'));
    expect(ownerOf(event('GET', '/'), 'local')).toBe('local');
  });

  it('lets an operator (no owner given) read and cancel any task', async () => {
    const { kaj } = unitKaj(registry);
    const id = json(await kaj.handleHttp(event('POST', '/api/v1/tasks', ALICE, { type: 'job', payload: {} })))
      .task_id as string;
    expect((await kaj.lifecycle.requests.find(id)).owner).toBe(ALICE);
    expect((await kaj.lifecycle.requests.cancel(id)).status).toBe('cancelled');
  });
});

describe('Payloads the store would refuse are 422 naming the field', () => {
  it.each([
    ['an integer beyond 2^53 (1e16)', '{"type":"job","payload":{"n":1e16}}', 'payload.n'],
    ['a huge number (1.5e300)', '{"type":"job","payload":{"n":1.5e300}}', 'payload.n'],
    ['a number below 1e-130', '{"type":"job","payload":{"n":1e-200}}', 'payload.n'],
    ['an empty key', '{"type":"job","payload":{"deep":{"":1}}}', 'payload.deep.""'],
    ['a lone surrogate', '{"type":"job","payload":{"s":"\\ud800"}}', 'payload.s'],
    ['nesting deeper than 30 levels', `{"type":"job","payload":{"d":${'['.repeat(40)}${']'.repeat(40)}}}`, 'payload.d'],
  ])('%s', async (_what, raw, field) => {
    const { kaj, store } = unitKaj(registry);
    const res = await kaj.handleHttp(event('POST', '/api/v1/tasks', ALICE, raw));
    expect(res.statusCode).toBe(422);
    expect(json(res).error.field).toMatch(new RegExp(`^${field.replace(/[.[\]"]/g, '\\$&')}`));
    expect(store.items.size).toBe(0);
  });

  it('accepts a schema that transforms into a non-JSON value (z.coerce.date()): the payload as sent is stored', async () => {
    const { kaj, store } = unitKaj(registry);
    const res = await kaj.handleHttp(
      event('POST', '/api/v1/tasks', ALICE, { type: 'when', payload: { at: '2026-11-30T00:00:00Z' } }),
    );
    expect(res.statusCode).toBe(202);
    expect(store.items.get(json(res).task_id as string)?.payload).toEqual({ at: '2026-11-30T00:00:00Z' });
  });
});
