/**
 * Section 3 of `npm run bench:pipelines`: a deployment with `pipelines` pipelines declared (copies
 * of `nightly_sales`, each firing once a day), between their runs: every request the world makes
 * over `hours` of virtual time in which nothing fires, counted by table and API, so that anything
 * polling per pipeline would show. Also: what one idle tick asks of DynamoDB with no pipeline
 * declared (the same, if pipelines cost nothing at rest), the sync of the declared schedules at a
 * scheduler cold start, the schedules' storage, and the CPU of an idle tick (timed, median of
 * `runs`).
 *
 * @module
 */
import { SCHEDULE_TABLE_SCHEMA } from '../../shared/config/resources.js';
import type { AnyTaskDefinition } from '../../shared/task/define.js';
import { TaskRegistry } from '../../shared/task/define.js';
import { type Item, itemSize, projectedItem, readUnits, type TableModel, summarize } from '../lib/dynamo-accounting.js';
import { median } from '../lib/report.js';
import { storedBytes } from '../lib/schedule-model.js';
import { nightlySalesCopy, partitionResult } from './copy.js';
import { pipelineWorld, type World } from './world.js';

export interface AtRestOptions {
  readonly pipelines: number;
  readonly hours: number;
  readonly runs: number;
  readonly seed: number;
  readonly taskTable: TableModel;
  readonly schedulesTable: TableModel;
}

export interface AtRest {
  readonly ticks: number;
  /** Requests of the window by `table API` (`schedules Query`…), and what else ran (must be none). */
  readonly requests: Record<string, number>;
  readonly scheduleQueryRru: number;
  readonly sweeperQueryRru: number;
  readonly otherRequests: number;
  readonly invocations: number;
  /** One idle tick with no pipeline declared: its Queries and read units. */
  readonly bareTick: { readonly queries: number; readonly rru: number };
  /** The sync of the declared schedules at a cold start, all unchanged: reads, writes, Scan pages and read units. */
  readonly sync: { readonly gets: number; readonly puts: number; readonly scans: number; readonly rru: number };
  /** Bytes stored for one schedule (item and due-index entry, with DynamoDB's overheads), median. */
  readonly scheduleBytes: number;
  /** CPU ms of one idle tick on the in-memory fakes, per run, and their median. */
  readonly tickCpuMs: readonly number[];
  readonly medianTickCpuMs: number;
  /** Wall ms of one `definePipeline` (median over the pipelines), and of all of them. */
  readonly defineMs: number;
  readonly defineTotalMs: number;
}

const HOUR = 3_600_000;

/**
 * The registry of `n` pipelines (copies of nightly_sales named `sales_0000`…) sharing their node
 * types, and the wall time each `definePipeline` took (what every function's cold start pays).
 */
export function manyPipelines(n: number): { registry: TaskRegistry; defineMs: number[] } {
  let nodeTypes: readonly AnyTaskDefinition[] | undefined;
  const defs: AnyTaskDefinition[] = [];
  const defineMs: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const t0 = performance.now();
    const copy = nightlySalesCopy(
      async (name, ctx) => partitionResult(name, ctx),
      { name: `sales_${String(i).padStart(4, '0')}` },
      nodeTypes,
    );
    defineMs.push(performance.now() - t0);
    nodeTypes ??= copy.nodeTypes;
    defs.push(copy.pipeline);
  }
  const types = nodeTypes ?? nightlySalesCopy(async () => null).nodeTypes;
  return { registry: new TaskRegistry([...types, ...defs]), defineMs };
}

export async function measureAtRest(o: AtRestOptions): Promise<AtRest> {
  // 19:00 UTC: half an hour after the nightly fire (00:30 Dhaka); the next is 23.5 hours away.
  const start = Date.parse('2026-12-01T19:00:00.000Z');
  const tables = { taskTable: o.taskTable, schedulesTable: o.schedulesTable };
  const many = manyPipelines(o.pipelines);
  const w = pipelineWorld({ registry: many.registry, start, seed: o.seed, ...tables });
  await w.begin();
  const sync = await coldStartSync(w, o.pipelines);

  const marks = marksOf(w);
  await w.runUntil(start + o.hours * HOUR);
  const tOps = w.ledgers.tasks.ops.slice(marks.tasks);
  const sOps = w.ledgers.schedules.ops.slice(marks.schedules);
  const requests: Record<string, number> = {};
  const add = (k: string, n: number): void => {
    if (n !== 0) requests[k] = (requests[k] ?? 0) + n;
  };
  for (const op of tOps) add(`tasks ${op.api}`, 1);
  for (const op of sOps) add(`schedules ${op.api}`, 1);
  add('history Query', w.history.queries - marks.history.queries);
  add('history PutItem', w.history.writes - marks.history.writes);
  add('limits UpdateItem', w.limits.tally.updateItems - marks.limits);
  add('SQS (any)', w.ledgers.sqs.calls.length - marks.sqs);
  const invocations = w.tally.invocations.run + w.tally.invocations.node - marks.invocations;
  const expected = new Set(['schedules Query', 'tasks Query']);
  const otherRequests = Object.entries(requests)
    .filter(([k]) => !expected.has(k))
    .reduce((s, [, n]) => s + n, 0);

  const tickCpuMs: number[] = [];
  for (let r = 0; r < o.runs; r += 1) tickCpuMs.push(await idleTickCpu(w));
  const bare = pipelineWorld({ registry: manyPipelines(0).registry, start, seed: o.seed, ...tables, scheduler: false });
  await bare.begin();
  const before = bare.ledgers.schedules.ops.length;
  await bare.kaj.ticker?.tick();
  const bareOps = bare.ledgers.schedules.ops.slice(before);
  return {
    ticks: Math.round((o.hours * HOUR) / 60_000),
    requests,
    scheduleQueryRru: summarize(sOps).rruByApi.Query,
    sweeperQueryRru: summarize(tOps).rruByApi.Query,
    otherRequests,
    invocations,
    bareTick: { queries: bareOps.filter((op) => op.api === 'Query').length, rru: summarize(bareOps).rru },
    sync,
    scheduleBytes: median(
      [...w.schedulesInner.items.values()].map((r) => scheduleStoredBytes(r as unknown as Item, o)),
    ),
    tickCpuMs,
    medianTickCpuMs: median(tickCpuMs),
    defineMs: median(many.defineMs),
    defineTotalMs: many.defineMs.reduce((a, b) => a + b, 0),
  };
}

function marksOf(w: World) {
  return {
    tasks: w.ledgers.tasks.ops.length,
    schedules: w.ledgers.schedules.ops.length,
    history: { queries: w.history.queries, writes: w.history.writes },
    limits: w.limits.tally.updateItems,
    sqs: w.ledgers.sqs.calls.length,
    invocations: w.tally.invocations.run + w.tally.invocations.node,
  };
}

/**
 * The scheduler's sync of the schedules declared in code, as at a cold start where nothing
 * changed: a consistent read of each, and a Scan of the table for schedules no longer declared.
 * The Scan is not billed by the ledger: its read units are computed here, eventually consistent,
 * per page of `SCAN_PAGE` items.
 */
async function coldStartSync(w: World, declared: number) {
  const service = w.kaj.schedules;
  if (service === undefined) throw new Error('createKaj built no schedule service');
  const before = { ops: w.ledgers.schedules.ops.length, scans: w.schedules.unbilled.Scan };
  const report = await service.syncDeclared(w.registry.declaredSchedules());
  if (report.created.length + report.updated.length + report.deleted.length > 0) {
    throw new Error(`the second sync changed schedules: ${JSON.stringify(report)}`);
  }
  const ops = w.ledgers.schedules.ops.slice(before.ops);
  const s = summarize(ops);
  const sizes = [...w.schedulesInner.items.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map((r) => itemSize(r));
  let scanRru = 0;
  for (let i = 0; i < Math.max(1, sizes.length); i += SCAN_PAGE) {
    scanRru += readUnits(
      sizes.slice(i, i + SCAN_PAGE).reduce((t, b) => t + b, 0),
      false,
    );
  }
  if (sizes.length !== declared) throw new Error(`${sizes.length} schedules stored, ${declared} declared`);
  return {
    gets: s.requests.GetItem,
    puts: s.requests.PutItem,
    scans: w.schedules.unbilled.Scan - before.scans,
    rru: s.rru + scanRru,
  };
}

/** Items per Scan page the sync asks for (`ScheduleService.syncDeclared`). */
const SCAN_PAGE = 200;

/** CPU ms of one tick run outside the clock (nothing is due: it reads the due shards and stops). */
async function idleTickCpu(w: World): Promise<number> {
  const c0 = process.cpuUsage();
  const report = await w.kaj.ticker?.tick();
  const c = process.cpuUsage(c0);
  if (report === undefined || report.due !== 0) throw new Error('the idle tick found something due');
  return (c.user + c.system) / 1000;
}

/** A schedule's stored bytes: its item and its entry in each index it is in. */
function scheduleStoredBytes(item: Item, o: AtRestOptions): number {
  const t = o.schedulesTable;
  const entries = t.indexes
    .filter((i) => i.name === SCHEDULE_TABLE_SCHEMA.dueIndex.name && item[i.partitionKey] !== undefined)
    .map((i) => itemSize(projectedItem(item, t, i)));
  return storedBytes(itemSize(item), entries);
}
