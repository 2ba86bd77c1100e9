import type { Context } from 'aws-lambda';
import { createKajOnAws } from '../shared/app.js';
import { loadFunctionConfig } from '../shared/config/settings.js';
import { createLogger, createMetrics } from '../shared/observability.js';
import { registry } from '../tasks/index.js';

const logger = createLogger();
const metrics = createMetrics();
const kaj = createKajOnAws(loadFunctionConfig(), registry, { logger, metrics });

/** Every minute (EventBridge): send what the outbox says is owed. */
export const handler = async (_event: unknown, context: Context) => {
  try {
    return await kaj.sweep(Math.max(1_000, context.getRemainingTimeInMillis() - 10_000));
  } finally {
    metrics.flush();
  }
};
