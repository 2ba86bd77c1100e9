/**
 * The API function's composition root: the submitter and the task requests (GET, DELETE) behind
 * the HTTP router, on DynamoDB and SQS. Imports neither the consumer nor the sweeper.
 *
 * @module
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { handleHttp, type HttpResult } from '../api/http.js';
import { MissingEnvironmentError } from '../config/errors.js';
import { ENV } from '../config/resources.js';
import type { FunctionConfig } from '../config/settings.js';
import { ScheduleService } from '../schedule/service.js';
import { schedulerSettings } from '../schedule/settings.js';
import { DynamoScheduleStore } from '../store/dynamo-schedule-store.js';
import type { TaskRegistry } from '../task/define.js';
import { TaskLifecycle } from '../task/lifecycle.js';
import { TaskSubmitter } from '../task/submit.js';
import { type FunctionOptions, functionDeps } from './on-aws.js';

export interface ApiFunction {
  handleHttp(event: APIGatewayProxyEventV2): Promise<HttpResult>;
}

/**
 * @throws MissingEnvironmentError without an id secret (KAJ_ID_SECRET): task ids derived from
 * idempotency keys are an HMAC under it (docs/security.md), so a deployment must have its own.
 */
export function createApiFunction(
  config: FunctionConfig,
  registry: TaskRegistry,
  options: FunctionOptions & { readonly defaultOwner?: string } = {},
): ApiFunction {
  if (config.idSecret === undefined) throw new MissingEnvironmentError(ENV.idSecret);
  const d = { ...functionDeps(config, options), registry, idSecret: config.idSecret };
  const lifecycle = new TaskLifecycle(d);
  const submitter = new TaskSubmitter(d, lifecycle);
  const schedules =
    config.schedulesTableName === undefined
      ? undefined
      : new ScheduleService({
          ...d,
          lifecycle,
          submitter,
          schedules: new DynamoScheduleStore(d.clients.dynamodb, config.schedulesTableName),
          scheduling: schedulerSettings(),
        });
  const api = {
    submitter,
    registry,
    lifecycle,
    logger: d.logger,
    defaultOwner: options.defaultOwner ?? 'anonymous',
    ...(schedules === undefined ? {} : { schedules }),
  };
  return { handleHttp: (event) => handleHttp(event, api) };
}
