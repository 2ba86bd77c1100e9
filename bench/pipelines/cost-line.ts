/**
 * The pipeline line of `npm run bench:cost`: what a run of `nightly_sales` costs, with the cost
 * bench's own assumptions (its `--consumer-ms`, `--log-bytes`, `--access-log-bytes`, the
 * consumer's memory from its template). The detail is `npm run bench:pipelines`.
 *
 * @module
 */
import type { DeploymentModel } from '../lib/deployment.js';
import { readSchedulerDeployment } from '../lib/deployment.js';
import { usd } from '../lib/report.js';
import { PRICES } from '../prices.js';
import { perMillion, stepFunctionsTransitions } from './model.js';
import { runFigures } from './print-run.js';
import { runCostOfNightlySales } from './run-cost.js';

/** Billed ms of the scheduler's tick per run it fires (bench:pipelines' `--fire-ms` default). */
const FIRE_MS = 25;

export async function pipelineCostLine(
  model: DeploymentModel,
  o: { readonly consumerMs: number; readonly logBytes: number; readonly accessLogBytes: number },
): Promise<string> {
  const scheduler = await readSchedulerDeployment();
  const r = await runCostOfNightlySales({
    days: 3,
    seed: 1,
    taskTable: model.table,
    schedulesTable: scheduler.schedulesTable,
  });
  const f = runFigures(
    r,
    {
      consumerMs: o.consumerMs,
      consumerMemoryMiB: model.functions.consumer.memoryMiB,
      fireMs: FIRE_MS,
      schedulerMemoryMiB: scheduler.scheduler.memoryMiB,
      logBytesPerDelivery: Math.max(0, o.logBytes - o.accessLogBytes),
    },
    model.mappings.batchSize,
  );
  const sfn = PRICES.stepFunctions.standardTransition;
  const sfnPerMillionRuns = perMillion((sfn.usd * stepFunctionsTransitions(r.nodes, 1)) / sfn.per);
  return (
    `  (p) pipeline nightly_sales, ${r.nodes} nodes, fired by its schedule, alone: ${usd(f.perMillionRuns)} per million runs = ` +
    `${usd(f.perMillionNodes)} per million node executions all in (the run's own share ${(100 * f.orchestrationShare).toFixed(0)}%; ` +
    `in full batches, as the scenarios above: ${usd(f.busyPerMillionNodes)}); ` +
    `Step Functions Standard: ${usd(sfnPerMillionRuns)} per million runs in state transitions (npm run bench:pipelines)`
  );
}
