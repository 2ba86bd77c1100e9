import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { createKajOnAws } from '../shared/app.js';
import { loadFunctionConfig } from '../shared/config/settings.js';
import { createLogger, createMetrics } from '../shared/observability.js';
import { registry } from '../tasks/index.js';

// Wired once per cold start: a missing setting fails here, loudly, not on the first request.
const logger = createLogger();
const metrics = createMetrics();
const kaj = createKajOnAws(loadFunctionConfig(), registry, { logger, metrics });

/** API Gateway HTTP API (payload format 2.0) → the task API. */
export const handler = async (event: APIGatewayProxyEventV2) => {
  try {
    return await kaj.handleHttp(event);
  } finally {
    metrics.flush();
  }
};
