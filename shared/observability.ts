import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import { Metrics as PowertoolsMetrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { METRICS } from './config/metrics.js';
import type { Logger, Metrics } from './runtime/logger.js';

/** Structured JSON logs (Powertools). Log level from POWERTOOLS_LOG_LEVEL. Never log payloads. */
export function createLogger(): Logger {
  const pt = new PowertoolsLogger({ serviceName: METRICS.serviceName });
  return {
    debug: (message, fields) => (fields ? pt.debug(message, fields) : pt.debug(message)),
    info: (message, fields) => (fields ? pt.info(message, fields) : pt.info(message)),
    warn: (message, fields) => (fields ? pt.warn(message, fields) : pt.warn(message)),
    error: (message, fields) => (fields ? pt.error(message, fields) : pt.error(message)),
  };
}

/**
 * CloudWatch EMF metrics (Powertools). Task counts carry a TaskType dimension, so each is
 * written as a single metric with its own dimension set. Call `flush()` at the end of an invocation.
 */
export function createMetrics(): Metrics & { flush(): void } {
  const metrics = new PowertoolsMetrics({ namespace: METRICS.namespace, serviceName: METRICS.serviceName });
  const single = (taskType: string | undefined) => {
    const m = metrics.singleMetric();
    if (taskType !== undefined) m.addDimension(METRICS.taskTypeDimension, taskType);
    return m;
  };
  return {
    count: (name, taskType, value = 1) => single(taskType).addMetric(name, MetricUnit.Count, value),
    durationMs: (taskType, ms) => single(taskType).addMetric(METRICS.duration, MetricUnit.Milliseconds, ms),
    flush: () => metrics.publishStoredMetrics(),
  };
}
