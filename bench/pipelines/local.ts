/**
 * Section 2 on the local runtime (`--local`): the same backfill on the embedded emulators of
 * `npm start` (in-process SQS and DynamoDB, the consumers, sweeper and scheduler of
 * `startLocalRuntime`), in real time, `admitPollMs` small, nodes sleeping seeded random real
 * durations. The live schedule runs too, but its nightly time does not come within the minutes
 * the backfill takes. Reported: the wall time, and the same checks as the simulation.
 *
 * @module
 */
import { startLocalRuntime } from '../../local/runtime.js';
import { silentLogger } from '../../shared/runtime/logger.js';
import { TaskRegistry } from '../../shared/task/define.js';
import { nightlySales } from '../../tasks/nightly-sales.js';
import { seededRandom } from '../../testing/determinism.js';
import { uniquePrefix, waitFor } from '../../testing/wait.js';
import { fmt, median, printTable } from '../lib/report.js';
import { nightlySalesCopy, partitionResult } from './copy.js';
import { checkRuns, dateIn, daysBetween, type RunChecks, type RunSeen } from './model.js';

export interface LocalOptions {
  readonly seed: number;
  readonly from: string;
  readonly to: string;
  readonly maxActiveRuns: number;
  readonly nodeMs: readonly [number, number];
  readonly admitPollMs: number;
}

export interface LocalResult extends RunChecks {
  readonly dates: number;
  readonly wallMs: number;
}

/** Longest wait for the backfill to end. */
const TIMEOUT_MS = 30 * 60_000;

export async function runLocalBackfill(o: LocalOptions): Promise<LocalResult> {
  const draw = seededRandom(o.seed ^ 0x9e3779b9);
  const executions: { taskId: string; logicalDate: string | undefined; end: number }[] = [];
  const copy = nightlySalesCopy(
    async (name, ctx) => {
      const [lo, hi] = o.nodeMs;
      await new Promise((r) => setTimeout(r, Math.round(lo + draw.next() * (hi - lo))));
      executions.push({ taskId: ctx.taskId, logicalDate: ctx.logicalDate?.toISOString(), end: Date.now() });
      return partitionResult(name, ctx);
    },
    { maxActiveRuns: o.maxActiveRuns },
  );
  const name = copy.pipeline.pipeline.name;
  const runtime = await startLocalRuntime({
    registry: new TaskRegistry([...copy.nodeTypes, copy.pipeline]),
    prefix: uniquePrefix('kaj-pipelines'),
    port: 0,
    logger: silentLogger,
    admitPollMs: o.admitPollMs,
  });
  try {
    const started = performance.now();
    const res = await fetch(`${runtime.url}/api/v1/pipelines/${name}/backfill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ from: o.from, to: o.to }),
    });
    if (!res.ok) throw new Error(`backfill refused: ${res.status} ${await res.text()}`);
    const plan = (await res.json()) as { runs: { run_id: string }[] };
    const ids = plan.runs.map((r) => r.run_id);
    await waitFor(
      'every run of the backfill to end',
      async () => {
        const records = await Promise.all(ids.map((id) => runtime.kaj.store.get(id, { consistent: false })));
        return records.every((r) => r !== undefined && ['succeeded', 'failed', 'cancelled'].includes(r.status))
          ? true
          : undefined;
      },
      { timeoutMs: TIMEOUT_MS, intervalMs: 250 },
    );
    const wallMs = performance.now() - started;
    const history = runtime.kaj.history;
    const zone = nightlySales.pipeline.timing.timezone;
    const seen: RunSeen[] = [];
    for (const id of ids) {
      const r = await runtime.kaj.store.get(id);
      const admit = (await history?.read(id))?.find((e) => e.key === 'admit#1');
      seen.push({
        id,
        date: dateIn(zone, r?.data_interval?.start),
        status: r?.status ?? 'missing',
        intervalStart: r?.data_interval?.start,
        admittedAt: admit?.at,
      });
    }
    const withRuns = await Promise.all(
      executions.map(async (e) => ({ ...e, runId: (await runtime.kaj.store.get(e.taskId))?.parent_id })),
    );
    const dates = daysBetween(o.from, o.to);
    return { ...checkRuns(seen, withRuns, dates), dates: dates.length, wallMs };
  } finally {
    await runtime.stop(5_000);
  }
}

export function printLocal(results: readonly LocalResult[], maxActiveRuns: number): void {
  console.log(
    `\n2b. The same backfill on the embedded emulators of npm start (--local): real time, admitPollMs small, nodes sleeping real durations; one run a column`,
  );
  const col = (f: (r: LocalResult) => string) => results.map(f);
  const minutes = (ms: number) => fmt(ms / 60_000, 2);
  printTable(
    ['', ...results.map((_, i) => `run ${i + 1}`), 'median'],
    [
      ['  dates / runs / not succeeded', ...col((r) => `${r.dates} / ${r.runs} / ${r.unsucceeded.length}`), ''],
      ['  dates without exactly one run', ...col((r) => String(r.duplicateDates.length + r.missingDates.length)), ''],
      ['  most runs active at once', ...col((r) => String(r.maxActive)), ''],
      [
        '  node executions / ran twice / other logical date',
        ...col((r) => `${r.nodeExecutions} / ${r.rerunNodes} / ${r.wrongDates}`),
        '',
      ],
      ['  wall time, minutes', ...col((r) => minutes(r.wallMs)), minutes(median(results.map((r) => r.wallMs)))],
    ],
    [52, 14, 14, 14, 10],
  );
  const ok = results.every(
    (r) =>
      r.duplicateDates.length + r.missingDates.length + r.unsucceeded.length + r.wrongDates === 0 &&
      r.maxActive <= maxActiveRuns,
  );
  console.log(`  checks: ${ok ? 'PASS' : 'FAIL'} in every run`);
}
