/**
 * The payroll run of issue "Flow control", simulated on a virtual clock through Kaj's own
 * limiter and flow control (bench/payroll/simulate.ts): 50,000 slips, each a 0.8 s render (cpu
 * lane, `database` concurrency 60) then a 1.2 s email (io lane, `email_provider`) to a provider
 * that answers 429 beyond 40 calls in any sliding second. Two configurations side by side:
 * `seed` (email concurrency 45; floor 50,000 / 37.5 = 1,333 s) and `kaj` (rate 40/s +
 * concurrency 50; floor 50,000 / 40 = 1,250 s), each the median of `--runs` seeds.
 *
 *   npm run bench:payroll-sim -- [--slips 50000] [--runs 3] [--seed 1] [--json] [--only seed|kaj]
 *                                [--local-wait-ms 1000] [--reserve 1] [--spread 0]
 *                                [--knobs] [--knob-slips 10000]
 *
 * `--local-wait-ms` and `--reserve` set the limiter's knobs for every process; `--spread 0.1`
 * draws durations within ±10 %. `--knobs` adds one run (seed `--seed`, `--knob-slips` slips) of
 * the `kaj` configuration per knob setting.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import {
  DEFAULT_MODEL,
  goalViolations,
  PAYROLL_CONFIGS,
  type PayrollConfig,
  type PayrollModel,
  type PayrollReport,
  simulatePayroll,
} from './payroll/simulate.js';
import { markdownTable, median, num } from './lib/report.js';
import { PRICES } from './prices.js';

const { values } = parseArgs({
  options: {
    slips: { type: 'string', default: '50000' },
    runs: { type: 'string', default: '3' },
    seed: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
    only: { type: 'string' },
    'local-wait-ms': { type: 'string' },
    reserve: { type: 'string' },
    spread: { type: 'string' },
    knobs: { type: 'boolean', default: false },
    'knob-slips': { type: 'string', default: '10000' },
  },
});
const SLIPS = num(values.slips, 'slips', true, 1);
const RUNS = num(values.runs, 'runs', true, 1);
const SEED = num(values.seed, 'seed', true, Number.MIN_SAFE_INTEGER);
const KNOB_SLIPS = num(values['knob-slips'], 'knob-slips', true, 1);
if (values.only !== undefined && !(values.only in PAYROLL_CONFIGS)) throw new Error('--only must be "seed" or "kaj"');

const model: Partial<PayrollModel> = {
  ...(values['local-wait-ms'] === undefined ? {} : { localWaitMs: Number(values['local-wait-ms']) }),
  ...(values.reserve === undefined ? {} : { reserve: Number(values.reserve) }),
  ...(values.spread === undefined ? {} : { spread: Number(values.spread) }),
};
const m: PayrollModel = { ...DEFAULT_MODEL, ...model };
const configs: PayrollConfig[] = Object.values(PAYROLL_CONFIGS).filter(
  (c) => values.only === undefined || c.name === values.only,
);
const log = (line: string) => {
  if (!values.json) console.error(line);
};

// ---- the runs ------------------------------------------------------------------------------------
const results = new Map<string, PayrollReport[]>();
for (const config of configs) {
  const runs: PayrollReport[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    log(`${config.name}: run ${i + 1} of ${RUNS} (seed ${SEED + i}, ${SLIPS.toLocaleString('en-US')} slips)...`);
    runs.push(
      await simulatePayroll({
        config,
        slips: SLIPS,
        seed: SEED + i,
        model,
        progress: SLIPS >= 20_000 ? log : undefined,
      }),
    );
  }
  results.set(config.name, runs);
}

interface Knob {
  readonly label: string;
  readonly config: PayrollConfig;
  readonly model: Partial<PayrollModel>;
}
const knobs: Knob[] = [];
if (values.knobs) {
  const kaj = PAYROLL_CONFIGS.kaj;
  for (const localWaitMs of [1000, 500, 250, 100, 50, 25]) {
    knobs.push({ label: `localWaitMs ${localWaitMs}`, config: kaj, model: { ...model, localWaitMs } });
  }
  knobs.push({ label: 'reserve 4', config: kaj, model: { ...model, reserve: 4 } });
  knobs.push({ label: 'reserve 4, localWaitMs 100', config: kaj, model: { ...model, reserve: 4, localWaitMs: 100 } });
  knobs.push({ label: 'spread ±10 % (sensitivity)', config: kaj, model: { ...model, spread: 0.1 } });
  knobs.push({
    label: 'config: concurrency 90 instead of 50',
    config: {
      name: 'kaj-c90',
      limits: { ...kaj.limits, email_provider: { ...kaj.limits.email_provider, concurrency: 90 } },
    },
    model,
  });
}
const knobResults: { knob: Knob; report: PayrollReport }[] = [];
for (const knob of knobs) {
  log(`knobs: ${knob.label} (seed ${SEED}, ${KNOB_SLIPS.toLocaleString('en-US')} slips)...`);
  knobResults.push({
    knob,
    report: await simulatePayroll({
      config: knob.config,
      slips: KNOB_SLIPS,
      seed: SEED,
      model: knob.model,
    }),
  });
}

// ---- the figures ---------------------------------------------------------------------------------
const fmt = (v: number, digits = 0) =>
  Number.isFinite(v)
    ? v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : '—';

/** Task-table reads are consistent GetItems (1 read unit each); writes are not priced here. */
const usd = (r: PayrollReport) =>
  (r.store.writeUnits * PRICES.dynamodb.writeRequestUnit.usd) / PRICES.dynamodb.writeRequestUnit.per +
  (r.sqs.total * PRICES.sqs.request.usd) / PRICES.sqs.request.per +
  (r.table.reads * PRICES.dynamodb.readRequestUnit.usd) / PRICES.dynamodb.readRequestUnit.per;
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

if (values.json) {
  const medians = Object.fromEntries(
    [...results].map(([name, runs]) => [
      name,
      Object.fromEntries(ROWS.map(([label, f]) => [label, median(runs.map(f))])),
    ]),
  );
  console.log(
    JSON.stringify({ slips: SLIPS, runs: Object.fromEntries(results), medians, knobs: knobResults, model: m }, null, 2),
  );
} else {
  const table = (head: readonly string[], rows: readonly (readonly string[])[]) => markdownTable(head, rows, true);

  console.log(`# Kaj payroll run, simulated (${new Date().toISOString()})\n`);
  console.log(
    `${SLIPS.toLocaleString('en-US')} slips: render ${m.renderMs / 1000} s (cpu lane, database) → email ${m.emailMs / 1000} s ` +
      `(io lane, email_provider)${m.spread > 0 ? `, durations ±${m.spread * 100} %` : ''}; provider: ${m.providerLimit} per sliding ` +
      `${m.providerWindowMs / 1000} s, else 429 + Retry-After ${m.retryAfterSeconds} s. Lanes: cpu ${m.lanes.cpu.workers} workers ` +
      `on ${m.lanes.cpu.processes} processes, io ${m.lanes.io.workers} on ${m.lanes.io.processes} (one limiter each). ` +
      `Limits table ${m.storeLatencyMs} ms per UpdateItem, SQS / task table ${m.requestMs} ms per request. ` +
      `Limiter: localWaitMs ${m.localWaitMs}, reserve ${m.reserve}.\n`,
  );
  for (const config of configs) {
    console.log(`- **${config.name}**: \`${JSON.stringify(config.limits)}\``);
  }
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
  console.log(table(head, rows));

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
    console.log(
      `- ${name}: ${fmt(d)} deferrals (${[...reasons].map(([k, vs]) => `${k} ${fmt(median(vs))}`).join(', ')}); each: ` +
        `${fmt(median(runs.map((r) => r.sqs.perDeferral)), 2)} SQS requests (its ChangeMessageVisibility — or SendMessage when ` +
        `refreshed from half of maxReceiveCount — and 0.1 ReceiveMessage), ` +
        `${fmt(median(runs.map((r) => r.acquires.perRefusal.calls)), 2)} limiter store calls ` +
        `(${fmt(median(runs.map((r) => r.acquires.perRefusal.updateItems)), 2)} UpdateItems, ` +
        `${fmt(median(runs.map((r) => r.acquires.perRefusal.writeUnits)), 2)} write units), and 1 consistent read of the task ` +
        `(the claim) — ${fmt(median(runs.map((r) => r.deferrals.refreshed)))} of them refreshed.`,
    );
  }

  if (knobResults.length > 0) {
    console.log(
      `\n## Knobs: the kaj configuration, one run each (seed ${SEED}, ${KNOB_SLIPS.toLocaleString('en-US')} slips)\n`,
    );
    console.log(
      table(
        [
          'setting',
          'makespan / floor',
          'steady /s',
          '429s',
          'peak / 1 s',
          'peak emails',
          'deferrals / task',
          'store calls / task',
          'WCU / task',
          'SQS / task',
          'late starts forfeited',
          'goals',
        ],
        knobResults.map(({ knob, report: r }) => [
          knob.label,
          fmt(r.ratio, 3),
          fmt(r.provider.steadyRate, 2),
          fmt(r.provider.status429),
          fmt(r.provider.peakCallsPerWindow),
          fmt(r.peaks.emails),
          fmt(r.deferrals.perTask, 2),
          fmt(r.store.callsPerTask, 2),
          fmt(r.store.writeUnitsPerTask, 2),
          fmt(r.sqs.perTask, 2),
          fmt(r.acquires.lateStarts),
          goalViolations(r).length === 0 ? 'met' : 'not met',
        ]),
      ),
    );
  }
}
