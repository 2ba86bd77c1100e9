import type { APIGatewayProxyEventV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { handleHttp, type HttpResult } from './api/http.js';
import { type AwsClients, functionDeps, laneQueueNamesOf, queueNamesOf } from './app/on-aws.js';
import type { Priority } from '../config/resources.js';
import type { FunctionConfig, RuntimeSettings } from '../config/settings.js';
import { TaskConsumer, type InvocationContext } from './consumer/consumer.js';
import type { ExclusiveGate } from './consumer/exclusive-gate.js';
import { Limiter } from '../limit/limiter.js';
import type { LimitStore } from '../limit/limit-store.js';
import { DynamoLimitStore } from '../aws/dynamo-limit-store.js';
import { DynamoHistoryStore } from '../aws/dynamo-history-store.js';
import { type HistoryStore, historyRetentionDays } from '../workflow/history-store.js';
import { lifecycleWithFanIn } from '../workflow/fan-in.js';
import { PipelineService } from '../pipeline/service.js';
import type { TaskQueue } from '../task/task-queue.js';
import { systemClock, type Clock } from '../runtime/clock.js';
import { noMetrics, silentLogger, type Logger, type Metrics } from '../runtime/logger.js';
import { cryptoRandom, type RandomSource } from '../runtime/random.js';
import { ScheduleService } from '../schedule/service.js';
import { schedulerSettings, type SchedulerSettings } from '../schedule/settings.js';
import { ScheduleTicker } from '../schedule/tick.js';
import { DynamoScheduleStore } from '../aws/dynamo-schedule-store.js';
import type { ScheduleStore } from '../schedule/schedule-store.js';
import type { TaskStore } from '../task/task-store.js';
import { OutboxSweeper, type SweepReport } from './sweeper/sweeper.js';
import type { TaskRegistry } from '../task/define.js';
import type { TaskLifecycle } from '../task/lifecycle.js';
import { listingField, type TaskListing } from '../task/listing.js';
import { TaskSubmitter } from '../task/submit.js';

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
  /** The schedules store: with it, the schedule routes, the ticker and the code sync exist. */
  readonly schedules?: ScheduleStore;
  /** @default schedulerSettings() */
  readonly scheduling?: Partial<SchedulerSettings>;
  /** The limits store: with it, the consumer enforces the limits its types use (needed when any does). */
  readonly limits?: LimitStore;
  /** The history store of workflow runs (the history table): present when the deployment has one. */
  readonly history?: HistoryStore;
  /** How long after a child started its waiting run first looks it up. @default DEFAULTS.childCheckMs */
  readonly childCheckMs?: number;
  /** How often a run waiting for an active-run slot (`maxActiveRuns`) looks again. @default DEFAULTS.admitPollMs */
  readonly admitPollMs?: number;
  /** The queue names of the other lanes (see `ConsumerDeps.laneQueueNames`). */
  readonly laneQueueNames?: Readonly<Record<string, Readonly<Record<Priority, string>>>>;
}

/** The owner of requests to `npm start` (no IAM there) unless KAJ_LOCAL_IDENTITY says otherwise. */
export const LOCAL_OWNER = 'local';

/** Not a secret: what local runs and tests use. A deployment always has its own (KAJ_ID_SECRET). */
export const DEVELOPMENT_ID_SECRET = 'kaj-development-id-secret';

/**
 * Kaj's services wired together, all of them: the composition root of the local runtime, the
 * admin CLI and the tests. Each Lambda function has a root of its own (`shared/service/app/*.ts`) that
 * builds only what it runs.
 */
export interface Kaj {
  readonly lifecycle: TaskLifecycle;
  readonly submitter: TaskSubmitter;
  readonly consumer: TaskConsumer;
  readonly sweeper: OutboxSweeper;
  readonly store: TaskStore;
  /** The process's limiter (present with a limits store). */
  readonly limiter?: Limiter;
  /** The history store of workflow runs, as given (`KajDeps.history`). */
  readonly history?: HistoryStore;
  /** Present when the deployment has a schedules store. */
  readonly schedules?: ScheduleService;
  readonly ticker?: ScheduleTicker;
  /** Pipelines (`/api/v1/pipelines`): present when the deployment has a history store. */
  readonly pipelines?: PipelineService;
  /** The listing index's reader (`GET /api/v1/tasks?status=…`), when the store has it. */
  readonly listing?: TaskListing;
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
  const lifecycle = lifecycleWithFanIn(
    d,
    deps.history === undefined
      ? undefined
      : { ...d, history: deps.history, historyRetentionDays: historyRetentionDays(d.settings, deps.registry) },
  );
  const submitter = new TaskSubmitter(d, lifecycle);
  // One limiter per process: the tasks it runs share its rate reservations and hand slots over.
  const limiter =
    deps.limits === undefined
      ? undefined
      : new Limiter({
          store: deps.limits,
          clock: d.clock,
          random: d.random,
          logger: d.logger,
          leaseSeconds: d.settings.leaseSeconds,
        });
  const consumer = new TaskConsumer(
    {
      ...d,
      ...(limiter === undefined ? {} : { limiter }),
      ...(deps.limits === undefined ? {} : { limitStore: deps.limits }),
      ...(deps.admitPollMs === undefined ? {} : { admitPollMs: deps.admitPollMs }),
      ...(deps.history === undefined ? {} : { history: deps.history }),
    },
    lifecycle,
  );
  const sweeper = new OutboxSweeper(d, lifecycle);
  const sd =
    deps.schedules === undefined
      ? undefined
      : { ...d, lifecycle, submitter, schedules: deps.schedules, scheduling: schedulerSettings(deps.scheduling) };
  const schedules = sd === undefined ? undefined : new ScheduleService(sd);
  const ticker = sd === undefined ? undefined : new ScheduleTicker(sd);
  const listed = listingField(d.store, d.idSecret);
  const pipelines =
    deps.history === undefined
      ? undefined
      : new PipelineService({
          registry: deps.registry,
          store: d.store,
          submitter,
          lifecycle,
          history: deps.history,
          clock: d.clock,
        });
  return {
    ...listed,
    lifecycle,
    submitter,
    consumer,
    sweeper,
    store: d.store,
    ...(limiter === undefined ? {} : { limiter }),
    ...(deps.history === undefined ? {} : { history: deps.history }),
    ...(schedules === undefined ? {} : { schedules }),
    ...(ticker === undefined ? {} : { ticker }),
    ...(pipelines === undefined ? {} : { pipelines }),
    handleHttp: (event) =>
      handleHttp(event, {
        submitter,
        registry: deps.registry,
        lifecycle,
        logger: d.logger,
        defaultOwner: deps.defaultOwner ?? 'anonymous',
        now: () => d.clock.now(),
        ...(schedules === undefined ? {} : { schedules }),
        ...(deps.history === undefined
          ? {}
          : { history: deps.history, historyRetentionDays: historyRetentionDays(d.settings, deps.registry) }),
        ...(pipelines === undefined ? {} : { pipelines }),
        ...listed,
      }),
    processBatch: (event, context) => consumer.processBatch(event, context),
    sweep: (budgetMs) => sweeper.sweep(budgetMs),
  };
}

export type { AwsClients } from './app/on-aws.js';
export { queueNameOf } from './app/on-aws.js';

/** Kaj on real (or emulated) AWS services, from a function's configuration, with the tuned SDK clients unless given. */
export function createKajOnAws(
  config: FunctionConfig,
  registry: TaskRegistry,
  options: AwsClients &
    Pick<
      KajDeps,
      'clock' | 'random' | 'logger' | 'metrics' | 'defaultOwner' | 'gate' | 'scheduling' | 'admitPollMs'
    > = {},
): Kaj {
  const { store, queue, clients } = functionDeps(config, options);
  return createKaj({
    ...options,
    store,
    queue,
    ...(config.schedulesTableName === undefined
      ? {}
      : { schedules: new DynamoScheduleStore(clients.dynamodb, config.schedulesTableName) }),
    ...(config.limitsTableName === undefined
      ? {}
      : { limits: new DynamoLimitStore(clients.dynamodb, config.limitsTableName) }),
    ...(config.historyTableName === undefined
      ? {}
      : { history: new DynamoHistoryStore(clients.dynamodb, config.historyTableName) }),
    registry,
    settings: config.settings,
    queueNames: queueNamesOf(config.queueUrls),
    laneQueueNames: laneQueueNamesOf(config.laneQueueUrls ?? {}),
    ...(config.idSecret === undefined ? {} : { idSecret: config.idSecret }),
  });
}
