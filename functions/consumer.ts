import type { Context, SQSEvent } from 'aws-lambda';
import { createConsumerFunction } from '../shared/service/app/consumer.js';
import { loadFunctionConfig } from '../shared/config/settings.js';
import { createLogger, createMetrics } from '../shared/service/observability.js';
import { registry } from '../tasks/index.js';

const logger = createLogger();
const metrics = createMetrics();
const consumer = createConsumerFunction(loadFunctionConfig(), registry, { logger, metrics });

/** SQS event source mapping (ReportBatchItemFailures) → run the tasks, answer with the failures. */
export const handler = async (event: SQSEvent, context: Context) => {
  try {
    return await consumer.processBatch(event, context);
  } finally {
    metrics.flush();
  }
};
