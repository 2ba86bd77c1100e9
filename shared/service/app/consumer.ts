/**
 * The consumer function's composition root: the batch runner on DynamoDB and SQS, with the
 * process's limiter on the limits table when the stack gives one (`KAJ_LIMITS_TABLE_NAME`: every
 * lane's consumer has it), and the history store of workflow runs on the history table when the
 * stack gives one (`KAJ_HISTORY_TABLE_NAME`: when a type is a workflow). Imports neither the API
 * nor the sweeper.
 *
 * @module
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { FunctionConfig } from '../../config/settings.js';
import { type InvocationContext, TaskConsumer } from '../consumer/consumer.js';
import { Limiter } from '../../limit/limiter.js';
import { DynamoLimitStore } from '../../aws/dynamo-limit-store.js';
import { DynamoHistoryStore } from '../../aws/dynamo-history-store.js';
import { type HistoryStore, historyRetentionDays } from '../../workflow/history-store.js';
import type { TaskRegistry } from '../../task/define.js';
import { lifecycleWithFanIn } from '../../workflow/fan-in.js';
import { type FunctionOptions, functionDeps } from './on-aws.js';

export interface ConsumerFunction {
  processBatch(event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse>;
  /** The process's limiter (one per Lambda instance: its invocations share it), when limits are configured. */
  readonly limiter?: Limiter;
  /** The history store of workflow runs, when the configuration names a history table. */
  readonly history?: HistoryStore;
}

/**
 * @throws MissingLimiterError (from `TaskConsumer`) when a type `uses` a limit and the
 *   configuration names no limits table
 */
export function createConsumerFunction(
  config: FunctionConfig,
  registry: TaskRegistry,
  options: FunctionOptions = {},
): ConsumerFunction {
  const d = { ...functionDeps(config, options), registry };
  const limitStore =
    config.limitsTableName === undefined ? undefined : new DynamoLimitStore(d.clients.dynamodb, config.limitsTableName);
  const limiter =
    limitStore === undefined
      ? undefined
      : new Limiter({
          store: limitStore,
          clock: d.clock,
          random: d.random,
          logger: d.logger,
          leaseSeconds: d.settings.leaseSeconds,
        });
  const history =
    config.historyTableName === undefined
      ? undefined
      : new DynamoHistoryStore(d.clients.dynamodb, config.historyTableName);
  const consumer = new TaskConsumer(
    {
      ...d,
      ...(limiter === undefined ? {} : { limiter }),
      ...(limitStore === undefined ? {} : { limitStore }),
      ...(history === undefined ? {} : { history }),
    },
    lifecycleWithFanIn(
      d,
      history === undefined
        ? undefined
        : { ...d, history, historyRetentionDays: historyRetentionDays(d.settings, d.registry) },
    ),
  );
  return {
    processBatch: (event, context) => consumer.processBatch(event, context),
    ...(limiter === undefined ? {} : { limiter }),
    ...(history === undefined ? {} : { history }),
  };
}
