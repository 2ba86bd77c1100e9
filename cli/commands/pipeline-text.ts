/**
 * What `kaj pipelines` prints as text: the pipelines, one pipeline with its graph and the state
 * of its schedule, the grid of its runs (a row per logical date, a column per node), one run,
 * and a backfill's plan. Pure: each takes what the services answered and returns the text.
 *
 * @module
 */
import type { BackfillAction, BackfillPlanItem, PipelineSummary } from '../../shared/pipeline/service.js';
import type { NodeViewState, RunView } from '../../shared/pipeline/view.js';
import type { ScheduleView } from '../../shared/schedule/views.js';
import { ago, table, truncate } from '../output.js';
import { stateText } from './schedules.js';

/** The state of a pipeline's schedule, as `show` prints it (and `--json` gives it). */
export interface PipelineScheduleState {
  readonly state: ScheduleView['state'] | 'not_created';
  readonly paused_at?: string;
  readonly pause_note?: string;
  readonly next_fire_time?: string;
}

/** The schedule's state from its view (`undefined`: the schedule does not exist yet). */
export function scheduleStateOf(view: ScheduleView | undefined): PipelineScheduleState {
  if (view === undefined) return { state: 'not_created' };
  const next = view.state === 'active' ? view.next_fire_times[0] : undefined;
  return {
    state: view.state,
    ...(view.paused_at === undefined ? {} : { paused_at: view.paused_at }),
    ...(view.pause_note === undefined ? {} : { pause_note: view.pause_note }),
    ...(next === undefined ? {} : { next_fire_time: next }),
  };
}

/** `kaj pipelines list`. */
export function pipelineListText(items: readonly PipelineSummary[]): string {
  if (items.length === 0) return 'no pipelines (tasks/index.ts registers none).\n';
  const rows = items.map((p) => [
    p.name,
    p.schedule?.cron ?? '-',
    p.timezone,
    String(p.max_active_runs),
    truncate(`${p.nodes.length}: ${p.nodes.map((n) => n.name).join(', ')}`, 60),
  ]);
  return `${table(['NAME', 'SCHEDULE', 'TIMEZONE', 'MAX ACTIVE RUNS', 'NODES'], rows)}\n${items.length} pipeline(s).\n`;
}

/** `kaj pipelines show`: the pipeline, its schedule's state (when it has one) and its graph. */
export function pipelineText(p: PipelineSummary, schedule: PipelineScheduleState | undefined, now: number): string {
  const lines = [`name:             ${p.name}`];
  if (p.description !== undefined) lines.push(`description:      ${p.description}`);
  if (p.schedule === undefined) lines.push('schedule:         none (runs are started by trigger or backfill)');
  else
    lines.push(
      `schedule:         ${p.schedule.cron} (${p.schedule.timezone}), catchup ${p.schedule.catchup ? 'on: missed times run, oldest first' : 'off: only the latest missed time runs'}`,
    );
  if (schedule !== undefined) lines.push(`schedule state:   ${scheduleStateText(schedule, now)}`);
  lines.push(
    `max active runs:  ${p.max_active_runs}`,
    `max run days:     ${p.max_run_days}`,
    `logical dates:    ${p.logical_date_format === 'date' ? `YYYY-MM-DD in ${p.timezone}` : 'ISO times (UTC)'}, the start of each run's data interval`,
    '',
    'graph (upstreams first):',
  );
  const graph = table(
    ['  NODE', 'TYPE', 'AFTER', 'TRIGGER'],
    p.nodes.map((n) => [`  ${n.name}`, n.type, n.after.length === 0 ? '-' : n.after.join(', '), n.trigger]),
  );
  return `${lines.join('\n')}\n${graph}`;
}

function scheduleStateText(s: PipelineScheduleState, now: number): string {
  if (s.state === 'not_created') return 'not created yet (the next deploy or `npm start` creates it)';
  const base = stateText({ ...s, state: s.state });
  return s.next_fire_time === undefined
    ? base
    : `${base}, next fire ${s.next_fire_time} (${ago(s.next_fire_time, now)})`;
}

/** A node's state in a cell of the grid: short, and loud where something went wrong. */
export const CELL: Readonly<Record<NodeViewState, string>> = {
  succeeded: 'ok',
  failed: 'FAIL',
  upstream_failed: 'up_failed',
  skipped: 'skip',
  running: 'run',
  queued: 'queued',
  pending: 'pending',
  cancelled: 'cancel',
};

export const LEGEND =
  'legend: ok succeeded · FAIL failed · up_failed not run, an upstream failed · skip not run, by its trigger rule\n' +
  '        run running · queued its task waits · pending its upstreams have not ended · cancel cancelled\n' +
  "        #2 the node's second try (cleared, run again) · - not a node of that run\n";

/** `kaj pipelines runs`: one row per logical date (newest first), one column per node, the run's status. */
export function runGridText(p: PipelineSummary, runs: readonly RunView[]): string {
  if (runs.length === 0) return `no runs of ${p.name} in that range (default: the last 14 days).\n`;
  // The pipeline's nodes, then any node an older run's graph had.
  const columns = p.nodes.map((n) => n.name);
  for (const r of runs) for (const n of r.nodes) if (!columns.includes(n.name)) columns.push(n.name);
  const rows = runs.map((r) => {
    const cells = new Map(r.nodes.map((n) => [n.name, `${CELL[n.state]}${n.try > 1 ? `#${n.try}` : ''}`]));
    return [r.logical_date, r.status, ...columns.map((c) => cells.get(c) ?? '-')];
  });
  return `${table(['LOGICAL DATE', 'STATUS', ...columns], rows)}\n${runs.length} run(s), newest first.\n${LEGEND}`;
}

/** One run: `show-run`, and what `trigger`, `clear` and `cancel` print. */
export function runText(r: RunView, now: number): string {
  const lines = [
    `pipeline:       ${r.pipeline}`,
    `logical date:   ${r.logical_date}`,
    `run id:         ${r.run_id}`,
    `status:         ${r.status}`,
  ];
  if (r.data_interval !== undefined)
    lines.push(`data interval:  ${r.data_interval.start} → ${r.data_interval.end} (end excluded)`);
  lines.push(`created:        ${r.created_at} (${ago(r.created_at, now)})`);
  lines.push(`updated:        ${r.updated_at} (${ago(r.updated_at, now)})`);
  if (r.error !== undefined) lines.push(`error:          ${truncate(r.error, 200)}`);
  const nodes = table(
    ['  NODE', 'STATE', 'TRY', 'ATTEMPTS', 'TASK ID'],
    r.nodes.map((n) => [
      `  ${n.name}`,
      n.state,
      String(n.try),
      n.attempts === undefined ? '-' : String(n.attempts),
      n.task_id ?? '-',
    ]),
  );
  return `${lines.join('\n')}\n\nnodes (upstreams first):\n${nodes}`;
}

const ACTION: Readonly<Record<BackfillAction, string>> = {
  create: 'create',
  skip_exists: 'skip (has a run)',
  skip_active: 'skip (run active)',
  rerun_failed: 'clear failed nodes',
  rerun: 'clear every node',
};

/** `kaj pipelines backfill`: the plan, date by date, and what it came to. */
export function planText(name: string, plan: readonly BackfillPlanItem[], dryRun: boolean): string {
  if (plan.length === 0) return `no logical date of ${name} falls in that range: nothing to do.\n`;
  const count = (...actions: BackfillAction[]) => plan.filter((i) => actions.includes(i.action)).length;
  const [created, cleared, left] = [
    count('create'),
    count('rerun', 'rerun_failed'),
    count('skip_exists', 'skip_active'),
  ];
  const grid = table(
    ['LOGICAL DATE', 'ACTION', 'WAS', 'RUN ID'],
    plan.map((i) => [i.logical_date, ACTION[i.action], i.was ?? '-', i.run_id]),
  );
  const tally = `${plan.length} date(s): ${created} ${dryRun ? 'to create' : 'created'}, ${cleared} ${dryRun ? 'to clear' : 'cleared'}, ${left} left as they are`;
  return `${grid}\n${dryRun ? `dry run, nothing changed. ${tally}.\n` : `${tally}.\n`}`;
}
