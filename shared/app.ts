import type { APIGatewayProxyEventV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { handleHttp, type HttpResult } from './api/http.js';
import { PRIORITIES, type Priority } from './config/resources.js';
import type { FunctionConfig, RuntimeSettings } from './config/settings.js';
import { TaskConsumer, type InvocationContext } from './consumer/consumer.js';
import type { ExclusiveGate } from './consumer/exclusive-gate.js';
import type { TaskQueue } from './queue/task-queue.js';
import { SqsTaskQueue } from './queue/sqs-task-queue.js';
import { systemClock, type Clock } from './runtime/clock.js';
import { noMetrics, silentLogger, type Logger, type Metrics } from './runtime/logger.js';
import { cryptoRandom, type RandomSource } from './runtime/random.js';
import { DynamoTaskStore } from './store/dynamo-task-store.js';
import type { TaskStore } from './store/task-store.js';
import { OutboxSweeper, type SweepReport } from './sweeper/sweeper.js';
import type { TaskRegistry } from './task/define.js';
import { TaskLifecycle } from './task/lifecycle.js';
import { TaskSubmitter } from './task/submit.js';

export interface KajDeps {
  readonly store: TaskStore;
  readonly queue: TaskQueue;
  readonly registry: TaskRegistry;
  readonly settings: RuntimeSettings;
  readonly queueNames: Readonly<Record<Priority, string>>;
  readonly clock?: Clock;
  readonly random?: RandomSource;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** HMAC key for task ids derived from idempotency keys. @default a fixed development key (local and tests only) */
  readonly idSecret?: string;
  /** Owner of API requests that carry no IAM identity. @default 'anonymous' */
  readonly defaultOwner?: string;
  /** Shared by the handlers of one process. @default processGate */
  readonly gate?: ExclusiveGate;
}

/** The owner of requests to `npm start` (no IAM there) unless KAJ_LOCAL_IDENTITY says otherwise. */
export const LOCAL_OWNER = 'local';

/** Not a secret: what local runs and tests use. A deployment always has its own (KAJ_ID_SECRET). */
export const DEVELOPMENT_ID_SECRET = 'kaj-development-id-secret';

/** Kaj's services wired together: the composition root shared by the Lambda functions and the local runtime. */
export interface Kaj {
  readonly lifecycle: TaskLifecycle;
  readonly submitter: TaskSubmitter;
  readonly consumer: TaskConsumer;
  readonly sweeper: OutboxSweeper;
  readonly store: TaskStore;
  handleHttp(event: APIGatewayProxyEventV2): Promise<HttpResult>;
  processBatch(event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse>;
  sweep(budgetMs?: number): Promise<SweepReport>;
}

export function createKaj(deps: KajDeps): Kaj {
  const d = {
    ...deps,
    clock: deps.clock ?? systemClock,
    random: deps.random ?? cryptoRandom,
    logger: deps.logger ?? silentLogger,
    metrics: deps.metrics ?? noMetrics,
    idSecret: deps.idSecret ?? DEVELOPMENT_ID_SECRET,
  };
  const lifecycle = new TaskLifecycle(d);
  const submitter = new TaskSubmitter(d, lifecycle);
  const consumer = new TaskConsumer(d, lifecycle);
  const sweeper = new OutboxSweeper(d, lifecycle);
  return {
    lifecycle,
    submitter,
    consumer,
    sweeper,
    store: d.store,
    handleHttp: (event) =>
      handleHttp(event, { submitter, lifecycle, logger: d.logger, defaultOwner: deps.defaultOwner ?? 'anonymous' }),
    processBatch: (event, context) => consumer.processBatch(event, context),
    sweep: (budgetMs) => sweeper.sweep(budgetMs),
  };
}

export interface AwsClients {
  readonly dynamodb?: DynamoDBClient;
  readonly sqs?: SQSClient;
}

/** Kaj on real (or emulated) AWS services, from a function's configuration. */
export function createKajOnAws(
  config: FunctionConfig,
  registry: TaskRegistry,
  options: AwsClients & Pick<KajDeps, 'clock' | 'random' | 'logger' | 'metrics' | 'defaultOwner' | 'gate'> = {},
): Kaj {
  const dynamodb = options.dynamodb ?? new DynamoDBClient({});
  const sqs = options.sqs ?? new SQSClient({});
  const queueNames = {} as Record<Priority, string>;
  for (const p of PRIORITIES) queueNames[p] = queueNameOf(config.queueUrls[p]);
  return createKaj({
    ...options,
    store: new DynamoTaskStore(dynamodb, config.tableName),
    queue: new SqsTaskQueue(sqs, { queues: config.queueUrls, deadLetterQueues: config.deadLetterQueueUrls }),
    registry,
    settings: config.settings,
    queueNames,
    ...(config.idSecret === undefined ? {} : { idSecret: config.idSecret }),
  });
}

/** `https://sqs.us-east-1.amazonaws.com/123/kaj-high` → `kaj-high`. */
export function queueNameOf(queueUrl: string): string {
  const name = queueUrl.replace(/\/+$/, '').split('/').pop();
  if (!name) throw new RangeError(`not a queue URL: ${queueUrl}`);
  return name;
}
