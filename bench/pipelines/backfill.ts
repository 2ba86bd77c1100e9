/**
 * Section 2 of `npm run bench:pipelines`: a 30-day backfill of a `nightly_sales` copy with
 * `maxActiveRuns: 2`, submitted through the API half an hour before the live schedule fires,
 * while the scheduler's ticker keeps firing it night after night — on the virtual clock, every
 * node sleeping a seeded random duration and noting the logical date it was given.
 *
 * Checked: the most runs active at once (a run is active from its admission, its `admit#1`
 * history entry, to the end of its last node), one run per date, every node given its own run's
 * logical date, every node run once, every run succeeded; measured: the virtual time the backfill
 * took and what it cost (its admission polls included).
 *
 * @module
 */
import { nightlySales } from '../../tasks/nightly-sales.js';
import { TaskRegistry } from '../../shared/task/define.js';
import { apiEvent } from '../../testing/fixtures.js';
import { seededRandom } from '../../testing/determinism.js';
import type { TableModel } from '../lib/dynamo-accounting.js';
import { nightlySalesCopy, partitionResult } from './copy.js';
import { measure, type Stretch, snapshot } from './metering.js';
import { checkRuns, dateIn, daysBetween, type RunChecks, type RunSeen } from './model.js';
import { pipelineWorld } from './world.js';

const MINUTE = 60_000;

export interface BackfillOptions {
  readonly seed: number;
  readonly taskTable: TableModel;
  readonly schedulesTable: TableModel;
  /** Nights the live schedule fires in the simulation. */
  readonly nights: number;
  /** The backfill's dates, oldest and newest (YYYY-MM-DD, the pipeline's zone). */
  readonly from: string;
  readonly to: string;
  readonly maxActiveRuns: number;
  /** Each node sleeps a duration drawn evenly from this range, ms. */
  readonly nodeMs: readonly [number, number];
}

export interface BackfillResult extends RunChecks {
  /** Dates that must have a run: the backfill's and the schedule's. */
  readonly dates: number;
  /** Virtual ms from the backfill's request to the end of its last run's last node. */
  readonly backfillMs: number;
  /** The schedule's fires in the simulation, and those that found their date's run made by the backfill (and made none). */
  readonly fires: number;
  readonly firesMetBackfill: number;
  /** Slot requests (the limits table's addHolder calls) and the runs admitted: the rest were refused and looked again `admitPollMs` later. */
  readonly slotRequests: number;
  readonly admitted: number;
  /** What the backfill's stretch cost (its runs, the live run among them, their polls). */
  readonly stretch: Stretch;
  readonly realSeconds: number;
}

interface Execution {
  readonly taskId: string;
  readonly logicalDate: string | undefined;
  end: number;
}

export async function simulateBackfill(o: BackfillOptions): Promise<BackfillResult> {
  const started = performance.now();
  const draw = seededRandom(o.seed ^ 0x9e3779b9);
  const executions: Execution[] = [];
  let clock: { now(): number } = { now: () => 0 };
  let sleep: (ms: number) => Promise<void> = async () => {};
  const copy = nightlySalesCopy(
    async (name, ctx) => {
      const e: Execution = {
        taskId: ctx.taskId,
        logicalDate: ctx.logicalDate?.toISOString(),
        end: Number.NaN,
      };
      executions.push(e);
      const [lo, hi] = o.nodeMs;
      await sleep(Math.round(lo + draw.next() * (hi - lo)));
      e.end = clock.now();
      return partitionResult(name, ctx);
    },
    { maxActiveRuns: o.maxActiveRuns, timeoutSeconds: Math.ceil(o.nodeMs[1] / 1000) + 30 },
  );
  const registry = new TaskRegistry([...copy.nodeTypes, copy.pipeline]);
  // 17:00 UTC: 23:00 in Dhaka, an hour and a half before the live schedule's first fire (00:30).
  const start = Date.parse('2026-12-01T17:00:00.000Z');
  const w = pipelineWorld({ registry, start, seed: o.seed, taskTable: o.taskTable, schedulesTable: o.schedulesTable });
  clock = w.time;
  sleep = (ms) => w.time.sleep(ms);
  await w.begin();
  // The backfill is requested at midnight in Dhaka, 30 minutes before the schedule fires.
  const submitAt = start + 60 * MINUTE;
  await w.runUntil(submitAt);
  const from = snapshot(w);
  const name = copy.pipeline.pipeline.name;
  const res = await w.kaj.handleHttp(
    apiEvent('POST', `/api/v1/pipelines/${name}/backfill`, { body: JSON.stringify({ from: o.from, to: o.to }) }),
  );
  if (res.statusCode >= 300) throw new Error(`backfill refused: ${res.statusCode} ${res.body}`);
  const backfilled = new Set((JSON.parse(res.body) as { runs: { run_id: string }[] }).runs.map((r) => r.run_id));
  const runsOf = () => [...w.tasks.items.values()].filter((r) => w.pipelineTypes.has(r.type));
  const backfillDone = () => runsOf().filter((r) => backfilled.has(r.task_id) && r.status === 'succeeded').length;
  const end = start + o.nights * 86_400_000;
  // The backfill's stretch: from its request until its last run has ended; then the other nights.
  await w.runUntil(end, () => backfillDone() === backfilled.size);
  const stretch = measure(w, from);
  await w.runUntil(end);

  const zone = nightlySales.pipeline.timing.timezone;
  const runs = runsOf();
  const runOfNode = new Map<string, string>();
  for (const r of w.tasks.items.values()) if (r.parent_id !== undefined) runOfNode.set(r.task_id, r.parent_id);
  const seen: RunSeen[] = runs.map((r) => ({
    id: r.task_id,
    date: dateIn(zone, r.data_interval?.start),
    status: r.status,
    intervalStart: r.data_interval?.start,
    admittedAt: w.history.inner.runs.get(r.task_id)?.get('admit#1')?.at,
  }));
  const fired = (w.schedulesInner.items.get(name)?.recent ?? []).filter((e) => e.task_id !== undefined);
  const expected = new Set(daysBetween(o.from, o.to));
  for (const r of runs) if (r.schedule !== undefined) expected.add(dateIn(zone, r.data_interval?.start));
  const checks = checkRuns(
    seen,
    executions.map((e) => ({ ...e, runId: runOfNode.get(e.taskId) })),
    expected,
  );
  const backfillEnd = Math.max(submitAt, ...[...backfilled].map((id) => checks.lastEnd.get(id) ?? submitAt));
  return {
    ...checks,
    dates: expected.size,
    backfillMs: backfillEnd - submitAt,
    fires: fired.length,
    firesMetBackfill: fired.filter((e) => backfilled.has(e.task_id ?? '')).length,
    slotRequests: w.limits.tally.calls.addHolder,
    admitted: seen.filter((r) => r.admittedAt !== undefined).length,
    stretch,
    realSeconds: (performance.now() - started) / 1000,
  };
}
