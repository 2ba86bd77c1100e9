/**
 * What the API, the CLI and the console do with pipelines: list them, start a run for a logical
 * date (one run per date: the run's id comes from the pipeline and the date), backfill a range,
 * clear nodes of a finished run (they run again, with what depends on them), cancel a run, and
 * show runs. Every record change goes through the task domain (the submitter, the lifecycle).
 *
 * A pipeline's runs belong to the deployment (`kaj:code`, the owner of the schedules declared in
 * code), whoever starts them: the schedule, a backfill and a manual run of one date meet on one run.
 *
 * @module
 */
import type { Clock } from '../runtime/clock.js';
import { forEachBounded } from '../runtime/bounded.js';
import { CODE_OWNER } from '../schedule/model.js';
import type { TaskRegistry } from '../task/define.js';
import type { TaskLifecycle } from '../task/lifecycle.js';
import type { TaskRecord } from '../task/model.js';
import type { Operator } from '../task/operations.js';
import { isFinished } from '../task/state-machine.js';
import { identifiedRunTaskId, type TaskSubmitter } from '../task/submit.js';
import type { TaskStore } from '../task/task-store.js';
import { type HistoryStore, openingOf } from '../workflow/history-store.js';
import { canonicalKey, intervalOfKey, keysBetween, logicalKeyOf } from './dates.js';
import { pipelinesOf, type PipelineDefinition } from './define.js';
import {
  PipelineRequestError,
  PipelineRunConflictError,
  PipelineRunNotFoundError,
  UnknownPipelineError,
} from './errors.js';
import { downstreamOf, type Graph } from './graph.js';
import { GRAPH_STEP } from './run.js';
import { type RunView, runView } from './view.js';

/** The owner of every pipeline run. */
export const PIPELINE_OWNER = CODE_OWNER;

export interface PipelineServiceDeps {
  readonly registry: TaskRegistry;
  readonly store: TaskStore;
  readonly submitter: TaskSubmitter;
  readonly lifecycle: TaskLifecycle;
  readonly history: HistoryStore;
  readonly clock: Clock;
}

/** What `backfill` does for a date. */
export type BackfillAction = 'create' | 'skip_exists' | 'skip_active' | 'rerun_failed' | 'rerun';

export interface BackfillRequest {
  readonly from: string;
  readonly to: string;
  /** Runs that exist: left (`none`), cleared where they failed (`failed`), or run again whole (`all`). @default 'none' */
  readonly reprocess?: 'none' | 'failed' | 'all';
  /** Newest date first. @default false */
  readonly backwards?: boolean;
  /** At most this many of the backfill's runs active at once (never more than the pipeline's). */
  readonly maxActiveRuns?: number;
  /** List what would be done, doing nothing. @default false */
  readonly dryRun?: boolean;
}

export interface BackfillPlanItem {
  readonly logical_date: string;
  readonly action: BackfillAction;
  readonly run_id: string;
  /** The run's status before the backfill, when it existed. */
  readonly was?: string;
}

export interface PipelineSummary {
  readonly name: string;
  readonly description?: string;
  readonly schedule?: { readonly cron: string; readonly timezone: string; readonly catchup: boolean };
  readonly timezone: string;
  readonly max_active_runs: number;
  readonly max_run_days: number;
  /** `date` (YYYY-MM-DD) or `time` (ISO): how its runs are named. */
  readonly logical_date_format: 'date' | 'time';
  readonly nodes: { name: string; type: string; after: readonly string[]; trigger: string }[];
}

const CONCURRENCY = 8;

export class PipelineService {
  private readonly pipelines: Map<string, PipelineDefinition>;

  constructor(private readonly d: PipelineServiceDeps) {
    this.pipelines = pipelinesOf(d.registry);
  }

  /** The deployment's pipelines. */
  list(): PipelineSummary[] {
    return [...this.pipelines.values()].map(summaryOf);
  }

  /** @throws UnknownPipelineError */
  get(name: string): PipelineDefinition {
    const def = this.pipelines.get(name);
    if (def === undefined) throw new UnknownPipelineError(name);
    return def;
  }

  summary(name: string): PipelineSummary {
    return summaryOf(this.get(name));
  }

  /** The run id of a date (whether or not the run exists). @throws UnknownPipelineError, PipelineRequestError */
  runId(name: string, logicalDate: string): string {
    const def = this.get(name);
    return runIdOf(name, canonicalKey(def.pipeline.timing, logicalDate));
  }

  /**
   * Starts the run of `logicalDate` now, unless it exists (then it is returned: `created` false).
   * A date whose interval has not begun is refused (as Airflow refuses a run in the future).
   * @throws UnknownPipelineError, PipelineRequestError naming `logical_date`
   */
  async trigger(
    name: string,
    logicalDate: string,
    options: { readonly maxActiveRuns?: number } = {},
  ): Promise<{ run: RunView; created: boolean }> {
    const def = this.get(name);
    const interval = intervalOfKey(def.pipeline.timing, logicalDate);
    const key = logicalKeyOf(def.pipeline.timing, interval.start);
    const now = this.d.clock.now();
    if (interval.start > now) {
      throw new PipelineRequestError(
        'logical_date',
        `logical_date ${key} is in the future: its run can start once its data interval has begun (${new Date(interval.start).toISOString()})`,
      );
    }
    const runKey = `${name}@${key}`;
    const { record, replayed } = await this.d.submitter.submitRun({
      taskId: runIdOf(name, key),
      runKey,
      owner: PIPELINE_OWNER,
      scheduledTime: interval.end,
      runAt: now,
      type: name,
      payload: options.maxActiveRuns === undefined ? {} : { max_active_runs: options.maxActiveRuns },
      priority: def.schedules?.[0]?.priority ?? 'normal',
    });
    return { run: await runView(def, key, record, []), created: !replayed };
  }

  /**
   * Runs for the dates from `from` to `to`: created where none exists, cleared or left as
   * `reprocess` says where one does. A dry run answers the plan and changes nothing.
   * @throws UnknownPipelineError, PipelineRequestError naming `from`, `to`, `reprocess` or `max_active_runs`
   */
  async backfill(name: string, req: BackfillRequest, operator: Operator): Promise<BackfillPlanItem[]> {
    const def = this.get(name);
    const reprocess = req.reprocess ?? 'none';
    if (!['none', 'failed', 'all'].includes(reprocess)) {
      throw new PipelineRequestError('reprocess', 'reprocess must be none, failed or all');
    }
    const cap = req.maxActiveRuns;
    if (cap !== undefined && (!Number.isInteger(cap) || cap < 1 || cap > def.pipeline.maxActiveRuns)) {
      throw new PipelineRequestError(
        'max_active_runs',
        `max_active_runs must be an integer in [1, ${def.pipeline.maxActiveRuns}] (the pipeline's maxActiveRuns)`,
      );
    }
    const keys = keysBetween(def.pipeline.timing, req.from, req.to, def.pipeline.maxBackfillRuns);
    const last = keys.at(-1);
    if (last !== undefined && intervalOfKey(def.pipeline.timing, last, 'to').start > this.d.clock.now()) {
      throw new PipelineRequestError('to', `to: ${last} is in the future; a backfill is of dates that have begun`);
    }
    if (req.backwards === true) keys.reverse();
    const records = await this.records(name, keys);
    const plan = keys.map((key): BackfillPlanItem => {
      const r = records.get(key);
      const run_id = runIdOf(name, key);
      if (r === undefined) return { logical_date: key, action: 'create', run_id };
      const was = r.status;
      if (!isFinished(r.status)) return { logical_date: key, action: 'skip_active', run_id, was };
      if (reprocess === 'all') return { logical_date: key, action: 'rerun', run_id, was };
      if (reprocess === 'failed' && r.status !== 'succeeded')
        return { logical_date: key, action: 'rerun_failed', run_id, was };
      return { logical_date: key, action: 'skip_exists', run_id, was };
    });
    if (req.dryRun === true) return plan;
    const done = [...plan];
    // In date order, one at a time: the runs are created (and so admitted) oldest first (or newest).
    for (const item of plan) {
      if (item.action === 'create') {
        await this.trigger(name, item.logical_date, cap === undefined ? {} : { maxActiveRuns: cap });
      } else if (item.action === 'rerun' || item.action === 'rerun_failed') {
        try {
          await this.clear(
            name,
            item.logical_date,
            item.action === 'rerun' ? { all: true } : { failed: true, downstream: true },
            operator,
          );
        } catch (err) {
          // Started again meanwhile, or too old to reopen: the date is left as it is, the others go on.
          if (!(err instanceof PipelineRunConflictError)) throw err;
          done[plan.indexOf(item)] = { ...item, action: 'skip_active' };
        }
      }
    }
    return done;
  }

  /**
   * Runs the given nodes of a finished run again (with their downstream when asked; `failed`:
   * the nodes that failed, with theirs; `all`: every node), reopening the run.
   * @throws PipelineRunNotFoundError, PipelineRunConflictError (`run_active`, `run_expired`,
   *   `nothing_to_clear`), PipelineRequestError naming `nodes`
   */
  async clear(
    name: string,
    logicalDate: string,
    what: {
      readonly nodes?: readonly string[];
      readonly downstream?: boolean;
      readonly failed?: boolean;
      readonly all?: boolean;
    },
    operator: Operator,
  ): Promise<RunView> {
    const def = this.get(name);
    const { key, record, entries } = await this.load(name, logicalDate);
    if (!isFinished(record.status)) {
      throw new PipelineRunConflictError(
        'run_active',
        `the run of ${key} is ${record.status}: clear it once it has ended`,
        {
          taskId: record.task_id,
        },
      );
    }
    if (this.d.clock.now() > Date.parse(record.created_at) + def.maxRunDays * 86_400_000) {
      throw new PipelineRunConflictError(
        'run_expired',
        `the run of ${key} is older than the pipeline's maxRunDays (${def.maxRunDays}): its history is expiring; start a new run`,
        { taskId: record.task_id },
      );
    }
    const graph =
      (entries.find((e) => e.key === `step#${GRAPH_STEP}`)?.value as Graph | undefined) ?? def.pipeline.graph;
    const view = await runView(def, key, record, entries);
    let chosen: string[];
    if (what.all === true) chosen = Object.keys(graph);
    else if (what.failed === true)
      chosen = view.nodes.filter((n) => n.state === 'failed' || n.state === 'cancelled').map((n) => n.name);
    else {
      const nodes = what.nodes ?? [];
      if (nodes.length === 0) throw new PipelineRequestError('nodes', 'nodes: name at least one node to clear');
      for (const n of nodes) {
        if (!(n in graph)) {
          throw new PipelineRequestError(
            'nodes',
            `nodes: "${n}" is not a node of this run (${Object.keys(graph).join(', ')})`,
          );
        }
      }
      chosen = [...nodes];
    }
    const withDown =
      what.downstream === true || what.failed === true ? chosen.flatMap((n) => [n, ...downstreamOf(graph, n)]) : chosen;
    const cleared = Object.keys(graph).filter((n) => withDown.includes(n));
    if (cleared.length === 0) {
      throw new PipelineRunConflictError('nothing_to_clear', `the run of ${key} has no failed node to clear`, {
        taskId: record.task_id,
      });
    }
    const now = this.d.clock.now();
    const opening = openingOf(entries);
    await this.d.history.append({
      run_id: record.task_id,
      key: `reopen#${opening}`,
      kind: 'reopen',
      at: now,
      lease_token: 0,
      value: { nodes: cleared, by: operator.actor },
      expires_at: Math.floor(now / 1000) + (def.maxRunDays + 30) * 86_400,
    });
    const outcome = await this.d.lifecycle.operations.reopen(record, operator);
    if (outcome.kind === 'changed') {
      throw new PipelineRunConflictError('run_active', `the run of ${key} changed meanwhile: look again`, {
        taskId: record.task_id,
      });
    }
    return runView(def, key, outcome.record, await this.d.history.read(record.task_id));
  }

  /** Cancels the run (its nodes with it). @throws PipelineRunNotFoundError, TaskNotCancellableError */
  async cancel(name: string, logicalDate: string): Promise<RunView> {
    const def = this.get(name);
    const { key, record } = await this.load(name, logicalDate);
    const cancelled = await this.d.lifecycle.requests.cancel(record.task_id);
    return runView(def, key, cancelled, await this.d.history.read(record.task_id), this.d.store);
  }

  /** One run, its nodes looked up. @throws PipelineRunNotFoundError */
  async run(name: string, logicalDate: string): Promise<RunView> {
    const def = this.get(name);
    const { key, record, entries } = await this.load(name, logicalDate);
    return runView(def, key, record, entries, this.d.store);
  }

  /**
   * The runs of the dates from `from` to `to` that exist, newest first (without node lookups: a
   * node still going shows `running`). @default the last 14 dates up to now
   */
  async runs(name: string, range: { readonly from?: string; readonly to?: string } = {}): Promise<RunView[]> {
    const def = this.get(name);
    const t = def.pipeline.timing;
    const now = this.d.clock.now();
    const to = range.to ?? logicalKeyOf(t, now);
    const from = range.from ?? logicalKeyOf(t, now - 14 * 86_400_000);
    const keys = keysBetween(t, from, to, def.pipeline.maxBackfillRuns);
    const records = await this.records(name, keys);
    const views: RunView[] = [];
    await forEachBounded([...records.entries()], CONCURRENCY, async ([key, record]) => {
      views.push(await runView(def, key, record, await this.d.history.read(record.task_id)));
    });
    return views.sort((a, b) => (a.logical_date < b.logical_date ? 1 : -1));
  }

  private async load(
    name: string,
    logicalDate: string,
  ): Promise<{ key: string; record: TaskRecord; entries: Awaited<ReturnType<HistoryStore['read']>> }> {
    const def = this.get(name);
    const key = canonicalKey(def.pipeline.timing, logicalDate);
    const record = await this.d.store.get(runIdOf(name, key));
    if (record === undefined) throw new PipelineRunNotFoundError(name, key);
    return { key, record, entries: await this.d.history.read(record.task_id) };
  }

  /** The existing runs of `keys`, by key. */
  private async records(name: string, keys: readonly string[]): Promise<Map<string, TaskRecord>> {
    const found = new Map<string, TaskRecord>();
    await forEachBounded(keys, CONCURRENCY, async (key) => {
      const r = await this.d.store.get(runIdOf(name, key), {
        consistent: false,
      });
      if (r !== undefined) found.set(key, r);
    });
    return found;
  }
}

function summaryOf(def: PipelineDefinition): PipelineSummary {
  const p = def.pipeline;
  return {
    name: p.name,
    ...(p.description === undefined ? {} : { description: p.description }),
    ...(p.timing.cron === undefined
      ? {}
      : { schedule: { cron: p.timing.cron, timezone: p.timing.timezone, catchup: p.catchup } }),
    timezone: p.timing.timezone,
    max_active_runs: p.maxActiveRuns,
    max_run_days: def.maxRunDays,
    logical_date_format: p.timing.daily ? 'date' : 'time',
    nodes: p.order.map((name) => {
      const n = p.graph[name] as Graph[string];
      return { name, type: n.type, after: n.after, trigger: n.trigger };
    }),
  };
}

/** A run's task id: from the pipeline and the logical date (its run key `<name>@<date>`), whoever asks. */
function runIdOf(name: string, key: string): string {
  return identifiedRunTaskId(PIPELINE_OWNER, name, `${name}@${key}`);
}
