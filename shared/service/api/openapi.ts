/**
 * The task API's OpenAPI 3.1 document, generated from the zod schemas that validate requests
 * (`submitRequestSchema`, `submitBatchRequestSchema`, `scheduleRequestSchema`, every task type's
 * payload schema) and from the response schemas (`./openapi-schemas.ts`), which the contract test
 * (`test/integration/openapi-contract.test.ts`) checks real responses against; the responses,
 * servers and summaries of each route are in `./openapi-responses.ts`. Served at
 * `GET /api/v1/openapi.json`; `npm run openapi` writes `docs/openapi.json`.
 *
 * @module
 */
import * as z from 'zod';
import { scheduleRequestSchema } from '../../schedule/spec.js';
import type { TaskRegistry } from '../../task/define.js';
import { LISTING_VIEWS } from '../../task/model.js';
import { MAX_BATCH_TASKS, submitBatchRequestSchema, submitRequestSchema } from '../../task/submit.js';
import { COMMON_RESPONSES, HEADERS, REQUEST_BODIES, ROUTE_RESPONSES, SERVERS, SUMMARIES } from './openapi-responses.js';
import { NAMED } from './openapi-schemas.js';
import { API_ROUTES } from './routes.js';
import {
  pipelineBackfillSchema as pipelineBackfillRequestSchema,
  pipelineClearSchema,
  pipelineTriggerSchema,
} from './pipelines.js';

/** JSON Schema (2020-12, OpenAPI 3.1's dialect) of a zod schema as a request would be read. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  delete out.$schema;
  return out;
}

/**
 * The document for a deployment with `registry`'s task types. `SubmitRequest` is a union
 * discriminated on `type`: each member has the type's own payload schema.
 */
export function openApiDocument(registry: TaskRegistry, o: { readonly schedules: boolean }): Record<string, unknown> {
  const base = jsonSchema(submitRequestSchema, 'input');
  const baseProps = (base.properties ?? {}) as Record<string, unknown>;
  const perType = registry.types().map((type) => {
    const def = registry.get(type);
    return {
      ...base,
      title: type,
      properties: { ...baseProps, type: { const: type }, payload: jsonSchema(def.schema, 'input') },
      required: ['type'],
    };
  });
  const schemas: Record<string, unknown> = {
    SubmitRequest: { oneOf: perType, discriminator: { propertyName: 'type' } },
    BatchRequest: {
      ...jsonSchema(submitBatchRequestSchema, 'input'),
      properties: {
        tasks: {
          type: 'array',
          minItems: 1,
          maxItems: MAX_BATCH_TASKS,
          items: { $ref: '#/components/schemas/SubmitRequest' },
        },
      },
    },
    ScheduleRequest: jsonSchema(scheduleRequestSchema, 'input'),
    PipelineRunRequest: jsonSchema(pipelineTriggerSchema, 'input'),
    BackfillRequest: jsonSchema(pipelineBackfillRequestSchema, 'input'),
    ClearRequest: jsonSchema(pipelineClearSchema, 'input'),
  };
  for (const [schema, name] of NAMED) schemas[name] = jsonSchema(schema, 'output');
  const refOf = (schema: z.ZodType): Record<string, unknown> => {
    const name = NAMED.get(schema);
    return name === undefined ? jsonSchema(schema, 'output') : { $ref: `#/components/schemas/${name}` };
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of API_ROUTES) {
    if (!o.schedules && route.name.startsWith('schedule_')) continue;
    const params = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const query =
      route.name === 'list'
        ? [
            {
              name: 'status',
              in: 'query',
              required: true,
              schema: { type: 'string', enum: [...LISTING_VIEWS] },
              description:
                'a listed status (newest first), or delayed: queued tasks waiting in the table, soonest run first; queued tasks in SQS are counted by queue depth, succeeded ones are not listed (docs/api.md, "Listing tasks")',
            },
            { name: 'type', in: 'query', schema: { type: 'string', maxLength: 64 } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
            { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'opaque, from the previous page' },
          ]
        : route.name === 'pipeline_runs'
          ? [
              {
                name: 'from',
                in: 'query',
                schema: { type: 'string' },
                description: 'the first logical date (YYYY-MM-DD or ISO time)',
              },
              { name: 'to', in: 'query', schema: { type: 'string' }, description: 'the last logical date' },
            ]
          : route.name === 'schedule_list'
            ? [
                { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100 } },
                {
                  name: 'cursor',
                  in: 'query',
                  schema: { type: 'string' },
                  description: 'opaque, from the previous page',
                },
              ]
            : [];
    const responses: Record<string, unknown> = {};
    const documented = { ...COMMON_RESPONSES, ...ROUTE_RESPONSES[route.name] };
    for (const [status, spec] of Object.entries(documented)) {
      const shapes = Array.isArray(spec.schema) ? spec.schema : [spec.schema as z.ZodType];
      responses[status] = {
        description: spec.description ?? `HTTP ${status}`,
        ...(spec.headers === undefined
          ? {}
          : {
              headers: Object.fromEntries(spec.headers.map((h) => [h, { $ref: `#/components/headers/${h}` }])),
            }),
        content: {
          'application/json': {
            schema: shapes.length === 1 ? refOf(shapes[0] as z.ZodType) : { oneOf: shapes.map(refOf) },
          },
        },
      };
    }
    const body = REQUEST_BODIES[route.name];
    const operation: Record<string, unknown> = {
      operationId: route.name,
      summary: SUMMARIES[route.name],
      ...(params.length + query.length > 0 ? { parameters: [...params, ...query] } : {}),
      ...(body === undefined
        ? {}
        : {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: { $ref: `#/components/schemas/${body}` } } },
            },
          }),
      responses,
    };
    paths[route.path] = { ...(paths[route.path] ?? {}), [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Kaj task API',
      version: '1',
      description:
        'Background tasks on AWS. Every request is signed with AWS SigV4 (service execute-api); a task belongs to the IAM principal that submitted it.',
    },
    servers: SERVERS,
    paths,
    components: {
      schemas,
      headers: HEADERS,
      securitySchemes: {
        sigv4: {
          type: 'apiKey',
          name: 'Authorization',
          in: 'header',
          description: 'AWS Signature Version 4 (service execute-api), verified by API Gateway (IAM authorization)',
          'x-amazon-apigateway-authtype': 'awsSigv4',
        },
      },
    },
    security: [{ sigv4: [] }],
  };
}
