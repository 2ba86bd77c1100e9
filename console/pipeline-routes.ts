/**
 * The console's routes under `/pipelines`, over the deployment's `PipelineService` (without one,
 * every page is a 404 saying the deployment has no pipelines): the list, a pipeline's grid over a
 * window of logical dates (the last {@link GRID_DATES} due by default; `?to=` ends it at a date,
 * `?from=` starts it at one, both bound it), a run's page, and two actions: trigger a date, and
 * clear a finished run's failed nodes with their downstream. A refusal is a 4xx page saying why
 * (404 an unknown pipeline or run, 422 a bad date, 409 a run that cannot be cleared now), never a 500.
 *
 * @module
 */
import { DEFAULTS } from '../shared/config/resources.js';
import {
  canonicalKey,
  keysBetween,
  latestKey,
  nextKey,
  type PipelineTiming,
  previousKey,
} from '../shared/pipeline/dates.js';
import {
  PipelineRequestError,
  PipelineRunConflictError,
  PipelineRunNotFoundError,
  UnknownPipelineError,
} from '../shared/pipeline/errors.js';
import type { PipelineService } from '../shared/pipeline/service.js';
import type { Operator } from '../shared/task/operations.js';
import { PageNotFoundError } from './errors.js';
import type { Html } from './html.js';
import type { Flash, PageContext } from './layout.js';
import { errorPage } from './pages.js';
import * as P from './params.js';
import { pipelinePage, pipelinesPage, runPage, runPath } from './pipelines.js';

/** What the pipeline pages read and do: the deployment's `PipelineService` (the console's `pipelines` option). */
export type PipelineConsole = Pick<PipelineService, 'list' | 'get' | 'summary' | 'runs' | 'run' | 'trigger' | 'clear'>;

/** A page with its status, or where to go after an action. */
export type PipelineAnswer = { readonly status: number; readonly page: Html } | { readonly redirect: string };

/** Dates a grid shows unless `from` and `to` both say. */
export const GRID_DATES = 14;
/** Dates a grid shows at most. */
export const MAX_GRID_DATES = 100;

const MESSAGES: Readonly<Record<string, Flash>> = {
  triggered: { kind: 'ok', text: 'Triggered: the run of this date was created and starts now.' },
  exists: {
    kind: 'ok',
    text: 'This date has a run already (one run per date): here it is. Clear its nodes to run them again.',
  },
  cleared: {
    kind: 'ok',
    text: 'Cleared: the run is reopened; its failed nodes and their downstream run again.',
  },
};

/** A GET under `/pipelines`; `path`: the path's segments, `pipelines` first. */
export async function pipelineGet(
  ctx: PageContext,
  service: PipelineConsole | undefined,
  path: readonly string[],
  query: P.Params,
): Promise<PipelineAnswer> {
  const s = present(service);
  const parts = path.slice(1);
  const [name, runs, date] = parts;
  const flash = query.msg === undefined ? undefined : MESSAGES[query.msg];
  return answered(ctx, async () => {
    if (name === undefined) return { status: 200, page: pipelinesPage(ctx, s.list()) };
    if (parts.length === 1) return { status: 200, page: await gridPage(ctx, s, name, query, { flash }) };
    if (runs === 'runs' && date !== undefined && parts.length === 3) {
      return { status: 200, page: runPage(ctx, s.summary(name), await s.run(name, date), flash) };
    }
    throw new PageNotFoundError(`no page at /pipelines/${parts.join('/')}`);
  });
}

/** A POST under `/pipelines` (already checked: actions on, the token, the origin). */
export async function pipelinePost(
  ctx: PageContext,
  service: PipelineConsole | undefined,
  path: readonly string[],
  form: P.Params,
  operator: Operator,
): Promise<PipelineAnswer> {
  const s = present(service);
  const parts = path.slice(1);
  const [name, runs, date, verb] = parts;
  return answered(ctx, async () => {
    if (name !== undefined && runs === 'runs' && parts.length === 2) {
      const draft = (form.logical_date ?? '').trim().slice(0, 100);
      try {
        if (draft === '') throw new PipelineRequestError('logical_date', 'logical_date: required (the date to run)');
        const { run, created } = await s.trigger(name, draft);
        return { redirect: `${runPath(name, run.logical_date)}?msg=${created ? 'triggered' : 'exists'}` };
      } catch (err) {
        if (!(err instanceof PipelineRequestError)) throw err;
        const flash: Flash = { kind: 'bad', text: `Not triggered: ${fieldMessage(err)}` };
        return { status: 422, page: await gridPage(ctx, s, name, {}, { flash, draft }) };
      }
    }
    if (name !== undefined && runs === 'runs' && date !== undefined && verb === 'clear' && parts.length === 4) {
      try {
        const run = await s.clear(name, date, { failed: true, downstream: true }, operator);
        return { redirect: `${runPath(name, run.logical_date)}?msg=cleared` };
      } catch (err) {
        if (!(err instanceof PipelineRunConflictError)) throw err;
        const flash: Flash = { kind: 'bad', text: `Not cleared: ${err.message} (${err.reason}).` };
        return { status: 409, page: runPage(ctx, s.summary(name), await s.run(name, date), flash) };
      }
    }
    throw new PageNotFoundError(`no action at /pipelines/${parts.join('/')}`);
  });
}

function present(service: PipelineConsole | undefined): PipelineConsole {
  if (service === undefined) {
    throw new PageNotFoundError('no pipelines: this console was started without the pipeline service');
  }
  return service;
}

/** The pipeline errors as 4xx pages; anything else goes on (the console's own errors, or a 500). */
async function answered(ctx: PageContext, act: () => Promise<PipelineAnswer>): Promise<PipelineAnswer> {
  try {
    return await act();
  } catch (err) {
    if (err instanceof UnknownPipelineError || err instanceof PipelineRunNotFoundError) {
      return { status: 404, page: errorPage(ctx, 'Not found', err.message) };
    }
    if (err instanceof PipelineRequestError) {
      return { status: 422, page: errorPage(ctx, 'Unprocessable request', fieldMessage(err)) };
    }
    throw err;
  }
}

/** The message, naming its field first. */
function fieldMessage(err: PipelineRequestError): string {
  return err.message.startsWith(err.field) ? err.message : `${err.field}: ${err.message}`;
}

async function gridPage(
  ctx: PageContext,
  s: PipelineConsole,
  name: string,
  query: P.Params,
  o: { readonly flash?: Flash | undefined; readonly draft?: string },
): Promise<Html> {
  const p = s.summary(name);
  const t = s.get(name).pipeline.timing;
  const keys = windowKeys(t, ctx.now, { from: P.optional(query, 'from', 40), to: P.optional(query, 'to', 40) });
  const first = keys[0] as string;
  const last = keys.at(-1) as string;
  const runs = await s.runs(name, { from: first, to: last });
  const latest = latestKey(t, ctx.now);
  let later: string | undefined;
  if (last < latest) {
    later = last;
    for (let i = 0; i < GRID_DATES && later < latest; i += 1) later = nextKey(t, later);
  }
  return pipelinePage(
    ctx,
    p,
    {
      keys,
      runs: new Map(runs.map((r) => [r.logical_date, r])),
      earlier: previousKey(t, first),
      ...(later === undefined ? {} : { later }),
    },
    { ...(o.flash === undefined ? {} : { flash: o.flash }), ...(o.draft === undefined ? {} : { draft: o.draft }) },
  );
}

/**
 * The logical dates a grid shows, oldest first: from `from` to `to`; {@link GRID_DATES} from `from`
 * or up to `to`; else the last {@link GRID_DATES} up to the latest date due at `now`.
 * @throws PipelineRequestError naming `from` or `to`
 */
export function windowKeys(
  t: PipelineTiming,
  now: number,
  range: { readonly from?: string | undefined; readonly to?: string | undefined } = {},
): string[] {
  const { from, to } = range;
  if (from !== undefined && to !== undefined) {
    const keys = keysBetween(t, from, to, DEFAULTS.maxBackfillDays);
    if (keys.length === 0) throw new PipelineRequestError('to', `to: no logical date falls from ${from} to ${to}`);
    if (keys.length > MAX_GRID_DATES) {
      throw new PipelineRequestError('to', `to: the grid shows at most ${MAX_GRID_DATES} dates (got ${keys.length})`);
    }
    return keys;
  }
  if (from !== undefined) {
    const keys = [canonicalKey(t, from, 'from')];
    while (keys.length < GRID_DATES) keys.push(nextKey(t, keys.at(-1) as string));
    return keys;
  }
  const keys = [to === undefined ? latestKey(t, now) : canonicalKey(t, to, 'to')];
  while (keys.length < GRID_DATES) keys.unshift(previousKey(t, keys[0] as string));
  return keys;
}
