import type { APIGatewayProxyEvent, APIGatewayProxyEventV2 } from 'aws-lambda';
import { createApiFunction } from '../shared/service/app/api.js';
import { loadFunctionConfig } from '../shared/config/settings.js';
import { createLogger } from '../shared/service/observability.js';
import { registry } from '../tasks/index.js';

// Wired once per cold start: a missing setting (or id secret) fails here, loudly, not on the first request.
// No metrics: one EMF line per request would be most of a task's log bytes; submissions are
// counted by a metric filter on the access log (infra/constructs/api.ts).
const logger = createLogger();
const api = createApiFunction(loadFunctionConfig(), registry, { logger });

/** API Gateway → the task API: an HTTP API's event (payload format 2.0) or a REST API's (1.0), one handler. */
export const handler = (event: APIGatewayProxyEventV2 | APIGatewayProxyEvent) => api.handle(event);
