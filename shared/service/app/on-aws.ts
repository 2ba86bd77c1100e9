/**
 * What every Lambda function's composition root shares: Kaj's ports on DynamoDB and SQS, built
 * from the function's configuration, and the defaults of the clock, randomness and observability.
 * Each function has its own root (`api.ts`, `consumer.ts`, `sweeper.ts`) importing only what it
 * runs, so that no bundle carries another function's code.
 *
 * @module
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createDynamoDbClient, createSqsClient } from '../../aws/clients.js';
import type { LaneQueueUrls } from '../../config/lanes.js';
import { PRIORITIES, type Priority } from '../../config/resources.js';
import type { FunctionConfig, RuntimeSettings } from '../../config/settings.js';
import type { ExclusiveGate } from '../consumer/exclusive-gate.js';
import { SqsTaskQueue } from '../../aws/sqs-task-queue.js';
import type { TaskQueue } from '../../task/task-queue.js';
import { systemClock, type Clock } from '../../runtime/clock.js';
import { noMetrics, silentLogger, type Logger, type Metrics } from '../../runtime/logger.js';
import { cryptoRandom, type RandomSource } from '../../runtime/random.js';
import { DynamoTaskStore } from '../../aws/dynamo-task-store.js';
import type { TaskStore } from '../../task/task-store.js';

/** SDK clients to use instead of the tuned defaults (`shared/aws/clients.ts`). */
export interface AwsClients {
  readonly dynamodb?: DynamoDBClient;
  readonly sqs?: SQSClient;
}

/** What a function's root may be given besides its configuration and registry. */
export interface FunctionOptions extends AwsClients {
  readonly clock?: Clock;
  readonly random?: RandomSource;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** Shared by the handlers of one process. @default processGate */
  readonly gate?: ExclusiveGate;
}

/** The dependencies of every domain service, on AWS, every default filled in. */
export interface FunctionDeps {
  readonly store: TaskStore;
  readonly queue: TaskQueue;
  readonly settings: RuntimeSettings;
  readonly queueNames: Readonly<Record<Priority, string>>;
  /** Queue names of the other lanes, by lane. */
  readonly laneQueueNames: Readonly<Record<string, Readonly<Record<Priority, string>>>>;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly gate?: ExclusiveGate;
  /** The SDK clients the ports were built on (for the schedules store). */
  readonly clients: { readonly dynamodb: DynamoDBClient; readonly sqs: SQSClient };
}

export function functionDeps(config: FunctionConfig, options: FunctionOptions): FunctionDeps {
  const dynamodb = options.dynamodb ?? createDynamoDbClient();
  const sqs = options.sqs ?? createSqsClient();
  const urls = {
    queues: config.queueUrls,
    deadLetterQueues: config.deadLetterQueueUrls,
    ...(config.laneQueueUrls === undefined ? {} : { lanes: config.laneQueueUrls }),
  };
  return {
    store: new DynamoTaskStore(dynamodb, config.tableName),
    queue: new SqsTaskQueue(sqs, urls),
    settings: config.settings,
    queueNames: queueNamesOf(config.queueUrls),
    laneQueueNames: laneQueueNamesOf(config.laneQueueUrls ?? {}),
    clock: options.clock ?? systemClock,
    random: options.random ?? cryptoRandom,
    logger: options.logger ?? silentLogger,
    metrics: options.metrics ?? noMetrics,
    ...(options.gate === undefined ? {} : { gate: options.gate }),
    clients: { dynamodb, sqs },
  };
}

/** The queue name of each priority, from the queue URLs: how the consumer tells a record's queue. */
export function queueNamesOf(queueUrls: Readonly<Record<Priority, string>>): Record<Priority, string> {
  const names = {} as Record<Priority, string>;
  for (const p of PRIORITIES) names[p] = queueNameOf(queueUrls[p]);
  return names;
}

/** The queue names of every lane in `urls`. */
export function laneQueueNamesOf(urls: LaneQueueUrls): Record<string, Record<Priority, string>> {
  return Object.fromEntries(Object.entries(urls).map(([lane, byPriority]) => [lane, queueNamesOf(byPriority)]));
}

/** `https://sqs.us-east-1.amazonaws.com/123/kaj-high` → `kaj-high`. */
export function queueNameOf(queueUrl: string): string {
  const name = queueUrl.replace(/\/+$/, '').split('/').pop();
  if (!name) throw new RangeError(`not a queue URL: ${queueUrl}`);
  return name;
}
