/**
 * What pipelines cost and how a backfill behaves, from what Kaj's code actually does:
 *
 *   npm run bench:pipelines -- [--nights 3] [--runs 3] [--consumer-ms 1.5] [--log-bytes 1700]
 *                              [--access-log-bytes 178] [--fire-ms 25] [--pipelines 1000] [--rest-hours 23]
 *                              [--only 1,2,3] [--local] [--local-node-ms 200,1500] [--admit-poll-ms 1000]
 *
 * 1. A run of the 5-node `nightly_sales` pipeline (tasks/nightly-sales.ts: its graph, schedule and
 *    types, with handlers that do no file I/O), fired by its schedule night after night: every
 *    AWS request (SQS; DynamoDB on the task, history, limits and schedules tables) and unit by
 *    AWS's rules, Lambda invocations and GB-seconds, priced as `npm run bench:cost` prices a task;
 *    split into the run's own share (the orchestration) and the nodes' tasks; against the goal of
 *    $5 per million node executions, Step Functions Standard and Amazon MWAA's floor.
 * 2. A 30-date backfill with `maxActiveRuns: 2` while the live schedule fires, on the virtual
 *    clock with seeded random node durations: runs active at once, one run per date, the logical
 *    date every node saw, the virtual time and the bill. `--local`: the same backfill on the
 *    embedded emulators of `npm start` (real time, `admitPollMs` small), its wall time.
 * 3. `--pipelines` pipelines declared, between runs: every request counted over `--rest-hours`,
 *    the scheduler's ticks priced per month.
 *
 * Everything runs Kaj's composition root (`createKaj`) over the contract-tested fakes of testing/
 * behind the benches' billing decorators (bench/pipelines/world.ts). Counts are exact and
 * deterministic; CPU and wall times are medians of `--runs`. Prices: bench/prices.ts and
 * bench/pipelines/model.ts (MWAA).
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
import { parseArgs } from 'node:util';
import { readDeployment, readSchedulerDeployment } from './lib/deployment.js';
import { num } from './lib/report.js';
import { PRICES_AS_OF, PRICES_REGION } from './prices.js';
import { measureAtRest } from './pipelines/at-rest.js';
import { simulateBackfill, type BackfillOptions } from './pipelines/backfill.js';
import { runLocalBackfill, printLocal } from './pipelines/local.js';
import type { Assumptions } from './pipelines/model.js';
import { printAtRest, printBackfill } from './pipelines/print-backfill.js';
import { printRunCost, runFigures } from './pipelines/print-run.js';
import { runCostOfNightlySales } from './pipelines/run-cost.js';

const { values } = parseArgs({
  options: {
    nights: { type: 'string', default: '3' },
    runs: { type: 'string', default: '3' },
    'consumer-ms': { type: 'string', default: '1.5' },
    'log-bytes': { type: 'string', default: '1700' },
    'access-log-bytes': { type: 'string', default: '178' },
    'fire-ms': { type: 'string', default: '25' },
    pipelines: { type: 'string', default: '1000' },
    'rest-hours': { type: 'string', default: '23' },
    only: { type: 'string', default: '1,2,3' },
    local: { type: 'boolean', default: false },
    'local-node-ms': { type: 'string', default: '200,1500' },
    'admit-poll-ms': { type: 'string', default: '1000' },
  },
});
const n = (name: Exclude<keyof typeof values, 'local'>, integer: boolean, min: number): number =>
  num(values[name], name, integer, min);
const only = new Set(
  String(values.only)
    .split(',')
    .map((s) => s.trim()),
);
const RUNS = n('runs', true, 3);
/** What `npm run bench:cost` at rest says the example deployment costs a month (docs/measured.md, Cost per task). */
const DEPLOYMENT_AT_REST = [3.38, 7.38] as const;
/** Assumed round trip of a Query from Lambda in the region (bench:schedules' assumption). */
const QUERY_MS = 5;

const model = await readDeployment();
const scheduler = await readSchedulerDeployment();
const tables = { taskTable: model.table, schedulesTable: scheduler.schedulesTable };
const assumptions: Assumptions = {
  consumerMs: n('consumer-ms', false, 0),
  consumerMemoryMiB: model.functions.consumer.memoryMiB,
  fireMs: n('fire-ms', false, 0),
  schedulerMemoryMiB: scheduler.scheduler.memoryMiB,
  logBytesPerDelivery: Math.max(0, n('log-bytes', false, 0) - n('access-log-bytes', false, 0)),
};
console.log(`Kaj pipelines — prices ${PRICES_REGION} as of ${PRICES_AS_OF}; model: ${model.source}`);
console.log(
  `  consumer ${assumptions.consumerMemoryMiB} MiB, ${assumptions.consumerMs} ms billed per delivery (--consumer-ms); ` +
    `scheduler ${assumptions.schedulerMemoryMiB} MiB, ${assumptions.fireMs} ms per run it fires (--fire-ms); ` +
    `${assumptions.logBytesPerDelivery} log bytes per delivery (--log-bytes less --access-log-bytes: no run writes an access-log line); ` +
    `mappings of batch ${model.mappings.batchSize}`,
);

const runCost = await runCostOfNightlySales({ days: n('nights', true, 3), seed: 1, ...tables });
const figures = runFigures(runCost, assumptions, model.mappings.batchSize);
if (only.has('1')) printRunCost(runCost, assumptions, model.mappings.batchSize, DEPLOYMENT_AT_REST);

const backfill: BackfillOptions = {
  seed: 1,
  ...tables,
  nights: 4,
  from: '2026-11-02',
  to: '2026-12-01',
  maxActiveRuns: 2,
  nodeMs: [10_000, 240_000],
};
if (only.has('2')) {
  const results = [];
  for (let seed = 1; seed <= RUNS; seed += 1) results.push(await simulateBackfill({ ...backfill, seed }));
  printBackfill(backfill, results, assumptions, figures.bills.all.total);
}
if (values.local) {
  const [lo, hi] = String(values['local-node-ms'])
    .split(',')
    .map((s) => num(s.trim(), 'local-node-ms', false, 0));
  const local = [];
  for (let seed = 1; seed <= RUNS; seed += 1) {
    local.push(
      await runLocalBackfill({
        seed,
        from: backfill.from,
        to: backfill.to,
        maxActiveRuns: backfill.maxActiveRuns,
        nodeMs: [lo ?? 200, hi ?? 1500],
        admitPollMs: n('admit-poll-ms', true, 1),
      }),
    );
  }
  printLocal(local, backfill.maxActiveRuns);
}
if (only.has('3')) {
  const pipelines = n('pipelines', true, 0);
  const hours = n('rest-hours', true, 1);
  if (hours > 23) {
    console.error('--rest-hours must be at most 23: the window lies between two nightly fires');
    process.exit(2);
  }
  const rest = await measureAtRest({ pipelines, hours, runs: RUNS, seed: 1, ...tables });
  printAtRest(rest, {
    pipelines,
    hours,
    tickSeconds: scheduler.tickSeconds,
    memoryMiB: scheduler.scheduler.memoryMiB,
    latencyMs: QUERY_MS,
    runCost: figures.bills.all.total,
  });
}
