/**
 * The pipeline routes of the task API (`/api/v1/pipelines…`) for `KajClient.pipelines`: typed
 * bodies, paths built and encoded here. Types only from the domain: nothing of it is bundled.
 *
 * @module
 */
import type { BackfillPlanItem, PipelineSummary } from '../shared/pipeline/service.js';
import type { RunView } from '../shared/pipeline/view.js';

export type { BackfillPlanItem, PipelineSummary } from '../shared/pipeline/service.js';
export type { NodeView, RunView } from '../shared/pipeline/view.js';

/** What `KajClient.pipelines.backfill` takes (the body of `POST …/backfill`). */
export interface BackfillOptions {
  readonly from: string;
  readonly to: string;
  readonly reprocess?: 'none' | 'failed' | 'all';
  readonly maxActiveRuns?: number;
  readonly backwards?: boolean;
  readonly dryRun?: boolean;
}

/** What `KajClient.pipelines.clear` takes: nodes by name (with `downstream`), or the failed ones. */
export type ClearOptions =
  | { readonly nodes: readonly string[]; readonly downstream?: boolean }
  | { readonly failed: true };

type Call = (method: string, path: string, body?: unknown) => Promise<unknown>;

/** `KajClient.pipelines`. Each method throws `KajApiError` (404 unknown pipeline or run, 409, 422 naming the field). */
export function pipelineCalls(call: Call) {
  const base = (name: string) => `/api/v1/pipelines/${encodeURIComponent(name)}`;
  const run = (name: string, logicalDate: string) => `${base(name)}/runs/${encodeURIComponent(logicalDate)}`;
  return {
    /** The deployment's pipelines. */
    list: async () => ((await call('GET', '/api/v1/pipelines')) as { items: PipelineSummary[] }).items,
    /** A pipeline: its schedule and graph. */
    get: async (name: string) => (await call('GET', base(name))) as PipelineSummary,
    /** The runs of the dates from `from` to `to` that exist, newest first (default: the last 14 days). */
    runs: async (name: string, range: { readonly from?: string; readonly to?: string } = {}) => {
      const q = new URLSearchParams();
      if (range.from !== undefined) q.set('from', range.from);
      if (range.to !== undefined) q.set('to', range.to);
      const path = `${base(name)}/runs${q.size > 0 ? `?${q}` : ''}`;
      return ((await call('GET', path)) as { items: RunView[] }).items;
    },
    /** One run with its nodes. */
    run: async (name: string, logicalDate: string) => (await call('GET', run(name, logicalDate))) as RunView,
    /** Starts the run of a logical date, or returns the one that exists (`created` false). */
    trigger: async (name: string, logicalDate: string) =>
      (await call('POST', `${base(name)}/runs`, { logical_date: logicalDate })) as RunView & { created: boolean },
    /** Runs for past dates (created, or cleared as `reprocess` says); `dryRun` lists them only. */
    backfill: async (name: string, o: BackfillOptions) =>
      (
        (await call('POST', `${base(name)}/backfill`, {
          from: o.from,
          to: o.to,
          ...(o.reprocess === undefined ? {} : { reprocess: o.reprocess }),
          ...(o.maxActiveRuns === undefined ? {} : { max_active_runs: o.maxActiveRuns }),
          ...(o.backwards === undefined ? {} : { backwards: o.backwards }),
          ...(o.dryRun === undefined ? {} : { dry_run: o.dryRun }),
        })) as { runs: BackfillPlanItem[] }
      ).runs,
    /** Runs nodes of an ended run again (with what depends on them), or its failed nodes. */
    clear: async (name: string, logicalDate: string, o: ClearOptions) =>
      (await call('POST', `${run(name, logicalDate)}/clear`, o)) as RunView,
    /** Cancels a run and its nodes. */
    cancel: async (name: string, logicalDate: string) => (await call('DELETE', run(name, logicalDate))) as RunView,
  };
}
