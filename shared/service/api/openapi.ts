/**
 * The task API's OpenAPI 3.1 document, generated from the zod schemas that validate requests
 * (`submitRequestSchema`, `submitBatchRequestSchema`, `scheduleRequestSchema`, every task type's
 * payload schema) and from the response schemas below, which the contract test
 * (`test/integration/openapi.test.ts`) checks real responses against. Served at
 * `GET /api/v1/openapi.json`; `npm run openapi` writes `docs/openapi.json`.
 *
 * @module
 */
import * as z from 'zod';
import { PRIORITIES } from '../../config/resources.js';
import { scheduleRequestSchema } from '../../schedule/spec.js';
import type { TaskRegistry } from '../../task/define.js';
import { LISTING_VIEWS, TASK_STATUSES } from '../../task/model.js';
import { MAX_BATCH_TASKS, submitBatchRequestSchema, submitRequestSchema } from '../../task/submit.js';
import { API_ROUTES, type TaskApiRoute } from './routes.js';

const iso = z.string().describe('ISO-8601 UTC time');

export const errorBodySchema = z.object({
  error: z.object({
    code: z.string().describe('machine-readable: validation_error, unknown_type, idempotency_conflict, not_found…'),
    message: z.string(),
    field: z.string().optional().describe('the offending field, as a dotted path (payload.to)'),
  }),
});

/**
 * What API Gateway answers itself, before or instead of Kaj's function: `{"message": "Forbidden"}`
 * (403, IAM auth), `{"message": "Too Many Requests"}` (429, the stage's throttling),
 * `{"message": "Internal Server Error"}` (500/502, the function could not run or failed).
 */
export const gatewayErrorSchema = z.object({
  message: z.string().describe("API Gateway's own text: Forbidden, Too Many Requests, Internal Server Error…"),
});

export const acceptedSchema = z.object({
  task_id: z.string(),
  status: z.enum(TASK_STATUSES),
  priority: z.enum(PRIORITIES),
  run_at: iso,
  created_at: iso,
});

const errorInfoSchema = z.object({
  name: z.string(),
  message: z.string(),
  retryable: z.boolean(),
  code: z.string().optional(),
});

export const taskViewSchema = z.object({
  task_id: z.string(),
  type: z.string(),
  status: z.enum(TASK_STATUSES),
  priority: z.enum(PRIORITIES),
  tenant: z.string().optional(),
  attempts: z.number().int(),
  max_attempts: z.number().int(),
  run_at: iso,
  created_at: iso,
  updated_at: iso,
  started_at: iso.optional(),
  finished_at: iso.optional(),
  result: z.unknown().optional(),
  last_error: errorInfoSchema.optional(),
  cancel_requested: z.literal(true).optional(),
  history: z.array(
    z.object({
      attempt: z.number().int(),
      outcome: z.enum(['succeeded', 'retrying', 'failed', 'cancelled', 'crashed']),
      started_at: iso.optional(),
      finished_at: iso,
      duration_ms: z.number().optional(),
      error: errorInfoSchema.optional(),
    }),
  ),
});

export const cancelResultSchema = z.object({
  task_id: z.string(),
  status: z.enum(TASK_STATUSES),
  cancel_requested: z.literal(true).optional(),
});

export const batchResultSchema = z.object({
  accepted: z.number().int(),
  replayed: z.number().int(),
  rejected: z.number().int(),
  results: z.array(
    z.union([
      acceptedSchema.extend({ index: z.number().int(), http_status: z.union([z.literal(202), z.literal(200)]) }),
      errorBodySchema.extend({ index: z.number().int(), http_status: z.number().int().min(400) }),
    ]),
  ),
});

export const taskPageSchema = z.object({
  // A list row: the task's view without result and history, as the index last saw it.
  items: z.array(
    taskViewSchema.omit({ result: true, history: true }).extend({
      status: z.enum(TASK_STATUSES).describe('as the index last saw it: GET the task for the current record'),
      cancel_requested: z.boolean().optional(),
      listed_at: iso.describe(
        'when the task entered the listed status (the order of the listing, newest first); for a delayed task, when it was submitted or last rescheduled',
      ),
    }),
  ),
  cursor: z.string().optional().describe('present when more may follow: pass it back with the same filters'),
});

const lastRunSchema = z.object({}).passthrough();

export const scheduleViewSchema = z.object({
  name: z.string(),
  owner: z.string(),
  source: z.enum(['code', 'api']),
  state: z.enum(['active', 'paused']),
  pause_note: z.string().optional(),
  paused_at: iso.optional(),
  spec: z.record(z.string(), z.unknown()),
  next_times: z.array(iso),
  next_fire_times: z.array(iso),
  jitter_offset_seconds: z.number(),
  buffered: z.string().optional(),
  fired: z.number().int(),
  missed: z.number().int(),
  last_run: lastRunSchema.optional(),
  recent_runs: z.array(z.object({}).passthrough()),
  created_at: iso,
  updated_at: iso,
  changed: z.boolean().optional().describe('PUT only: whether the definition changed'),
});

export const schedulePageSchema = z.object({
  items: z.array(
    z
      .object({
        name: z.string(),
        owner: z.string(),
        source: z.enum(['code', 'api']),
        state: z.enum(['active', 'paused']),
        type: z.string(),
        when: z.string(),
        timezone: z.string(),
        next_fire_time: iso.optional(),
      })
      .passthrough(),
  ),
  cursor: z.string().optional(),
});

/** The response schemas with a name of their own under `components.schemas`. */
const NAMED = new Map<z.ZodType, string>([
  [errorBodySchema, 'Error'],
  [gatewayErrorSchema, 'GatewayError'],
  [acceptedSchema, 'Accepted'],
  [taskViewSchema, 'Task'],
  [cancelResultSchema, 'CancelResult'],
  [batchResultSchema, 'BatchResult'],
  [taskPageSchema, 'TaskPage'],
  [scheduleViewSchema, 'Schedule'],
  [schedulePageSchema, 'SchedulePage'],
]);

/** Any JSON object: the replies of schedule actions whose shape is documented in the README. */
const objectSchema = z.object({}).passthrough();

/** A response header Kaj sends, by its name under `components.headers`. */
type HeaderName = 'Location' | 'Idempotent-Replayed' | 'Retry-After';

/** One documented response: its body schema (one, or any of several shapes), and the headers it carries. */
interface ResponseSpec {
  readonly schema: z.ZodType | readonly z.ZodType[];
  readonly description?: string;
  readonly headers?: readonly HeaderName[];
}

/** The response headers Kaj sets (`shared/service/api/http.ts`), each always present where declared. */
const HEADERS: Record<HeaderName, Record<string, unknown>> = {
  Location: {
    description: 'the path of the task: GET it to follow the task',
    required: true,
    schema: { type: 'string', pattern: '^/api/v1/tasks/' },
  },
  'Idempotent-Replayed': {
    description: 'the idempotency key was used before: this is the task it made, nothing new was submitted',
    required: true,
    schema: { type: 'string', const: 'true' },
  },
  'Retry-After': {
    description: 'seconds to wait before retrying (with the same idempotency key)',
    required: true,
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
};

/** An error response of Kaj's own; its description names the `error.code`s it may carry. */
const error = (description: string): ResponseSpec => ({ schema: errorBodySchema, description });

/** The responses of each route: status → body and headers (errors share the Error schema). */
export const ROUTE_RESPONSES: Record<TaskApiRoute['name'], Record<number, ResponseSpec>> = {
  submit: {
    202: { schema: acceptedSchema, description: 'submitted', headers: ['Location'] },
    200: {
      schema: acceptedSchema,
      description: 'a replay: the idempotency key made this task before',
      headers: ['Location', 'Idempotent-Replayed'],
    },
    409: error('idempotency_conflict: the key was used with another request'),
    413: error('payload_too_large'),
    422: error('validation_error or unknown_type, naming the field'),
  },
  submit_batch: {
    207: { schema: batchResultSchema, description: 'one result per item, in order' },
    413: error('payload_too_large'),
    422: error('validation_error: not a batch'),
  },
  list: {
    200: { schema: taskPageSchema },
    400: error('invalid_query (a bad parameter, named) or invalid_cursor (not a cursor of this listing)'),
  },
  get: { 200: { schema: taskViewSchema }, 404: error('not_found') },
  cancel: {
    200: { schema: cancelResultSchema, description: 'cancelled' },
    202: { schema: cancelResultSchema, description: 'running: the cancel is requested, its worker acts on it' },
    404: error('not_found'),
    409: error('not_cancellable: the task finished'),
  },
  schedule_list: {
    200: { schema: schedulePageSchema },
    400: error('invalid_cursor: not a cursor of this listing'),
    422: error('validation_error: limit'),
  },
  schedule_put: {
    201: { schema: scheduleViewSchema, description: 'created' },
    200: { schema: scheduleViewSchema, description: 'replaced (or unchanged: see changed)' },
    409: error('declared_in_code, name_taken (by another owner), or concurrent_change'),
    422: error(
      'validation_error, naming the field; schedule_limit_reached (the owner has as many schedules as the deployment allows), naming name',
    ),
  },
  schedule_get: { 200: { schema: scheduleViewSchema }, 404: error('not_found') },
  schedule_delete: {
    200: { schema: z.object({ name: z.string(), deleted: z.literal(true) }) },
    404: error('not_found'),
    409: error('declared_in_code, or concurrent_change'),
  },
  schedule_pause: {
    200: { schema: scheduleViewSchema },
    404: error('not_found'),
    409: error('declared_in_code, or concurrent_change'),
    422: error('validation_error: note (a string of at most 500 characters), or an unknown field'),
  },
  schedule_resume: {
    200: { schema: scheduleViewSchema },
    404: error('not_found'),
    409: error('declared_in_code, or concurrent_change'),
  },
  schedule_trigger: {
    202: { schema: objectSchema, description: 'a run was created' },
    200: { schema: objectSchema, description: 'the run of this second exists already (a replay)' },
    404: error('not_found'),
    409: error('declared_in_code'),
  },
  schedule_backfill: {
    202: { schema: objectSchema },
    404: error('not_found'),
    409: error('declared_in_code'),
    422: error('validation_error: the range'),
  },
  openapi: { 200: { schema: objectSchema } },
};

/**
 * Responses every route may give. 403 and 429 are API Gateway's alone (Kaj never sends them);
 * 500 is Kaj's, or API Gateway's when the function could not run.
 */
const COMMON_RESPONSES: Record<number, ResponseSpec> = {
  400: error('invalid_json (an empty or malformed body) or invalid_path (bad percent-encoding)'),
  403: {
    schema: gatewayErrorSchema,
    description: 'not signed, or the signature is refused: API Gateway answers (IAM auth), not Kaj',
  },
  415: error('unsupported_media_type: Content-Type is not application/json'),
  429: {
    schema: gatewayErrorSchema,
    description:
      "throttled by API Gateway (the stage's rate and burst limits), not Kaj: no Retry-After, back off and retry",
  },
  500: {
    schema: [errorBodySchema, gatewayErrorSchema],
    description:
      "internal: Kaj's internal error (nothing internal is shown), or API Gateway's when the function could not be invoked",
  },
  502: {
    schema: gatewayErrorSchema,
    description: 'the function failed (crashed, timed out): API Gateway answers, not Kaj',
  },
  503: {
    schema: errorBodySchema,
    description: 'unavailable: a dependency is unavailable; retry after Retry-After',
    headers: ['Retry-After'],
  },
};

/**
 * Where the API is served. A stack's URL is its `ApiUrl` output; a REST API (`api: 'rest'`)
 * serves under its stage (`infra/constructs/api.ts`, `REST_STAGE_NAME`).
 */
export const SERVERS: readonly Record<string, unknown>[] = [
  {
    url: 'https://{apiId}.execute-api.{region}.amazonaws.com',
    description: "a deployed stack, HTTP API (the default): the stack's ApiUrl output",
    variables: {
      apiId: { default: 'abcdef1234', description: "the API's id (in the ApiUrl output)" },
      region: { default: 'us-east-1', description: "the stack's region" },
    },
  },
  {
    url: 'https://{apiId}.execute-api.{region}.amazonaws.com/prod',
    description: "a deployed stack with api: 'rest' (REST API, stage prod): the stack's ApiUrl output",
    variables: {
      apiId: { default: 'abcdef1234', description: "the API's id (in the ApiUrl output)" },
      region: { default: 'us-east-1', description: "the stack's region" },
    },
  },
  {
    url: 'http://127.0.0.1:{port}',
    description: 'npm start on this machine (no auth; requests must name 127.0.0.1, localhost or [::1] as Host)',
    variables: { port: { default: '3000', description: 'npm start -- --port N' } },
  },
];

const REQUEST_BODIES: Partial<Record<TaskApiRoute['name'], string>> = {
  submit: 'SubmitRequest',
  submit_batch: 'BatchRequest',
  schedule_put: 'ScheduleRequest',
};

const SUMMARIES: Record<TaskApiRoute['name'], string> = {
  submit: 'Submit a task',
  submit_batch: `Submit up to ${MAX_BATCH_TASKS} tasks; one result per item, in order`,
  list: 'List your tasks of one status (retrying, failed, cancelled, running past a heartbeat), newest first',
  get: 'Read a task',
  cancel: 'Cancel a task',
  schedule_list: 'List schedules (paged)',
  schedule_put: 'Create or replace a schedule',
  schedule_get: 'Read a schedule',
  schedule_delete: 'Delete a schedule',
  schedule_pause: 'Pause a schedule',
  schedule_resume: 'Resume a schedule',
  schedule_trigger: 'Run a schedule now',
  schedule_backfill: 'Create the runs of a past time range',
  openapi: 'This document',
};

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
                'a listed status (newest first), or delayed: queued tasks waiting in the table, soonest run first; queued tasks in SQS are counted by queue depth, succeeded ones are not listed (README, "Listing tasks")',
            },
            { name: 'type', in: 'query', schema: { type: 'string', maxLength: 64 } },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 } },
            { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'opaque, from the previous page' },
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
