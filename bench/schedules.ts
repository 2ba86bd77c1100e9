/**
 * What the scheduler costs, and whether it keeps up, from what its code actually does:
 *
 *   npm run bench:schedules -- [--runs 3] [--sizes 10,1000,10000] [--emulator-budget-s 300] [--no-emulator]
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
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import * as z from 'zod';
import { deleteResources, ensureResources } from '../local/bootstrap.js';
import { RequestCounter } from '../local/request-counter.js';
import { createDynamoDbClient, createSqsClient } from '../shared/aws/clients.js';
import { clientConfig, emulatorClients, emulatorSettings } from '../shared/aws/wiring.js';
import { DEFAULTS, resourceNames, SCHEDULE_TABLE_SCHEMA, TABLE_SCHEMA } from '../shared/config/resources.js';
import { runtimeSettings } from '../shared/config/settings.js';
import type { ScheduleRecord } from '../shared/schedule/model.js';
import { jitterOffsetMs } from '../shared/schedule/timing.js';
import { createKaj, createKajOnAws, type Kaj } from '../shared/service/all-in-one.js';
import { defineTask, TaskRegistry } from '../shared/task/define.js';
import { MemoryScheduleStore } from '../testing/memory-schedule-store.js';
import { MemoryTaskQueue } from '../testing/memory-task-queue.js';
import { MemoryTaskStore } from '../testing/memory-task-store.js';
import { readSchedulerDeployment } from './lib/deployment.js';
import { BenchClock, seededRandom } from '../testing/determinism.js';
import * as dynamo from './lib/dynamo-accounting.js';
import { startEmulatorProcess } from './lib/emulator-process.js';
import { putItems } from './lib/put-items.js';
import { fmt, median, num, printTable, repeat, usd } from './lib/report.js';
import { CountingTaskQueue, SqsLedger } from './lib/request-counting.js';
import { AccountingScheduleStore } from './lib/schedule-accounting.js';
import * as model from './lib/schedule-model.js';
import { BYTES_PER_GB, cost, PRICES, PRICES_AS_OF, PRICES_REGION } from './prices.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    sizes: { type: 'string', default: '10,1000,10000' },
    'emulator-budget-s': { type: 'string', default: '300' },
    'no-emulator': { type: 'boolean', default: false },
  },
});
const RUNS = num(values.runs, 'runs', true, 1);
const SIZES = String(values.sizes)
  .split(',')
  .map((s) => num(s.trim(), 'sizes', true, 1));
const EMULATOR_BUDGET_MS = num(values['emulator-budget-s'], 'emulator-budget-s', false, 0) * 1000;

/** The tables, the scheduler function and its rule, from the synthesized CDK template. */
const deployment = await readSchedulerDeployment();
/** Assumed latency of one request from Lambda in the same region (not a measurement). */
const LATENCY: model.Latency = { dynamoMs: 5, sqsMs: 10 };
/** Schedules aged until their recent runs are full, for the steady-state costs. */
const STEADY = 100;
const SECOND = 1000;
const DAY_MS = 86_400 * SECOND;
const TICK_MS = DEFAULTS.scheduleTickSeconds * SECOND;
/** When the schedules are created, and the midnight they first fire at. */
const CREATED = Date.parse('2026-12-01T12:00:00.000Z');
const MIDNIGHT = Date.parse('2026-12-02T00:00:00.000Z');
/** The tick that hands over midnight (its horizon is one tick ahead), and the one before it (nothing due). */
const FIRE_TICK = MIDNIGHT - 30 * SECOND;
const IDLE_TICK = FIRE_TICK - TICK_MS;
/** The budget the function gives a tick: its timeout (55 s) less 10 s (functions/scheduler.ts). */
const BUDGET_MS = (55 - 10) * SECOND;
const JITTER = '10m';
const JITTER_S = 600;
const CALLER = { owner: 'arn:aws:iam::123456789012:role/kaj-producer' };
const CONCURRENCY = DEFAULTS.scheduleTickConcurrency;
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

type StoredItem = Record<string, unknown>;
type World = ReturnType<typeof memoryWorld>;

/**
 * Kaj over the in-memory fakes, the schedules store holding copies of `seed` (items as stored);
 * with `accounting`, every request is billed. `maxPerOwner`: the schedules one caller may create.
 */
function memoryWorld(seed: Iterable<StoredItem>, at: number, accounting: boolean, maxPerOwner?: number) {
  const clock = new BenchClock(at);
  const schedules = new MemoryScheduleStore();
  for (const item of seed) schedules.items.set(String(item.name), structuredClone(item) as unknown as ScheduleRecord);
  const tasks = new MemoryTaskStore();
  const queue = new MemoryTaskQueue({ now: () => clock.now() });
  const ledgers = { schedules: new dynamo.DynamoLedger(), tasks: new dynamo.DynamoLedger(), sqs: new SqsLedger() };
  const dueIndex = SCHEDULE_TABLE_SCHEMA.dueIndex.name;
  const accounted = accounting
    ? new AccountingScheduleStore(schedules, deployment.schedulesTable, ledgers.schedules, dueIndex)
    : undefined;
  const kaj = createKaj({
    store: accounting
      ? new dynamo.AccountingTaskStore(tasks, deployment.taskTable, ledgers.tasks, TABLE_SCHEMA.outboxIndex.name)
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
  const unbilled = (): number => (accounted ? accounted.unbilled.DeleteItem + accounted.unbilled.Scan : 0);
  return { kaj, clock, schedules, tasks, queue, ledgers, unbilled };
}

/**
 * `n` daily schedules created through `kaj.schedules.put` at CREATED, as stored. One caller
 * creates them all: the deployment lets it own `n` (the default cap is DEFAULTS.scheduleMaxPerOwner).
 */
async function seedSchedules(n: number, jitter?: string): Promise<StoredItem[]> {
  const w = memoryWorld([], CREATED, false, n);
  const service = w.kaj.schedules;
  if (service === undefined) throw new Error('createKaj built no schedule service');
  for (let i = 0; i < n; i += 1) {
    const payload = { tenant: `tenant-${String(i).padStart(5, '0')}`, report: 'daily-usage' };
    const body = { cron: '0 0 * * *', timezone: 'UTC', overlap: 'allow', type: 'daily_report', payload };
    await service.put(nameOf(i), jitter === undefined ? body : { ...body, jitter }, CALLER);
  }
  return [...w.schedules.items.values()] as unknown as StoredItem[];
}

type Timed = Awaited<ReturnType<typeof timedTick>>;

async function timedTick(kaj: Kaj) {
  if (kaj.ticker === undefined) throw new Error('createKaj built no ticker');
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const report = await kaj.ticker.tick(BUDGET_MS);
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
  const byCommand: Record<string, number> = {};
  const add = (name: string, n: number) => (byCommand[name] = (byCommand[name] ?? 0) + n);
  for (const o of [...sOps, ...tOps]) add(`dynamodb ${o.api}`, 1);
  for (const c of calls) add(`sqs ${c.api}`, c.requests);
  return {
    report,
    schedules: dynamo.summarize(sOps),
    tasks: dynamo.summarize(tOps),
    sqsRequests: calls.reduce((s, c) => s + c.requests, 0),
    sqsBilled: calls.reduce((s, c) => s + c.billed, 0),
    pagesOnBusiestShard: Math.max(0, ...pages.values()),
    byCommand,
  };
}

/** The commands sent between two snapshots of `RequestCounter` counts, by `service Command` as in `byCommand`. */
function commandsSent(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, n] of Object.entries(after)) {
    const [service, command] = key.split(':');
    const name = `${service} ${command}`;
    out[name] = (out[name] ?? 0) + n - (before[key] ?? 0);
  }
  return out;
}

const sameCounts = (a: Record<string, number>, b: Record<string, number>): boolean =>
  [...Object.keys(a), ...Object.keys(b)].every((k) => (a[k] ?? 0) === (b[k] ?? 0));

type EmulatorEnv = Awaited<ReturnType<typeof startEmulatorEnv>>;

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
  const stop = async (): Promise<void> => {
    for (const c of [dynamodb, sqs, admin]) c.destroy();
    await child.stop();
  };
  return { admin, dynamodb, sqs, counter, stop };
}

let prefixSeq = 0;

/**
 * A fresh table pair and queues, the seed loaded, then the idle tick and the tick that hands over
 * midnight, each with the commands it sent (`elapsedMs`: the whole run, set-up and tear-down included).
 */
async function emulatorRun(env: EmulatorEnv, seed: readonly StoredItem[]) {
  const started = performance.now();
  const prefix = `kaj-bench-${(prefixSeq += 1)}`;
  const r = await ensureResources(env.admin, prefix);
  const schedulesTableName = resourceNames(prefix).schedules;
  await putItems(env.admin.dynamodb, schedulesTableName, seed.length, (i) => seed[i] as StoredItem);
  const { tableName, queueUrls, deadLetterQueueUrls } = r;
  const config = { tableName, schedulesTableName, queueUrls, deadLetterQueueUrls, settings: runtimeSettings() };
  const clock = new BenchClock(IDLE_TICK);
  const kaj = createKajOnAws(config, registry, {
    dynamodb: env.dynamodb,
    sqs: env.sqs,
    clock,
    random: seededRandom(1),
  });
  const tick = async (at: number) => {
    clock.t = at;
    const before = { ...env.counter.counts.requests };
    const timed = await timedTick(kaj);
    return { ...timed, calls: commandsSent(before, env.counter.counts.requests) };
  };
  const idle = await tick(IDLE_TICK);
  const fire = await tick(FIRE_TICK);
  await deleteResources(env.admin, prefix);
  return { idle, fire, elapsedMs: performance.now() - started };
}

type SizeResult = Awaited<ReturnType<typeof measureSize>>;

/** The size's ticks: billed over the fakes, timed over the bare fakes and (with `env`) over the emulators. */
async function measureSize(items: StoredItem[], env?: EmulatorEnv) {
  const counted = await repeat(RUNS, async () => {
    const w = memoryWorld(items, IDLE_TICK, true);
    const idle = await countedTick(w);
    w.clock.t = FIRE_TICK;
    const fire = await countedTick(w);
    if (w.unbilled() > 0) throw new Error('a tick made a DeleteItem or Scan the bench does not bill');
    return { fire, idle };
  });
  const timed = await repeat(RUNS, async () => {
    const w = memoryWorld(items, IDLE_TICK, false);
    const idle = await timedTick(w.kaj);
    w.clock.t = FIRE_TICK;
    return { idle, fire: await timedTick(w.kaj) };
  });
  const emulated: Awaited<ReturnType<typeof emulatorRun>>[] = [];
  const started = performance.now();
  for (let r = 0; env !== undefined && r < RUNS; r += 1) {
    const run = await emulatorRun(env, items);
    emulated.push(run);
    if (r + 1 < RUNS && performance.now() - started + run.elapsedMs > EMULATOR_BUDGET_MS) break;
  }
  const { fire: counts, idle: idleCounts } = counted[0] as (typeof counted)[0];
  return {
    n: items.length,
    // The counts of the fire tick and of the idle tick before it (the first run's), the same in every run.
    counts,
    idleCounts,
    identical: counted.every((x) => JSON.stringify(x.fire) === JSON.stringify(counts)),
    // Timed ticks: the idle tick and the fire tick of each run.
    memory: { idle: timed.map((t) => t.idle), fire: timed.map((t) => t.fire) },
    emulator: { idle: emulated.map((e): Timed => e.idle), fire: emulated.map((e): Timed => e.fire) },
    // The SDK clients sent what the ledger billed (every emulator run).
    requestsAgree: emulated.every(
      (e) => sameCounts(e.fire.calls, counts.byCommand) && sameCounts(e.idle.calls, idleCounts.byCommand),
    ),
  };
}

const med = (ts: readonly Timed[], key: 'wallMs' | 'cpuMs'): number => median(ts.map((t) => t[key]));
const fires = (r: SizeResult): number => r.counts.report.created;

/** The CPU of the fire and idle ticks: the emulator runs' (Kaj + SDK) if any, else the in-memory ones. */
function cpuOf(r: SizeResult): { fireMs: number; idleMs: number; source: string } {
  const emu = r.emulator.fire.length > 0;
  const runs = emu ? r.emulator : r.memory;
  const source = emu ? 'emulators (Kaj + SDK)' : 'in-memory (Kaj and the fakes: no SDK)';
  return { fireMs: med(runs.fire, 'cpuMs'), idleMs: med(runs.idle, 'cpuMs'), source };
}

function tickIo(c: TickCounts): model.TickIo {
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

function estimate(cpuMs: number, c: TickCounts, memoryMiB: number): model.DurationEstimate {
  return model.lambdaDuration(cpuMs, model.ioTimeMs(tickIo(c), LATENCY), memoryMiB);
}

/**
 * How the tick's herd drains at `memoryMiB` when one tick cannot hand it all over (upper-bound
 * times): before the first schedule, the idle tick's CPU and the busiest shard's index pages; per
 * schedule, the CPU above the idle tick's and the waits of its requests ÷ the concurrency.
 */
function drainOf(r: SizeResult, memoryMiB: number): model.Drain {
  const cpu = cpuOf(r);
  const share = model.vcpuShare(memoryMiB);
  const io = tickIo(r.counts);
  const n = Math.max(1, fires(r));
  const workIoMs = model.ioTimeMs({ ...io, queryPagesOnBusiestShard: 0, due: CONCURRENCY }, LATENCY);
  return model.drainTicks({
    n: fires(r),
    perFireMs: Math.max(0, cpu.fireMs - cpu.idleMs) / n / share + workIoMs / n,
    overheadMs: cpu.idleMs / share + io.queryPagesOnBusiestShard * LATENCY.dynamoMs,
    budgetMs: BUDGET_MS,
    tickMs: TICK_MS,
    leadMs: MIDNIGHT - FIRE_TICK,
    graceMs: DEFAULTS.scheduleMisfireGraceSeconds * SECOND,
  });
}

/** DynamoDB dollars of a tick (or of anything summarized). */
function dynamoUsd(s: dynamo.DynamoSummary): { reads: number; writes: number } {
  return {
    reads: cost(PRICES.dynamodb.readRequestUnit, s.rru),
    writes: cost(PRICES.dynamodb.writeRequestUnit, s.tableWru + s.indexWru),
  };
}

const slash = (...v: number[]): string => v.join('/');
const plus = (a: number, b: number): string => `${fmt(a)} + ${fmt(b)}`;
const wallCpu = (ts: readonly Timed[], digits: number): string =>
  ts.length === 0 ? 'not run' : `${fmt(med(ts, 'wallMs'), digits)} / ${fmt(med(ts, 'cpuMs'), digits)}`;
const same = (a: readonly number[], b: readonly number[]): string =>
  JSON.stringify(a) === JSON.stringify(b) ? 'yes' : 'NO';

async function main(): Promise<void> {
  const wallStart = performance.now();
  const due = deployment.schedulesTable.indexes.find((i) => i.name === SCHEDULE_TABLE_SCHEMA.dueIndex.name);
  const outbox = deployment.taskTable.indexes.find((i) => i.name === TABLE_SCHEMA.outboxIndex.name);
  const fn = deployment.scheduler;
  const memories = [...new Set([128, 256, fn.memoryMiB])].sort((a, b) => a - b);
  console.log(
    `Kaj scheduler benchmark — median of ${RUNS} runs where timed; prices ${PRICES_REGION} as of ${PRICES_AS_OF}`,
  );
  console.log(`Model: ${deployment.source}`);
  console.log(
    `  schedules table key ${deployment.schedulesTable.partitionKey}; GSI ${due?.name ?? '(none!)'} (${due?.partitionKey}, ${due?.sortKey}; ${due?.projection.type}; ${SCHEDULE_TABLE_SCHEMA.dueIndex.shards} shards)` +
      `; task table GSI ${outbox?.name ?? '(none)'} (${outbox?.projection.type ?? '-'})`,
  );
  console.log(
    `  scheduler function: ${fn.memoryMiB} MiB ${fn.architecture}, timeout ${fn.timeoutSeconds} s; rule ${deployment.tickRule}; ` +
      `tick concurrency ${CONCURRENCY}; budget ${BUDGET_MS / 1000} s (timeout − 10 s, functions/scheduler.ts)`,
  );
  for (const w of deployment.warnings) console.log(`  note: ${w}`);
  console.log(`  host: ${cpus()[0]?.model ?? '?'} × ${cpus().length}, node ${process.version}`);

  const seed = await seedSchedules(Math.max(...SIZES, STEADY));
  const env = values['no-emulator'] === true ? undefined : await startEmulatorEnv();
  // Warm-up (JIT, connections, the SDK's cached middleware stacks): not measured.
  if (env !== undefined) await emulatorRun(env, seed.slice(0, 10));

  // 1. The tick that hands over midnight, per size --------------------------------------------
  const results: SizeResult[] = [];
  for (const n of SIZES) results.push(await measureSize(seed.slice(0, n), env));
  const big = results.at(-1) as SizeResult;
  const per = (label: string, f: (r: SizeResult, c: TickCounts) => string): string[] => [
    label,
    ...results.map((r) => f(r, r.counts)),
  ];
  const rows: string[][] = [
    ['TickReport'],
    per('  due / created / replayed / deferred / failures', (_, { report: t }) =>
      slash(t.due, t.created, t.replayed, t.deferred, t.failures),
    ),
    ['Schedules table, per tick (AWS rules)'],
    per('  requests Query / GetItem / PutItem', (_, { schedules: { requests: q } }) =>
      slash(q.Query, q.GetItem, q.PutItem),
    ),
    per('  due-index pages on the busiest shard', (_, c) => fmt(c.pagesOnBusiestShard)),
    per('  RRU: Query + GetItem (strongly consistent)', (_, c) =>
      plus(c.schedules.rruByApi.Query, c.schedules.rruByApi.GetItem),
    ),
    per('  WRU: table + due index', (_, c) => plus(c.schedules.tableWru, c.schedules.indexWru)),
    per('  due-index writes: move (delete+put) / put / delete', (_, { schedules: { indexChanges: x } }) =>
      slash(x.move, x.put, x.delete),
    ),
    per('  condition failures', (_, c) => fmt(c.schedules.conditionFailed)),
    ["Task table (the runs' tasks), per tick"],
    per('  requests PutItem / GetItem / UpdateItem', (_, { tasks: { requests: q } }) =>
      slash(q.PutItem, q.GetItem, q.UpdateItem),
    ),
    per(`  WRU: table + ${outbox?.name ?? 'index'} index`, (_, c) => plus(c.tasks.tableWru, c.tasks.indexWru)),
    ['SQS, per tick'],
    per(
      '  SendMessage / billed requests',
      (_, c) => `${fmt(c.byCommand['sqs SendMessage'] ?? 0)} / ${fmt(c.sqsBilled)}`,
    ),
    ['Checks'],
    per('  counts identical in every run', (r) => (r.identical ? `yes (${RUNS})` : 'NO')),
    per('  SDK clients sent what the ledger billed', (r) =>
      r.emulator.fire.length === 0 ? 'not run' : r.requestsAgree ? 'yes' : 'NO',
    ),
    ['In-process timing of the tick (median)'],
    per('  in-memory stores: wall / CPU ms', (r) => wallCpu(r.memory.fire, 1)),
    per('  emulators, real SDK: wall / CPU ms', (r) => wallCpu(r.emulator.fire, 1)),
    per('  emulator runs (median of)', (r) => String(r.emulator.fire.length)),
    per('  CPU per fire, ms (emulators; in-memory)', (r) => {
      const each = (ts: readonly Timed[]) => fmt(med(ts, 'cpuMs') / Math.max(1, fires(r)), 3);
      return `${r.emulator.fire.length === 0 ? '-' : each(r.emulator.fire)}; ${each(r.memory.fire)}`;
    }),
    [
      `On Lambda (estimate: DynamoDB ${LATENCY.dynamoMs} ms, SQS ${LATENCY.sqsMs} ms a request, ${CONCURRENCY} schedules at once)`,
    ],
    per('  waiting on AWS, ms', (_, c) => fmt(model.ioTimeMs(tickIo(c), LATENCY), 0)),
  ];
  for (const mem of memories) {
    const est = (r: SizeResult) => estimate(cpuOf(r).fireMs, r.counts, mem);
    const yes = (e: model.DurationEstimate, limit: number) =>
      e.totalMs <= limit ? 'yes' : e.lowerMs <= limit ? 'maybe' : 'NO';
    rows.push(
      per(`  ${mem} MiB (${fmt(model.vcpuShare(mem), 3)} vCPU): CPU + wait = ms`, (r) => {
        const e = est(r);
        return `${fmt(e.cpuMs, 0)} + ${fmt(e.ioMs, 0)} = ${fmt(e.totalMs, 0)}`;
      }),
      per(
        `    all sent by midnight (30 s) / in the budget (${BUDGET_MS / 1000} s)`,
        (r) => `${yes(est(r), 30_000)} / ${yes(est(r), BUDGET_MS)}`,
      ),
      per('    one tick hands over (budget) / ticks needed', (r) => {
        const d = drainOf(r, mem);
        return `${fmt(d.capacity, 0)} / ${d.missed > 0 ? `>${d.perTick.length}` : d.perTick.length}`;
      }),
      per(`    handed over / missed (seen > ${DEFAULTS.scheduleMisfireGraceSeconds} s late)`, (r) => {
        const d = drainOf(r, mem);
        return `${fmt(d.handed, 0)} / ${fmt(d.missed, 0)}`;
      }),
      per('    last run sent, s after its time', (r) => {
        const late = drainOf(r, mem).lastLateMs / 1000;
        return late <= 0 ? `on time (${fmt(late, 1)})` : fmt(late, 1);
      }),
    );
  }
  console.log('\n1. The tick at 23:59:30 that hands over midnight — cron "0 0 * * *" UTC, no jitter, overlap allow');
  printTable(['', ...results.map((r) => `${fmt(r.n, 0)} schedules`)], rows, [52, 16]);
  console.log(
    `  In-process timing: the tick over the in-memory fakes measures Kaj's code (and the fakes' copies of every item), no SDK; "emulators" runs the real adapters and SDK clients ` +
      `(tuned as on Lambda) against dynalite + local-aws-sqs in a child process over loopback HTTP — the CPU figure is this process's ` +
      `(Kaj + SDK + HTTP client; no TLS). Its wall time ≈ its CPU time: the tick is CPU-bound on the client side, dynalite keeps up on the other core.`,
  );
  console.log(
    `  On AWS add ≈ ${LATENCY.dynamoMs} ms per DynamoDB request and ${LATENCY.sqsMs} ms per SQS request ÷ ${CONCURRENCY} in flight, ` +
      `and stretch the CPU to the function's share of a vCPU (memory ÷ 1,769 MB): "CPU + wait" adds both, an upper bound (they overlap). ` +
      `The herd drains over as many ticks as it takes, each starting no schedule after its budget; one seen more than ${DEFAULTS.scheduleMisfireGraceSeconds} s late ` +
      `is skipped under misfire "skip" (the default, used here), run late under run_once / catch_up.`,
  );

  // 2. Jitter ----------------------------------------------------------------------------------
  const jn = Math.max(...SIZES);
  const jseed = await seedSchedules(jn, JITTER);
  const jw = memoryWorld(jseed, IDLE_TICK, true);
  const handed: number[] = [];
  for (let k = 0; k <= 12; k += 1) {
    jw.clock.t = IDLE_TICK + k * TICK_MS;
    handed.push((await countedTick(jw)).report.created);
  }
  const spreadOf = (times: readonly number[]) => model.fireSpread(times, MIDNIGHT, JITTER_S);
  const spread = spreadOf([...jw.tasks.items.values()].map((t) => Date.parse(String(t.run_at))));
  const offsetsOf = (names: string[]) => names.map((name) => MIDNIGHT + jitterOffsetMs(name, JITTER_S * SECOND));
  // The ratio depends on the names (a fixed hash of each): the same count of other names, for comparison.
  const otherRatios = Array.from(
    { length: 20 },
    (_, v) => spreadOf(offsetsOf(Array.from({ length: jn }, (_, i) => `set${v}-${nameOf(i)}`))).ratio,
  );
  console.log(
    `\n2. The same ${fmt(jn, 0)} schedules with jitter "${JITTER}": fire moments spread over 00:00:00–00:09:59`,
  );
  const total = handed.reduce((a, b) => a + b, 0);
  console.log(
    `  Handed over by the ticks 23:58:30 to 00:10:30: ${handed.map((h) => fmt(h, 0)).join(', ')} (${fmt(total, 0)} of ${fmt(jn, 0)})`,
  );
  const second = (s: number) => `00:${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
  const minMedMax = (xs: number[]) => [Math.min(...xs), median(xs), Math.max(...xs)].map((x) => fmt(x, 2)).join(' / ');
  printTable(
    ["Fires per second (from the tasks' run_at)", 'value'],
    [
      ['  busiest second (which)', `${spread.busiest} (${second(spread.busiestSecond)})`],
      ['  mean (fires ÷ 600 s)', fmt(spread.mean, 2)],
      ['  ratio busiest ÷ mean (must be ≤ 2)', `${fmt(spread.ratio, 2)} ${spread.ratio <= 2 ? '(ok)' : '(OVER 2)'}`],
      ['  seconds with no fire / fires outside the window', `${spread.emptySeconds} / ${spread.outside}`],
      [`  ratio for 20 other sets of ${fmt(jn, 0)} names: min/med/max`, minMedMax(otherRatios)],
      ['  …of which over 2', `${otherRatios.filter((x) => x > 2).length} of ${otherRatios.length}`],
      ['Checks'],
      [
        '  SQS visible-at agrees with run_at (per second)',
        same(spread.perSecond, spreadOf(jw.queue.queued('normal').map((q) => q.visibleAt)).perSecond),
      ],
      [
        '  jitterOffsetMs of the names agrees (per second)',
        same(spread.perSecond, spreadOf(offsetsOf(jseed.map((r) => String(r.name)))).perSecond),
      ],
    ],
    [52, 18],
  );

  // 3. At rest ---------------------------------------------------------------------------------
  const cpu = cpuOf(big);
  const idleC = big.idleCounts;
  const perMonth = model.ticksPerMonth(deployment.tickSeconds);
  const idleIo = LATENCY.dynamoMs * Math.max(1, idleC.pagesOnBusiestShard);
  const idleDur = (mem: number) => model.lambdaDuration(cpu.idleMs, idleIo, mem);
  const ir = idleC.schedules.requests;
  console.log(`\n3. An idle tick (23:58:30: ${fmt(big.n, 0)} schedules exist, none due) and the scheduler at rest`);
  printTable(
    ['Idle tick', 'value'],
    [
      ['  TickReport due / created', `${idleC.report.due} / ${idleC.report.created}`],
      ['  requests (Query on each due shard / GetItem / PutItem)', `${ir.Query} / ${ir.GetItem} / ${ir.PutItem}`],
      [
        '  RRU (an empty index Query: the 0.5 RRU minimum)',
        `${fmt(idleC.schedules.rru, 2)} (${fmt(idleC.schedules.rru / Math.max(1, ir.Query), 2)} each)`,
      ],
      [
        '  WRU / SQS requests',
        `${fmt(idleC.schedules.tableWru + idleC.schedules.indexWru + idleC.tasks.tableWru)} / ${idleC.sqsRequests}`,
      ],
      ['  in-memory stores: wall / CPU ms', wallCpu(big.memory.idle, 2)],
      ['  emulators, real SDK: wall / CPU ms', wallCpu(big.emulator.idle, 2)],
      ...memories.map((mem) => {
        const e = idleDur(mem);
        return [
          `  on Lambda at ${mem} MiB: CPU + one round of Queries = ms`,
          `${fmt(e.cpuMs, 1)} + ${fmt(e.ioMs, 0)} = ${fmt(e.totalMs, 1)}`,
        ];
      }),
    ],
    [60, 24],
  );
  const lambdaReq = cost(PRICES.lambda.request, perMonth);
  const reads = cost(PRICES.dynamodb.readRequestUnit, idleC.schedules.rru * perMonth);
  const restGbs = memories.map((mem) => model.gbSeconds(idleDur(mem).totalMs, mem) * perMonth);
  const restUsd = restGbs.map((gbs) => cost(PRICES.lambda.arm64GbSecond, gbs));
  console.log(
    `\n  The scheduler at rest, per month (${fmt(perMonth, 0)} ticks: a 30-day month of ${deployment.tickRule}), before free tiers:`,
  );
  printTable(
    ['', 'per month'],
    [
      ['  EventBridge scheduled rule (assumed free: see below)', usd(0, 4)],
      [`  Lambda requests (${fmt(perMonth, 0)})`, usd(lambdaReq, 4)],
      ...memories.map((mem, i) => [
        `  Lambda duration at ${mem} MiB (${fmt(restGbs[i] ?? 0, 1)} GB-s)`,
        usd(restUsd[i] ?? 0, 4),
      ]),
      [
        `  DynamoDB reads (${fmt(idleC.schedules.rru, 1)} RRU a tick: ${fmt(idleC.schedules.rru * perMonth, 0)} RRU)`,
        usd(reads, 4),
      ],
      ...memories.map((mem, i) => [`  total at ${mem} MiB`, usd(lambdaReq + (restUsd[i] ?? 0) + reads, 4)]),
    ],
    [60, 24],
  );

  // 4. Per fire: the first fire (recent runs empty) and the steady state (recent runs full) ------
  const steadyW = memoryWorld(seed.slice(0, STEADY), FIRE_TICK, true);
  for (let d = 0; d < RECENT + 1; d += 1) {
    steadyW.clock.t = FIRE_TICK + d * DAY_MS;
    await countedTick(steadyW);
  }
  steadyW.clock.t = FIRE_TICK + (RECENT + 1) * DAY_MS;
  const steady = await countedTick(steadyW);
  const dueIdx = deployment.schedulesTable.indexes.filter((i) => i.name === SCHEDULE_TABLE_SCHEMA.dueIndex.name);
  /** A schedule's item and due-index entry (median bytes), and what storing them costs a month. */
  const stored = (items: readonly StoredItem[]) => {
    const item = median(items.map((i) => dynamo.itemSize(i as dynamo.Item)));
    const entrySize = (i: StoredItem) =>
      dueIdx.reduce(
        (s, idx) => s + dynamo.itemSize(dynamo.projectedItem(i as dynamo.Item, deployment.schedulesTable, idx)),
        0,
      );
    const bytes = model.storedBytes(item, [median(items.map(entrySize))]);
    return { item, bytes, usd: cost(PRICES.dynamodb.storage, bytes / BYTES_PER_GB) };
  };
  const fresh = stored(seed.slice(0, STEADY));
  const aged = stored([...steadyW.schedules.items.values()] as unknown as StoredItem[]);
  // Lambda per fire: the largest tick's GB-s ÷ its fires (a tick's invocation is counted at rest).
  const lambdaPerFire = memories.map((mem) => {
    const g = model.gbSeconds(estimate(cpu.fireMs, big.counts, mem).totalMs, mem) / Math.max(1, fires(big));
    return cost(PRICES.lambda.arm64GbSecond, g);
  });
  const fireCost = (c: TickCounts) => {
    const n = Math.max(1, c.report.created);
    const s = dynamoUsd(c.schedules);
    // The Queries' minimum is paid by every tick (section 3): only what a busy tick reads beyond it is the fires'.
    const idleReads = cost(PRICES.dynamodb.readRequestUnit, idleC.schedules.requests.Query * dynamo.queryReadUnits(0));
    const t = dynamoUsd(c.tasks);
    const [reads, writes] = [(s.reads - idleReads) / n, s.writes / n];
    const [taskWrites, sqs] = [(t.writes + t.reads) / n, cost(PRICES.sqs.request, c.sqsBilled) / n];
    // The scheduler's own cost at each memory, and with the run's submit (its task and its message).
    const own = lambdaPerFire.map((l) => reads + writes + l);
    return { c, n, reads, writes, taskWrites, sqs, own, all: own.map((o) => o + taskWrites + sqs) };
  };
  const first = fireCost(big.counts);
  const aging = fireCost(steady);
  const M = (v: number): string => usd(v * 1_000_000, 3);
  const both = (label: string, f: (x: typeof first) => number): string[] => [label, M(f(first)), M(f(aging))];
  const wruPerFire = (x: typeof first) =>
    `${fmt(x.c.schedules.tableWru / x.n, 2)} + ${fmt(x.c.schedules.indexWru / x.n, 2)}`;
  console.log('\n4. Per fire, $ per million fires (overlap allow: no task read; fires of the 10,000-schedule tick)');
  printTable(
    ['', 'first fire', `steady (${RECENT} recent)`],
    [
      both('  schedules table reads (GetItem; Query beyond the idle minimum)', (x) => x.reads),
      both('  schedules table writes (PutItem + due-index move)', (x) => x.writes),
      ...memories.map((mem, i) => both(`  scheduler Lambda duration at ${mem} MiB`, () => lambdaPerFire[i] ?? 0)),
      ...memories.map((mem, i) => both(`  = the scheduler's own cost at ${mem} MiB`, (x) => x.own[i] ?? 0)),
      both("  the run's task: PutItem on the task table", (x) => x.taskWrites),
      both("  the run's task: SQS SendMessage", (x) => x.sqs),
      ...memories.map((mem, i) => both(`  = including the run's submit at ${mem} MiB`, (x) => x.all[i] ?? 0)),
      ['  schedules WRU per fire: table + index', wruPerFire(first), wruPerFire(aging)],
      ['  schedule item size, bytes (before the fire)', fmt(fresh.item, 0), fmt(aged.item, 0)],
    ],
    [66, 18],
  );

  console.log('\n  Per schedule, per month (storage: item + 100 B, due-index entry + 100 B, at $0.25 per GB-month):');
  const month = (label: string, v: number, digits: number) => [label, usd(v, digits), usd(v * 1_000_000, 2)];
  printTable(
    ['', 'per schedule', 'per million'],
    [
      month(`  idle schedule (${fmt(fresh.bytes, 0)} B stored; ticks cost it nothing)`, fresh.usd, 8),
      month(`  idle schedule, recent runs full (${fmt(aged.bytes, 0)} B)`, aged.usd, 8),
      ...memories.map((mem, i) =>
        month(`  daily schedule, 30 fires, scheduler only, ${mem} MiB`, 30 * (aging.own[i] ?? 0) + aged.usd, 6),
      ),
      ...memories.map((mem, i) =>
        month(`  daily schedule, 30 fires, with the runs' submit, ${mem} MiB`, 30 * (aging.all[i] ?? 0) + aged.usd, 6),
      ),
    ],
    [66, 16],
  );

  console.log('\nAssumptions and notes:');
  for (const a of [
    `Counts are billed by AWS's rules from the item images (bench/lib/dynamo-accounting.ts): a GetItem is strongly consistent (1 RRU per 4 KB), an index Query eventually consistent (0.5 RRU per 4 KB of returned ${due?.projection.type ?? ''} entries, at least 0.5); a PutItem is 1 WRU per started KB of the larger image; the due index is written only when an item enters, leaves or moves in it, a move (due_at changed) being a delete + a put, 1 WRU each for a keys-only entry.`,
    `Lambda: duration = measured CPU ÷ (memory ÷ 1,769 MB) + requests × latency ÷ ${CONCURRENCY} (schedules in flight; the ${SCHEDULE_TABLE_SCHEMA.dueIndex.shards} shards' Query pages in parallel, each shard's one after another) — an upper bound, as waits and CPU overlap; arm64 price, 1 ms rounding. CPU measured here on ${cpu.source} (x86, no TLS): Graviton and TLS will differ.`,
    `Latency per request (DynamoDB ${LATENCY.dynamoMs} ms, SQS ${LATENCY.sqsMs} ms) is an assumption for in-region calls from Lambda, not a measurement.`,
    `The fake clock stands still during a tick, so the in-process runs never defer (the budget is not exercised): the "within budget" verdicts come from the estimate.`,
    `EventBridge: the tick is an EventBridge scheduled rule (events.Rule, ${deployment.tickRule}) on the default bus; bench/prices.ts has no EventBridge price, and none is counted (assumed free; EventBridge Scheduler, a different service, would charge $1.00 per million after 14 million free a month, i.e. $0 for ${fmt(perMonth, 0)} ticks).`,
    `Per fire: the run's task is created by the scheduler (task table PutItem, SQS SendMessage: "the run's submit"); its execution (consumer, ESM receive/delete, status writes) is not included — see npm run bench:cost. Lambda per fire is the ${fmt(big.n, 0)}-schedule tick's GB-s ÷ its fires; a tick's invocation (request) is counted at rest, not per fire.`,
    `Steady state: ${STEADY} schedules aged ${RECENT + 1} days (their recent runs full), then one more tick measured; deployed memory ${fn.memoryMiB} MiB.`,
    `Not counted: CloudWatch Logs (the tick logs a line only when something is due), metrics, data transfer, free tiers, PITR backups of the schedules table.`,
  ]) {
    console.log(`  - ${a}`);
  }
  console.log(`\nDone in ${fmt((performance.now() - wallStart) / 1000, 1)} s.`);
  await env?.stop();
}

await main();
