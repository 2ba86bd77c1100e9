/**
 * Section 1 of `npm run bench:pipelines`: what one run of the 5-node `nightly_sales` pipeline
 * costs, its schedule firing it once a night for `days` nights on the virtual clock, each run
 * alone (as a nightly pipeline's run is). Each night is measured on its own; the nights agree
 * exactly when the counts are deterministic, which the result says.
 *
 * @module
 */
import { TaskRegistry } from '../../shared/task/define.js';
import type { TableModel } from '../lib/dynamo-accounting.js';
import { nightlySalesCopy, partitionResult } from './copy.js';
import { measure, type Stretch, snapshot } from './metering.js';
import { pipelineWorld } from './world.js';

const DAY_MS = 86_400_000;

export interface RunCostOptions {
  readonly days: number;
  readonly seed: number;
  readonly taskTable: TableModel;
  readonly schedulesTable: TableModel;
}

export interface RunCost {
  /** One stretch per night: each holds that night's run. */
  readonly nights: readonly Stretch[];
  /** Every run's status at the end (all `succeeded` when all went well). */
  readonly statuses: readonly string[];
  /** Node tasks per run (5). */
  readonly nodes: number;
  /** Whether every night's counts were the same. */
  readonly identical: boolean;
}

/** The nights of `nightly_sales`, from the day after its schedule is synced. */
export async function runCostOfNightlySales(o: RunCostOptions): Promise<RunCost> {
  const copy = nightlySalesCopy(async (name, ctx) => partitionResult(name, ctx));
  const registry = new TaskRegistry([...copy.nodeTypes, copy.pipeline]);
  // Noon UTC: the first night's run fires at 00:30 Dhaka (18:30 UTC) the same day.
  const start = Date.parse('2026-12-01T12:00:00.000Z');
  const w = pipelineWorld({ registry, start, seed: o.seed, taskTable: o.taskTable, schedulesTable: o.schedulesTable });
  await w.begin();
  const nights: Stretch[] = [];
  for (let d = 1; d <= o.days; d += 1) {
    const from = snapshot(w);
    await w.runUntil(start + d * DAY_MS);
    nights.push(measure(w, from));
  }
  const runs = [...w.tasks.items.values()].filter((r) => w.pipelineTypes.has(r.type));
  const key = (s: Stretch): string =>
    JSON.stringify({
      requests: [...s.requests.entries()],
      counts: { run: { ...s.counts.run, storageGbMonths: 0 }, node: { ...s.counts.node, storageGbMonths: 0 } },
    });
  const first = nights[0];
  return {
    nights,
    statuses: runs.map((r) => r.status),
    nodes: Object.keys(copy.pipeline.pipeline.graph).length,
    identical: first !== undefined && nights.every((n) => key(n) === key(first)),
  };
}
