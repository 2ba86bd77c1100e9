import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { DEFAULTS } from '../../config/resources.js';
import { QueueUnavailableError } from '../../task/queue-errors.js';
import type { Logger } from '../../runtime/logger.js';
import { StoreUnavailableError } from '../../task/store-errors.js';
import {
  IdempotencyConflictError,
  InvalidCursorError,
  PayloadTooLargeError,
  TaskNotCancellableError,
  TaskNotFoundError,
  UnknownTaskTypeError,
  ValidationError,
} from '../../task/errors.js';
import type { TaskLifecycle } from '../../task/lifecycle.js';
import { TASK_ID_PATTERN, toView, type TaskRecord } from '../../task/model.js';
import { type Caller, submitBatchRequestSchema, type TaskSubmitter, validationErrorOf } from '../../task/submit.js';
import { ScheduleConflictError, ScheduleNotFoundError, ScheduleValidationError } from '../../schedule/errors.js';
import type { ScheduleService } from '../../schedule/service.js';
import type { TaskRegistry } from '../../task/define.js';
import { HttpError } from './errors.js';
import { listRoute } from './listing.js';
import type { TaskListing } from '../../task/listing.js';
import { openApiDocument } from './openapi.js';
import { matchRoute } from './routes.js';
import { scheduleRoute } from './schedules.js';
import { signalRoute, type SignalDeps } from './signals.js';
import { pipelineRoute } from './pipelines.js';
import type { PipelineService } from '../../pipeline/service.js';
import {
  PipelineRequestError,
  PipelineRunConflictError,
  PipelineRunNotFoundError,
  UnknownPipelineError,
} from '../../pipeline/errors.js';
import { isWorkflowType } from '../../workflow/define.js';
import { type HistoryStore, historyRetentionDays } from '../../workflow/history-store.js';
import { stepsView, waitingFor } from '../../workflow/view.js';

export interface ApiDeps {
  readonly submitter: TaskSubmitter;
  /** The deployment's task types: `GET /api/v1/openapi.json` documents their payloads. */
  readonly registry: TaskRegistry;
  /** Schedule management (`/api/v1/schedules…`); absent where the deployment has no schedules table. */
  readonly schedules?: ScheduleService;
  readonly lifecycle: TaskLifecycle;
  /** `GET /api/v1/tasks?status=…`; absent where the store has no listing index (the route answers 404). */
  readonly listing?: TaskListing;
  readonly logger: Logger;
  /** The owner of requests that carry no IAM identity: the local identity, or `anonymous` with auth off. */
  readonly defaultOwner: string;
  /** Workflow histories: `GET` of a run shows its steps. Absent where the deployment has no workflows. */
  readonly history?: HistoryStore;
  /** @default Date.now */
  readonly now?: () => number;
  /** How long a signal's history entry is kept (its TTL), in days. @default DEFAULTS.historyRetentionDays */
  readonly historyRetentionDays?: number;
  /** Pipelines (`/api/v1/pipelines…`); absent where the deployment has no history table. */
  readonly pipelines?: PipelineService;
}

export type HttpResult = APIGatewayProxyStructuredResultV2 & {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
};

/** How long a client should wait before retrying after a 503. */
const RETRY_AFTER_SECONDS = '1';

/**
 * The task API over API Gateway HTTP API (payload format 2.0) events. The local runtime
 * builds the same events from plain HTTP requests, so this is the only API code path.
 */
export async function handleHttp(event: APIGatewayProxyEventV2, d: ApiDeps): Promise<HttpResult> {
  const method = event.requestContext.http.method.toUpperCase();
  const path = event.rawPath;
  try {
    const caller: Caller = { owner: ownerOf(event, d.defaultOwner) };
    const match = matchRoute(method, path);
    if (match.kind === 'not_found') throw new HttpError(404, 'not_found', `no route for ${method} ${path}`);
    // Before the method check: a malformed path is a 400 whatever the method.
    const id = match.params.id === undefined ? '' : decodePathSegment(match.params.id);
    const name = match.params.name === undefined ? '' : decodePathSegment(match.params.name);
    if (match.kind === 'method_not_allowed') throw methodNotAllowed(match.allow);
    switch (match.route.name) {
      case 'submit':
        return await submit(event, d, caller);
      case 'submit_batch':
        return await submitBatch(event, d, caller);
      case 'openapi':
        return json(200, documentOf(d));
      case 'list':
        return json(200, await listRoute(event, d.listing, caller));
      case 'get':
        return json(200, await taskView(await find(d.lifecycle, id, caller), d));
      case 'cancel':
        return await cancel(id, d, caller);
      case 'signal': {
        const body = event.body === undefined || event.body === '' ? null : jsonBody(event);
        const r = await signalRoute(id, name, body, signalDeps(d), caller.owner);
        return json(r.status, r.body);
      }
      case 'pipeline_list':
      case 'pipeline_get':
      case 'pipeline_runs':
      case 'pipeline_trigger':
      case 'pipeline_backfill':
      case 'pipeline_run':
      case 'pipeline_run_cancel':
      case 'pipeline_run_clear': {
        const withBody = ['pipeline_trigger', 'pipeline_backfill', 'pipeline_run_clear'].includes(match.route.name);
        const logicalDate = match.params.logical_date === undefined ? '' : decodePathSegment(match.params.logical_date);
        const r = await pipelineRoute(
          match.route.name,
          { name, logicalDate },
          event,
          withBody ? optionalJsonObjectBody(event) : undefined,
          d.pipelines,
          caller,
        );
        return json(r.status, r.body);
      }
      case 'schedule_put':
      case 'schedule_pause':
      case 'schedule_backfill': {
        const body = match.route.name === 'schedule_put' ? jsonObjectBody(event) : optionalJsonObjectBody(event);
        const r = await scheduleRoute(match.route.name, name, event, body, d.schedules, caller);
        return json(r.status, r.body);
      }
      default: {
        const r = await scheduleRoute(match.route.name, name, event, undefined, d.schedules, caller);
        return json(r.status, r.body);
      }
    }
  } catch (err) {
    return errorResponse(err, d.logger, { method, path });
  }
}

/**
 * The caller's identity as API Gateway's IAM authorizer verified it. An assumed-role session
 * (`arn:aws:sts::1:assumed-role/Role/session-123`) is owned by its role, so every session of
 * one role (every Lambda instance of a producer) sees the same tasks.
 */
export function ownerOf(event: APIGatewayProxyEventV2, defaultOwner: string): string {
  const iam = (event.requestContext as { authorizer?: { iam?: { userArn?: unknown } } }).authorizer?.iam;
  const arn = typeof iam?.userArn === 'string' && iam.userArn !== '' ? iam.userArn : undefined;
  if (arn === undefined) return defaultOwner;
  const session = /^(arn:[^:]+:sts::\d+:assumed-role\/[^/]+)\/.+$/.exec(arn);
  return session?.[1] ?? arn;
}

async function submit(event: APIGatewayProxyEventV2, d: ApiDeps, caller: Caller): Promise<HttpResult> {
  const body = jsonObjectBody(event);
  const { record, replayed } = await d.submitter.submit(body, caller);
  const headers: Record<string, string> = { location: `/api/v1/tasks/${record.task_id}` };
  if (replayed) headers['idempotent-replayed'] = 'true';
  return json(replayed ? 200 : 202, accepted(record), headers);
}

/**
 * `POST /api/v1/tasks/batch`: `207` with one result per item, in request order — each the HTTP
 * status (`http_status`) and body a single submit of that item would have had (`202`, `200` replay, `409`, `413`,
 * `422`, `503`). The request itself fails (`400`/`413`/`415`/`422`) only when it is not a batch.
 */
async function submitBatch(event: APIGatewayProxyEventV2, d: ApiDeps, caller: Caller): Promise<HttpResult> {
  const parsed = submitBatchRequestSchema.safeParse(jsonObjectBody(event, DEFAULTS.maxBatchRequestBytes));
  if (!parsed.success) throw validationErrorOf(parsed.error);
  const results = await d.submitter.submitMany(parsed.data.tasks, caller);
  const items = results.map((r, index) => {
    if (r.kind === 'accepted') return { index, http_status: r.replayed ? 200 : 202, ...accepted(r.record) };
    const p = problemOf(r.error, d.logger, { method: 'POST', path: event.rawPath, item: index });
    return { index, http_status: p.status, error: p.error };
  });
  const count = (f: (s: number) => boolean) => items.filter((i) => f(i.http_status)).length;
  return json(207, {
    accepted: count((s) => s === 202),
    replayed: count((s) => s === 200),
    rejected: count((s) => s >= 400),
    results: items,
  });
}

const documents = new WeakMap<TaskRegistry, Record<string, unknown>>();

/** The OpenAPI document of the deployment, built once per registry. */
function documentOf(d: ApiDeps): Record<string, unknown> {
  let doc = documents.get(d.registry);
  if (doc === undefined) {
    doc = openApiDocument(d.registry, { schedules: d.schedules !== undefined });
    documents.set(d.registry, doc);
  }
  return doc;
}

/** A body that may be absent (an action without options): `undefined` then; else a JSON object. */
function optionalJsonObjectBody(event: APIGatewayProxyEventV2): Record<string, unknown> | undefined {
  if (event.body === undefined || event.body === '') return undefined;
  return jsonObjectBody(event);
}

/**
 * The request's body as every route with a body takes it: a JSON object (what {@link jsonBody}
 * refuses, and 422 naming `body` for JSON that is not an object: `null`, a list, a string).
 */
function jsonObjectBody(
  event: APIGatewayProxyEventV2,
  maxBytes: number = DEFAULTS.maxRequestBytes,
): Record<string, unknown> {
  const body = jsonBody(event, maxBytes);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError('body', `body: must be a JSON object, got ${jsonKind(body)}`);
  }
  return body as Record<string, unknown>;
}

/** What a JSON value is, for messages: `null`, `a list`, `a string`… */
function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}

/**
 * The limit on a request body's size (UTF-8 bytes): a submit's, a batch's. The direct transport
 * checks a producer's body against the same limits, so what a direct producer may send is what
 * the API would take.
 */
export function checkBodySize(raw: string, maxBytes: number): void {
  const bytes = Buffer.byteLength(raw);
  if (bytes > maxBytes) {
    throw new PayloadTooLargeError('body', `request body of ${bytes} bytes exceeds the limit of ${maxBytes}`);
  }
}

/** The request's JSON body: 415 unless JSON, 413 above `maxBytes`, 400 when empty or malformed. */
function jsonBody(event: APIGatewayProxyEventV2, maxBytes: number = DEFAULTS.maxRequestBytes): unknown {
  const contentType = header(event, 'content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(contentType)) {
    throw new HttpError(415, 'unsupported_media_type', 'Content-Type must be application/json');
  }
  const raw =
    event.body === undefined
      ? ''
      : event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body;
  checkBodySize(raw, maxBytes);
  if (raw.trim() === '') throw new HttpError(400, 'invalid_json', 'request body is empty; send a JSON object');
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new HttpError(400, 'invalid_json', 'request body is not valid JSON');
  }
}

async function cancel(id: string, d: ApiDeps, caller: Caller): Promise<HttpResult> {
  if (!TASK_ID_PATTERN.test(id)) throw new TaskNotFoundError(id);
  const r = await d.lifecycle.requests.cancel(id, caller.owner);
  if (r.status === 'running') {
    // The worker sees the request at its next heartbeat and aborts the handler.
    return json(202, { task_id: r.task_id, status: r.status, cancel_requested: true });
  }
  return json(200, { task_id: r.task_id, status: r.status });
}

async function find(lifecycle: TaskLifecycle, id: string, caller: Caller): Promise<TaskRecord> {
  if (!TASK_ID_PATTERN.test(id)) throw new TaskNotFoundError(id);
  return lifecycle.requests.find(id, caller.owner);
}

/** The body of an accepted submit (`202`/`200`, and each accepted batch item). */
export function accepted(r: TaskRecord) {
  return { task_id: r.task_id, status: r.status, priority: r.priority, run_at: r.run_at, created_at: r.created_at };
}

/** A malformed escape (`%ff`, `%`) is the client's mistake: 400, not the URIError's 500. */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'invalid_path', 'the path is not valid percent-encoded UTF-8');
  }
}

function methodNotAllowed(allow: string): HttpError {
  return new HttpError(405, 'method_not_allowed', `allowed methods: ${allow}`, { allow });
}

function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  for (const [k, v] of Object.entries(event.headers ?? {})) if (k.toLowerCase() === name) return v;
  return undefined;
}

function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): HttpResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

/** An error as the API answers it: status, the `error` body, and headers. */
export interface Problem {
  readonly status: number;
  readonly error: { readonly code: string; readonly message: string; readonly field?: string };
  readonly headers?: Record<string, string>;
}

function problemWith(
  status: number,
  code: string,
  message: string,
  field?: string,
  headers?: Record<string, string>,
): Problem {
  return {
    status,
    error: field === undefined ? { code, message } : { code, message, field },
    ...(headers === undefined ? {} : { headers }),
  };
}

/**
 * Maps domain errors to what the API answers (the whole response, or one item of a batch).
 * Anything unexpected is a 500 with no internals leaked.
 */
export function problemOf(err: unknown, logger: Logger, fields: Record<string, unknown> = {}): Problem {
  if (err instanceof HttpError) {
    return problemWith(err.status, err.code, err.message, err.field, err.allow ? { allow: err.allow } : undefined);
  }
  if (err instanceof InvalidCursorError) return problemWith(400, 'invalid_cursor', err.message, err.field);
  if (err instanceof PayloadTooLargeError) return problemWith(413, 'payload_too_large', err.message, err.field);
  if (err instanceof ValidationError) return problemWith(422, 'validation_error', err.message, err.field);
  if (err instanceof UnknownTaskTypeError) return problemWith(422, 'unknown_type', err.message, 'type');
  if (err instanceof IdempotencyConflictError)
    return problemWith(409, 'idempotency_conflict', err.message, 'idempotency_key');
  if (err instanceof TaskNotFoundError) return problemWith(404, 'not_found', err.message);
  if (err instanceof TaskNotCancellableError) return problemWith(409, 'not_cancellable', err.message);
  if (err instanceof ScheduleValidationError) return problemWith(422, err.code, err.message, err.field);
  if (err instanceof ScheduleNotFoundError) return problemWith(404, 'not_found', err.message);
  if (err instanceof ScheduleConflictError) return problemWith(409, err.reason, err.message);
  if (err instanceof PipelineRequestError) return problemWith(422, 'validation_error', err.message, err.field);
  if (err instanceof UnknownPipelineError || err instanceof PipelineRunNotFoundError) {
    return problemWith(404, 'not_found', err.message);
  }
  if (err instanceof PipelineRunConflictError) return problemWith(409, err.reason, err.message);
  if (err instanceof StoreUnavailableError || err instanceof QueueUnavailableError) {
    logger.warn('dependency unavailable', { ...fields, error: err.message, task_id: err.taskId });
    return problemWith(503, 'unavailable', 'a dependency is unavailable; retry later', undefined, {
      'retry-after': RETRY_AFTER_SECONDS,
    });
  }
  logger.error('unexpected error', {
    ...fields,
    error: err instanceof Error ? (err.stack ?? err.message) : String(err),
  });
  return problemWith(500, 'internal', 'internal error');
}

/** {@link problemOf} as the whole response. */
export function errorResponse(err: unknown, logger: Logger, fields: Record<string, unknown> = {}): HttpResult {
  const p = problemOf(err, logger, fields);
  return json(p.status, { error: p.error }, p.headers);
}

/** A task as GET shows it; a workflow run with its steps (one Query of its history). */
async function taskView(record: TaskRecord, d: ApiDeps): Promise<Record<string, unknown>> {
  const view: Record<string, unknown> = { ...toView(record) };
  if (d.history === undefined || !isWorkflowType(d.registry, record.type)) return view;
  const entries = await d.history.read(record.task_id);
  view.steps = stepsView(entries, (d.now ?? Date.now)());
  if (record.status === 'waiting') view.waiting_for = waitingFor(entries, record.run_at);
  return view;
}

function signalDeps(d: ApiDeps): SignalDeps {
  return {
    lifecycle: d.lifecycle,
    registry: d.registry,
    ...(d.history === undefined ? {} : { history: d.history }),
    now: d.now ?? Date.now,
    historyRetentionDays:
      d.historyRetentionDays ?? historyRetentionDays({ retentionDays: DEFAULTS.retentionDays }, d.registry),
  };
}
