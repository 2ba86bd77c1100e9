/**
 * The console as one request handler, independent of the HTTP server it runs in (`npm start`'s
 * or `kaj ui`'s): request in, page out. Guards every request (Host), every action (origin,
 * token, read-only), and turns bad input into a 400 page naming the field.
 *
 * @module
 */
import { ScheduleNotFoundError, ScheduleValidationError } from '../shared/schedule/errors.js';
import { HttpError } from '../shared/service/api/errors.js';
import type { Clock } from '../shared/runtime/clock.js';
import type { Logger } from '../shared/runtime/logger.js';
import { TaskNotCancellableError, TaskNotFoundError, ValidationError } from '../shared/task/errors.js';
import type { TaskRecord } from '../shared/task/model.js';
import { MAX_REASON_LENGTH, type Operator } from '../shared/task/operations.js';
import { assets } from './assets.js';
import { ActionRefusedError, BadParameterError, ForeignHostError, PageNotFoundError } from './errors.js';
import type { Html } from './html.js';
import { JobBoard } from './jobs.js';
import type { Flash, PageContext } from './layout.js';
import type { ConsoleBackend, TaskQuery } from './model.js';
import {
  confirmPage,
  deadLettersPage,
  errorPage,
  groupDeadLetters,
  jobLive,
  jobPage,
  overviewLive,
  overviewPage,
  schedulePage,
  schedulesPage,
  taskPage,
  tasksPage,
} from './pages.js';
import * as P from './params.js';
import { type PipelineAnswer, type PipelineConsole, pipelineGet, pipelinePost } from './pipeline-routes.js';
import { checkAction, checkHost } from './security.js';
import { type RunView, runView, type SignalDraft } from './workflow.js';

export interface ConsoleRequest {
  readonly method: string;
  /** The path, percent-decoded per segment by the router. */
  readonly path: string;
  readonly query: P.Params;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The urlencoded body of a POST. */
  readonly form: P.Params;
}

export interface ConsoleResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Buffer;
}

export interface ConsoleOptions {
  readonly backend: ConsoleBackend;
  /** The per-start token (security.ts `newToken`). */
  readonly token: string;
  /** The port the console is served on (its own Host and Origin). */
  readonly port: () => number;
  readonly actionsAllowed: boolean;
  /** Who acts, for audit entries (the OS user, as for `kaj`). */
  readonly actor: string;
  readonly clock: Clock;
  readonly newId: () => string;
  readonly logger?: Logger;
  readonly pipelines?: PipelineConsole;
}

/** DLQ messages a dead-letters page reads at most. */
export const DEAD_LETTER_READ_LIMIT = 1_000;

const MESSAGES: Readonly<Record<string, Flash>> = {
  cancelled: { kind: 'ok', text: 'Cancelled.' },
  cancel_requested: { kind: 'ok', text: 'Cancel requested: the worker stops the task at its next heartbeat.' },
  redriven: { kind: 'ok', text: 'Redriven: the task is queued again.' },
  paused: { kind: 'ok', text: 'Paused.' },
  resumed: { kind: 'ok', text: 'Resumed.' },
  triggered: { kind: 'ok', text: 'Triggered: a run was created now.' },
  signalled: { kind: 'ok', text: "Signal sent: recorded in the run's history; the run reads it when it waits for it." },
  signalled_woken: { kind: 'ok', text: "Signal sent: recorded in the run's history, and the run is woken." },
};

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

export class ConsoleApp {
  readonly jobs: JobBoard;

  constructor(private readonly o: ConsoleOptions) {
    this.jobs = new JobBoard(o.clock, o.newId);
  }

  async handle(req: ConsoleRequest): Promise<ConsoleResponse> {
    try {
      checkHost(req.headers.host, this.o.port());
    } catch (err) {
      if (err instanceof ForeignHostError) return text(421, err.message);
      throw err;
    }
    const ctx = await this.context();
    try {
      if (req.method === 'GET' || req.method === 'HEAD') return await this.get(ctx, req);
      if (req.method === 'POST') {
        if (!this.o.actionsAllowed) {
          throw new ActionRefusedError(
            'refused: this console is read-only. Start it with `kaj ui --allow-actions` to cancel, redrive, purge, change schedules, signal workflow runs, or trigger and clear pipeline runs.',
          );
        }
        checkAction(req, { token: this.o.token, port: this.o.port() });
        return await this.post(ctx, req);
      }
      return {
        ...page(405, errorPage(ctx, 'Method not allowed', `${req.method} is not served here.`)),
        headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', allow: 'GET, POST' },
      };
    } catch (err) {
      return this.failure(ctx, err);
    }
  }

  private async context(): Promise<PageContext> {
    return {
      label: this.o.backend.label,
      token: this.o.token,
      actionsAllowed: this.o.actionsAllowed,
      schedules: this.o.backend.schedules !== undefined,
      pipelines: this.o.pipelines !== undefined,
      now: this.o.clock.now(),
    };
  }

  private failure(ctx: PageContext, err: unknown): ConsoleResponse {
    if (err instanceof BadParameterError) return page(400, errorPage(ctx, 'Bad request', err.message));
    if (err instanceof ValidationError)
      return page(400, errorPage(ctx, 'Bad request', `${err.field}: ${err.message.replace(/^[a-z_]+: /, '')}`));
    if (err instanceof ScheduleValidationError)
      return page(400, errorPage(ctx, 'Bad request', `${err.field}: ${err.message}`));
    if (err instanceof ActionRefusedError) return page(403, errorPage(ctx, 'Forbidden', err.message));
    if (err instanceof PageNotFoundError || err instanceof ScheduleNotFoundError)
      return page(404, errorPage(ctx, 'Not found', err.message));
    this.o.logger?.error('console: request failed', {
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
    return page(
      500,
      errorPage(ctx, 'Something went wrong', err instanceof Error ? `${err.name}: ${err.message}` : String(err)),
    );
  }

  private async get(ctx: PageContext, req: ConsoleRequest): Promise<ConsoleResponse> {
    const b = this.o.backend;
    const parts = segments(req.path);
    const [a, x, y] = parts;
    if (a === 'assets' && x !== undefined && parts.length === 2) return asset(`/assets/${x}`);
    if (parts.length === 0) return page(200, overviewPage(ctx, await b.overview()));
    if (a === 'fragments' && x === 'overview' && parts.length === 2) return page(200, overviewLive(await b.overview()));
    if (a === 'fragments' && x === 'jobs' && y !== undefined && parts.length === 3)
      return page(200, jobLive(this.job(y)));
    if (a === 'tasks' && parts.length === 1) {
      const since = P.since(req.query);
      if (since !== undefined && req.query.status === 'delayed')
        throw new BadParameterError('since', 'not with status=delayed (its tasks are listed by when they run)');
      const type = P.taskType(req.query);
      const priority = P.priority(req.query);
      const cursor = P.optional(req.query, 'cursor', 2048);
      const q: TaskQuery = {
        status: P.status(req.query),
        limit: P.intInRange(req.query, 'limit', 1, 100, 50),
        ...(type === undefined ? {} : { type }),
        ...(priority === undefined ? {} : { priority }),
        ...(since === undefined ? {} : { since: ctx.now - P.SINCE_CHOICES[since] }),
        ...(cursor === undefined ? {} : { cursor }),
      };
      return page(200, tasksPage(ctx, q, since, await b.listTasks(q)));
    }
    if (a === 'tasks' && x !== undefined && parts.length === 2) {
      const id = P.taskId(x, 'task id');
      const r = await b.getTask(id);
      if (r === undefined)
        throw new PageNotFoundError(`task ${id} not found (never existed, or expired after its retention)`);
      return page(200, taskPage(ctx, r, flashOf(req.query), await this.run(ctx, r)));
    }
    if (a === 'dead-letters' && parts.length === 1) {
      const view = await b.deadLetters(DEAD_LETTER_READ_LIMIT);
      return page(200, deadLettersPage(ctx, view, groupDeadLetters(view.tasks)));
    }
    if (a === 'dead-letters' && x === 'confirm' && parts.length === 2) {
      const verb = P.required(req.query, 'verb');
      if (verb !== 'redrive' && verb !== 'purge')
        throw new BadParameterError('verb', `redrive or purge (got "${verb}")`);
      const id = P.required(req.query, 'group', 64);
      const view = await b.deadLetters(DEAD_LETTER_READ_LIMIT);
      const group = groupDeadLetters(view.tasks).find((g) => g.id === id);
      if (group === undefined || group.taskIds.length === 0)
        throw new PageNotFoundError(
          'that group of dead tasks is not in the DLQs any more (redriven, purged, or changed): read the dead letters again',
        );
      return page(200, confirmPage(ctx, verb, group));
    }
    if (a === 'jobs' && x !== undefined && parts.length === 2) return page(200, jobPage(ctx, this.job(x)));
    if (a === 'pipelines') return answer(req, await pipelineGet(ctx, this.o.pipelines, parts, req.query));
    if (a === 'schedules' && b.schedules !== undefined) {
      if (parts.length === 1) {
        const cursor = P.optional(req.query, 'cursor', 2048);
        return page(200, schedulesPage(ctx, await b.schedules.list(cursor), flashOf(req.query)));
      }
      if (x !== undefined && parts.length === 2) {
        return page(200, schedulePage(ctx, await b.schedules.get(P.scheduleName(x)), flashOf(req.query)));
      }
    }
    throw new PageNotFoundError(`no page at ${req.path}`);
  }

  private async post(ctx: PageContext, req: ConsoleRequest): Promise<ConsoleResponse> {
    const b = this.o.backend;
    const parts = segments(req.path);
    const [a, x, y] = parts;
    const reason = P.optional(req.form, 'reason', MAX_REASON_LENGTH);
    const operator: Operator = { actor: this.o.actor, ...(reason === undefined ? {} : { reason }) };
    if (a === 'tasks' && x !== undefined && parts.length === 3) {
      const id = P.taskId(x, 'task id');
      if (y === 'cancel') {
        try {
          const r = await b.cancelTask(id, { ...operator, reason: reason ?? 'cancelled from the console' });
          return redirect(req, `/tasks/${id}?msg=${r.requested ? 'cancel_requested' : 'cancelled'}`);
        } catch (err) {
          if (err instanceof TaskNotFoundError) throw new PageNotFoundError(err.message);
          if (!(err instanceof TaskNotCancellableError)) throw err;
          return this.taskWithFlash(ctx, id, 409, { kind: 'bad', text: `Not cancelled: ${err.message}` });
        }
      }
      if (y === 'signal') return this.signal(ctx, req, id);
      if (y === 'redrive') {
        const out = await b.redrive({ taskIds: [id] }, operator, () => {});
        const item = out.items.find((i) => i.task_id === id);
        if (out.done > 0) return redirect(req, `/tasks/${id}?msg=redriven`);
        return this.taskWithFlash(ctx, id, 409, {
          kind: 'bad',
          text: `Not redriven: ${item?.detail ?? 'nothing to redrive'}`,
        });
      }
    }
    if (a === 'dead-letters' && (x === 'redrive' || x === 'purge') && parts.length === 2) {
      const ids = P.taskIds(req.form);
      const description = P.optional(req.form, 'description', 500) ?? `${ids.length} task(s)`;
      const verb = x;
      const job = this.jobs.start(verb, description, ids.length, (onProgress) =>
        verb === 'redrive'
          ? b.redrive({ taskIds: ids }, operator, onProgress)
          : b.purge({ taskIds: ids }, operator, onProgress),
      );
      return redirect(req, `/jobs/${job.id}`);
    }
    if (a === 'schedules' && b.schedules !== undefined && x !== undefined && parts.length === 3) {
      const name = P.scheduleName(x);
      if (y === 'pause') {
        await b.schedules.pause(
          name,
          P.optional(req.form, 'note', 200) ?? `paused from the console by ${this.o.actor}`,
        );
        return redirect(req, `/schedules/${encodeURIComponent(name)}?msg=paused`);
      }
      if (y === 'resume') {
        await b.schedules.resume(name);
        return redirect(req, `/schedules/${encodeURIComponent(name)}?msg=resumed`);
      }
      if (y === 'trigger') {
        await b.schedules.trigger(name);
        return redirect(req, `/schedules/${encodeURIComponent(name)}?msg=triggered`);
      }
    }
    if (a === 'pipelines') return answer(req, await pipelinePost(ctx, this.o.pipelines, parts, req.form, operator));
    throw new PageNotFoundError(`no action at ${req.path}`);
  }

  /**
   * Sends a signal to a workflow run as an operator (`signalRoute`): the run's page says it was
   * sent; a refusal is the run's page with what is wrong (400 name or payload, 409 the run takes
   * no such signal), the form keeping what was typed; an unknown task is 404.
   */
  private async signal(ctx: PageContext, req: ConsoleRequest, id: string): Promise<ConsoleResponse> {
    const draft: SignalDraft = { name: (req.form.name ?? '').trim(), payload: req.form.payload ?? '' };
    const refused = (status: number, text: string) =>
      this.taskWithFlash(ctx, id, status, { kind: 'bad', text: `Signal not sent: ${text}` }, draft);
    const workflows = this.o.backend.workflows;
    if (workflows === undefined)
      return refused(409, 'this deployment has no workflow history store, so no run here takes signals.');
    if (draft.name === '') return refused(400, 'name: required (the name the run waits for, in lower snake case).');
    let payload: unknown = null;
    if (draft.payload.trim() !== '') {
      try {
        payload = JSON.parse(draft.payload);
      } catch (err) {
        return refused(400, `payload: not valid JSON (${err instanceof Error ? err.message : String(err)}).`);
      }
    }
    try {
      const r = await workflows.signal(id, draft.name, payload);
      return redirect(req, `/tasks/${id}?msg=${r.woken ? 'signalled_woken' : 'signalled'}`);
    } catch (err) {
      if (err instanceof TaskNotFoundError)
        throw new PageNotFoundError(`task ${id} not found (never existed, or expired after its retention)`);
      // The route names the payload `body` (and its members `body.x`): here it is the payload field.
      if (err instanceof ValidationError)
        return refused(400, err.field === 'name' ? err.message : err.message.replace(/^body\b/, 'payload'));
      if (err instanceof HttpError && err.status === 409) return refused(409, `${err.message} (${err.code}).`);
      throw err;
    }
  }

  /** A workflow run's view from its history; undefined for a task without one. */
  private async run(ctx: PageContext, r: TaskRecord, draft?: SignalDraft): Promise<RunView | undefined> {
    const workflows = this.o.backend.workflows;
    if (workflows === undefined) return undefined;
    try {
      return runView(r, await workflows.history(r.task_id), ctx.now, draft);
    } catch (err) {
      const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      this.o.logger?.warn('console: reading a workflow history failed', { task_id: r.task_id, error: why });
      return { steps: [], unreadable: why };
    }
  }

  private async taskWithFlash(
    ctx: PageContext,
    id: string,
    status: number,
    flash: Flash,
    draft?: SignalDraft,
  ): Promise<ConsoleResponse> {
    const r = await this.o.backend.getTask(id);
    if (r === undefined) throw new PageNotFoundError(`task ${id} not found`);
    return page(status, taskPage(ctx, r, flash, await this.run(ctx, r, draft)));
  }

  private job(id: string) {
    const job = this.jobs.get(id);
    if (job === undefined)
      throw new PageNotFoundError(`no job ${id} (jobs are kept in memory until the console stops)`);
    return job;
  }
}

function segments(path: string): string[] {
  const parts = path.split('/').filter((s) => s !== '');
  try {
    return parts.map((s) => decodeURIComponent(s));
  } catch {
    throw new BadParameterError('path', 'malformed percent-encoding');
  }
}

function flashOf(q: P.Params): Flash | undefined {
  const key = q.msg;
  return key === undefined ? undefined : MESSAGES[key];
}

function page(status: number, body: Html): ConsoleResponse {
  return {
    status,
    headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
    body: body.text,
  };
}

function answer(req: ConsoleRequest, a: PipelineAnswer): ConsoleResponse {
  return 'redirect' in a ? redirect(req, a.redirect) : page(a.status, a.page);
}

function text(status: number, body: string): ConsoleResponse {
  return { status, headers: { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' }, body: `${body}\n` };
}

/** After an action: 303 to the result page; htmx (boosted forms) is told to navigate there instead. */
function redirect(req: ConsoleRequest, location: string): ConsoleResponse {
  if (req.headers['hx-request'] === 'true') {
    return { status: 200, headers: { ...SECURITY_HEADERS, 'hx-redirect': location }, body: '' };
  }
  return { status: 303, headers: { ...SECURITY_HEADERS, location }, body: '' };
}

function asset(path: string): ConsoleResponse {
  const a = Object.values(assets()).find((x) => x.path === path);
  if (a === undefined) return text(404, `no asset ${path}`);
  return {
    status: 200,
    headers: { ...SECURITY_HEADERS, 'content-type': a.type, 'cache-control': 'public, max-age=31536000, immutable' },
    body: a.body,
  };
}
