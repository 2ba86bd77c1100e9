/**
 * Capacity of a Kaj deployment for the reference workload (docs/capacity.md): 10 M tasks a
 * day, a 350/s peak hour, 5-second tasks, a 105,000-task backlog at the start of the peak —
 * today's defaults against `capacity: '10m-per-day'`, side by side.
 *
 *   npm run bench:capacity -- [--runs 3] [--from 13.5] [--measure-from 14] [--to 16] [--seed 1]
 *                             [--only defaults|preset] [--config '{"capacity":"10m-per-day",...}']
 *                             [--formulas-only]
 *
 * 1. The sizing table (Little's law, bench/capacity/sizing.ts) for 1 M / 10 M / 100 M tasks a day.
 * 2. The whole day as a fluid model (per-second arithmetic, deterministic).
 * 3. The peak replayed through the real code (`createKaj`: submitter, consumer, sweeper) on a
 *    virtual clock, from `--from` (warm-up) through `--to`, measured from `--measure-from`;
 *    the median of `--runs` seeds. The whole day is `--from 0 --measure-from 0 --to 24`; it takes
 *    long (about 2,000-5,000 tasks a second of real time, 10 M tasks). `--config` adds a column
 *    for any configuration (the JSON of `kaj:config`), e.g. the preset without its batching window.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { type KajConfig, parseConfig } from '../infra/config.js';
import { PRIORITIES, type Priority } from '../shared/config/resources.js';
import { fluidDay, INVOCATION_OVERHEAD_S, serviceRate, sizingTable } from './capacity/sizing.js';
import { type SimReport, simulate } from './capacity/simulate.js';
import { hourlyRates, SEED_WORKLOAD } from './capacity/workload.js';
import { markdownTable } from './lib/report.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    from: { type: 'string', default: '13.5' },
    'measure-from': { type: 'string', default: '14' },
    to: { type: 'string', default: '16' },
    seed: { type: 'string', default: '1' },
    only: { type: 'string' },
    config: { type: 'string' },
    'formulas-only': { type: 'boolean', default: false },
  },
});
const RUNS = Number(values.runs);
const FROM = Number(values.from);
const MEASURE_FROM = Number(values['measure-from']);
const TO = Number(values.to);
const SEED = Number(values.seed);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('--runs must be a positive integer');
if (!(FROM >= 0 && FROM <= MEASURE_FROM && MEASURE_FROM < TO && TO <= 48)) {
  throw new Error('need 0 <= --from <= --measure-from < --to <= 48 (hours of the day)');
}
if (values.only !== undefined && !['defaults', 'preset'].includes(values.only)) {
  throw new Error('--only must be "defaults" or "preset"');
}

const w = SEED_WORKLOAD;
const configs: [string, KajConfig][] = [
  ['defaults', parseConfig({})],
  ['10m-per-day', parseConfig({ capacity: '10m-per-day' })],
];
const chosen = configs.filter(
  ([label]) => values.only === undefined || (values.only === 'defaults') === (label === 'defaults'),
);
if (values.config !== undefined) chosen.push(['--config', parseConfig(JSON.parse(values.config) as unknown)]);

const fmtInt = (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '—');
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
const table = (head: readonly string[], rows: readonly (readonly string[])[]) => markdownTable(head, rows);

console.log(`# Kaj capacity: the reference workload (${new Date().toISOString()})\n`);
const rates = hourlyRates(w);
console.log(
  `Workload: ${fmtInt(w.tasksPerDay)} tasks/day; peak ${w.peakPerSecond}/s at ${w.peakHour}:00-${w.peakHour + 1}:00; ` +
    `mix high/normal/low ${PRIORITIES.map((p) => `${w.mix[p] * 100} %`).join(' / ')}; ` +
    `tasks ${w.taskSeconds} s ± ${w.spread * 100} % (uniform); ${fmtInt(w.backlog)} tasks queued at ${w.peakHour}:00.`,
);
console.log(`Arrivals per second by hour: ${rates.map((r) => r.toFixed(0)).join(' ')}\n`);

// 1. The sizing table.
console.log('## Sizing (Little’s law, full batches of 10, 2× headroom, 50 ms per invocation)\n');
console.log(
  table(
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
    sizingTable(w, [1e6, 1e7, 1e8], [0.1, 1, 5], 10, 2, (configs[0] as [string, KajConfig])[1]).map((r) => [
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
const fluid = chosen.map(([label, c]) => [label, c, fluidDay(w, c)] as const);
console.log(
  table(
    ['', ...fluid.map(([label]) => label)],
    [
      ['API admits (rate / burst)', ...fluid.map(([, c]) => `${c.throttling.rateLimit} / ${c.throttling.burstLimit}`)],
      ['tasks admitted in the day', ...fluid.map(([, , f]) => fmtInt(f.admitted))],
      ['most waiting at producers', ...fluid.map(([, , f]) => fmtInt(f.maxProducerBacklog))],
      ...PRIORITIES.flatMap((p) => [
        [
          `${p}: concurrency → tasks/s served`,
          ...fluid.map(([, c, f]) => `${c.concurrency[p]} → ${f.perPriority[p].serviceRate.toFixed(1)}`),
        ],
        [
          `${p}: largest queue (hour)`,
          ...fluid.map(([, , f]) => `${fmtInt(f.perPriority[p].maxBacklog)} (${f.perPriority[p].maxBacklogHour}:00)`),
        ],
        [
          `${p}: last task queued at ${w.peakHour}:00 starts after`,
          ...fluid.map(([, , f]) => fmtS(f.perPriority[p].lastOfBacklogStartsSeconds * 1000)),
        ],
        [
          `${p}: queue empty again after`,
          ...fluid.map(([, , f]) => fmtS(secondsToMs(f.perPriority[p].emptyAgainSeconds))),
        ],
        [`${p}: queued at midnight`, ...fluid.map(([, , f]) => fmtInt(f.perPriority[p].endOfDayBacklog))],
      ]),
    ],
  ),
);

function secondsToMs(s: number | undefined): number | undefined {
  return s === undefined ? undefined : s * 1000;
}

if (values['formulas-only']) process.exit(0);

// 3. The peak through the real code.
console.log(
  `\n## The peak through the real code: ${hh(FROM)} warm-up, measured ${hh(MEASURE_FROM)}-${hh(TO)}, ` +
    `median of ${RUNS} run(s) (seeds ${Array.from({ length: RUNS }, (_, i) => SEED + i).join(', ')})\n`,
);
const reports = new Map<string, SimReport[]>();
for (let i = 0; i < RUNS; i += 1) {
  for (const [label, config] of chosen) {
    const r = await simulate(label, config, {
      workload: w,
      seed: SEED + i,
      fromHour: FROM,
      measureFromHour: MEASURE_FROM,
      toHour: TO,
      progress: (line) => process.stderr.write(`${line}\n`),
    });
    process.stderr.write(
      `run ${i + 1}/${RUNS} ${label}: ${fmtInt(PRIORITIES.reduce((s, p) => s + r.perPriority[p].started, 0))} tasks started, ` +
        `${r.realSeconds.toFixed(0)} s real, ${fmtInt(r.virtualSteps)} clock steps\n`,
    );
    reports.set(label, [...(reports.get(label) ?? []), r]);
  }
}

function hh(h: number): string {
  const m = Math.round(h * 60);
  return `${String(Math.floor(m / 60) % 24).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
}

const labels = chosen.map(([label]) => label);
const med = (label: string, f: (r: SimReport) => number | undefined) =>
  median((reports.get(label) ?? []).map((r) => f(r) ?? Number.NaN));
/** Median, or "not by …" when any run left backlog tasks unstarted. */
const drain = (label: string, p: Priority) => {
  const rs = reports.get(label) ?? [];
  const left = median(rs.map((r) => r.perPriority[p].backlogLeft));
  if (left > 0) return `not by ${hh(TO)} (${fmtInt(left)} left)`;
  return fmtS(med(label, (r) => r.perPriority[p].backlogDrainMs));
};
/** A wait percentile; `≥` when some tasks were still waiting at the end and it falls among them. */
const wait = (label: string, f: (r: SimReport) => [number, boolean]) => {
  const rs = reports.get(label) ?? [];
  return `${rs.some((r) => f(r)[1]) ? '≥ ' : ''}${fmtS(median(rs.map((r) => f(r)[0])))}`;
};
/** Requests of one caller per task: per admitted task for the API, per handler run for the others. */
const perTask = (label: string, who: 'api' | 'consumer' | 'poller', name: string) =>
  med(label, (r) => {
    const n = r.totals[`${who}:${name}`] ?? 0;
    const tasks = who === 'api' ? r.api.accepted : PRIORITIES.reduce((s, p) => s + r.perPriority[p].ran, 0);
    return tasks > 0 ? n / tasks : Number.NaN;
  }).toFixed(2);
const each = (f: (label: string) => string) => labels.map(f);

/** Whether the replay holds the start of the peak, when the backlog is queued. */
const withBacklog = FROM <= w.peakHour && w.peakHour < TO;
const rows: string[][] = [
  [
    'API admits (rate / burst)',
    ...each((l) => `${med(l, (r) => r.api.rateLimit)} / ${med(l, (r) => r.api.burstLimit)}`),
  ],
  ['API: most admitted in a second', ...each((l) => fmtInt(med(l, (r) => r.api.peakAcceptedPerSecond)))],
  ['API: most waiting at producers', ...each((l) => fmtInt(med(l, (r) => r.api.maxProducerBacklog)))],
  ['API: p99 wait to be admitted', ...each((l) => fmtS(med(l, (r) => r.api.p99AdmitWaitMs)))],
];
for (const p of PRIORITIES) {
  const at = (f: (x: SimReport['perPriority'][Priority]) => number | undefined) => (l: string) =>
    med(l, (r) => f(r.perPriority[p]));
  rows.push(
    [
      `**${p}**: produced / started / runs`,
      ...each((l) => [at((x) => x.arrived)(l), at((x) => x.started)(l), at((x) => x.ran)(l)].map(fmtInt).join(' / ')),
    ],
    [
      `${p}: largest queue / at ${hh(TO)}`,
      ...each((l) => `${fmtInt(at((x) => x.maxBacklog)(l))} / ${fmtInt(at((x) => x.endBacklog)(l))}`),
    ],
    [`${p}: last task of its backlog share starts after`, ...each((l) => (withBacklog ? drain(l, p) : '—'))],
    [
      `${p}: queue back under one batch after`,
      ...each((l) =>
        !withBacklog
          ? '—'
          : (reports.get(l) ?? []).some((r) => r.perPriority[p].recoveredMs === undefined)
            ? `not by ${hh(TO)}`
            : fmtS(at((x) => x.recoveredMs)(l)),
      ),
    ],
    [
      `${p}: wait p50 / p99`,
      ...each(
        (l) =>
          `${wait(l, (r) => [r.perPriority[p].p50WaitMs, r.perPriority[p].p50IsLowerBound])} / ` +
          wait(l, (r) => [r.perPriority[p].p99WaitMs, r.perPriority[p].p99IsLowerBound]),
      ),
    ],
    [
      `${p}: wait p99, the backlog left out`,
      ...each((l) => wait(l, (r) => [r.perPriority[p].p99FreshWaitMs, r.perPriority[p].p99FreshIsLowerBound])),
    ],
    [
      `${p}: tasks per invocation`,
      ...each((l) => (at((x) => x.ran)(l) / Math.max(1, at((x) => x.invocations)(l))).toFixed(1)),
    ],
    [
      `${p}: peak concurrency used / max`,
      ...each((l) => `${fmtInt(at((x) => x.peakConcurrency)(l))} / ${fmtInt(at((x) => x.maxConcurrency)(l))}`),
    ],
  );
}
rows.push(
  ['consumer: peak concurrent invocations', ...each((l) => fmtInt(med(l, (r) => r.consumerPeakConcurrency)))],
  [
    'DynamoDB: most writes in a second (WCU)',
    ...each((l) => `${fmtInt(med(l, (r) => r.peaks['ddb.writes']))} (${fmtInt(med(l, (r) => r.peaks['ddb.wcu']))})`),
  ],
  [
    'DynamoDB: most reads in a second (RCU)',
    ...each(
      (l) =>
        `${fmtInt(med(l, (r) => (r.peaks['ddb.reads'] ?? 0) + (r.peaks['ddb.reads.eventual'] ?? 0)))} (${fmtInt(med(l, (r) => r.peaks['ddb.rcu']))})`,
    ),
  ],
  [
    'DynamoDB: outbox index writes, most in a second',
    ...each((l) => fmtInt(med(l, (r) => r.peaks['gsi.writes'] ?? 0))),
  ],
  [
    'DynamoDB writes per task: submit + run',
    ...each((l) => `${perTask(l, 'api', 'ddb.writes')} + ${perTask(l, 'consumer', 'ddb.writes')}`),
  ],
  [
    'DynamoDB reads per task: submit + run (of which eventual)',
    ...each(
      (l) =>
        `${perTask(l, 'api', 'ddb.reads')} + ${perTask(l, 'consumer', 'ddb.reads')} (${perTask(l, 'consumer', 'ddb.reads.eventual')})`,
    ),
  ],
  ['SQS: most requests in a second', ...each((l) => fmtInt(med(l, (r) => r.peaks['sqs.requests'])))],
  [
    'SQS requests per task: submit + run + pollers',
    ...each(
      (l) =>
        `${perTask(l, 'api', 'sqs.requests')} + ${perTask(l, 'consumer', 'sqs.requests')} + ${perTask(l, 'poller', 'sqs.requests')}`,
    ),
  ],
  ['sweeper: messages re-sent', ...each((l) => fmtInt(med(l, (r) => r.sweeperResent)))],
);
console.log(table(['', ...labels], rows));

console.log(
  `\nWaits run from the moment a task is produced (for the backlog: ${hh(w.peakHour)}) until its handler starts, ` +
    'waiting for the API to admit it included; tasks still waiting at the end count with their wait so far ' +
    '(a percentile among them is a lower bound, "≥"). Service rates the formulas assume when a mapping is saturated: ' +
    labels
      .map((l) => {
        const c = (chosen.find(([x]) => x === l) as [string, KajConfig])[1];
        const rates = PRIORITIES.map((p) =>
          serviceRate(c.concurrency[p], c.batchSize[p], w.taskSeconds, w.spread, INVOCATION_OVERHEAD_S).toFixed(0),
        );
        return `${l} ${rates.join(' / ')} tasks/s`;
      })
      .join('; ') +
    '.',
);
