/**
 * What the scheduler costs, and whether it keeps up, from what its code actually does:
 *
 *   npm run bench:schedules -- [--runs 3] [--sizes 10,1000,10000] [--dynamo-ms 5] [--sqs-ms 10]
 *                              [--steady 100] [--emulator-budget-s 300] [--no-emulator]
 *
 * Drives the real composition root (`createKaj` with a `schedules` store) with a fake clock:
 * - counts: the in-memory fakes of testing/ behind the accounting decorators (AWS's billing rules:
 *   bench/lib/dynamo-accounting.ts, schedule-accounting.ts, request-counting.ts); deterministic;
 * - time: the same tick over the bare fakes (Kaj's own code), and over the real adapters and SDK
 *   clients against the emulators in a child process (so `process.cpuUsage()` counts Kaj and the
 *   SDK, not the emulators), whose requests are checked against the ledgers';
 * - Lambda: that CPU time stretched to the function's share of a vCPU, plus the waits on AWS
 *   (requests × a stated latency ÷ the tick's concurrency), billed as GB-seconds, with the
 *   tables, the function and its rule read from the synthesized CDK template. Prices: bench/prices.ts.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
import { parseArgs } from 'node:util';
import * as z from 'zod';
import { deleteResources, ensureResources } from '../local/bootstrap.js';
import { createKaj, createKajOnAws, type Kaj } from '../shared/service/all-in-one.js';
import { createDynamoDbClient, createSqsClient } from '../shared/aws/clients.js';
import { DEFAULTS, resourceNames, SCHEDULE_TABLE_SCHEMA, TABLE_SCHEMA } from '../shared/config/resources.js';
import { type FunctionConfig, runtimeSettings } from '../shared/config/settings.js';
import { clientConfig, emulatorClients, emulatorSettings } from '../shared/aws/wiring.js';
import type { ScheduleRecord } from '../shared/schedule/model.js';
import { jitterOffsetMs } from '../shared/schedule/timing.js';
import { defineTask, TaskRegistry } from '../shared/task/define.js';
import {
  AccountingTaskStore,
  type DynamoSummary,
  DynamoLedger,
  summarize,
  type Item,
  itemSize,
  projectedItem,
  queryReadUnits,
} from './lib/dynamo-accounting.js';
import { startEmulatorProcess } from './lib/emulator-process.js';
import { CountingTaskQueue, SqsLedger } from './lib/request-counting.js';
import { AccountingScheduleStore } from './lib/schedule-accounting.js';
import { readSchedulerDeployment, type SchedulerDeploymentModel } from './lib/deployment.js';
import {
  type Drain,
  drainTicks,
  type DurationEstimate,
  fireSpread,
  gbSeconds,
  ioTimeMs,
  lambdaDuration,
  lateSends,
  memoryToFit,
  storedBytes,
  ticksPerMonth,
  vcpuShare,
} from './lib/schedule-model.js';
import { BYTES_PER_GB, cost, PRICES, PRICES_AS_OF, PRICES_REGION } from './prices.js';
import { BenchClock, seededRandom } from './lib/determinism.js';
import { putItems } from './lib/put-items.js';
import { RequestCounter } from '../local/request-counter.js';
import { fmt, median, num, printTable, usd } from './lib/report.js';
import { MemoryScheduleStore } from '../testing/memory-schedule-store.js';
import { MemoryTaskQueue } from '../testing/memory-task-queue.js';
import { MemoryTaskStore } from '../testing/memory-task-store.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '10,1000,10000' },
    'dynamo-ms': { type: 'string', default: '5' },
    'sqs-ms': { type: 'string', default: '10' },
    steady: { type: 'string', default: '100' },
    'emulator-budget-s': { type: 'string', default: '300' },
    'no-emulator': { type: 'boolean', default: false },
  },
});
const OPTS = {
  runs: num(values.runs, 'runs', true, 1),
  sizes: String(values.sizes)
    .split(',')
    .map((s) => num(s.trim(), 'sizes', true, 1)),
  latency: {
    dynamoMs: num(values['dynamo-ms'], 'dynamo-ms', false, 0),
    sqsMs: num(values['sqs-ms'], 'sqs-ms', false, 0),
  },
  steady: num(values.steady, 'steady', true, 1),
  emulatorBudgetMs: num(values['emulator-budget-s'], 'emulator-budget-s', false, 0) * 1000,
  emulator: values['no-emulator'] !== true,
};

const SECOND = 1000;
const DAY_MS = 86_400 * SECOND;
/** When the schedules are created, and the midnight they first fire at. */
const CREATED = Date.parse('2026-12-01T12:00:00.000Z');
const MIDNIGHT = Date.parse('2026-12-02T00:00:00.000Z');
/** The tick that hands over midnight (its horizon is one tick ahead), and the one before it (nothing due). */
const FIRE_TICK = MIDNIGHT - 30 * SECOND;
const IDLE_TICK = FIRE_TICK - DEFAULTS.scheduleTickSeconds * SECOND;
/** The budget the function gives a tick: its timeout (55 s) less 10 s (functions/scheduler.ts). */
const TIMEOUT_S = 55;
const BUDGET_MS = (TIMEOUT_S - 10) * SECOND;
const JITTER = '10m';
const JITTER_MS = 600 * SECOND;
const CALLER = { owner: 'arn:aws:iam::123456789012:role/kaj-producer' };
const CONCURRENCY = DEFAULTS.scheduleTickConcurrency;
const MEMORIES = [128, 256] as const;
/** Recent runs a schedule keeps: after this many fires its item stops growing. */
const RECENT = DEFAULTS.scheduleRecentRuns;

const registry = new TaskRegistry([
  defineTask({
    type: 'daily_report',
    schema: z.object({ tenant: z.string(), report: z.string() }),
    handler: async () => ({ sent: true }),
  }),
]);

const nameOf = (i: number): string => `tenant-${String(i).padStart(5, '0')}-daily-report`;
const bodyOf = (i: number, jitter: string | undefined): Record<string, unknown> => ({
  cron: '0 0 * * *',
  timezone: 'UTC',
  overlap: 'allow',
  type: 'daily_report',
  payload: { tenant: `tenant-${String(i).padStart(5, '0')}`, report: 'daily-usage' },
  ...(jitter === undefined ? {} : { jitter }),
});

type StoredItem = Record<string, unknown>;

type World = ReturnType<typeof memoryWorld>;

/**
 * Kaj over the in-memory fakes, the schedules store holding copies of `seed` (items as stored);
 * with `accounting`, every request is billed. `maxPerOwner`: the schedules one caller may create.
 */
function memoryWorld(
  model: SchedulerDeploymentModel,
  seed: Iterable<StoredItem>,
  at: number,
  accounting: boolean,
  maxPerOwner?: number,
) {
  const clock = new BenchClock(at);
  const schedules = new MemoryScheduleStore();
  for (const item of seed) schedules.items.set(String(item.name), structuredClone(item) as unknown as ScheduleRecord);
  const tasks = new MemoryTaskStore();
  const queue = new MemoryTaskQueue({ now: () => clock.now() });
  const ledgers = { schedules: new DynamoLedger(), tasks: new DynamoLedger(), sqs: new SqsLedger() };
  const accounted = accounting
    ? new AccountingScheduleStore(
        schedules,
        model.schedulesTable,
        ledgers.schedules,
        SCHEDULE_TABLE_SCHEMA.dueIndex.name,
      )
    : undefined;
  const kaj = createKaj({
    store: accounting
      ? new AccountingTaskStore(tasks, model.taskTable, ledgers.tasks, TABLE_SCHEMA.outboxIndex.name)
      : tasks,
    queue: accounting ? new CountingTaskQueue(queue, ledgers.sqs) : queue,
    registry,
    settings: runtimeSettings(),
    queueNames: resourceNames('kaj').queues,
    clock,
    random: seededRandom(1),
    schedules: accounted ?? schedules,
    ...(maxPerOwner === undefined ? {} : { scheduling: { maxPerOwner } }),
  });
  const unbilled = (): number =>
    accounted === undefined ? 0 : accounted.unbilled.DeleteItem + accounted.unbilled.Scan;
  return { kaj, clock, schedules, tasks, queue, ledgers, unbilled };
}

/**
 * `n` schedules created through `kaj.schedules.put` at CREATED, as stored. One caller creates
 * them all: the deployment lets it own `n` (the default cap is DEFAULTS.scheduleMaxPerOwner).
 */
async function seedSchedules(
  model: SchedulerDeploymentModel,
  n: number,
  jitter: string | undefined,
): Promise<StoredItem[]> {
  const w = memoryWorld(model, [], CREATED, false, n);
  const service = w.kaj.schedules;
  if (service === undefined) throw new Error('createKaj built no schedule service');
  for (let i = 0; i < n; i += 1) await service.put(nameOf(i), bodyOf(i, jitter), CALLER);
  return [...w.schedules.items.values()] as unknown as StoredItem[];
}

/**
 * When each run the world's queue holds becomes visible, in the order the tick sent them (nothing
 * receives them: the queue holds every run sent; a schedule's runs go to the default priority).
 */
function runsVisibleAt(w: World): number[] {
  const queued = w.queue.queued('normal');
  if (queued.length !== w.queue.sent.length) throw new Error('a run was sent to a priority other than normal');
  return queued.map((m) => m.visibleAt);
}

type Timed = Awaited<ReturnType<typeof timedTick>>;

async function timedTick(kaj: Kaj) {
  const ticker = kaj.ticker;
  if (ticker === undefined) throw new Error('createKaj built no ticker');
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const report = await ticker.tick(BUDGET_MS);
  const wallMs = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { report, wallMs, cpuMs: (c.user + c.system) / 1000 };
}

type TickCounts = Awaited<ReturnType<typeof countedTick>>;

/**
 * Runs one billed tick at the world's clock and sums up what it did: `pagesOnBusiestShard`, the
 * due-index pages of the shard with the most; `byCommand`, requests by API over both tables and
 * SQS, as an SDK client would count them.
 */
async function countedTick(w: World) {
  const marks = { s: w.ledgers.schedules.ops.length, t: w.ledgers.tasks.ops.length, q: w.ledgers.sqs.calls.length };
  const report = await w.kaj.ticker?.tick(BUDGET_MS);
  if (report === undefined) throw new Error('createKaj built no ticker');
  const sOps = w.ledgers.schedules.ops.slice(marks.s);
  const tOps = w.ledgers.tasks.ops.slice(marks.t);
  const calls = w.ledgers.sqs.calls.slice(marks.q);
  const pages = new Map<string, number>();
  for (const o of sOps) if (o.api === 'Query') pages.set(o.label, (pages.get(o.label) ?? 0) + 1);
  const sqsByApi: Record<string, number> = {};
  for (const c of calls) sqsByApi[c.api] = (sqsByApi[c.api] ?? 0) + c.requests;
  const byCommand: Record<string, number> = {};
  for (const o of [...sOps, ...tOps]) byCommand[`dynamodb ${o.api}`] = (byCommand[`dynamodb ${o.api}`] ?? 0) + 1;
  for (const [api, n] of Object.entries(sqsByApi)) byCommand[`sqs ${api}`] = n;
  return {
    report,
    schedules: summarize(sOps),
    tasks: summarize(tOps),
    sqsRequests: calls.reduce((s, c) => s + c.requests, 0),
    sqsBilled: calls.reduce((s, c) => s + c.billed, 0),
    sqsByApi,
    pagesOnBusiestShard: Math.max(0, ...pages.values()),
    byCommand,
  };
}

type EmulatorEnv = Awaited<ReturnType<typeof startEmulatorEnv>>;

/** A function returning the commands sent since this call, by `service Command` as `TickCounts.byCommand` has them. */
function sentSince(counter: RequestCounter): () => Record<string, number> {
  const before = { ...counter.counts.requests };
  return () => {
    const out: Record<string, number> = {};
    for (const [key, n] of Object.entries(counter.counts.requests)) {
      const [service, command] = key.split(':');
      const name = `${service} ${command}`;
      out[name] = (out[name] ?? 0) + n - (before[key] ?? 0);
    }
    return out;
  };
}

/** The emulators in a child process, and SDK clients tuned as on Lambda whose every command is counted. */
async function startEmulatorEnv() {
  const child = await startEmulatorProcess();
  const settings = emulatorSettings(child.endpoints);
  const counter = new RequestCounter();
  const dynamodb = createDynamoDbClient(clientConfig(settings, 'dynamodb'));
  const sqs = createSqsClient(clientConfig(settings, 'sqs'));
  counter.instrument(dynamodb, 'dynamodb');
  counter.instrument(sqs, 'sqs');
  const admin = emulatorClients(child.endpoints);
  return {
    admin,
    dynamodb,
    sqs,
    counter,
    async stop() {
      dynamodb.destroy();
      sqs.destroy();
      admin.destroy();
      await child.stop();
    },
  };
}

type EmulatorRun = Awaited<ReturnType<typeof emulatorRun>>;

let prefixSeq = 0;

/**
 * A fresh table pair and queues, the seed loaded, then the idle tick and the tick that hands over
 * midnight (`elapsedMs`: the whole run, set-up and tear-down included).
 */
async function emulatorRun(env: EmulatorEnv, seed: readonly StoredItem[]) {
  const started = performance.now();
  const prefix = `kaj-bench-${(prefixSeq += 1)}`;
  const r = await ensureResources(env.admin, prefix);
  const names = resourceNames(prefix);
  await putItems(env.admin.dynamodb, names.schedules, seed.length, (i) => seed[i] as StoredItem);
  const config: FunctionConfig = {
    tableName: r.tableName,
    schedulesTableName: names.schedules,
    queueUrls: r.queueUrls,
    deadLetterQueueUrls: r.deadLetterQueueUrls,
    settings: runtimeSettings(),
  };
  const clock = new BenchClock(IDLE_TICK);
  const kaj = createKajOnAws(config, registry, {
    dynamodb: env.dynamodb,
    sqs: env.sqs,
    clock,
    random: seededRandom(1),
  });
  let sent = sentSince(env.counter);
  const idle = await timedTick(kaj);
  const idleCalls = sent();
  clock.t = FIRE_TICK;
  sent = sentSince(env.counter);
  const fire = await timedTick(kaj);
  const fireCalls = sent();
  await deleteResources(env.admin, prefix);
  return { idle, fire, idleCalls, fireCalls, elapsedMs: performance.now() - started };
}

const sameCounts = (a: Record<string, number>, b: Record<string, number>): boolean => {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) if ((a[k] ?? 0) !== (b[k] ?? 0)) return false;
  return true;
};

interface SizeResult {
  readonly n: number;
  readonly counts: TickCounts;
  readonly idleCounts: TickCounts;
  readonly identical: boolean;
  readonly memory: { readonly fire: Timed[]; readonly idle: Timed[] };
  readonly emulator: EmulatorRun[];
  /** The SDK clients sent what the ledger billed (every emulator run). */
  readonly requestsAgree: boolean;
}

function cpuOf(r: SizeResult): { fireMs: number; idleMs: number; source: string } {
  if (r.emulator.length > 0) {
    return {
      fireMs: median(r.emulator.map((e) => e.fire.cpuMs)),
      idleMs: median(r.emulator.map((e) => e.idle.cpuMs)),
      source: 'emulators (Kaj + SDK)',
    };
  }
  return {
    fireMs: median(r.memory.fire.map((t) => t.cpuMs)),
    idleMs: median(r.memory.idle.map((t) => t.cpuMs)),
    source: 'in-memory (Kaj and the fakes: no SDK)',
  };
}

function tickIo(c: TickCounts): Parameters<typeof ioTimeMs>[0] {
  const s = c.schedules.requests;
  const t = c.tasks.requests;
  return {
    queryPagesOnBusiestShard: c.pagesOnBusiestShard,
    dynamoRequests: s.GetItem + s.PutItem + s.UpdateItem + t.GetItem + t.PutItem + t.UpdateItem,
    sqsRequests: c.sqsRequests,
    due: c.report.due,
    concurrency: CONCURRENCY,
  };
}

function estimate(cpuMs: number, c: TickCounts, memoryMiB: number): DurationEstimate {
  return lambdaDuration(cpuMs, ioTimeMs(tickIo(c), OPTS.latency), memoryMiB);
}

/**
 * Lambda time of a tick at `memoryMiB`, from size `r`'s measurements (upper bound): before the
 * first schedule (the idle tick's CPU, the busiest shard's index pages) and per schedule (CPU above
 * the idle tick's, and the waits of its requests ÷ the concurrency).
 */
function ratesOf(r: SizeResult, memoryMiB: number): { overheadMs: number; perFireMs: number } {
  const cpu = cpuOf(r);
  const share = vcpuShare(memoryMiB);
  const io = tickIo(r.counts);
  const n = Math.max(1, r.counts.report.created);
  const workIoMs = ioTimeMs({ ...io, queryPagesOnBusiestShard: 0, due: CONCURRENCY }, OPTS.latency);
  return {
    perFireMs: Math.max(0, cpu.fireMs - cpu.idleMs) / n / share + workIoMs / n,
    overheadMs: cpu.idleMs / share + io.queryPagesOnBusiestShard * OPTS.latency.dynamoMs,
  };
}

/** How the tick's herd drains at `memoryMiB` when one tick cannot hand it all over (upper-bound times). */
function drainOf(r: SizeResult, memoryMiB: number): Drain {
  return drainTicks({
    n: r.counts.report.created,
    ...ratesOf(r, memoryMiB),
    budgetMs: BUDGET_MS,
    tickMs: DEFAULTS.scheduleTickSeconds * SECOND,
    leadMs: MIDNIGHT - FIRE_TICK,
    graceMs: DEFAULTS.scheduleMisfireGraceSeconds * SECOND,
  });
}

/** DynamoDB dollars of a tick (or of anything summarized). */
function dynamoUsd(s: DynamoSummary): { reads: number; writes: number } {
  return {
    reads: cost(PRICES.dynamodb.readRequestUnit, s.rru),
    writes: cost(PRICES.dynamodb.writeRequestUnit, s.tableWru + s.indexWru),
  };
}

async function main(): Promise<void> {
  const wallStart = performance.now();
  const model = await readSchedulerDeployment();
  const due = model.schedulesTable.indexes.find((i) => i.name === SCHEDULE_TABLE_SCHEMA.dueIndex.name);
  const outbox = model.taskTable.indexes.find((i) => i.name === TABLE_SCHEMA.outboxIndex.name);
  const fn = model.scheduler;
  const memories = [...new Set<number>([...MEMORIES, fn.memoryMiB])].sort((a, b) => a - b);
  console.log(
    `Kaj scheduler benchmark — median of ${OPTS.runs} runs where timed; prices ${PRICES_REGION} as of ${PRICES_AS_OF}`,
  );
  console.log(`Model: ${model.source}`);
  console.log(
    `  schedules table key ${model.schedulesTable.partitionKey}; GSI ${due?.name ?? '(none!)'} (${due?.partitionKey}, ${due?.sortKey}; ${due?.projection.type}; ${SCHEDULE_TABLE_SCHEMA.dueIndex.shards} shards)` +
      `; task table GSI ${outbox?.name ?? '(none)'} (${outbox?.projection.type ?? '-'})`,
  );
  console.log(
    `  scheduler function: ${fn.memoryMiB} MiB ${fn.architecture}, timeout ${fn.timeoutSeconds} s; rule ${model.tickRule}; ` +
      `tick concurrency ${CONCURRENCY}; budget ${BUDGET_MS / 1000} s (timeout − 10 s, functions/scheduler.ts)`,
  );
  for (const w of model.warnings) console.log(`  note: ${w}`);
  console.log(
    `  host: ${(await import('node:os')).cpus()[0]?.model ?? '?'} × ${(await import('node:os')).cpus().length}, node ${process.version}`,
  );

  const maxN = Math.max(...OPTS.sizes, OPTS.steady);
  const seed = await seedSchedules(model, maxN, undefined);

  let env: EmulatorEnv | undefined;
  if (OPTS.emulator) {
    env = await startEmulatorEnv();
    // Warm-up (JIT, connections, the SDK's cached middleware stacks): not measured.
    await emulatorRun(env, seed.slice(0, 10));
  }

  // 1. The tick that hands over midnight, per size --------------------------------------------
  const results: SizeResult[] = [];
  for (const n of OPTS.sizes) {
    const items = seed.slice(0, n);
    const runs: { fire: TickCounts; idle: TickCounts }[] = [];
    for (let r = 0; r < OPTS.runs; r += 1) {
      const w = memoryWorld(model, items, IDLE_TICK, true);
      const idle = await countedTick(w);
      w.clock.t = FIRE_TICK;
      const fire = await countedTick(w);
      if (w.unbilled() > 0) throw new Error('a tick made a DeleteItem or Scan the bench does not bill');
      runs.push({ fire, idle });
    }
    const key = (c: TickCounts): string => JSON.stringify(c);
    const identical = runs.every((x) => key(x.fire) === key((runs[0] as (typeof runs)[0]).fire));
    const memory = { fire: [] as Timed[], idle: [] as Timed[] };
    for (let r = 0; r < OPTS.runs; r += 1) {
      const w = memoryWorld(model, items, IDLE_TICK, false);
      memory.idle.push(await timedTick(w.kaj));
      w.clock.t = FIRE_TICK;
      memory.fire.push(await timedTick(w.kaj));
    }
    const emulator: EmulatorRun[] = [];
    if (env !== undefined) {
      const startedSize = performance.now();
      for (let r = 0; r < OPTS.runs; r += 1) {
        const run = await emulatorRun(env, items);
        emulator.push(run);
        const spent = performance.now() - startedSize;
        if (r + 1 < OPTS.runs && spent + run.elapsedMs > OPTS.emulatorBudgetMs) break;
      }
    }
    const counts = (runs[0] as (typeof runs)[0]).fire;
    const idleCounts = (runs[0] as (typeof runs)[0]).idle;
    const requestsAgree = emulator.every(
      (e) => sameCounts(e.fireCalls, counts.byCommand) && sameCounts(e.idleCalls, idleCounts.byCommand),
    );
    results.push({ n, counts, idleCounts, identical, memory, emulator, requestsAgree });
  }

  const cols = results.map((r) => `${fmt(r.n, 0)} schedules`);
  const per = (f: (r: SizeResult) => string): string[] => results.map(f);
  const fires = (r: SizeResult): number => r.counts.report.created;
  const perFire = (r: SizeResult, v: number): string => fmt(v / Math.max(1, fires(r)), 3);
  const rows: string[][] = [
    ['TickReport'],
    [
      '  due / created / replayed / deferred / failures',
      ...per((r) => {
        const t = r.counts.report;
        return `${t.due}/${t.created}/${t.replayed}/${t.deferred}/${t.failures}`;
      }),
    ],
    ['Schedules table, per tick (AWS rules)'],
    [
      '  requests Query / GetItem / PutItem',
      ...per((r) => {
        const q = r.counts.schedules.requests;
        return `${q.Query}/${q.GetItem}/${q.PutItem}`;
      }),
    ],
    ['  due-index pages on the busiest shard', ...per((r) => fmt(r.counts.pagesOnBusiestShard))],
    [
      '  RRU: Query + GetItem (strongly consistent)',
      ...per((r) => {
        const s = r.counts.schedules.rruByApi;
        return `${fmt(s.Query, 1)} + ${fmt(s.GetItem, 1)}`;
      }),
    ],
    [
      '  WRU: table + due index',
      ...per((r) => `${fmt(r.counts.schedules.tableWru)} + ${fmt(r.counts.schedules.indexWru)}`),
    ],
    [
      '  due-index writes: move (delete+put) / put / delete',
      ...per((r) => {
        const c = r.counts.schedules.indexChanges;
        return `${c.move}/${c.put}/${c.delete}`;
      }),
    ],
    ['  condition failures', ...per((r) => fmt(r.counts.schedules.conditionFailed))],
    ["Task table (the runs' tasks), per tick"],
    [
      '  requests PutItem / GetItem / UpdateItem',
      ...per((r) => {
        const q = r.counts.tasks.requests;
        return `${q.PutItem}/${q.GetItem}/${q.UpdateItem}`;
      }),
    ],
    [
      `  WRU: table + ${outbox?.name ?? 'index'} index`,
      ...per((r) => `${fmt(r.counts.tasks.tableWru)} + ${fmt(r.counts.tasks.indexWru)}`),
    ],
    ['SQS, per tick'],
    [
      '  SendMessage / billed requests',
      ...per((r) => `${fmt(r.counts.sqsByApi.SendMessage ?? 0)} / ${fmt(r.counts.sqsBilled)}`),
    ],
    ['Per fire'],
    [
      '  schedules RRU / WRU (table + index)',
      ...per(
        (r) =>
          `${perFire(r, r.counts.schedules.rru)} / ${perFire(r, r.counts.schedules.tableWru + r.counts.schedules.indexWru)}`,
      ),
    ],
    ["  task table WRU (the run's task)", ...per((r) => perFire(r, r.counts.tasks.tableWru + r.counts.tasks.indexWru))],
    [
      '  DynamoDB requests / SQS requests',
      ...per((r) => {
        const s = r.counts.schedules.requests;
        const t = r.counts.tasks.requests;
        const dyn = s.Query + s.GetItem + s.PutItem + t.PutItem + t.GetItem + t.UpdateItem;
        return `${perFire(r, dyn)} / ${perFire(r, r.counts.sqsRequests)}`;
      }),
    ],
    ['Checks'],
    ['  counts identical in every run', ...per((r) => (r.identical ? `yes (${OPTS.runs})` : 'NO'))],
    [
      '  SDK clients sent what the ledger billed',
      ...per((r) => (r.emulator.length === 0 ? 'not run' : r.requestsAgree ? 'yes' : 'NO')),
    ],
    ['In-process timing of the tick (median)'],
    [
      '  in-memory stores: wall / CPU ms',
      ...per(
        (r) =>
          `${fmt(median(r.memory.fire.map((t) => t.wallMs)), 1)} / ${fmt(median(r.memory.fire.map((t) => t.cpuMs)), 1)}`,
      ),
    ],
    [
      '  emulators, real SDK: wall / CPU ms',
      ...per((r) =>
        r.emulator.length === 0
          ? 'not run'
          : `${fmt(median(r.emulator.map((e) => e.fire.wallMs)), 1)} / ${fmt(median(r.emulator.map((e) => e.fire.cpuMs)), 1)}`,
      ),
    ],
    ['  emulator runs (median of)', ...per((r) => String(r.emulator.length))],
    [
      '  CPU per fire, ms (emulators; in-memory)',
      ...per((r) => {
        const mem = median(r.memory.fire.map((t) => t.cpuMs)) / Math.max(1, fires(r));
        const emu =
          r.emulator.length === 0 ? '-' : fmt(median(r.emulator.map((e) => e.fire.cpuMs)) / Math.max(1, fires(r)), 3);
        return `${emu}; ${fmt(mem, 3)}`;
      }),
    ],
    [
      `On Lambda (estimate: DynamoDB ${OPTS.latency.dynamoMs} ms, SQS ${OPTS.latency.sqsMs} ms a request, ${CONCURRENCY} schedules at once)`,
    ],
    ['  waiting on AWS, ms', ...per((r) => fmt(ioTimeMs(tickIo(r.counts), OPTS.latency), 0))],
  ];
  for (const mem of memories) {
    rows.push([
      `  ${mem} MiB (${fmt(vcpuShare(mem), 3)} vCPU): CPU + wait = ms`,
      ...per((r) => {
        const e = estimate(cpuOf(r).fireMs, r.counts, mem);
        return `${fmt(e.cpuMs, 0)} + ${fmt(e.ioMs, 0)} = ${fmt(e.totalMs, 0)}`;
      }),
    ]);
    rows.push([
      `    GB-s for the tick (uncapped) / per fire`,
      ...per((r) => {
        const g = gbSeconds(estimate(cpuOf(r).fireMs, r.counts, mem).totalMs, mem);
        return `${fmt(g, 3)} / ${fmt(g / Math.max(1, fires(r)), 6)}`;
      }),
    ]);
    rows.push([
      `    all sent by midnight (30 s) / in the budget (${BUDGET_MS / 1000} s)`,
      ...per((r) => {
        const e = estimate(cpuOf(r).fireMs, r.counts, mem);
        const yes = (limit: number): string => (e.totalMs <= limit ? 'yes' : e.lowerMs <= limit ? 'maybe' : 'NO');
        return `${yes(30_000)} / ${yes(BUDGET_MS)}`;
      }),
    ]);
    rows.push([
      `    one tick hands over (budget) / ticks needed`,
      ...per((r) => {
        const d = drainOf(r, mem);
        return `${fmt(d.capacity, 0)} / ${d.missed > 0 ? `>${d.perTick.length}` : d.perTick.length}`;
      }),
    ]);
    rows.push([
      `    handed over / missed (seen > ${DEFAULTS.scheduleMisfireGraceSeconds} s late)`,
      ...per((r) => {
        const d = drainOf(r, mem);
        return `${fmt(d.handed, 0)} / ${fmt(d.missed, 0)}`;
      }),
    ]);
    rows.push([
      `    last run sent, s after its time`,
      ...per((r) => {
        const late = drainOf(r, mem).lastLateMs / 1000;
        return late <= 0 ? `on time (${fmt(late, 1)})` : fmt(late, 1);
      }),
    ]);
  }
  rows.push([
    `  memory for all by midnight / in one tick's budget`,
    ...per((r) => {
      const cpuMs = cpuOf(r).fireMs;
      const io = ioTimeMs(tickIo(r.counts), OPTS.latency);
      const m = (limit: number): string => {
        const mib = memoryToFit(cpuMs, io, limit);
        return mib === undefined ? '> 1 vCPU' : `${fmt(mib, 0)}`;
      };
      return `${m(30_000)} / ${m(BUDGET_MS)} MiB`;
    }),
  ]);
  console.log('\n1. The tick at 23:59:30 that hands over midnight — cron "0 0 * * *" UTC, no jitter, overlap allow');
  printTable(['', ...cols], rows, [52, 16]);
  const big = results.at(-1) as SizeResult;
  console.log(
    `  In-process timing: the tick over the in-memory fakes measures Kaj's code (and the fakes' copies of every item), no SDK; "emulators" runs the real adapters and SDK clients ` +
      `(tuned as on Lambda) against dynalite + local-aws-sqs in a child process over loopback HTTP — the CPU figure is this process's ` +
      `(Kaj + SDK + HTTP client; no TLS). Its wall time ≈ its CPU time: the tick is CPU-bound on the client side, dynalite keeps up on the other core.`,
  );
  console.log(
    `  On AWS add ≈ ${OPTS.latency.dynamoMs} ms per DynamoDB request and ${OPTS.latency.sqsMs} ms per SQS request (--dynamo-ms, --sqs-ms) ÷ ${CONCURRENCY} in flight, ` +
      `and stretch the CPU to the function's share of a vCPU (memory ÷ 1,769 MB): "CPU + wait" adds both, an upper bound (they overlap).`,
  );
  for (const mem of memories) {
    const e = estimate(cpuOf(big).fireMs, big.counts, mem);
    const d = drainOf(big, mem);
    const verdict =
      e.totalMs <= 30_000
        ? 'every run is handed to SQS before midnight and fires on its second'
        : e.totalMs <= BUDGET_MS
          ? "all handed over in the first tick's budget; those sent after midnight fire at once, within their minute"
          : d.missed === 0
            ? `the first tick's budget runs out: ${d.perTick.length} ticks hand them over (${d.perTick.map((x) => fmt(x, 0)).join(' + ')}), the last ${fmt(d.lastLateMs / 1000, 0)} s late`
            : `the budget runs out: ${d.perTick.length} ticks hand over ${fmt(d.handed, 0)} (${d.perTick.map((x) => fmt(x, 0)).join(' + ')}), the last ${fmt(d.lastLateMs / 1000, 0)} s late; ` +
              `the next tick sees the other ${fmt(d.missed, 0)} more than ${DEFAULTS.scheduleMisfireGraceSeconds} s late: skipped under misfire "skip" (the default, used here), run late under run_once / catch_up`;
    console.log(
      `  ${fmt(big.n, 0)} at ${mem} MiB: ${fmt(e.lowerMs / 1000, 1)}–${fmt(e.totalMs / 1000, 1)} s → ${verdict}.`,
    );
  }

  // 2. Jitter ----------------------------------------------------------------------------------
  const jn = Math.max(...OPTS.sizes);
  const jseed = await seedSchedules(model, jn, JITTER);
  const jw = memoryWorld(model, jseed, IDLE_TICK, true);
  const cpu = cpuOf(big);
  // Per-fire CPU and idle CPU from the emulator (or, without it, the in-memory) runs: the CPU model of a tick.
  const cpuModel = {
    source: cpu.source,
    idleMs: cpu.idleMs,
    perFireMs: Math.max(0, cpu.fireMs - cpu.idleMs) / Math.max(1, fires(big)),
  };
  const jrows: string[][] = [];
  let handed = 0;
  const late = new Map<number, { late: number; maxLateMs: number }>(
    memories.map((m) => [m, { late: 0, maxLateMs: 0 }]),
  );
  for (let k = 0; k <= 12; k += 1) {
    const tickAt = IDLE_TICK + k * DEFAULTS.scheduleTickSeconds * SECOND;
    jw.clock.t = tickAt;
    const sentBefore = jw.queue.sent.length;
    const c = await countedTick(jw);
    handed += c.report.created;
    const s = c.schedules;
    const cpuMs = cpuModel.idleMs + c.report.created * cpuModel.perFireMs;
    // The order the tick sent its runs in: when each would be sent on Lambda, against its fire moment.
    const fireOrder = runsVisibleAt(jw).slice(sentBefore);
    for (const m of memories) {
      const rates = ratesOf(big, m);
      const l = lateSends(fireOrder, tickAt, rates.overheadMs, rates.perFireMs);
      const acc = late.get(m) as { late: number; maxLateMs: number };
      late.set(m, { late: acc.late + l.late, maxLateMs: Math.max(acc.maxLateMs, l.maxLateMs) });
    }
    jrows.push([
      new Date(tickAt).toISOString().slice(11, 19),
      fmt(c.report.due, 0),
      fmt(c.report.created, 0),
      `${s.requests.Query}/${s.requests.GetItem}/${s.requests.PutItem}`,
      fmt(s.rru, 1),
      fmt(s.tableWru + s.indexWru + c.tasks.tableWru + c.tasks.indexWru, 0),
      fmt(c.sqsRequests, 0),
      ...memories.map((m) => fmt(estimate(cpuMs, c, m).totalMs / 1000, 2)),
    ]);
  }
  const tasks = [...jw.tasks.items.values()];
  const runAts = tasks.map((t) => Date.parse(String(t.run_at)));
  const spread = fireSpread(runAts, MIDNIGHT, JITTER_MS / SECOND);
  const visible = runsVisibleAt(jw);
  const sqsSpread = fireSpread(visible, MIDNIGHT, JITTER_MS / SECOND);
  const offsets = jseed.map((r) => jitterOffsetMs(String(r.name), JITTER_MS));
  const offsetSpread = fireSpread(
    offsets.map((o) => MIDNIGHT + o),
    MIDNIGHT,
    JITTER_MS / SECOND,
  );
  const sorted = [...spread.perSecond].sort((a, b) => a - b);
  // The ratio depends on the names (a fixed hash of each): the same count of other names, for comparison.
  const otherRatios = Array.from({ length: 20 }, (_, v) =>
    fireSpread(
      Array.from({ length: jn }, (_, i) => MIDNIGHT + jitterOffsetMs(`set${v}-${nameOf(i)}`, JITTER_MS)),
      MIDNIGHT,
      JITTER_MS / SECOND,
    ),
  ).map((x) => x.ratio);
  console.log(
    `\n2. The same ${fmt(jn, 0)} schedules with jitter "${JITTER}": fire moments spread over 00:00:00–00:09:59`,
  );
  printTable(
    [
      'tick (UTC)',
      'due',
      'handed over',
      'Query/Get/Put',
      'RRU',
      'WRU (all)',
      'SQS',
      ...memories.map((m) => `s @${m} MiB`),
    ],
    jrows,
    [12, 13],
  );
  console.log(
    `  Handed over in all: ${fmt(handed, 0)} of ${fmt(jn, 0)}; Lambda seconds estimated as above ("CPU + wait"), the CPU from the ${cpuModel.source} runs ` +
      `of section 1: ${fmt(cpuModel.idleMs, 1)} ms a tick + ${fmt(cpuModel.perFireMs, 3)} ms a fire.`,
  );
  printTable(
    ["Fires per second (from the tasks' run_at)", 'value'],
    [
      [
        '  busiest second (which)',
        `${spread.busiest} (00:${String(Math.floor(spread.busiestSecond / 60)).padStart(2, '0')}:${String(spread.busiestSecond % 60).padStart(2, '0')})`,
      ],
      ['  mean (fires ÷ 600 s)', fmt(spread.mean, 2)],
      ['  ratio busiest ÷ mean (must be ≤ 2)', `${fmt(spread.ratio, 2)} ${spread.ratio <= 2 ? '(ok)' : '(OVER 2)'}`],
      ['  quietest second / median second', `${sorted[0]} / ${median(sorted)}`],
      ['  seconds with no fire / fires outside the window', `${spread.emptySeconds} / ${spread.outside}`],
      [
        `  ratio for 20 other sets of ${fmt(jn, 0)} names: min/med/max`,
        `${fmt(Math.min(...otherRatios), 2)} / ${fmt(median(otherRatios), 2)} / ${fmt(Math.max(...otherRatios), 2)}`,
      ],
      ['  …of which over 2', `${otherRatios.filter((x) => x > 2).length} of ${otherRatios.length}`],
      ...memories.map((m) => {
        const l = late.get(m) as { late: number; maxLateMs: number };
        return [
          `  est. sent after their second at ${m} MiB / worst`,
          `${fmt(l.late, 0)} / ${fmt(l.maxLateMs / 1000, 1)} s`,
        ];
      }),
      ['  without jitter: busiest second', `${fmt(big.counts.report.created, 0)} (00:00:00)`],
      ['Checks'],
      [
        '  SQS visible-at agrees with run_at (per second)',
        sameSpread(spread.perSecond, sqsSpread.perSecond) ? 'yes' : 'NO',
      ],
      [
        '  jitterOffsetMs of the names agrees (per second)',
        sameSpread(spread.perSecond, offsetSpread.perSecond) ? 'yes' : 'NO',
      ],
    ],
    [52, 18],
  );
  console.log(
    `  "Sent after their second": each tick's runs in the order it sent them (earliest fire first across the shards), ` +
      `the i-th sent at tick + overhead + i × per-fire time on Lambda (the upper-bound times above); ` +
      `SQS delivers a run sent late at once.`,
  );

  // 3. At rest ---------------------------------------------------------------------------------
  const idleC = big.idleCounts;
  const idleMem = median(big.memory.idle.map((t) => t.wallMs));
  const idleMemCpu = median(big.memory.idle.map((t) => t.cpuMs));
  const idleEmu = big.emulator.length === 0 ? undefined : median(big.emulator.map((e) => e.idle.wallMs));
  const idleEmuCpu = big.emulator.length === 0 ? undefined : median(big.emulator.map((e) => e.idle.cpuMs));
  const perMonth = ticksPerMonth(model.tickSeconds);
  const idleIo = OPTS.latency.dynamoMs * Math.max(1, idleC.pagesOnBusiestShard);
  const idleDur = (mem: number): DurationEstimate => lambdaDuration(cpuModel.idleMs, idleIo, mem);
  console.log(`\n3. An idle tick (23:58:30: ${fmt(big.n, 0)} schedules exist, none due) and the scheduler at rest`);
  const irows: string[][] = [
    ['  TickReport due / created', `${idleC.report.due} / ${idleC.report.created}`],
    [
      '  requests (Query on each due shard / GetItem / PutItem)',
      `${idleC.schedules.requests.Query} / ${idleC.schedules.requests.GetItem} / ${idleC.schedules.requests.PutItem}`,
    ],
    [
      '  RRU (an empty index Query: the 0.5 RRU minimum)',
      `${fmt(idleC.schedules.rru, 2)} (${fmt(idleC.schedules.rru / Math.max(1, idleC.schedules.requests.Query), 2)} each)`,
    ],
    [
      '  WRU / SQS requests',
      `${fmt(idleC.schedules.tableWru + idleC.schedules.indexWru + idleC.tasks.tableWru)} / ${idleC.sqsRequests}`,
    ],
    ['  in-memory stores: wall / CPU ms', `${fmt(idleMem, 2)} / ${fmt(idleMemCpu, 2)}`],
    [
      '  emulators, real SDK: wall / CPU ms',
      idleEmu === undefined ? 'not run' : `${fmt(idleEmu, 2)} / ${fmt(idleEmuCpu ?? 0, 2)}`,
    ],
    ...memories.map((m) => {
      const e = idleDur(m);
      return [
        `  on Lambda at ${m} MiB: CPU + one round of Queries = ms`,
        `${fmt(e.cpuMs, 1)} + ${fmt(e.ioMs, 0)} = ${fmt(e.totalMs, 1)}`,
      ];
    }),
  ];
  printTable(['Idle tick', 'value'], irows, [60, 24]);

  const restRows: string[][] = [];
  const restTotals: number[] = [];
  const lambdaReq = cost(PRICES.lambda.request, perMonth);
  const reads = cost(PRICES.dynamodb.readRequestUnit, idleC.schedules.rru * perMonth);
  for (const m of memories) {
    const gbs = gbSeconds(idleDur(m).totalMs, m) * perMonth;
    const lambdaGb = cost(PRICES.lambda.arm64GbSecond, gbs);
    restTotals.push(lambdaReq + lambdaGb + reads);
    restRows.push([`  Lambda duration at ${m} MiB (${fmt(gbs, 1)} GB-s)`, usd(lambdaGb, 4)]);
  }
  console.log(
    `\n  The scheduler at rest, per month (${fmt(perMonth, 0)} ticks: a 30-day month of ${model.tickRule}), before free tiers:`,
  );
  printTable(
    ['', 'per month'],
    [
      ['  EventBridge scheduled rule (assumed free: see below)', usd(0, 4)],
      [`  Lambda requests (${fmt(perMonth, 0)})`, usd(lambdaReq, 4)],
      ...restRows,
      [
        `  DynamoDB reads (${fmt(idleC.schedules.rru, 1)} RRU a tick: ${fmt(idleC.schedules.rru * perMonth, 0)} RRU)`,
        usd(reads, 4),
      ],
      ...memories.map((m, i) => [`  total at ${m} MiB`, usd(restTotals[i] ?? 0, 4)]),
    ],
    [60, 24],
  );

  // Storage and per-fire costs: the first fire (recent runs empty) and the steady state (recent full).
  const steadyW = memoryWorld(model, seed.slice(0, OPTS.steady), FIRE_TICK, true);
  for (let d = 0; d < RECENT + 1; d += 1) {
    steadyW.clock.t = FIRE_TICK + d * DAY_MS;
    await countedTick(steadyW);
  }
  steadyW.clock.t = FIRE_TICK + (RECENT + 1) * DAY_MS;
  const steady = await countedTick(steadyW);
  const dueIdx = model.schedulesTable.indexes.filter((i) => i.name === SCHEDULE_TABLE_SCHEMA.dueIndex.name);
  const sizes = (items: readonly StoredItem[]): { item: number; entry: number } => {
    const item = median(items.map((i) => itemSize(i as Item)));
    const entry = median(
      items.map((i) => dueIdx.reduce((s, idx) => s + itemSize(projectedItem(i as Item, model.schedulesTable, idx)), 0)),
    );
    return { item, entry };
  };
  const fresh = sizes(seed.slice(0, OPTS.steady));
  const aged = sizes([...steadyW.schedules.items.values()] as unknown as StoredItem[]);
  const storageUsd = (s: { item: number; entry: number }): number =>
    cost(PRICES.dynamodb.storage, storedBytes(s.item, [s.entry]) / BYTES_PER_GB);

  // 4. Per fire ---------------------------------------------------------------------------------
  interface FireCost {
    scheduleReads: number;
    scheduleWrites: number;
    taskWrites: number;
    sqs: number;
    lambda: Record<number, number>;
  }
  const fireCost = (c: TickCounts, idle: TickCounts): FireCost => {
    const n = Math.max(1, c.report.created);
    const s = dynamoUsd(c.schedules);
    // The Queries' minimum is paid by every tick (section 3): only what a busy tick reads beyond it is the fires'.
    const idleReads = cost(PRICES.dynamodb.readRequestUnit, idle.schedules.requests.Query * queryReadUnits(0));
    const t = dynamoUsd(c.tasks);
    const lambda: Record<number, number> = {};
    for (const m of memories) {
      const g = gbSeconds(estimate(cpuOf(big).fireMs, big.counts, m).totalMs, m) / Math.max(1, fires(big));
      lambda[m] = cost(PRICES.lambda.arm64GbSecond, g);
    }
    return {
      scheduleReads: (s.reads - idleReads) / n,
      scheduleWrites: s.writes / n,
      taskWrites: (t.writes + t.reads) / n,
      sqs: cost(PRICES.sqs.request, c.sqsBilled) / n,
      lambda,
    };
  };
  const first = fireCost(big.counts, big.idleCounts);
  const steadyCost = fireCost(steady, big.idleCounts);
  const million = 1_000_000;
  const M = (v: number): string => usd(v * million, 3);
  const schedulerOnly = (f: FireCost, m: number): number => f.scheduleReads + f.scheduleWrites + (f.lambda[m] ?? 0);
  const withSubmit = (f: FireCost, m: number): number => schedulerOnly(f, m) + f.taskWrites + f.sqs;
  console.log('\n4. Per fire, $ per million fires (overlap allow: no task read; fires of the 10,000-schedule tick)');
  const frows: string[][] = [
    [
      '  schedules table reads (GetItem; Query beyond the idle minimum)',
      M(first.scheduleReads),
      M(steadyCost.scheduleReads),
    ],
    ['  schedules table writes (PutItem + due-index move)', M(first.scheduleWrites), M(steadyCost.scheduleWrites)],
    ...memories.map((m) => [
      `  scheduler Lambda duration at ${m} MiB`,
      M(first.lambda[m] ?? 0),
      M(steadyCost.lambda[m] ?? 0),
    ]),
    ...memories.map((m) => [
      `  = the scheduler's own cost at ${m} MiB`,
      M(schedulerOnly(first, m)),
      M(schedulerOnly(steadyCost, m)),
    ]),
    ["  the run's task: PutItem on the task table", M(first.taskWrites), M(steadyCost.taskWrites)],
    ["  the run's task: SQS SendMessage", M(first.sqs), M(steadyCost.sqs)],
    ...memories.map((m) => [
      `  = including the run's submit at ${m} MiB`,
      M(withSubmit(first, m)),
      M(withSubmit(steadyCost, m)),
    ]),
    [
      '  schedules WRU per fire: table + index',
      `${fmt(big.counts.schedules.tableWru / fires(big), 2)} + ${fmt(big.counts.schedules.indexWru / fires(big), 2)}`,
      `${fmt(steady.schedules.tableWru / Math.max(1, steady.report.created), 2)} + ${fmt(steady.schedules.indexWru / Math.max(1, steady.report.created), 2)}`,
    ],
    ['  schedule item size, bytes (before the fire)', fmt(fresh.item, 0), fmt(aged.item, 0)],
  ];
  printTable(['', 'first fire', `steady (${RECENT} recent)`], frows, [66, 18]);

  const mDeployed = fn.memoryMiB;
  console.log('\n  Per schedule, per month (storage: item + 100 B, due-index entry + 100 B, at $0.25 per GB-month):');
  printTable(
    ['', 'per schedule', 'per million'],
    [
      [
        `  idle schedule (${fmt(storedBytes(fresh.item, [fresh.entry]), 0)} B stored; ticks cost it nothing)`,
        usd(storageUsd(fresh), 8),
        usd(storageUsd(fresh) * million, 2),
      ],
      [
        `  idle schedule, recent runs full (${fmt(storedBytes(aged.item, [aged.entry]), 0)} B)`,
        usd(storageUsd(aged), 8),
        usd(storageUsd(aged) * million, 2),
      ],
      ...memories.map((m) => {
        const v = 30 * schedulerOnly(steadyCost, m) + storageUsd(aged);
        return [`  daily schedule, 30 fires, scheduler only, ${m} MiB`, usd(v, 6), usd(v * million, 2)];
      }),
      ...memories.map((m) => {
        const v = 30 * withSubmit(steadyCost, m) + storageUsd(aged);
        return [`  daily schedule, 30 fires, with the runs' submit, ${m} MiB`, usd(v, 6), usd(v * million, 2)];
      }),
    ],
    [66, 16],
  );

  console.log('\nAssumptions and notes:');
  for (const a of [
    `Counts are billed by AWS's rules from the item images (bench/lib/dynamo-accounting.ts): a GetItem is strongly consistent (1 RRU per 4 KB), an index Query eventually consistent (0.5 RRU per 4 KB of returned ${due?.projection.type ?? ''} entries, at least 0.5); a PutItem is 1 WRU per started KB of the larger image; the due index is written only when an item enters, leaves or moves in it, a move (due_at changed) being a delete + a put, 1 WRU each for a keys-only entry.`,
    `Lambda: duration = measured CPU ÷ (memory ÷ 1,769 MB) + requests × latency ÷ ${CONCURRENCY} (schedules in flight; the ${SCHEDULE_TABLE_SCHEMA.dueIndex.shards} shards' Query pages in parallel, each shard's one after another) — an upper bound, as waits and CPU overlap; arm64 price, 1 ms rounding. CPU measured here on ${cpuModel.source} (x86, no TLS): Graviton and TLS will differ.`,
    `Latency per request (--dynamo-ms ${OPTS.latency.dynamoMs}, --sqs-ms ${OPTS.latency.sqsMs}) is an assumption for in-region calls from Lambda, not a measurement.`,
    `The fake clock stands still during a tick, so the in-process runs never defer (the budget is not exercised): the "within budget" verdicts come from the estimate.`,
    `EventBridge: the tick is an EventBridge scheduled rule (events.Rule, ${model.tickRule}) on the default bus; bench/prices.ts has no EventBridge price, and none is counted (assumed free; EventBridge Scheduler, a different service, would charge $1.00 per million after 14 million free a month, i.e. $0 for ${fmt(perMonth, 0)} ticks).`,
    `Per fire: the run's task is created by the scheduler (task table PutItem, SQS SendMessage: "the run's submit"); its execution (consumer, ESM receive/delete, status writes) is not included — see npm run bench:cost. Lambda per fire is the ${fmt(big.n, 0)}-schedule tick's GB-s ÷ its fires; a tick's invocation (request) is counted at rest, not per fire.`,
    `Steady state: ${OPTS.steady} schedules aged ${RECENT + 1} days (their recent runs full), then one more tick measured; deployed memory ${mDeployed} MiB.`,
    `Not counted: CloudWatch Logs (the tick logs a line only when something is due), metrics, data transfer, free tiers, PITR backups of the schedules table.`,
  ]) {
    console.log(`  - ${a}`);
  }
  console.log(`\nDone in ${fmt((performance.now() - wallStart) / 1000, 1)} s.`);
  await env?.stop();
}

function sameSpread(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

await main();
