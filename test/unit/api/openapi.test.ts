import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { openApiDocument } from '../../../shared/api/openapi.js';
import { API_ROUTES } from '../../../shared/api/routes.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { registry as shipped } from '../../../tasks/index.js';
import { apiEvent, unitKaj } from '../../support/fixtures.js';

type Doc = {
  paths: Record<string, Record<string, { operationId: string }>>;
  components: { schemas: Record<string, any> };
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
