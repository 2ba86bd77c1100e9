/**
 * The scheduler function's composition root: the ticker and the sync of schedules declared in
 * code, on DynamoDB and SQS. It creates runs through the task submitter (so it carries the task
 * registry, to check each run's payload) and imports neither the API nor the consumer.
 *
 * @module
 */
import { MissingEnvironmentError } from '../../config/errors.js';
import { ENV } from '../../config/resources.js';
import type { FunctionConfig } from '../../config/settings.js';
import { ScheduleService } from '../../schedule/service.js';
import { schedulerSettings, type SchedulerSettings } from '../../schedule/settings.js';
import { ScheduleTicker, type TickReport } from '../../schedule/tick.js';
import { DynamoScheduleStore } from '../../aws/dynamo-schedule-store.js';
import type { TaskRegistry } from '../../task/define.js';
import { TaskLifecycle } from '../../task/lifecycle.js';
import { TaskSubmitter } from '../../task/submit.js';
import { type FunctionOptions, functionDeps } from './on-aws.js';

export interface SchedulerFunction {
  /**
   * Syncs the schedules declared in code (once per cold start, again after a failure), then ticks.
   * @param budgetMs stop starting new schedules after this long
   */
  tick(budgetMs?: number): Promise<TickReport>;
}

/** @throws MissingEnvironmentError without KAJ_SCHEDULES_TABLE_NAME */
export function createSchedulerFunction(
  config: FunctionConfig,
  registry: TaskRegistry,
  options: FunctionOptions & { readonly scheduler?: Partial<SchedulerSettings> } = {},
): SchedulerFunction {
  if (config.schedulesTableName === undefined) throw new MissingEnvironmentError(ENV.schedulesTableName);
  const base = functionDeps(config, options);
  const lifecycle = new TaskLifecycle(base);
  const d = {
    ...base,
    registry,
    lifecycle,
    submitter: new TaskSubmitter({ ...base, registry }, lifecycle),
    schedules: new DynamoScheduleStore(base.clients.dynamodb, config.schedulesTableName),
    scheduling: schedulerSettings({ ...config.scheduleRules, ...options.scheduler }),
  };
  const ticker = new ScheduleTicker(d);
  const service = new ScheduleService(d);
  let synced: Promise<unknown> | undefined;
  return {
    async tick(budgetMs) {
      synced ??= service.syncDeclared(registry.declaredSchedules()).then(
        (report) => d.logger.info('schedules declared in code synced', { ...report }),
        (err: unknown) => {
          synced = undefined; // try again at the next tick
          d.logger.error('schedules declared in code not synced', {
            error: err instanceof Error ? err.message : String(err),
          });
        },
      );
      await synced;
      const report = await ticker.tick(budgetMs);
      if (report.due > 0 || report.failures > 0) d.logger.info('tick', { ...report });
      return report;
    },
  };
}
