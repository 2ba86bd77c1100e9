/**
 * The payroll run of issue "Flow control", simulated on a virtual clock through Kaj's own
 * limiter and flow control (bench/payroll/simulate.ts): 50,000 slips, each a 0.8 s render (cpu
 * lane, `database` concurrency 60) then a 1.2 s email (io lane, `email_provider`) to a provider
 * that answers 429 beyond 40 calls in any sliding second. Two configurations side by side:
 * `seed` (email concurrency 45; floor 50,000 / 37.5 = 1,333 s) and `kaj` (rate 40/s +
 * concurrency 50; floor 50,000 / 40 = 1,250 s), each the median of `--runs` seeds.
 *
 *   npm run bench:payroll-sim -- [--slips 50000] [--runs 3] [--seed 1] [--reserve 1]
 *
 * `--reserve` sets the limiter's starts taken per rate write, for every process.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import {
  DEFAULT_MODEL,
  goalViolations,
  PAYROLL_CONFIGS,
  type PayrollModel,
  type PayrollReport,
  simulatePayroll,
} from './payroll/simulate.js';
import { markdownTable, median, num } from './lib/report.js';
import { cost, PRICES } from './prices.js';

const { values } = parseArgs({
  options: {
    slips: { type: 'string', default: '50000' },
    runs: { type: 'string', default: '3' },
    seed: { type: 'string', default: '1' },
    reserve: { type: 'string', default: String(DEFAULT_MODEL.reserve) },
  },
});
const SLIPS = num(values.slips, 'slips', true, 1);
const RUNS = num(values.runs, 'runs', true, 1);
const SEED = num(values.seed, 'seed', true, Number.MIN_SAFE_INTEGER);
const m: PayrollModel = { ...DEFAULT_MODEL, reserve: num(values.reserve, 'reserve', true, 1) };
const configs = Object.values(PAYROLL_CONFIGS);

// ---- the runs ------------------------------------------------------------------------------------
const results = new Map<string, PayrollReport[]>();
for (const config of configs) {
  const runs: PayrollReport[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    console.error(
      `${config.name}: run ${i + 1} of ${RUNS} (seed ${SEED + i}, ${SLIPS.toLocaleString('en-US')} slips)...`,
    );
    runs.push(await simulatePayroll({ config, slips: SLIPS, seed: SEED + i, model: m }));
  }
  results.set(config.name, runs);
}

// ---- the figures ---------------------------------------------------------------------------------
const fmt = (v: number, digits = 0) =>
  Number.isFinite(v)
    ? v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : '—';

/** Task-table reads are consistent GetItems (1 read unit each); writes are not priced here. */
const usd = (r: PayrollReport) =>
  cost(PRICES.dynamodb.writeRequestUnit, r.store.writeUnits) +
  cost(PRICES.sqs.request, r.sqs.total) +
  cost(PRICES.dynamodb.readRequestUnit, r.table.reads);
const tasksOf = (r: PayrollReport) => 2 * r.slips;

type Row = readonly [label: string, value: (r: PayrollReport) => number, digits: number];
const ROWS: readonly Row[] = [
  ['makespan (s)', (r) => r.makespanS, 1],
  ['floor (s)', (r) => r.floorS, 1],
  ['makespan / floor (goal ≤ 1.05)', (r) => r.ratio, 3],
  ['steady email rate (/s, 10th-90th pct)', (r) => r.provider.steadyRate, 2],
  ['provider 429s (goal 0)', (r) => r.provider.status429, 0],
  ['peak calls in any 1-s window (limit 40)', (r) => r.provider.peakCallsPerWindow, 0],
  ['peak concurrent emails (handlers)', (r) => r.peaks.emails, 0],
  ['peak email_provider slots held', (r) => r.peaks.emailHolders, 0],
  ['peak concurrent renders (database 60)', (r) => r.peaks.renders, 0],
  ['duplicate emails (goal 0)', (r) => r.provider.duplicates, 0],
  ['failed tasks (goal 0)', (r) => r.failed, 0],
  ['slips emailed', (r) => r.provider.emailed, 0],
  ['retries after a 429', (r) => r.retries, 0],
  ['deferrals per task', (r) => r.deferrals.perTask, 2],
  ['  per email task', (r) => r.deferrals.email / r.slips, 2],
  ['  per render task', (r) => r.deferrals.render / r.slips, 2],
  ['limiter store calls per task', (r) => r.store.callsPerTask, 2],
  ['  limits-table UpdateItems per task', (r) => r.store.updateItems / tasksOf(r), 2],
  ['  write units per task', (r) => r.store.writeUnitsPerTask, 2],
  ['  store calls per granted acquire', (r) => r.acquires.perGrant.calls, 2],
  ['  store calls per refused acquire', (r) => r.acquires.perRefusal.calls, 2],
  ['  write units per refused acquire', (r) => r.acquires.perRefusal.writeUnits, 2],
  ['  starts forfeited late by the limiter', (r) => r.acquires.lateStarts, 0],
  ['SQS requests per task', (r) => r.sqs.perTask, 2],
  ['  SQS requests per deferral', (r) => r.sqs.perDeferral, 2],
  ['task-table reads per task (claims)', (r) => r.table.reads / tasksOf(r), 2],
  ['mean ask → start, emails (ms)', (r) => r.acquires.meanStartWaitMs, 0],
  ['mean email permit held, grant → release (ms)', (r) => r.acquires.meanHoldMs, 0],
  ['AWS requests of the run (USD)', usd, 2],
  ['sim wall time (s)', (r) => r.sim.wallS, 1],
  ['sim CPU time (s)', (r) => r.sim.cpuS, 1],
];

console.log(`# Kaj payroll run, simulated (${new Date().toISOString()})\n`);
console.log(
  `${SLIPS.toLocaleString('en-US')} slips: render ${m.renderMs / 1000} s (cpu lane, database) → email ${m.emailMs / 1000} s ` +
    `(io lane, email_provider); provider: ${m.providerLimit} per sliding ` +
    `${m.providerWindowMs / 1000} s, else 429 + Retry-After ${m.retryAfterSeconds} s. Lanes: cpu ${m.lanes.cpu.workers} workers ` +
    `on ${m.lanes.cpu.processes} processes, io ${m.lanes.io.workers} on ${m.lanes.io.processes} (one limiter each). ` +
    `Limits table ${m.storeLatencyMs} ms per UpdateItem, SQS / task table ${m.requestMs} ms per request. ` +
    `Limiter: localWaitMs ${m.localWaitMs}, reserve ${m.reserve}.\n`,
);
for (const config of configs) console.log(`- **${config.name}**: \`${JSON.stringify(config.limits)}\``);
console.log('');

const head = [
  '',
  ...[...results].flatMap(([name, runs]) => [...runs.map((r) => `${name} s${r.seed}`), `**${name} median**`]),
];
const rows = ROWS.map(([label, f, digits]) => [
  label,
  ...[...results].flatMap(([, runs]) => {
    const vs = runs.map(f);
    return [...vs.map((v) => fmt(v, digits)), `**${fmt(median(vs), digits)}**`];
  }),
]);
console.log(markdownTable(head, rows, true));

console.log('\n## Goals (makespan ≤ 1.05 × floor, no 429, no duplicate, none failed)\n');
for (const [name, runs] of results) {
  for (const r of runs) {
    const missed = goalViolations(r);
    console.log(`- ${name} seed ${r.seed}: ${missed.length === 0 ? 'all met' : `NOT MET: ${missed.join('; ')}`}`);
  }
}

console.log('\n## What a deferral costs (medians)\n');
for (const [name, runs] of results) {
  const d = median(runs.map((r) => r.deferrals.total));
  if (!(d > 0)) {
    console.log(`- ${name}: no deferral`);
    continue;
  }
  const reasons = new Map<string, number[]>();
  for (const r of runs)
    for (const [k, v] of Object.entries(r.deferrals.byReason)) reasons.set(k, [...(reasons.get(k) ?? []), v]);
  const med = (f: (r: PayrollReport) => number, digits = 2) => fmt(median(runs.map(f)), digits);
  console.log(
    `- ${name}: ${fmt(d)} deferrals (${[...reasons].map(([k, vs]) => `${k} ${fmt(median(vs))}`).join(', ')}); each: ` +
      `${med((r) => r.sqs.perDeferral)} SQS requests (its ChangeMessageVisibility — or SendMessage when ` +
      `refreshed from half of maxReceiveCount — and 0.1 ReceiveMessage), ` +
      `${med((r) => r.acquires.perRefusal.calls)} limiter store calls ` +
      `(${med((r) => r.acquires.perRefusal.updateItems)} UpdateItems, ` +
      `${med((r) => r.acquires.perRefusal.writeUnits)} write units), and 1 consistent read of the task ` +
      `(the claim) — ${med((r) => r.deferrals.refreshed, 0)} of them refreshed.`,
  );
}
