import type { Context, SQSEvent } from 'aws-lambda';
import { createKajOnAws } from '../shared/app.js';
import { loadFunctionConfig } from '../shared/config/settings.js';
import { createLogger, createMetrics } from '../shared/observability.js';
import { registry } from '../tasks/index.js';

const logger = createLogger();
const metrics = createMetrics();
const kaj = createKajOnAws(loadFunctionConfig(), registry, { logger, metrics });

/** SQS event source mapping (ReportBatchItemFailures) → run the tasks, answer with the failures. */
export const handler = async (event: SQSEvent, context: Context) => {
  try {
    return await kaj.processBatch(event, context);
  } finally {
    metrics.flush();
  }
};
