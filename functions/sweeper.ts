import type { Context } from 'aws-lambda';
import { createSweeperFunction } from '../shared/service/app/sweeper.js';
import { loadFunctionConfig } from '../shared/config/settings.js';
import { createLogger, createMetrics } from '../shared/service/observability.js';

const logger = createLogger();
const metrics = createMetrics();
const sweeper = createSweeperFunction(loadFunctionConfig(), { logger, metrics });

/** Every minute (EventBridge): send what the outbox says is owed. */
export const handler = async (_event: unknown, context: Context) => {
  try {
    return await sweeper.sweep(Math.max(1_000, context.getRemainingTimeInMillis() - 10_000));
  } finally {
    metrics.flush();
  }
};
