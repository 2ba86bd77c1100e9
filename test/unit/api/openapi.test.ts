import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { REST_STAGE_NAME } from '../../../infra/constructs/api.js';
import { openApiDocument } from '../../../shared/service/api/openapi.js';
import { API_ROUTES } from '../../../shared/service/api/routes.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { registry as shipped } from '../../../tasks/index.js';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { apiEvent, unitKaj } from '../../../testing/fixtures.js';

type Doc = {
  servers: { url: string; variables?: Record<string, { default: string }> }[];
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, any> }>>;
  components: { schemas: Record<string, any>; headers: Record<string, any> };
};

const registry = new TaskRegistry([
  defineTask({
    type: 'job',
    schema: z.object({ n: z.number().int(), when: z.coerce.date().optional() }),
    handler: async () => ({}),
  }),
  defineTask({ type: 'mail', schema: z.object({ to: z.email() }), handler: async () => ({}) }),
]);

describe('Function: openApiDocument', () => {
  it('is a valid OpenAPI 3.1 document (a broken one is refused by the same validator)', async () => {
    const doc = openApiDocument(registry, { schedules: true });
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const broken = structuredClone(doc) as Doc;
    (broken.paths['/api/v1/tasks'] as Record<string, unknown>).post = { responses: { '2xx': 'no' } };
    expect((await new Validator().validate(broken as never)).valid).toBe(false);
  });

  it('documents every route of API_ROUTES under its method, with its route name as operationId', () => {
    const doc = openApiDocument(registry, { schedules: true }) as Doc;
    for (const r of API_ROUTES) expect(doc.paths[r.path]?.[r.method.toLowerCase()]?.operationId).toBe(r.name);
    const without = openApiDocument(registry, { schedules: false }) as Doc;
    expect(Object.keys(without.paths).filter((p) => p.includes('schedules'))).toEqual([]);
  });

  it("SubmitRequest is a union on type, each member with its type's payload schema", () => {
    const doc = openApiDocument(registry, { schedules: false }) as Doc;
    const members = doc.components.schemas.SubmitRequest.oneOf as { properties: Record<string, any> }[];
    expect(members.map((m) => m.properties.type)).toEqual([{ const: 'job' }, { const: 'mail' }]);
    expect(members[1]?.properties.payload).toMatchObject({ properties: { to: { type: 'string', format: 'email' } } });
    // Read as a request is read: the coerced date is what the client sends, not a Date.
    expect(members[0]?.properties.payload.required).toEqual(['n']);
    expect(members[0]?.properties.priority).toMatchObject({ enum: ['high', 'normal', 'low'] });
  });

  it('names its servers: a stack (HTTP API; REST API under its stage) and npm start at its default port', () => {
    const doc = openApiDocument(registry, { schedules: true }) as Doc;
    expect(doc.servers.map((s) => s.url)).toEqual([
      'https://{apiId}.execute-api.{region}.amazonaws.com',
      `https://{apiId}.execute-api.{region}.amazonaws.com/${REST_STAGE_NAME}`,
      'http://127.0.0.1:{port}',
    ]);
    // Every variable of a URL is declared, with a default (OpenAPI requires both).
    for (const s of doc.servers) {
      const names = [...s.url.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(Object.keys(s.variables ?? {}).sort()).toEqual([...names].sort());
    }
    expect(doc.servers[2]?.variables?.port?.default).toBe('3000');
  });

  it("declares the headers Kaj sends, and API Gateway's own 403/429 (and 500) body beside Kaj's", () => {
    const doc = openApiDocument(registry, { schedules: true }) as Doc;
    const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
    const submit = doc.paths['/api/v1/tasks']?.post?.responses ?? {};
    expect(submit['202'].headers).toEqual({ Location: ref('Location') });
    expect(submit['200'].headers).toEqual({
      Location: ref('Location'),
      'Idempotent-Replayed': ref('Idempotent-Replayed'),
    });
    expect(Object.keys(doc.components.headers).sort()).toEqual(['Idempotent-Replayed', 'Location', 'Retry-After']);
    const gateway = { $ref: '#/components/schemas/GatewayError' };
    expect(doc.components.schemas.GatewayError).toMatchObject({ required: ['message'] });
    for (const ops of Object.values(doc.paths)) {
      for (const op of Object.values(ops)) {
        const r = op.responses;
        expect(r['503'].headers, op.operationId).toEqual({ 'Retry-After': ref('Retry-After') });
        expect(r['403'].content['application/json'].schema, op.operationId).toEqual(gateway);
        expect(r['429'].content['application/json'].schema, op.operationId).toEqual(gateway);
        expect(r['429'].headers, `${op.operationId}: API Gateway sends no Retry-After`).toBeUndefined();
        expect(r['500'].content['application/json'].schema.oneOf).toEqual([
          { $ref: '#/components/schemas/Error' },
          gateway,
        ]);
        // Only the submit answers carry Location (and a replay Idempotent-Replayed).
        for (const [status, res] of Object.entries(r)) {
          if (op.operationId !== 'submit' || !['200', '202'].includes(status))
            expect(
              Object.keys((res as { headers?: object }).headers ?? {}),
              `${op.operationId} ${status}`,
            ).not.toContain('Location');
        }
      }
    }
  });

  it('the headers the handler sets are exactly the ones declared: a submit, its replay, a store outage', async () => {
    const doc = openApiDocument(registry, { schedules: true }) as Doc;
    const { kaj, store } = unitKaj(registry);
    /** Kaj's own headers on a result, and those the document declares for its operation and status. */
    const compare = (r: { statusCode: number; headers: Record<string, string> }, path: string, method: string) => {
      const declared = Object.keys(doc.paths[path]?.[method]?.responses[String(r.statusCode)]?.headers ?? {});
      const sent = Object.keys(r.headers).filter((h) => ['location', 'idempotent-replayed', 'retry-after'].includes(h));
      expect(sent.sort(), `${method} ${path} → ${r.statusCode}`).toEqual(declared.map((h) => h.toLowerCase()).sort());
    };
    const body = JSON.stringify({ type: 'job', payload: { n: 1 }, idempotency_key: 'k' });
    const headers = { 'content-type': 'application/json' };
    const first = await kaj.handleHttp(apiEvent('POST', '/api/v1/tasks', { body, headers }));
    expect(first.statusCode).toBe(202);
    expect(first.headers.location).toBe(`/api/v1/tasks/${JSON.parse(first.body).task_id}`);
    compare(first, '/api/v1/tasks', 'post');
    const replay = await kaj.handleHttp(apiEvent('POST', '/api/v1/tasks', { body, headers }));
    expect(replay).toMatchObject({ statusCode: 200, headers: { 'idempotent-replayed': 'true' } });
    compare(replay, '/api/v1/tasks', 'post');
    store.failNext.get = new StoreUnavailableError('DynamoDB GetItem failed');
    const outage = await kaj.handleHttp(apiEvent('GET', first.headers.location as string));
    expect(outage.statusCode).toBe(503);
    compare(outage, '/api/v1/tasks/{id}', 'get');
  });

  it('docs/openapi.json is what the code generates for tasks/ (npm run openapi)', () => {
    const committed = readFileSync(new URL('../../../docs/openapi.json', import.meta.url), 'utf8');
    expect(committed).toBe(`${JSON.stringify(openApiDocument(shipped, { schedules: true }), null, 2)}\n`);
  });

  it('is served at GET /api/v1/openapi.json', async () => {
    const { kaj } = unitKaj(registry);
    const r = await kaj.handleHttp(apiEvent('GET', '/api/v1/openapi.json'));
    expect(r.statusCode).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ openapi: '3.1.0', info: { title: 'Kaj task API' } });
  });
});
