/**
 * Section 1's report: a run's requests and units by side, priced, against the goal and against
 * Step Functions Standard and Amazon MWAA.
 *
 * @module
 */
import { fmt, median, printTable, usd } from '../lib/report.js';
import { PRICES } from '../prices.js';
import {
  type Assumptions,
  addCounts,
  billOf,
  type Counts,
  HOURS_PER_MONTH,
  inFullBatches,
  MWAA_PRICES,
  mwaaMonthlyFloor,
  perMillion,
  type Side,
  stepFunctionsTransitions,
} from './model.js';
import type { RunCost } from './run-cost.js';

/** The goal: all in, per million node executions. */
export const GOAL_PER_MILLION_NODES = 5;
const DAYS_PER_MONTH = HOURS_PER_MONTH / 24;

/** The median night's counts of one side (every count its own median). */
export function medianCounts(r: RunCost, side: Side): Counts {
  const all = r.nights.map((n) => n.counts[side]);
  const first = all[0];
  if (first === undefined) throw new Error('no nights');
  const keys = Object.keys(first) as (keyof Counts)[];
  return Object.fromEntries(keys.map((k) => [k, median(all.map((c) => c[k]))])) as unknown as Counts;
}

/** A run's figures: its bill by side, alone and in full batches, per million runs and node executions. */
export function runFigures(r: RunCost, a: Assumptions, batch: number) {
  const run = medianCounts(r, 'run');
  const node = medianCounts(r, 'node');
  const all = addCounts(run, node);
  const bills = { run: billOf(run, a), node: billOf(node, a), all: billOf(all, a) };
  const busy = billOf(addCounts(inFullBatches(run, batch), inFullBatches(node, batch)), a).total;
  return {
    run,
    node,
    all,
    bills,
    perMillionRuns: perMillion(bills.all.total),
    perMillionNodes: perMillion(bills.all.total) / r.nodes,
    busyPerMillionNodes: perMillion(busy) / r.nodes,
    orchestrationShare: bills.run.total / bills.all.total,
  };
}

export function printRunCost(r: RunCost, a: Assumptions, batch: number, restPerMonth: readonly [number, number]): void {
  const f = runFigures(r, a, batch);
  const n = r.nodes;
  console.log(
    `\n1. A run of nightly_sales (${n} nodes), fired by its schedule and running alone: ${r.nights.length} nights on the virtual clock, each measured on its own (the median night)`,
  );
  const keys = [...new Set(r.nights.flatMap((x) => [...x.requests.keys()]))];
  const cell = (k: string, s: Side) => median(r.nights.map((x) => x.requests.get(k)?.[s] ?? 0));
  const rows: string[][] = [['Requests per run']];
  for (const k of keys) {
    const run = cell(k, 'run');
    const node = cell(k, 'node');
    rows.push([`  ${k}`, fmt(run, 2), fmt(node, 2), fmt(run + node, 2)]);
  }
  const units = (c: Counts) => `${fmt(c.wru, 2)} / ${fmt(c.rru, 2)}`;
  const tables = [...new Set(r.nights.flatMap((x) => [...x.wru.keys()]))];
  const wruOf = (t: string, s: Side) => median(r.nights.map((x) => x.wru.get(t)?.[s] ?? 0));
  const failed = (s: Side) => median(r.nights.map((x) => x.failedConditions[s]));
  rows.push(
    ['Units per run'],
    ['  DynamoDB write / read units (AWS rules)', units(f.run), units(f.node), units(f.all)],
    ...tables.map((t) => [
      `    write units: ${t}`,
      fmt(wruOf(t, 'run'), 2),
      fmt(wruOf(t, 'node'), 2),
      fmt(wruOf(t, 'run') + wruOf(t, 'node'), 2),
    ]),
    [
      '    of the writes, condition failed (billed)',
      fmt(failed('run'), 2),
      fmt(failed('node'), 2),
      fmt(failed('run') + failed('node'), 2),
    ],
    ['  SQS requests billed', fmt(f.run.sqs, 2), fmt(f.node.sqs, 2), fmt(f.all.sqs, 2)],
    [
      '  Lambda invocations / deliveries',
      ...[f.run, f.node, f.all].map((c) => `${fmt(c.invocations, 2)} / ${fmt(c.deliveries, 0)}`),
    ],
    ['$ per million runs'],
    ...(['dynamodb', 'sqs', 'lambda', 'logs', 'total'] as const).map((k) => [
      `  ${k === 'dynamodb' ? 'DynamoDB' : k === 'sqs' ? 'SQS' : k === 'lambda' ? 'Lambda' : k === 'logs' ? 'CloudWatch Logs' : 'total'}`,
      usd(perMillion(f.bills.run[k])),
      usd(perMillion(f.bills.node[k])),
      usd(perMillion(f.bills.all[k])),
    ]),
  );
  printTable(['', 'the run (orchestration)', `the ${n} nodes' tasks`, 'all'], rows, [44, 24, 20, 12]);
  const identicalLater = r.nights.slice(1).every((x) => same(x, r.nights[1]));
  const succeeded = r.statuses.filter((s) => s === 'succeeded').length;
  console.log(
    `  ${r.nights.length} nights, ${r.statuses.length} runs, ${succeeded} succeeded; counts identical in every night: ${r.identical ? 'yes' : `no (nights 2–${r.nights.length} ${identicalLater ? 'identical' : 'differ'}; the first night also makes the slot item's holders map: one more limits UpdateItem)`}`,
  );
  const met = f.perMillionNodes <= GOAL_PER_MILLION_NODES;
  console.log(
    `\n  All in, alone: ${usd(f.bills.all.total, 6)} per run = ${usd(f.perMillionRuns)} per million runs = ${usd(f.perMillionNodes)} per million node executions.`,
  );
  console.log(
    `  Goal ≤ $${GOAL_PER_MILLION_NODES} per million node executions: ${met ? 'MET' : 'NOT MET'}. ` +
      `The orchestration (the run's own invocations, its item's writes, its history, its slot item, the schedule's fire) is ${(100 * f.orchestrationShare).toFixed(0)}% ` +
      `(${usd(perMillion(f.bills.run.total) / n)} per million node executions); the nodes' own tasks ${usd(perMillion(f.bills.node.total) / n)}.`,
  );
  console.log(
    `  On a busy deployment (full batches of ${batch}, as bench:cost costs a task: receives, deletes, visibility calls and invocations shared by ${batch} records): ${usd(f.busyPerMillionNodes)} per million node executions (${f.busyPerMillionNodes <= GOAL_PER_MILLION_NODES ? 'met' : 'not met'}).`,
  );

  const transitions = stepFunctionsTransitions(n, 1);
  const sfnRun =
    (PRICES.stepFunctions.standardTransition.usd * transitions) / PRICES.stepFunctions.standardTransition.per;
  const mwaa = mwaaMonthlyFloor();
  const kajMonth = f.bills.all.total * DAYS_PER_MONTH;
  console.log('\n  Compared, the same DAG (list prices):');
  console.log(
    `  - Step Functions Standard (Parallel[extract → clean | customers] → summary → dashboard: ${transitions} state transitions, one per state entered): ` +
      `${usd(sfnRun, 6)} a run = ${usd(perMillion(sfnRun))} per million runs = ${usd(perMillion(sfnRun) / n)} per million node executions in transitions alone, ` +
      `before the ${n} Lambda invocations of its Task states; ${PRICES.stepFunctions.standardTransition.source}`,
  );
  console.log(
    `  - Amazon MWAA, mw1.small (the smallest class priced here): $${MWAA_PRICES.smallEnvironmentHour.usd}/h × ${HOURS_PER_MONTH} h = ${usd(mwaa)} a month whatever runs ` +
      `(its minimum worker and schedulers included; metadata storage $${MWAA_PRICES.metaDatabase.usd}/GB-month extra): at 1 run a day ${usd(mwaa / DAYS_PER_MONTH)} a run; ${MWAA_PRICES.smallEnvironmentHour.source}`,
  );
  console.log(
    `  - Kaj at 1 run a day: ${usd(kajMonth, 4)} a month of runs, on a deployment that costs ${usd(restPerMonth[0])}–${usd(restPerMonth[1])} a month at rest (docs/measured.md, Cost per task).`,
  );
}

const same = (a: RunCost['nights'][number] | undefined, b: RunCost['nights'][number] | undefined): boolean =>
  JSON.stringify([...(a?.requests ?? [])]) === JSON.stringify([...(b?.requests ?? [])]);
