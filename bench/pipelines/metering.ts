/**
 * What a stretch of the world's time cost, by side: every request by service and API, and the
 * counts `model.ts` prices. The ledgers and tallies only grow, so a stretch is the difference of
 * two snapshots.
 *
 * Left out of a stretch (they are what the deployment costs at rest, whatever runs): the Queries
 * of the scheduler's tick (the due shards) and of the sweeper (the outbox shards). The scheduler's
 * GetItem and PutItem of a schedule that fires are the run's.
 *
 * @module
 */
import { runtimeSettings } from '../../shared/config/settings.js';
import { BYTES_PER_GB } from '../prices.js';
import { itemSize } from '../lib/dynamo-accounting.js';
import { type Counts, NO_COUNTS, type Side, type SideTally, sideTally } from './model.js';
import type { InvocationTally, World } from './world.js';

const MONTH_S = 30.4375 * 86_400;
/** DynamoDB storage counts 100 bytes of overhead per item. */
const ITEM_OVERHEAD = 100;

export interface Snapshot {
  readonly at: number;
  readonly taskOps: number;
  readonly scheduleOps: number;
  readonly history: { writes: number; writeUnits: number; queries: number; readUnits: number; storage: number };
  readonly limits: { updateItems: number; writeUnits: number; failedConditions: number };
  readonly tally: Record<keyof InvocationTally, SideTally>;
  readonly sqsCalls: number;
}

export function snapshot(w: World): Snapshot {
  const h = w.history;
  const tally = Object.fromEntries(Object.entries(w.tally).map(([k, v]) => [k, { ...v }])) as Snapshot['tally'];
  return {
    at: w.time.now(),
    taskOps: w.ledgers.tasks.ops.length,
    scheduleOps: w.ledgers.schedules.ops.length,
    history: {
      writes: h.writes,
      writeUnits: h.writeUnits,
      queries: h.queries,
      readUnits: h.readUnits,
      storage: h.storageGbMonths,
    },
    limits: {
      updateItems: w.limits.tally.updateItems,
      writeUnits: w.limits.tally.writeUnits,
      failedConditions: w.limits.tally.failedConditions,
    },
    tally,
    sqsCalls: w.ledgers.sqs.calls.length,
  };
}

/** Requests of a stretch by `service table API` (`sqs SendMessage`…), each split by side. */
export type Requests = Map<string, SideTally>;

export interface Stretch {
  readonly requests: Requests;
  readonly counts: Record<Side, Counts>;
  /** Write units by table (`tasks index`: the task table's index writes), by side. */
  readonly wru: Map<string, SideTally>;
  /** Conditional writes whose condition failed (billed all the same), by side. */
  readonly failedConditions: SideTally;
  /** Pipeline runs and node tasks created in the stretch. */
  readonly runs: number;
  readonly nodeTasks: number;
  /** SQS requests billed by Kaj's calls in the stretch (a check: its sides' sum). */
  readonly kajSqsBilled: number;
}

/** What happened between `from` and now. */
export function measure(w: World, from: Snapshot): Stretch {
  const requests: Requests = new Map();
  const add = (key: string, side: Side, n: number): void => {
    const t = requests.get(key) ?? sideTally();
    t[side] += n;
    requests.set(key, t);
  };
  const units = { run: { wru: 0, rru: 0 }, node: { wru: 0, rru: 0 } };
  const wru = new Map<string, SideTally>();
  const written = (table: string, side: Side, n: number): void => {
    const t = wru.get(table) ?? sideTally();
    t[side] += n;
    wru.set(table, t);
    units[side].wru += n;
  };
  const failedConditions = sideTally();
  for (const op of w.ledgers.tasks.ops.slice(from.taskOps)) {
    if (op.api === 'Query') continue;
    const side = w.sideOfTask(op.taskId);
    add(`DynamoDB tasks ${op.api}`, side, 1);
    written('tasks', side, op.tableWru);
    written('tasks index', side, op.indexWru);
    units[side].rru += op.rru;
    if (op.conditionFailed) failedConditions[side] += 1;
  }
  for (const op of w.ledgers.schedules.ops.slice(from.scheduleOps)) {
    if (op.api === 'Query') continue;
    add(`DynamoDB schedules ${op.api}`, 'run', 1);
    written('schedules', 'run', op.tableWru + op.indexWru);
    units.run.rru += op.rru;
  }
  const h = w.history;
  add('DynamoDB history Query', 'run', h.queries - from.history.queries);
  add('DynamoDB history PutItem', 'run', h.writes - from.history.writes);
  written('history', 'run', h.writeUnits - from.history.writeUnits);
  units.run.rru += h.readUnits - from.history.readUnits;
  add('DynamoDB limits UpdateItem', 'run', w.limits.tally.updateItems - from.limits.updateItems);
  written('limits', 'run', w.limits.tally.writeUnits - from.limits.writeUnits);
  failedConditions.run += w.limits.tally.failedConditions - from.limits.failedConditions;

  const delta = (k: keyof InvocationTally, side: Side): number => w.tally[k][side] - from.tally[k][side];
  const storage = storageSince(w, from.at);
  storage.run += h.storageGbMonths - from.history.storage;
  const counts = {} as Record<Side, Counts>;
  for (const side of ['run', 'node'] as const) {
    add('SQS SendMessage(Batch)', side, delta('sends', side));
    add('SQS ChangeMessageVisibilityBatch', side, delta('visibility', side));
    add('SQS ReceiveMessage (event source)', side, delta('receives', side));
    add('SQS DeleteMessageBatch (event source)', side, delta('deletes', side));
    add('Lambda consumer invocations', side, delta('invocations', side));
    add('Lambda consumer deliveries', side, delta('deliveries', side));
    const sqs = (['sends', 'visibility', 'receives', 'deletes'] as const).reduce((s, k) => s + delta(k, side), 0);
    counts[side] = {
      ...NO_COUNTS,
      wru: units[side].wru,
      rru: units[side].rru,
      storageGbMonths: storage[side],
      sqs,
      sends: delta('sends', side),
      invocations: delta('invocations', side),
      deliveries: delta('deliveries', side),
    };
  }
  const created = [...w.tasks.items.values()].filter((r) => Date.parse(r.created_at) >= from.at);
  const runs = created.filter((r) => w.pipelineTypes.has(r.type)).length;
  const scheduled = created.filter((r) => w.pipelineTypes.has(r.type) && r.schedule !== undefined).length;
  counts.run = { ...counts.run, fires: scheduled };
  const kajSqsBilled = w.ledgers.sqs.calls.slice(from.sqsCalls).reduce((s, c) => s + c.billed, 0);
  return { requests, counts, wru, failedConditions, runs, nodeTasks: created.length - runs, kajSqsBilled };
}

/** GB-months the task items created since `fromMs` keep stored, each from its creation to its TTL. */
function storageSince(w: World, fromMs: number): SideTally {
  const retentionS = runtimeSettings().retentionDays * 86_400;
  const out = sideTally();
  for (const item of w.tasks.items.values()) {
    const createdS = Date.parse(item.created_at) / 1000;
    if (createdS * 1000 < fromMs) continue;
    const expires = typeof item.expires_at === 'number' ? item.expires_at : createdS + retentionS;
    out[w.sideOfTask(item.task_id)] +=
      ((itemSize(item) + ITEM_OVERHEAD) / BYTES_PER_GB) * ((expires - createdS) / MONTH_S);
  }
  return out;
}
