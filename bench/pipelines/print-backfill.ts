/**
 * Section 2's and section 3's reports: the backfill's checks per seed, and the deployment at rest
 * with its pipelines declared.
 *
 * @module
 */
import { fmt, median, printTable, usd } from '../lib/report.js';
import { gbSeconds, lambdaDuration, ticksPerMonth } from '../lib/schedule-model.js';
import { BYTES_PER_GB, cost, PRICES } from '../prices.js';
import type { AtRest } from './at-rest.js';
import type { BackfillOptions, BackfillResult } from './backfill.js';
import { type Assumptions, addCounts, billOf, perMillion, type RunChecks } from './model.js';

/** `2 h 08 min` for virtual ms. */
export function hoursMinutes(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** Whether a backfill result passed every check. */
export function backfillPassed(r: RunChecks & { readonly dates: number }, maxActiveRuns: number): boolean {
  return (
    r.duplicateDates.length === 0 &&
    r.missingDates.length === 0 &&
    r.unsucceeded.length === 0 &&
    r.maxActive <= maxActiveRuns &&
    r.wrongDates === 0 &&
    r.runs === r.dates
  );
}

export function printBackfill(
  o: BackfillOptions,
  results: readonly BackfillResult[],
  a: Assumptions,
  runAlone: number,
): void {
  const days = Math.round((Date.parse(o.to) - Date.parse(o.from)) / 86_400_000) + 1;
  console.log(
    `\n2. A ${days}-date backfill (${o.from} … ${o.to}) of a nightly_sales copy with maxActiveRuns ${o.maxActiveRuns}, requested through the API at 00:00 in Dhaka, ` +
      `30 minutes before the live schedule fires, which the ticker then fires for ${o.nights} nights; every node sleeps ${o.nodeMs[0] / 1000}–${o.nodeMs[1] / 1000} s (seeded random); virtual clock, one seed a column`,
  );
  const col = (f: (r: BackfillResult) => string) => results.map(f);
  const med = (f: (r: BackfillResult) => number) => fmt(median(results.map(f)), 1);
  const bill = (r: BackfillResult) => billOf(addCounts(r.stretch.counts.run, r.stretch.counts.node), a).total;
  printTable(
    ['', ...results.map((_, i) => `seed ${i + 1}`), 'median'],
    [
      ['  dates / runs', ...col((r) => `${r.dates} / ${r.runs}`), ''],
      ['  dates without exactly one run', ...col((r) => String(r.duplicateDates.length + r.missingDates.length)), ''],
      ['  runs not succeeded', ...col((r) => String(r.unsucceeded.length)), ''],
      [
        '  most runs active at once (admission → last node end)',
        ...col((r) => String(r.maxActive)),
        med((r) => r.maxActive),
      ],
      [
        '  node executions / ran twice / other logical date',
        ...col((r) => `${r.nodeExecutions} / ${r.rerunNodes} / ${r.wrongDates}`),
        '',
      ],
      ["  schedule fires / found the backfill's run", ...col((r) => `${r.fires} / ${r.firesMetBackfill}`), ''],
      [
        '  the backfill took (virtual)',
        ...col((r) => hoursMinutes(r.backfillMs)),
        hoursMinutes(median(results.map((r) => r.backfillMs))),
      ],
      [
        '  slot requests / runs admitted',
        ...col((r) => `${fmt(r.slotRequests, 0)} / ${r.admitted}`),
        med((r) => r.slotRequests),
      ],
      [
        '  consumer invocations of the runs / of the nodes',
        ...col((r) => `${fmt(r.stretch.counts.run.invocations, 0)} / ${fmt(r.stretch.counts.node.invocations, 0)}`),
        '',
      ],
      ["  the backfill's AWS bill, all in", ...col((r) => usd(bill(r), 4)), usd(median(results.map(bill)), 4)],
      [`  … per run (a run alone: ${usd(runAlone, 6)})`, ...col((r) => usd(bill(r) / r.stretch.runs, 6)), ''],
      ['  simulation, real seconds', ...col((r) => fmt(r.realSeconds, 1)), med((r) => r.realSeconds)],
    ],
    [56, 16, 16, 16, 14],
  );
  const passed = results.every((r) => backfillPassed(r, o.maxActiveRuns));
  console.log(
    `  checks (one run per date, every run succeeded, at most ${o.maxActiveRuns} active, every node given its run's logical date): ${passed ? 'PASS' : 'FAIL'} in every seed`,
  );
  const r0 = results[0];
  if (r0 !== undefined) {
    const polls = r0.slotRequests - r0.admitted;
    console.log(
      `  A waiting run looks again every admitPollMs (30 s): ${fmt(polls, 0)} refused slot requests in seed 1, each an invocation that reads the run, its history and the slot item and writes the run's wake — ` +
        `${fmt(bill(r0) / (r0.stretch.runs * runAlone), 1)}× what the same runs cost one at a time.`,
    );
  }
}

export function printAtRest(
  r: AtRest,
  o: { pipelines: number; hours: number; tickSeconds: number; memoryMiB: number; latencyMs: number; runCost: number },
): void {
  console.log(
    `\n3. ${fmt(o.pipelines, 0)} pipelines declared (nightly_sales copies, one run a day each), between their runs: ${o.hours} h of virtual time (${fmt(r.ticks, 0)} ticks), every request counted`,
  );
  const perTick = (n: number) => fmt(n / r.ticks, 2);
  const q = r.requests['schedules Query'] ?? 0;
  const sweeper = r.requests['tasks Query'] ?? 0;
  printTable(
    ['', 'in the window', 'per tick'],
    [
      ['  scheduler: Query on the due index (its shards)', fmt(q, 0), perTick(q)],
      ['  scheduler: read units', fmt(r.scheduleQueryRru, 1), perTick(r.scheduleQueryRru)],
      ["  sweeper: Query on the outbox index (the deployment's own)", fmt(sweeper, 0), perTick(sweeper)],
      ['  anything else (reads, writes, SQS, history, limits)', fmt(r.otherRequests, 0), perTick(r.otherRequests)],
      ['  consumer invocations', fmt(r.invocations, 0), perTick(r.invocations)],
      [
        '  an idle tick with no pipeline declared: Query / read units',
        '',
        `${r.bareTick.queries} / ${fmt(r.bareTick.rru, 1)}`,
      ],
    ],
    [62, 14, 10],
  );
  const month = ticksPerMonth(o.tickSeconds);
  const d = lambdaDuration(r.medianTickCpuMs, o.latencyMs, o.memoryMiB);
  /** Lambda bills each invocation's duration rounded up to the millisecond. */
  const billedMs = Math.ceil(d.totalMs);
  const lambda =
    cost(PRICES.lambda.request, month) + cost(PRICES.lambda.arm64GbSecond, gbSeconds(d.totalMs, o.memoryMiB) * month);
  const reads = cost(PRICES.dynamodb.readRequestUnit, (r.scheduleQueryRru / r.ticks) * month);
  const storageGb = (r.scheduleBytes * o.pipelines) / BYTES_PER_GB;
  const storage = cost(PRICES.dynamodb.storage, storageGb);
  const day = 86_400 / o.tickSeconds;
  printTable(
    ["The scheduler's ticks", 'per tick', 'per day', 'per month'],
    [
      ['  invocations', '1', fmt(day, 0), fmt(month, 0)],
      [
        '  DynamoDB Query (due shards)',
        fmt(q / r.ticks, 0),
        fmt((q / r.ticks) * day, 0),
        fmt((q / r.ticks) * month, 0),
      ],
      [
        '  DynamoDB read units',
        fmt(r.scheduleQueryRru / r.ticks, 1),
        fmt((r.scheduleQueryRru / r.ticks) * day, 0),
        fmt((r.scheduleQueryRru / r.ticks) * month, 0),
      ],
      [`  Lambda ms billed at ${o.memoryMiB} MiB`, fmt(billedMs, 0), fmt(billedMs * day, 0), fmt(billedMs * month, 0)],
      [
        '  $ (Lambda requests + duration, DynamoDB reads)',
        '',
        usd(((reads + lambda) / month) * day, 5),
        usd(reads + lambda, 4),
      ],
    ],
    [50, 10, 12, 12],
  );
  console.log(
    `  A tick: idle CPU ${fmt(r.medianTickCpuMs, 2)} ms on the fakes (median of ${r.tickCpuMs.length}: ${r.tickCpuMs.map((v) => fmt(v, 2)).join(', ')}), ` +
      `stretched to the function's share of a vCPU, + ${o.latencyMs} ms for its Queries (assumed); a 30-day month. The same with no pipeline declared.`,
  );
  console.log(
    `  The ${fmt(o.pipelines, 0)} schedules' storage (${fmt(r.scheduleBytes, 0)} B each with the index entry and overheads): ${usd(storage, 4)} a month. ` +
      `Per pipeline at rest: nothing polls (0 requests between runs beyond the tick's shard Queries).`,
  );
  console.log(
    `  A scheduler cold start syncs the declarations (none changed): ${fmt(r.sync.gets, 0)} GetItem + ${r.sync.scans} Scan pages = ${fmt(r.sync.rru, 1)} read units, ${usd(cost(PRICES.dynamodb.readRequestUnit, r.sync.rru), 5)} each time.`,
  );
  console.log(
    `  Declaring them: definePipeline took ${fmt(r.defineMs, 1)} ms per pipeline (median of ${fmt(o.pipelines, 0)}), ${fmt(r.defineTotalMs / 1000, 1)} s for all — ` +
      `paid at every cold start of every function that loads the registry (tasks/index.ts).`,
  );
  console.log(
    `  Their runs, for scale: ${fmt(o.pipelines, 0)} a day × ${usd(o.runCost, 6)} (section 1) = ${usd(o.runCost * o.pipelines * 30, 2)} a month (${usd(perMillion(o.runCost), 2)} per million runs).`,
  );
}
