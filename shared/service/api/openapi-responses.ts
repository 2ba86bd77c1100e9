/**
 * What the OpenAPI document (`./openapi.ts`) says of each route beyond its request: the responses
 * with their headers, the servers, the request body's schema name and a one-line summary.
 *
 * @module
 */
import * as z from 'zod';
import { MAX_BATCH_TASKS } from '../../task/submit.js';
import {
  acceptedSchema,
  batchResultSchema,
  cancelResultSchema,
  errorBodySchema,
  gatewayErrorSchema,
  pipelineBackfillSchema,
  pipelineListSchema,
  pipelineRunSchema,
  pipelineRunsSchema,
  pipelineSchema,
  schedulePageSchema,
  scheduleViewSchema,
  signalResultSchema,
  taskPageSchema,
  taskViewSchema,
} from './openapi-schemas.js';
import type { TaskApiRoute } from './routes.js';

/** Any JSON object: the replies of schedule actions whose shape is documented in docs/schedules.md. */
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
export const HEADERS: Record<HeaderName, Record<string, unknown>> = {
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
  signal: {
    202: { schema: signalResultSchema, description: 'recorded; the run is woken if it waits' },
    400: error('validation_error naming name, or invalid_json'),
    404: error('not_found'),
    409: error(
      'not_a_workflow, run_finished, signal_already_received (one signal per name and run) or signal_wait_ended (its wait timed out first)',
    ),
    413: error('payload_too_large'),
    422: error('validation_error naming the body field'),
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
  pipeline_list: { 200: { schema: pipelineListSchema } },
  pipeline_get: { 200: { schema: pipelineSchema }, 404: error('not_found: no such pipeline') },
  pipeline_runs: {
    200: { schema: pipelineRunsSchema, description: 'the runs of the dates from..to that exist, newest first' },
    404: error('not_found: no such pipeline'),
    422: error('validation_error naming from or to (a bad date, a range over the maximum)'),
  },
  pipeline_trigger: {
    201: { schema: pipelineRunSchema, description: 'the run of that logical date was created' },
    200: { schema: pipelineRunSchema, description: 'the run of that logical date exists: it is returned, nothing new' },
    404: error('not_found: no such pipeline'),
    422: error('validation_error naming logical_date'),
  },
  pipeline_backfill: {
    202: { schema: pipelineBackfillSchema, description: 'done as planned: runs created or cleared' },
    200: { schema: pipelineBackfillSchema, description: 'dry_run: what would be done; nothing changed' },
    404: error('not_found: no such pipeline'),
    422: error('validation_error naming from, to, reprocess or max_active_runs'),
  },
  pipeline_run: {
    200: { schema: pipelineRunSchema },
    404: error('not_found'),
    422: error('validation_error: logical_date'),
  },
  pipeline_run_cancel: {
    200: { schema: pipelineRunSchema, description: 'cancelled (its nodes with it)' },
    404: error('not_found'),
    409: error('not_cancellable: the run has ended'),
    422: error('validation_error: logical_date'),
  },
  pipeline_run_clear: {
    202: { schema: pipelineRunSchema, description: 'the run is reopened: the cleared nodes run again' },
    404: error('not_found'),
    409: error('run_active (it has not ended), run_expired (older than maxRunDays) or nothing_to_clear'),
    422: error('validation_error naming nodes or logical_date'),
  },
  openapi: { 200: { schema: objectSchema } },
};

/**
 * Responses every route may give. 403 and 429 are API Gateway's alone (Kaj never sends them);
 * 500 is Kaj's, or API Gateway's when the function could not run.
 */
export const COMMON_RESPONSES: Record<number, ResponseSpec> = {
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

export const REQUEST_BODIES: Partial<Record<TaskApiRoute['name'], string>> = {
  submit: 'SubmitRequest',
  submit_batch: 'BatchRequest',
  schedule_put: 'ScheduleRequest',
  pipeline_trigger: 'PipelineRunRequest',
  pipeline_backfill: 'BackfillRequest',
  pipeline_run_clear: 'ClearRequest',
};

export const SUMMARIES: Record<TaskApiRoute['name'], string> = {
  submit: 'Submit a task',
  submit_batch: `Submit up to ${MAX_BATCH_TASKS} tasks; one result per item, in order`,
  list: 'List your tasks of one status (retrying, failed, cancelled, running past a heartbeat), newest first',
  get: 'Read a task',
  cancel: 'Cancel a task',
  signal: 'Send a signal to a workflow run (any JSON body ≤ 32 KiB, or none)',
  schedule_list: 'List schedules (paged)',
  schedule_put: 'Create or replace a schedule',
  schedule_get: 'Read a schedule',
  schedule_delete: 'Delete a schedule',
  schedule_pause: 'Pause a schedule',
  schedule_resume: 'Resume a schedule',
  schedule_trigger: 'Run a schedule now',
  schedule_backfill: 'Create the runs of a past time range',
  pipeline_list: "List the deployment's pipelines",
  pipeline_get: 'Read a pipeline: its schedule and graph',
  pipeline_runs: 'List the runs of a date range (default: the last 14 days), newest first',
  pipeline_trigger: 'Start the run of a logical date (one run per date: an existing one is returned)',
  pipeline_backfill: 'Create (or clear) the runs of a past date range; dry_run lists them',
  pipeline_run: 'Read a run: its state and each node’s',
  pipeline_run_cancel: 'Cancel a run and its nodes',
  pipeline_run_clear: 'Run nodes of an ended run again (with their downstream), or its failed nodes',
  openapi: 'This document',
};
