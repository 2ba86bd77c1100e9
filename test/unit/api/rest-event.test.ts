/**
 * The payload-format adapter (`shared/service/api/rest-event.ts`): a REST API's 1.0 event runs
 * through the same handler as an HTTP API's 2.0 event, and is answered in the 1.0 result shape;
 * the owner of a request is the same principal whichever API kind carried it.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { UnsupportedApiEventError } from '../../../shared/service/api/errors.js';
import { ownerOf } from '../../../shared/service/api/http.js';
import {
  type ApiGatewayEvent,
  fromRestApiEvent,
  isHttpApiEvent,
  isRestApiEvent,
  servingBothFormats,
  toRestApiResult,
} from '../../../shared/service/api/rest-event.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { apiEvent, unitKaj } from '../../../testing/fixtures.js';
import { restApiEvent } from '../../support/rest-events.js';

const registry = new TaskRegistry([
  defineTask({ type: 'job', schema: z.strictObject({ n: z.number().optional() }), handler: async () => ({}) }),
]);

/** Two sessions of one role, and another role. */
const ROLE = 'arn:aws:sts::111122223333:assumed-role/Producer';
const SESSION_A = `${ROLE}/lambda-instance-a`;
const SESSION_B = `${ROLE}/lambda-instance-b`;
const OTHER = 'arn:aws:iam::111122223333:user/mallory';

function both() {
  const u = unitKaj(registry);
  return { ...u, handle: servingBothFormats((e) => u.kaj.handleHttp(e)) };
}

const post = (body: unknown, o: { userArn?: string; headers?: Record<string, string> } = {}) =>
  restApiEvent('POST', '/api/v1/tasks', { body: JSON.stringify(body), ...o });

const bodyOf = (r: { body: string }) => JSON.parse(r.body) as Record<string, any>;

describe('Function: servingBothFormats', () => {
  it('answers a REST API submit in the 1.0 shape: status, headers, body, isBase64Encoded', async () => {
    const { handle, store } = both();
    const r = (await handle(post({ type: 'job', payload: { n: 1 } }, { userArn: SESSION_A }))) as APIGatewayProxyResult;
    expect(r.statusCode).toBe(202);
    expect(r.isBase64Encoded).toBe(false);
    expect(Object.keys(r).sort()).toEqual(['body', 'headers', 'isBase64Encoded', 'statusCode']);
    const id = bodyOf(r).task_id as string;
    expect(r.headers).toMatchObject({ 'content-type': 'application/json', location: `/api/v1/tasks/${id}` });
    expect(store.items.get(id)?.owner).toBe(ROLE);
  });

  it('keeps owner isolation identical: a task submitted through REST is the same role’s through HTTP, 404 to others', async () => {
    const { handle } = both();
    const id = bodyOf(await handle(post({ type: 'job' }, { userArn: SESSION_A }))).task_id as string;
    // Another session of the same role, through the HTTP API (2.0): its own task.
    expect((await handle(apiEvent('GET', `/api/v1/tasks/${id}`, { userArn: SESSION_B }))).statusCode).toBe(200);
    // Another principal, through either kind: not found, and not cancellable.
    expect((await handle(restApiEvent('GET', `/api/v1/tasks/${id}`, { userArn: OTHER }))).statusCode).toBe(404);
    expect((await handle(apiEvent('GET', `/api/v1/tasks/${id}`, { userArn: OTHER }))).statusCode).toBe(404);
    expect((await handle(restApiEvent('DELETE', `/api/v1/tasks/${id}`, { userArn: OTHER }))).statusCode).toBe(404);
    // An unauthenticated request (authMode none: no identity) is the default owner's, not the role's.
    expect((await handle(restApiEvent('GET', `/api/v1/tasks/${id}`))).statusCode).toBe(404);
    const cancelled = await handle(restApiEvent('DELETE', `/api/v1/tasks/${id}`, { userArn: SESSION_B }));
    expect([cancelled.statusCode, bodyOf(cancelled).status]).toEqual([200, 'cancelled']);
  });

  it('derives the same owner from a 1.0 identity as from a 2.0 IAM authorizer', () => {
    for (const arn of [SESSION_A, OTHER]) {
      const fromRest = ownerOf(fromRestApiEvent(restApiEvent('GET', '/api/v1/tasks/t_1', { userArn: arn })), 'anon');
      const fromHttp = ownerOf(apiEvent('GET', '/api/v1/tasks/t_1', { userArn: arn }), 'anon');
      expect(fromRest).toBe(fromHttp);
    }
    expect(ownerOf(fromRestApiEvent(restApiEvent('GET', '/api/v1/tasks/t_1')), 'anon')).toBe('anon');
    const blank = restApiEvent('GET', '/api/v1/tasks/t_1');
    blank.requestContext.identity.userArn = '';
    expect(ownerOf(fromRestApiEvent(blank), 'anon')).toBe('anon');
  });

  it('refuses what the HTTP API refuses, in the 1.0 shape: 415, 400, 404 route, 405 with allow', async () => {
    const { handle } = both();
    const text = await handle(post({ type: 'job' }, { headers: { 'Content-Type': 'text/plain' } }));
    expect([text.statusCode, bodyOf(text).error.code]).toEqual([415, 'unsupported_media_type']);
    const bad = await handle(restApiEvent('POST', '/api/v1/tasks', { body: '{nope' }));
    expect([bad.statusCode, bodyOf(bad).error.code]).toEqual([400, 'invalid_json']);
    const none = await handle(restApiEvent('GET', '/api/v2/nothing'));
    expect(none.statusCode).toBe(404);
    const put = await handle(restApiEvent('PUT', '/api/v1/tasks'));
    expect([put.statusCode, put.headers?.allow]).toEqual([405, 'POST, GET']);
    const unknown = await handle(post({ type: 'nope' }));
    expect([unknown.statusCode, bodyOf(unknown).error.field]).toEqual([422, 'type']);
  });

  it('reads a base64 body, and a Content-Type header in any case, as the HTTP API path does', async () => {
    const { handle } = both();
    const body = Buffer.from(JSON.stringify({ type: 'job', payload: { n: 2 } })).toString('base64');
    const r = await handle(
      restApiEvent('POST', '/api/v1/tasks', {
        body,
        isBase64Encoded: true,
        headers: { 'CONTENT-TYPE': 'application/json' },
      }),
    );
    expect(r.statusCode).toBe(202);
  });

  it('serves the stage-prefixed path too (a request path that still carries /prod)', async () => {
    const { handle } = both();
    const e = restApiEvent('POST', '/api/v1/tasks', { body: JSON.stringify({ type: 'job' }) });
    const staged = { ...e, path: '/prod/api/v1/tasks' };
    expect((await handle(staged)).statusCode).toBe(202);
  });

  it('passes 2.0 events through untouched (same object to the handler, same result object back)', async () => {
    const seen: APIGatewayProxyEventV2[] = [];
    const result = { statusCode: 204, headers: {}, body: '' };
    const handle = servingBothFormats(async (e) => {
      seen.push(e);
      return result;
    });
    const e = apiEvent('GET', '/api/v1/openapi.json');
    expect(await handle(e)).toBe(result);
    expect(seen).toEqual([e]);
  });

  it('throws UnsupportedApiEventError for an event of neither format (an SQS batch, a bare object)', async () => {
    const handle = servingBothFormats(async () => ({ statusCode: 200, headers: {}, body: '' }));
    await expect(handle({ Records: [] } as unknown as ApiGatewayEvent)).rejects.toThrow(UnsupportedApiEventError);
    await expect(handle({ version: '3.0' } as unknown as ApiGatewayEvent)).rejects.toThrow(/version "3.0"/);
  });
});

describe('Function: fromRestApiEvent', () => {
  it('maps method, path, route key, headers (lower-cased), query (repeats joined), path parameters, stage', () => {
    const e = restApiEvent('GET', '/api/v1/schedules/nightly', {
      query: { limit: '5', status: ['failed', 'retrying'] },
      headers: { 'X-Trace': 'abc' },
      userArn: SESSION_A,
    });
    e.multiValueHeaders['X-Forwarded-For'] = ['198.51.100.7', '10.0.0.1'];
    const v2 = fromRestApiEvent(e);
    expect(v2).toMatchObject({
      version: '2.0',
      routeKey: 'GET /api/v1/schedules/{name}',
      rawPath: '/api/v1/schedules/nightly',
      queryStringParameters: { limit: '5', status: 'failed,retrying' },
      pathParameters: { name: 'nightly' },
      isBase64Encoded: false,
      requestContext: {
        http: { method: 'GET', path: '/api/v1/schedules/nightly', sourceIp: '198.51.100.7', userAgent: 'rest-test' },
        stage: 'prod',
        authorizer: { iam: { userArn: SESSION_A } },
      },
    });
    expect(v2.rawQueryString).toBe('limit=5&status=failed&status=retrying');
    expect(v2.headers['x-trace']).toBe('abc');
    expect(v2.headers['content-type']).toBe('application/json');
    expect(v2.headers['x-forwarded-for']).toBe('198.51.100.7,10.0.0.1');
    expect(Object.keys(v2.headers).every((k) => k === k.toLowerCase())).toBe(true);
    expect(v2.body).toBeUndefined();
  });

  it('leaves out what the REST API sent as null: no query, no path parameters, no body, no authorizer', () => {
    const v2 = fromRestApiEvent(restApiEvent('GET', '/api/v1/openapi.json'));
    expect(v2.queryStringParameters).toBeUndefined();
    expect(v2.pathParameters).toBeUndefined();
    expect(v2.body).toBeUndefined();
    expect(v2.rawQueryString).toBe('');
    expect((v2.requestContext as { authorizer?: unknown }).authorizer).toBeUndefined();
  });

  it('keeps the listing query (status, type, limit) the handler reads', async () => {
    const { handle } = both();
    const r = await handle(restApiEvent('GET', '/api/v1/tasks', { query: { status: 'queued' }, userArn: SESSION_A }));
    // The same refusal the HTTP API gets for a status that is not listable: the query reached the route.
    const viaHttp = await handle({
      ...apiEvent('GET', '/api/v1/tasks', { userArn: SESSION_A }),
      queryStringParameters: { status: 'queued' },
      rawQueryString: 'status=queued',
    });
    expect(r.statusCode).toBe(viaHttp.statusCode);
    expect(bodyOf(r)).toEqual(bodyOf(viaHttp));
    expect(r.statusCode).toBeGreaterThanOrEqual(400);
  });
});

describe('Function: isHttpApiEvent / isRestApiEvent', () => {
  it('tells the formats apart by version and shape', () => {
    const rest: APIGatewayProxyEvent = restApiEvent('GET', '/api/v1/openapi.json');
    const http = apiEvent('GET', '/api/v1/openapi.json');
    expect([isRestApiEvent(rest), isHttpApiEvent(rest)]).toEqual([true, false]);
    expect([isRestApiEvent(http), isHttpApiEvent(http)]).toEqual([false, true]);
    // An HTTP API's payload format 1.0 is the REST shape with version "1.0": served the same way.
    expect(isRestApiEvent({ ...rest, version: '1.0' } as APIGatewayProxyEvent)).toBe(true);
  });
});

describe('Function: toRestApiResult', () => {
  it('keeps status, headers and body, and says the body is not base64', () => {
    expect(toRestApiResult({ statusCode: 503, headers: { 'retry-after': '1' }, body: '{}' })).toEqual({
      statusCode: 503,
      headers: { 'retry-after': '1' },
      body: '{}',
      isBase64Encoded: false,
    });
  });
});
