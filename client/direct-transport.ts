/**
 * The direct transport: each request of the task API answered in the caller's own process, by
 * the API's own code — the submitter, the lifecycle and the API's error mapping (`problemOf`) —
 * with the caller's IAM role instead of API Gateway and the API function. `KajClient` above it is
 * the HTTP client's, so bodies, retries, idempotency keys, results and errors are the same.
 *
 * @module
 */
import { accepted, checkBodySize, decodePathSegment, problemOf } from '../shared/service/api/http.js';
import { DEFAULTS } from '../shared/config/resources.js';
import { matchRoute } from '../shared/service/api/routes.js';
import { silentLogger, type Logger } from '../shared/runtime/logger.js';
import { TaskNotFoundError } from '../shared/task/errors.js';
import type { TaskLifecycle } from '../shared/task/lifecycle.js';
import { TASK_ID_PATTERN, toView } from '../shared/task/model.js';
import { type Caller, submitBatchRequestSchema, type TaskSubmitter, validationErrorOf } from '../shared/task/submit.js';
import { KajClientError, KajNotSupportedError, KajUnreachableError } from './errors.js';
import type { KajAnswer, KajTransport } from './transport.js';

/** What answers a direct producer's requests (`createProducer`, or `createKaj` in tests). */
export interface DirectServices {
  readonly submitter: TaskSubmitter;
  readonly lifecycle: TaskLifecycle;
}

export interface DirectTransportOptions {
  /** The owner of every task submitted: what the API records for this caller. Asked once. */
  readonly owner: () => Promise<string>;
  /** The services, built once (they need the id secret). */
  readonly services: () => Promise<DirectServices>;
  /** Where the API's error mapping logs (dependency unavailable, unexpected errors). @default silent */
  readonly logger?: Logger;
}

/** The routes direct mode answers; the schedules (and the OpenAPI document) are the API's only. */
const DIRECT_ROUTES = new Set(['submit', 'submit_batch', 'get', 'cancel']);

export class DirectTransport implements KajTransport {
  readonly mode = 'direct';
  private readonly owner: () => Promise<string>;
  private readonly services: () => Promise<DirectServices>;
  private readonly logger: Logger;

  constructor(o: DirectTransportOptions) {
    this.owner = once(o.owner);
    this.services = once(o.services);
    this.logger = o.logger ?? silentLogger;
  }

  async request(method: string, path: string, body?: unknown): Promise<KajAnswer> {
    const match = matchRoute(method, path);
    const name = match.kind === 'route' ? match.route.name : undefined;
    if (name === undefined || !DIRECT_ROUTES.has(name)) {
      throw new KajNotSupportedError(
        name?.startsWith('schedule_') === true
          ? 'schedules are not available in direct mode: manage them through the API (new KajClient({ url }))'
          : `${method} ${path} is not available in direct mode: use the API (new KajClient({ url }))`,
      );
    }
    const [owner, services] = await Promise.all([this.owner(), this.services()]);
    const caller: Caller = { owner };
    // The JSON the API would have parsed: what a payload holds that JSON does not (a Date, an
    // undefined member) is what it would be over HTTP; its size is held to the API's limits.
    const text = body === undefined ? undefined : JSON.stringify(body);
    const json: unknown = text === undefined ? undefined : JSON.parse(text);
    try {
      if (text !== undefined)
        checkBodySize(text, name === 'submit_batch' ? DEFAULTS.maxBatchRequestBytes : DEFAULTS.maxRequestBytes);
      const id = match.kind === 'route' && match.params.id !== undefined ? decodePathSegment(match.params.id) : '';
      switch (name) {
        case 'submit': {
          const { record, replayed } = await services.submitter.submit(json, caller);
          return { status: replayed ? 200 : 202, body: accepted(record) };
        }
        case 'submit_batch':
          return { status: 207, body: await this.submitBatch(services, json, caller, path) };
        case 'get':
          if (!TASK_ID_PATTERN.test(id)) throw new TaskNotFoundError(id);
          return { status: 200, body: toView(await services.lifecycle.requests.find(id, caller.owner)) };
        default: {
          if (!TASK_ID_PATTERN.test(id)) throw new TaskNotFoundError(id);
          const r = await services.lifecycle.requests.cancel(id, caller.owner);
          return r.status === 'running'
            ? { status: 202, body: { task_id: r.task_id, status: r.status, cancel_requested: true } }
            : { status: 200, body: { task_id: r.task_id, status: r.status } };
        }
      }
    } catch (err) {
      const p = this.problem(err, { method, path });
      const after = Number(p.headers?.['retry-after']);
      return {
        status: p.status,
        body: { error: p.error },
        ...(Number.isFinite(after) && after > 0 ? { retryAfterSeconds: after } : {}),
        cause: err,
      };
    }
  }

  /** `POST /api/v1/tasks/batch`, answered as the API answers it (`207`, one result per item). */
  private async submitBatch(services: DirectServices, json: unknown, caller: Caller, path: string) {
    const parsed = submitBatchRequestSchema.safeParse(json);
    if (!parsed.success) throw validationErrorOf(parsed.error);
    const results = await services.submitter.submitMany(parsed.data.tasks, caller);
    const items = results.map((r, index) => {
      if (r.kind === 'accepted') return { index, http_status: r.replayed ? 200 : 202, ...accepted(r.record) };
      const p = this.problem(r.error, { method: 'POST', path, item: index });
      return { index, http_status: p.status, error: p.error };
    });
    const count = (f: (s: number) => boolean) => items.filter((i) => f(i.http_status)).length;
    return {
      accepted: count((s) => s === 202),
      replayed: count((s) => s === 200),
      rejected: count((s) => s >= 400),
      results: items,
    };
  }

  /**
   * The API's answer to an error (`problemOf`: the same status, code and field). A 5xx also says
   * what failed: the API keeps internals from its callers, but here the caller is the process
   * whose role was refused or whose request failed (`AccessDeniedException`, a timeout).
   */
  private problem(err: unknown, fields: Record<string, unknown>) {
    const p = problemOf(err, this.logger, fields);
    if (p.status < 500 || !(err instanceof Error)) return p;
    const cause = err.cause instanceof Error && err.cause.message !== '' ? `: ${err.cause.message}` : '';
    return { ...p, error: { ...p.error, message: `${p.error.message} (${err.message}${cause})` } };
  }
}

/** `f` asked once and its promise shared; a failure is not kept, so the next request asks again. */
function once<T>(f: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    if (pending === undefined) {
      const p = f();
      pending = p;
      p.catch(() => {
        if (pending === p) pending = undefined;
      });
    }
    return pending;
  };
}

/**
 * What a failed AWS call at set-up (reading the caller's identity, the id secret) becomes: a
 * refusal (`AccessDeniedException`, `ResourceNotFoundException`: `$fault` client, not throttling)
 * never succeeds on a retry, so is a KajClientError; anything else (network, 5xx, throttling
 * after the SDK's retries) a KajUnreachableError, which the client retries.
 */
export function setupError(what: string, err: unknown): KajClientError {
  const e = err as { name?: unknown; message?: unknown; $fault?: unknown; $retryable?: unknown };
  const detail = `${what}: ${String(e?.name ?? 'Error')}: ${String(e?.message ?? err)}`;
  const refused = e?.$fault === 'client' && e.$retryable === undefined;
  return refused ? new KajClientError(detail, { cause: err }) : new KajUnreachableError(detail, { cause: err });
}
