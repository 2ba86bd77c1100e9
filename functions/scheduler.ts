import type { Context } from 'aws-lambda';
import { createSchedulerFunction } from '../shared/service/app/scheduler.js';
import { loadFunctionConfig } from '../shared/config/settings.js';
import { createLogger, createMetrics } from '../shared/service/observability.js';
import { registry } from '../tasks/index.js';

const logger = createLogger();
const metrics = createMetrics();
const scheduler = createSchedulerFunction(loadFunctionConfig(), registry, { logger, metrics });

/** Every minute (EventBridge): create the runs of the schedules due before the next tick. */
export const handler = async (_event: unknown, context: Context) => {
  try {
    return await scheduler.tick(Math.max(1_000, context.getRemainingTimeInMillis() - 10_000));
  } finally {
    metrics.flush();
  }
};
