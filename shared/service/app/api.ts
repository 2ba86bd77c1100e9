/**
 * The API function's composition root: the submitter and the task requests (GET, DELETE) behind
 * the HTTP router, on DynamoDB and SQS, and the history store of workflow runs (read only: a run's
 * steps) when the stack names a history table (`KAJ_HISTORY_TABLE_NAME`). Imports neither the
 * consumer nor the sweeper.
 *
 * @module
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyResult } from 'aws-lambda';
import { handleHttp, type HttpResult } from '../api/http.js';
import { type ApiGatewayEvent, servingBothFormats } from '../api/rest-event.js';
import type { FunctionConfig } from '../../config/settings.js';
import { ScheduleService } from '../../schedule/service.js';
import { schedulerSettings } from '../../schedule/settings.js';
import { DynamoScheduleStore } from '../../aws/dynamo-schedule-store.js';
import { type HistoryStore, historyRetentionDays } from '../../workflow/history-store.js';
import { PipelineService } from '../../pipeline/service.js';
import type { TaskRegistry } from '../../task/define.js';
import { listingField } from '../../task/listing.js';
import type { FunctionOptions } from './on-aws.js';
import { createSubmitServices } from './producer.js';

export interface ApiFunction {
  handleHttp(event: APIGatewayProxyEventV2): Promise<HttpResult>;
  /**
   * What the Lambda entry point calls: an HTTP API's event (payload format 2.0) or a REST API's
   * (1.0, answered in the 1.0 result shape), through the same {@link handleHttp}.
   */
  handle(event: ApiGatewayEvent): Promise<HttpResult | APIGatewayProxyResult>;
  /** The history store of workflow runs, when the configuration names a history table (its role may only Query it). */
  readonly history?: HistoryStore;
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
  // The submit services a direct producer builds too (`createProducer`): one submit path.
  const { submitter, lifecycle, deps: d, history } = createSubmitServices(config, registry, options);
  const schedules =
    config.schedulesTableName === undefined
      ? undefined
      : new ScheduleService({
          ...d,
          lifecycle,
          submitter,
          schedules: new DynamoScheduleStore(d.clients.dynamodb, config.schedulesTableName),
          scheduling: schedulerSettings(config.scheduleRules),
        });
  const api = {
    submitter,
    registry,
    lifecycle,
    logger: d.logger,
    defaultOwner: options.defaultOwner ?? 'anonymous',
    now: () => d.clock.now(),
    ...(schedules === undefined ? {} : { schedules }),
    ...(history === undefined ? {} : { history, historyRetentionDays: historyRetentionDays(d.settings, registry) }),
    ...(history === undefined
      ? {}
      : {
          pipelines: new PipelineService({ registry, store: d.store, submitter, lifecycle, history, clock: d.clock }),
        }),
    ...listingField(d.store, config.idSecret),
  };
  const serve = (event: APIGatewayProxyEventV2) => handleHttp(event, api);
  return { handleHttp: serve, handle: servingBothFormats(serve), ...(history === undefined ? {} : { history }) };
}
