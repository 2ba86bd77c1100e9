import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { createKajOnAws } from '../shared/app.js';
import { MissingEnvironmentError } from '../shared/config/errors.js';
import { ENV } from '../shared/config/resources.js';
import { loadFunctionConfig } from '../shared/config/settings.js';
import { createLogger, createMetrics } from '../shared/observability.js';
import { registry } from '../tasks/index.js';

// Wired once per cold start: a missing setting fails here, loudly, not on the first request.
const logger = createLogger();
const metrics = createMetrics();
const config = loadFunctionConfig();
// Task ids derived from idempotency keys are an HMAC under this secret (docs/security.md).
if (config.idSecret === undefined) throw new MissingEnvironmentError(ENV.idSecret);
const kaj = createKajOnAws(config, registry, { logger, metrics });

/** API Gateway HTTP API (payload format 2.0) → the task API. */
export const handler = async (event: APIGatewayProxyEventV2) => {
  try {
    return await kaj.handleHttp(event);
  } finally {
    metrics.flush();
  }
};
