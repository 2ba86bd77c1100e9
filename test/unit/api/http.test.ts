import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { outboxKey } from '../../../shared/task/model.js';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { QueueUnavailableError } from '../../../shared/task/queue-errors.js';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { unitKaj, apiEvent } from '../../../testing/fixtures.js';

const registry = new TaskRegistry([
  defineTask({ type: 'job', schema: z.object({ n: z.number() }), handler: async () => ({}) }),
]);

function event(
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
): APIGatewayProxyEventV2 {
  return apiEvent(method, path, { headers, ...(body === undefined ? {} : { body }) });
}

const body = (r: { body: string }) => JSON.parse(r.body) as Record<string, any>;

describe('Function: handleHttp', () => {
  it('accepts a task with 202, a Location header and the accepted fields', async () => {
    const { kaj } = unitKaj(registry);
    const r = await kaj.handleHttp(event('POST', '/api/v1/tasks', JSON.stringify({ type: 'job', payload: { n: 1 } })));
    expect(r.statusCode).toBe(202);
    expect(Object.keys(body(r)).sort()).toEqual(['created_at', 'priority', 'run_at', 'status', 'task_id']);
    expect(r.headers.location).toBe(`/api/v1/tasks/${body(r).task_id}`);
  });

  it('accepts a base64 body and a stage prefix in the path', async () => {
    const { kaj } = unitKaj(registry);
    const e = event(
      'POST',
      '/prod/api/v1/tasks',
      Buffer.from(JSON.stringify({ type: 'job', payload: { n: 1 } })).toString('base64'),
    );
    e.isBase64Encoded = true;
    expect((await kaj.handleHttp(e)).statusCode).toBe(202);
  });

  it.each([
    ['bad JSON', event('POST', '/api/v1/tasks', '{'), 400, 'invalid_json', undefined],
    ['empty body', event('POST', '/api/v1/tasks'), 400, 'invalid_json', undefined],
    [
      'wrong content type',
      event('POST', '/api/v1/tasks', '{}', { 'content-type': 'text/plain' }),
      415,
      'unsupported_media_type',
      undefined,
    ],
    [
      'too large',
      event('POST', '/api/v1/tasks', JSON.stringify({ type: 'job', payload: { s: 'x'.repeat(70_000) } })),
      413,
      'payload_too_large',
      'body',
    ],
    ['unknown type', event('POST', '/api/v1/tasks', '{"type":"zzz"}'), 422, 'unknown_type', 'type'],
    [
      'bad payload',
      event('POST', '/api/v1/tasks', '{"type":"job","payload":{"n":"1"}}'),
      422,
      'validation_error',
      'payload.n',
    ],
    ['unknown route', event('GET', '/api/v2/tasks'), 404, 'not_found', undefined],
    ['wrong method', event('PUT', '/api/v1/tasks'), 405, 'method_not_allowed', undefined],
    ['malformed id', event('GET', '/api/v1/tasks/../../etc'), 404, 'not_found', undefined],
    ['unknown id', event('GET', '/api/v1/tasks/t_00000000000000000000000000000000'), 404, 'not_found', undefined],
  ])('%s → %i %s', async (_name, e, status, code, field) => {
    const { kaj } = unitKaj(registry);
    const r = await kaj.handleHttp(e);
    expect(r.statusCode).toBe(status);
    expect(body(r).error.code).toBe(code);
    expect(body(r).error.field).toBe(field);
    expect(typeof body(r).error.message).toBe('string');
  });

  // Once, decodeURIComponent threw a URIError on these and the API answered 500 internal.
  it.each([
    ['GET', '/api/v1/tasks/%ff'],
    ['DELETE', '/api/v1/tasks/%ff'],
    ['GET', '/api/v1/tasks/%'],
    ['DELETE', '/api/v1/tasks/%'],
    ['GET', '/api/v1/tasks/%E0%A4%A'],
    ['GET', '/prod/api/v1/tasks/t_%zz'],
  ])('malformed percent-encoding in the path: %s %s → 400 invalid_path, not a 500', async (method, path) => {
    const { kaj, logger } = unitKaj(registry);
    const r = await kaj.handleHttp(event(method, path));
    expect(r.statusCode).toBe(400);
    expect(r.headers['content-type']).toBe('application/json');
    expect(body(r)).toEqual({ error: { code: 'invalid_path', message: expect.any(String) } });
    expect(logger.entries.filter((e) => e.level === 'error')).toEqual([]);
  });

  it('a well-formed escape in the id is still decoded before the lookup (404 for an unknown id)', async () => {
    const { kaj } = unitKaj(registry);
    const created = body(await kaj.handleHttp(event('POST', '/api/v1/tasks', '{"type":"job","payload":{"n":1}}')));
    const escaped = `/api/v1/tasks/${String(created.task_id).replace('t_', 't%5F')}`;
    const r = await kaj.handleHttp(event('GET', escaped));
    expect(r.statusCode).toBe(200);
    expect(body(r).task_id).toBe(created.task_id);
  });

  it('answers 503 with Retry-After when the store is down, and writes nothing', async () => {
    const { kaj, store } = unitKaj(registry);
    store.failNext.create = new StoreUnavailableError('throttled');
    const r = await kaj.handleHttp(event('POST', '/api/v1/tasks', '{"type":"job","payload":{"n":1}}'));
    expect(r.statusCode).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
    expect(store.items.size).toBe(0);
  });

  it('still accepts the task when only SQS is down (the outbox sends it later)', async () => {
    const { kaj, queue, store } = unitKaj(registry);
    queue.failNext.send = new QueueUnavailableError('down');
    const r = await kaj.handleHttp(event('POST', '/api/v1/tasks', '{"type":"job","payload":{"n":1}}'));
    expect(r.statusCode).toBe(202);
    expect(store.items.get(body(r).task_id)?.outbox_pk).toBe(outboxKey('queue', 'normal', body(r).task_id));
  });

  it('reads a task without its internals and cancels it', async () => {
    const { kaj } = unitKaj(registry);
    const created = body(await kaj.handleHttp(event('POST', '/api/v1/tasks', '{"type":"job","payload":{"n":1}}')));
    const got = body(await kaj.handleHttp(event('GET', `/api/v1/tasks/${created.task_id}`)));
    expect(got).toMatchObject({ task_id: created.task_id, status: 'queued', attempts: 0, history: [] });
    for (const internal of ['payload', 'lease_token', 'dispatch_id', 'fingerprint', 'outbox_pk'])
      expect(got).not.toHaveProperty(internal);
    const del = await kaj.handleHttp(event('DELETE', `/api/v1/tasks/${created.task_id}`));
    expect(del.statusCode).toBe(200);
    expect(body(del)).toEqual({ task_id: created.task_id, status: 'cancelled' });
  });

  it('hides internal errors behind a 500', async () => {
    const { kaj, store, logger } = unitKaj(registry);
    store.failNext.get = new Error('secret detail');
    const r = await kaj.handleHttp(event('GET', '/api/v1/tasks/t_00000000000000000000000000000000'));
    expect(r.statusCode).toBe(500);
    expect(r.body).not.toContain('secret');
    expect(logger.entries.some((e) => e.level === 'error')).toBe(true);
  });
});

describe('POST /api/v1/tasks/batch', () => {
  const batch = (tasks: unknown) => event('POST', '/api/v1/tasks/batch', JSON.stringify({ tasks }));

  it('answers 207 with one result per item in request order, each with the status a single submit would have had', async () => {
    const { kaj, store } = unitKaj(registry);
    await kaj.handleHttp(event('POST', '/api/v1/tasks', '{"type":"job","payload":{"n":0},"idempotency_key":"a"}'));
    const r = await kaj.handleHttp(
      batch([
        { type: 'job', payload: { n: 1 } },
        { type: 'job', payload: { n: 'one' } },
        { type: 'job', payload: { n: 0 }, idempotency_key: 'a' },
        { type: 'job', payload: { n: 2 }, idempotency_key: 'a' },
        { type: 'nope' },
        { type: 'job', payload: { n: 1 }, colour: 'blue' },
      ]),
    );
    expect(r.statusCode).toBe(207);
    const b = body(r);
    expect(b.results.map((i: { index: number; http_status: number }) => [i.index, i.http_status])).toEqual([
      [0, 202],
      [1, 422],
      [2, 200],
      [3, 409],
      [4, 422],
      [5, 422],
    ]);
    expect({ accepted: b.accepted, replayed: b.replayed, rejected: b.rejected }).toEqual({
      accepted: 1,
      replayed: 1,
      rejected: 4,
    });
    expect(Object.keys(b.results[0]).sort()).toEqual([
      'created_at',
      'http_status',
      'index',
      'priority',
      'run_at',
      'status',
      'task_id',
    ]);
    expect(b.results[1].error).toMatchObject({ code: 'validation_error', field: 'payload.n' });
    expect(b.results[3].error).toMatchObject({ code: 'idempotency_conflict', field: 'idempotency_key' });
    expect(b.results[4].error).toMatchObject({ code: 'unknown_type', field: 'type' });
    expect(b.results[5].error).toMatchObject({ code: 'validation_error', field: 'colour' });
    expect(store.items.size).toBe(2);
  });

  it('an item whose put the store refused answers 503 (retry that item); the rest are accepted', async () => {
    const { kaj, store } = unitKaj(registry);
    store.failNext.create = new StoreUnavailableError('throttled');
    const b = body(
      await kaj.handleHttp(
        batch([
          { type: 'job', payload: { n: 1 } },
          { type: 'job', payload: { n: 2 } },
        ]),
      ),
    );
    expect(b.results.map((i: { http_status: number }) => i.http_status).sort()).toEqual([202, 503]);
    expect(b.results.find((i: { http_status: number }) => i.http_status === 503).error.code).toBe('unavailable');
  });

  it.each([
    ['no tasks field', JSON.stringify({}), 422, 'tasks'],
    ['an empty list', JSON.stringify({ tasks: [] }), 422, 'tasks'],
    [
      '101 tasks',
      JSON.stringify({ tasks: Array.from({ length: 101 }, () => ({ type: 'job', payload: { n: 1 } })) }),
      422,
      'tasks',
    ],
    ['an unknown field', JSON.stringify({ tasks: [{ type: 'job', payload: { n: 1 } }], all: true }), 422, 'all'],
    ['a list, not an object', JSON.stringify([{ type: 'job', payload: { n: 1 } }]), 422, 'body'],
    ['over 1 MiB', JSON.stringify({ tasks: [{ type: 'job', payload: { s: 'x'.repeat(1_100_000) } }] }), 413, 'body'],
  ])('refuses a request that is not a batch (%s): %i naming %s, nothing accepted', async (_, raw, status, field) => {
    const { kaj, store, queue } = unitKaj(registry);
    const r = await kaj.handleHttp(event('POST', '/api/v1/tasks/batch', raw));
    expect(r.statusCode).toBe(status);
    expect(body(r).error.field).toBe(field);
    expect(store.items.size).toBe(0);
    expect(queue.sent).toHaveLength(0);
  });

  it('an item that is not an object is named by its place (tasks[3]), not as the body; the others are accepted', async () => {
    const { kaj } = unitKaj(registry);
    const b = body(await kaj.handleHttp(batch([{ type: 'job', payload: { n: 1 } }, null, [], 'job', 7])));
    expect(b.results.map((i: { http_status: number }) => i.http_status)).toEqual([202, 422, 422, 422, 422]);
    expect(b.results.slice(1).map((i: { error: { field: string } }) => i.error.field)).toEqual([
      'tasks[1]',
      'tasks[2]',
      'tasks[3]',
      'tasks[4]',
    ]);
    expect(b.results[3].error.message).toMatch(/^tasks\[3\]: /);
    // A field inside an item is still named from the item (its index says which).
    const inner = body(await kaj.handleHttp(batch([{ type: 'job', payload: { n: 'x' } }])));
    expect(inner.results[0].error.field).toBe('payload.n');
  });

  it('is POST only, and does not shadow a task id route (GET answers 405 with Allow: POST)', async () => {
    const { kaj } = unitKaj(registry);
    const r = await kaj.handleHttp(event('GET', '/api/v1/tasks/batch'));
    expect(r.statusCode).toBe(405);
    expect(r.headers.allow).toBe('POST');
  });
});
