/**
 * Capacity of a Kaj deployment for the reference workload (docs/capacity.md): 10 M tasks a
 * day, a 350/s peak hour, 5-second tasks, a 105,000-task backlog at the start of the peak —
 * today's defaults against `capacity: '10m-per-day'`, side by side.
 *
 *   npm run bench:capacity -- [--runs 3] [--from 13.5] [--measure-from 14] [--to 16]
 *                             [--only defaults|preset] [--config '{"capacity":"10m-per-day",...}']
 *                             [--formulas-only]
 *
 * 1. The sizing table (Little's law, bench/capacity/sizing.ts) for 1 M / 10 M / 100 M tasks a day.
 * 2. The whole day as a fluid model (per-second arithmetic, deterministic).
 * 3. The peak replayed through the real code (`createKaj`: submitter, consumer, sweeper) on a
 *    virtual clock, from `--from` (warm-up) through `--to`, measured from `--measure-from`;
 *    the median of `--runs` seeds (1, 2, ...). The whole day is `--from 0 --measure-from 0 --to 24`;
 *    it takes long (about 2,000-5,000 tasks a second of real time, 10 M tasks). `--config` adds a
 *    column for any configuration (the JSON of `kaj:config`), e.g. the preset without its batching window.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { type KajConfig, parseConfig } from '../infra/config.js';
import { PRIORITIES } from '../shared/config/resources.js';
import { fluidDay, sizingTable } from './capacity/sizing.js';
import { type SimReport, simulate } from './capacity/simulate.js';
import { SEED_WORKLOAD } from './capacity/workload.js';
import { markdownTable } from './lib/report.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    from: { type: 'string', default: '13.5' },
    'measure-from': { type: 'string', default: '14' },
    to: { type: 'string', default: '16' },
    only: { type: 'string' },
    config: { type: 'string' },
    'formulas-only': { type: 'boolean', default: false },
  },
});
const RUNS = Number(values.runs);
const FROM = Number(values.from);
const MEASURE_FROM = Number(values['measure-from']);
const TO = Number(values.to);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('--runs must be a positive integer');
if (!(FROM >= 0 && FROM <= MEASURE_FROM && MEASURE_FROM < TO && TO <= 48)) {
  throw new Error('need 0 <= --from <= --measure-from < --to <= 48 (hours of the day)');
}
if (values.only !== undefined && !['defaults', 'preset'].includes(values.only)) {
  throw new Error('--only must be "defaults" or "preset"');
}

const w = SEED_WORKLOAD;
const defaults = parseConfig({});
const chosen: [string, KajConfig][] = [
  ['defaults', defaults],
  ['10m-per-day', parseConfig({ capacity: '10m-per-day' })],
];
if (values.only !== undefined) chosen.splice(values.only === 'defaults' ? 1 : 0, 1);
if (values.config !== undefined) chosen.push(['--config', parseConfig(JSON.parse(values.config) as unknown)]);

const fmtInt = (v: number | undefined) =>
  v !== undefined && Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '—';
const fmtS = (ms: number | undefined) =>
  ms === undefined || !Number.isFinite(ms)
    ? '—'
    : ms < 10_000
      ? `${(ms / 1000).toFixed(2)} s`
      : ms < 3_600_000
        ? `${(ms / 60_000).toFixed(1)} min`
        : `${(ms / 3_600_000).toFixed(1)} h`;
const median = (xs: readonly number[]) => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[Math.floor(s.length / 2)] as number);
};
/** `14:15` for an hour of the day. */
const hh = (h: number) => {
  const m = Math.round(h * 60);
  return `${String(Math.floor(m / 60) % 24).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
};

console.log(`# Kaj capacity: the reference workload (${new Date().toISOString()})\n`);
console.log(
  `Workload: ${fmtInt(w.tasksPerDay)} tasks/day; peak ${w.peakPerSecond}/s at ${w.peakHour}:00-${w.peakHour + 1}:00; ` +
    `mix high/normal/low ${PRIORITIES.map((p) => `${w.mix[p] * 100} %`).join(' / ')}; ` +
    `tasks ${w.taskSeconds} s ± ${w.spread * 100} % (uniform); ${fmtInt(w.backlog)} tasks queued at ${w.peakHour}:00.\n`,
);

// 1. The sizing table.
console.log('## Sizing (Little’s law, full batches of 10, 2× headroom, 50 ms per invocation)\n');
console.log(
  markdownTable(
    [
      'tasks/day',
      'task',
      'peak/s',
      'in flight',
      'invocations',
      'concurrency h / n / l',
      'API rate',
      'writes/s',
      'defaults carry it',
      'needs more than the account’s defaults',
    ],
    sizingTable(w, [1e6, 1e7, 1e8], [0.1, 1, 5], 10, 2, defaults).map((r) => [
      `${r.tasksPerDay / 1e6} M`,
      `${r.taskSeconds} s`,
      fmtInt(r.peakPerSecond),
      fmtInt(r.inFlight),
      fmtInt(Math.ceil(r.invocations)),
      PRIORITIES.map((p) => fmtInt(r.concurrency[p])).join(' / '),
      fmtInt(r.apiRateLimit),
      fmtInt(r.writesPerSecond),
      r.defaultsCarry ? 'yes' : 'no',
      r.binds.join('; ') || '—',
    ]),
  ),
);

// 2. The whole day as a fluid.
console.log('\n## The whole day, fluid model (deterministic)\n');
const fluid = chosen.map(([label, c]) => ({ label, c, f: fluidDay(w, c) }));
const fluidRow = (name: string, cell: (x: (typeof fluid)[number]) => string) => [name, ...fluid.map(cell)];
console.log(
  markdownTable(
    ['', ...fluid.map((x) => x.label)],
    [
      fluidRow('API admits (rate / burst)', ({ c }) => `${c.throttling.rateLimit} / ${c.throttling.burstLimit}`),
      fluidRow('tasks admitted in the day', ({ f }) => fmtInt(f.admitted)),
      fluidRow('most waiting at producers', ({ f }) => fmtInt(f.maxProducerBacklog)),
      ...PRIORITIES.flatMap((p) => [
        fluidRow(
          `${p}: concurrency → tasks/s served`,
          ({ c, f }) => `${c.concurrency[p]} → ${f.perPriority[p].serviceRate.toFixed(1)}`,
        ),
        fluidRow(
          `${p}: largest queue (hour)`,
          ({ f }) => `${fmtInt(f.perPriority[p].maxBacklog)} (${f.perPriority[p].maxBacklogHour}:00)`,
        ),
        fluidRow(`${p}: last task queued at ${w.peakHour}:00 starts after`, ({ f }) =>
          fmtS(f.perPriority[p].lastOfBacklogStartsSeconds * 1000),
        ),
        fluidRow(`${p}: queue empty again after`, ({ f }) => {
          const s = f.perPriority[p].emptyAgainSeconds;
          return fmtS(s === undefined ? undefined : s * 1000);
        }),
        fluidRow(`${p}: queued at midnight`, ({ f }) => fmtInt(f.perPriority[p].endOfDayBacklog)),
      ]),
    ],
  ),
);

if (values['formulas-only']) process.exit(0);

// 3. The peak through the real code.
console.log(
  `\n## The peak through the real code: ${hh(FROM)} warm-up, measured ${hh(MEASURE_FROM)}-${hh(TO)}, ` +
    `median of ${RUNS} run(s) (seeds ${Array.from({ length: RUNS }, (_, i) => i + 1).join(', ')})\n`,
);
const runs = new Map<string, SimReport[]>(chosen.map(([label]) => [label, []]));
for (let i = 0; i < RUNS; i += 1) {
  for (const [label, config] of chosen) {
    const r = await simulate(label, config, {
      workload: w,
      seed: i + 1,
      fromHour: FROM,
      measureFromHour: MEASURE_FROM,
      toHour: TO,
      progress: (line) => process.stderr.write(`${line}\n`),
    });
    process.stderr.write(
      `run ${i + 1}/${RUNS} ${label}: ${fmtInt(PRIORITIES.reduce((s, p) => s + r.perPriority[p].started, 0))} tasks started, ` +
        `${r.realSeconds.toFixed(0)} s real\n`,
    );
    runs.get(label)?.push(r);
  }
}

/**
 * The runs of one configuration as one report: every number the median of the runs' (those a run
 * did not reach left out), every flag set if any run's is.
 */
function medianOf(xs: readonly unknown[]): unknown {
  const first = xs.find((x) => x !== undefined);
  if (typeof first === 'boolean') return xs.some((x) => x === true);
  if (typeof first !== 'object' || first === null)
    return median(xs.map((x) => (typeof x === 'number' ? x : Number.NaN)));
  const keys = new Set(xs.flatMap((x) => Object.keys(x as object)));
  return Object.fromEntries([...keys].map((k) => [k, medianOf(xs.map((x) => (x as Record<string, unknown>)[k]))]));
}
const columns = chosen.map(([label, config]) => {
  const rs = runs.get(label) ?? [];
  return { label, config, rs, m: medianOf(rs) as SimReport };
});
type Column = (typeof columns)[number];
const row = (name: string, cell: (c: Column) => string) => [name, ...columns.map(cell)];
/** A wait percentile; `≥` when some tasks were still waiting at the end and it falls among them. */
const wait = (x: { ms: number; lowerBound: boolean }) => `${x.lowerBound ? '≥ ' : ''}${fmtS(x.ms)}`;
/**
 * Requests per task of each `who:name` count, joined by `+`: per admitted task for the API, per
 * handler run for the others (consumer, poller).
 */
const perTask = ({ rs }: Column, ...counts: string[]) =>
  counts
    .map((k) =>
      median(
        rs.map((r) => {
          const tasks = k.startsWith('api:')
            ? r.api.accepted
            : PRIORITIES.reduce((s, p) => s + r.perPriority[p].ran, 0);
          return tasks > 0 ? (r.totals[k] ?? 0) / tasks : Number.NaN;
        }),
      ).toFixed(2),
    )
    .join(' + ');

/** Whether the replay holds the start of the peak, when the backlog is queued. */
const withBacklog = FROM <= w.peakHour && w.peakHour < TO;
const notBy = `not by ${hh(TO)}`;
const rows: string[][] = [
  row('API admits (rate / burst)', ({ config }) => `${config.throttling.rateLimit} / ${config.throttling.burstLimit}`),
  row('API: most admitted in a second', ({ m }) => fmtInt(m.api.peakAcceptedPerSecond)),
  row('API: most waiting at producers', ({ m }) => fmtInt(m.api.maxProducerBacklog)),
  row('API: p99 wait to be admitted', ({ m }) => fmtS(m.api.p99AdmitWaitMs)),
];
for (const p of PRIORITIES) {
  const of = (name: string, cell: (x: SimReport['perPriority'][typeof p], c: Column) => string) =>
    row(name, (c) => cell(c.m.perPriority[p], c));
  rows.push(
    of(`**${p}**: produced / started / runs`, (x) => [x.arrived, x.started, x.ran].map(fmtInt).join(' / ')),
    of(`${p}: largest queue / at ${hh(TO)}`, (x) => `${fmtInt(x.maxBacklog)} / ${fmtInt(x.endBacklog)}`),
    of(`${p}: last task of its backlog share starts after`, (x) =>
      !withBacklog ? '—' : x.backlogLeft > 0 ? `${notBy} (${fmtInt(x.backlogLeft)} left)` : fmtS(x.backlogDrainMs),
    ),
    of(`${p}: queue back under one batch after`, (x) =>
      !withBacklog ? '—' : x.unrecovered ? notBy : fmtS(x.recoveredMs),
    ),
    of(`${p}: wait p50 / p99`, (x) => `${wait(x.p50)} / ${wait(x.p99)}`),
    of(`${p}: wait p99, the backlog left out`, (x) => wait(x.p99Fresh)),
    of(`${p}: tasks per invocation`, (x) => (x.ran / Math.max(1, x.invocations)).toFixed(1)),
    of(
      `${p}: peak concurrency used / max`,
      (x, c) => `${fmtInt(x.peakConcurrency)} / ${fmtInt(c.config.concurrency[p])}`,
    ),
  );
}
rows.push(
  row('consumer: peak concurrent invocations', ({ m }) => fmtInt(m.consumerPeakConcurrency)),
  row(
    'DynamoDB: most writes in a second (WCU)',
    ({ m }) => `${fmtInt(m.peaks['ddb.writes'])} (${fmtInt(m.peaks['ddb.wcu'])})`,
  ),
  row('DynamoDB: most reads in a second (RCU)', ({ m }) => `${fmtInt(m.peakReads)} (${fmtInt(m.peaks['ddb.rcu'])})`),
  row('DynamoDB: outbox index writes, most in a second', ({ m }) => fmtInt(m.peakIndexWrites)),
  row('DynamoDB writes per task: submit + run', (c) => perTask(c, 'api:ddb.writes', 'consumer:ddb.writes')),
  row(
    'DynamoDB reads per task: submit + run (of which eventual)',
    (c) => `${perTask(c, 'api:ddb.reads', 'consumer:ddb.reads')} (${perTask(c, 'consumer:ddb.reads.eventual')})`,
  ),
  row('SQS: most requests in a second', ({ m }) => fmtInt(m.peaks['sqs.requests'])),
  row('SQS requests per task: submit + run + pollers', (c) =>
    perTask(c, 'api:sqs.requests', 'consumer:sqs.requests', 'poller:sqs.requests'),
  ),
  row('sweeper: messages re-sent', ({ m }) => fmtInt(m.sweeperResent)),
);
console.log(markdownTable(['', ...columns.map((c) => c.label)], rows));

console.log(
  `\nWaits run from the moment a task is produced (for the backlog: ${hh(w.peakHour)}) until its handler starts, ` +
    'waiting for the API to admit it included; tasks still waiting at the end count with their wait so far ' +
    '(a percentile among them is a lower bound, "≥").',
);
