/**
 * The arithmetic of `npm run bench:pipelines`, kept pure so that it is tested
 * (test/unit/bench/pipelines.test.ts): a run's counts priced the way `npm run bench:cost` prices a
 * task, the most runs active at once, and the comparisons (Step Functions Standard's state
 * transitions, an Amazon MWAA environment's monthly floor).
 *
 * @module
 */
import { BYTES_PER_GB, cost, PRICES, type Price } from '../prices.js';

/** Whose request: a pipeline run's own task (the orchestration) or the nodes' tasks. */
export type Side = 'run' | 'node';
export type SideTally = Record<Side, number>;

export function sideTally(): SideTally {
  return { run: 0, node: 0 };
}

/** What one side of a run made AWS do: requests and units as AWS bills them. */
export interface Counts {
  /** DynamoDB write and read request units: task table (its indexes included), history, limits, schedules. */
  readonly wru: number;
  readonly rru: number;
  /** Item-months of storage until each item's TTL, in GB-months. */
  readonly storageGbMonths: number;
  /** SQS requests billed: Kaj's (sends, visibility) and the event source mapping's (receive, delete). */
  readonly sqs: number;
  /** Of those, Kaj's sends. */
  readonly sends: number;
  /** Consumer invocations, and the records they were given (Lambda time is charged per record). */
  readonly invocations: number;
  readonly deliveries: number;
  /** Runs the scheduler created (its Lambda time per fire). */
  readonly fires: number;
}

export const NO_COUNTS: Counts = {
  wru: 0,
  rru: 0,
  storageGbMonths: 0,
  sqs: 0,
  sends: 0,
  invocations: 0,
  deliveries: 0,
  fires: 0,
};

export function addCounts(a: Counts, b: Counts): Counts {
  return {
    wru: a.wru + b.wru,
    rru: a.rru + b.rru,
    storageGbMonths: a.storageGbMonths + b.storageGbMonths,
    sqs: a.sqs + b.sqs,
    sends: a.sends + b.sends,
    invocations: a.invocations + b.invocations,
    deliveries: a.deliveries + b.deliveries,
    fires: a.fires + b.fires,
  };
}

export function scaleCounts(c: Counts, by: number): Counts {
  return {
    wru: c.wru * by,
    rru: c.rru * by,
    storageGbMonths: c.storageGbMonths * by,
    sqs: c.sqs * by,
    sends: c.sends * by,
    invocations: c.invocations * by,
    deliveries: c.deliveries * by,
    fires: c.fires * by,
  };
}

/**
 * The same work on a busy deployment, as `npm run bench:cost` costs a task: every consumer
 * invocation gets a full batch of `batch` records, so the poller's receive and delete and the
 * batch's visibility call are shared by `batch` records (alone, a nightly run's records come one
 * or two at a time).
 */
export function inFullBatches(c: Counts, batch: number): Counts {
  const invocations = c.deliveries / batch;
  return { ...c, invocations, sqs: c.sends + 3 * invocations };
}

/** The Lambda time and log volume a count stands for (bench:cost's flags, same defaults). */
export interface Assumptions {
  /** Billed ms per consumer delivery (`--consumer-ms`). */
  readonly consumerMs: number;
  readonly consumerMemoryMiB: number;
  /** Billed ms of the scheduler's tick per run it creates (`--fire-ms`). */
  readonly fireMs: number;
  readonly schedulerMemoryMiB: number;
  /** Log bytes per consumer delivery (`--log-bytes` less the API's access-log line, which no run writes). */
  readonly logBytesPerDelivery: number;
}

export interface Bill {
  readonly dynamodb: number;
  readonly sqs: number;
  readonly lambda: number;
  readonly logs: number;
  readonly total: number;
}

/** Dollars for `c`, at the list prices of bench/prices.ts. */
export function billOf(c: Counts, a: Assumptions): Bill {
  const gbS =
    c.deliveries * (a.consumerMs / 1000) * (a.consumerMemoryMiB / 1024) +
    c.fires * (a.fireMs / 1000) * (a.schedulerMemoryMiB / 1024);
  const dynamodb =
    cost(PRICES.dynamodb.writeRequestUnit, c.wru) +
    cost(PRICES.dynamodb.readRequestUnit, c.rru) +
    cost(PRICES.dynamodb.storage, c.storageGbMonths);
  const sqs = cost(PRICES.sqs.request, c.sqs);
  // A scheduler fire is no invocation of its own: the tick runs every minute anyway (at rest).
  const lambda = cost(PRICES.lambda.request, c.invocations) + cost(PRICES.lambda.arm64GbSecond, gbS);
  const logs = cost(PRICES.cloudwatch.logIngestion, (c.deliveries * a.logBytesPerDelivery) / BYTES_PER_GB);
  return { dynamodb, sqs, lambda, logs, total: dynamodb + sqs + lambda + logs };
}

/** A half-open stretch of time `[start, end)`, epoch ms. */
export interface Interval {
  readonly start: number;
  readonly end: number;
}

/** The most intervals that overlap at any moment (one ending when another starts does not overlap it). */
export function maxConcurrent(intervals: readonly Interval[]): number {
  const events: [number, number][] = [];
  for (const i of intervals) {
    if (!(i.end >= i.start)) throw new RangeError(`interval ends before it starts: ${i.start}..${i.end}`);
    if (i.end === i.start) continue;
    events.push([i.start, 1], [i.end, -1]);
  }
  // Ends before starts at the same moment.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of events) {
    now += d;
    most = Math.max(most, now);
  }
  return most;
}

/**
 * State transitions of one Step Functions Standard execution of a DAG written as a state machine:
 * one per state entered (each Task state, each Parallel state; a Parallel state's branches are its
 * states). Step Functions bills "each time a step of your workflow is executed".
 */
export function stepFunctionsTransitions(taskStates: number, parallelStates: number): number {
  if (!Number.isInteger(taskStates) || taskStates < 0 || !Number.isInteger(parallelStates) || parallelStates < 0) {
    throw new RangeError('states must be whole numbers >= 0');
  }
  return taskStates + parallelStates;
}

/** Hours AWS bills an always-on resource for in a month (its pricing examples' 730). */
export const HOURS_PER_MONTH = 730;

/** Amazon MWAA (not used by Kaj: what its pipelines are priced against), us-east-1 list prices. */
export const MWAA_PRICES = {
  /** mw1.small environment: its scheduler(s), web server, one worker and the metadata database's instance. */
  smallEnvironmentHour: {
    usd: 0.49,
    per: 1,
    unit: 'environment-hour (mw1.small)',
    source: 'https://aws.amazon.com/managed-workflows-for-apache-airflow/pricing/',
    note: 'Billed while the environment exists (no scale to zero); the base includes one worker and the schedulers (2 by default on Airflow 2, https://docs.aws.amazon.com/mwaa/latest/userguide/environment-class.html)',
  },
  smallAdditionalWorkerHour: {
    usd: 0.055,
    per: 1,
    unit: 'worker-hour (mw1.small, beyond the minimum)',
    source: 'https://aws.amazon.com/managed-workflows-for-apache-airflow/pricing/',
  },
  metaDatabase: {
    usd: 0.1,
    per: 1,
    unit: 'GB-month (metadata database)',
    source: 'https://aws.amazon.com/managed-workflows-for-apache-airflow/pricing/',
  },
} as const satisfies Record<string, Price>;

/** An MWAA environment's monthly floor: its hourly price all month, extra always-on workers, metadata storage. */
export function mwaaMonthlyFloor(o: { extraWorkers?: number; metaDatabaseGb?: number } = {}): number {
  const p = MWAA_PRICES;
  return (
    cost(p.smallEnvironmentHour, HOURS_PER_MONTH) +
    cost(p.smallAdditionalWorkerHour, HOURS_PER_MONTH * (o.extraWorkers ?? 0)) +
    cost(p.metaDatabase, o.metaDatabaseGb ?? 0)
  );
}

/** Dollars per million of something from dollars per unit. */
export function perMillion(usdEach: number): number {
  return usdEach * 1_000_000;
}

/** A pipeline run as the checks see it. */
export interface RunSeen {
  readonly id: string;
  /** Its logical date's name (`YYYY-MM-DD`). */
  readonly date: string;
  readonly status: string;
  /** Its data interval's start (ISO): the logical date every node of it must be given. */
  readonly intervalStart: string | undefined;
  /** When it took its active-run slot (its `admit#1` entry), epoch ms. */
  readonly admittedAt: number | undefined;
}

/** A node's handler run, as it noted it. */
export interface NodeExecution {
  readonly taskId: string;
  /** The run its task belongs to (its `parent_id`). */
  readonly runId: string | undefined;
  /** `ctx.logicalDate`, ISO. */
  readonly logicalDate: string | undefined;
  readonly end: number;
}

export interface RunChecks {
  readonly runs: number;
  /** Dates with more than one run, and expected dates with none. */
  readonly duplicateDates: readonly string[];
  readonly missingDates: readonly string[];
  /** Runs not `succeeded`, as `date status`. */
  readonly unsucceeded: readonly string[];
  /** The most runs active at once: from its admission to the end of its last node. */
  readonly maxActive: number;
  readonly nodeExecutions: number;
  /** Node tasks whose handler ran more than once, and executions given another logical date than their run's. */
  readonly rerunNodes: number;
  readonly wrongDates: number;
  /** Each admitted run's last node end, by run id. */
  readonly lastEnd: ReadonlyMap<string, number>;
}

/** The checks of a backfill: one run per date, all succeeded, at most so many active, the right dates. */
export function checkRuns(
  runs: readonly RunSeen[],
  executions: readonly NodeExecution[],
  expectedDates: Iterable<string>,
): RunChecks {
  const perDate = new Map<string, number>();
  for (const r of runs) perDate.set(r.date, (perDate.get(r.date) ?? 0) + 1);
  const lastEnd = new Map<string, number>();
  for (const e of executions) {
    if (e.runId !== undefined) lastEnd.set(e.runId, Math.max(lastEnd.get(e.runId) ?? e.end, e.end));
  }
  const intervals: Interval[] = [];
  for (const r of runs) {
    const end = lastEnd.get(r.id);
    if (r.admittedAt !== undefined && end !== undefined) intervals.push({ start: r.admittedAt, end });
  }
  const byId = new Map(runs.map((r) => [r.id, r]));
  const perTask = new Map<string, number>();
  for (const e of executions) perTask.set(e.taskId, (perTask.get(e.taskId) ?? 0) + 1);
  return {
    runs: runs.length,
    duplicateDates: [...perDate].filter(([, n]) => n > 1).map(([d]) => d),
    missingDates: [...new Set(expectedDates)].filter((d) => !perDate.has(d)),
    unsucceeded: runs.filter((r) => r.status !== 'succeeded').map((r) => `${r.date} ${r.status}`),
    maxActive: maxConcurrent(intervals),
    nodeExecutions: executions.length,
    rerunNodes: [...perTask.values()].filter((n) => n > 1).length,
    wrongDates: executions.filter(
      (e) => e.logicalDate === undefined || e.logicalDate !== byId.get(e.runId ?? '')?.intervalStart,
    ).length,
    lastEnd,
  };
}

/** Every calendar day from `from` to `to` (YYYY-MM-DD), both included. */
export function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    out.push(new Date(t).toISOString().slice(0, 10));
  }
  return out;
}

/** The calendar day (YYYY-MM-DD) of an ISO time in `zone`; `?` without one. */
export function dateIn(zone: string, iso: string | undefined): string {
  if (iso === undefined) return '?';
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    new Date(iso),
  );
}
