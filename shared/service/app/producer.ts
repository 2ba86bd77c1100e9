/**
 * The submit side of Kaj on DynamoDB and SQS: the submitter and the task requests (GET, DELETE)
 * an owner makes, built once for the API function (`api.ts`, behind its HTTP router) and for a
 * producer that submits directly (`kaj/client/direct`: the same code in the producer's process,
 * with the producer's IAM role, without API Gateway). Imports neither the consumer, the sweeper
 * nor the HTTP router.
 *
 * @module
 */
import { ConfigError, MissingEnvironmentError } from '../../config/errors.js';
import type { ProducerConfig } from '../../config/producer.js';
import { ENV, PRIORITIES, type Priority } from '../../config/resources.js';
import { type FunctionConfig, runtimeSettings } from '../../config/settings.js';
import type { TaskRegistry } from '../../task/define.js';
import type { TaskLifecycle } from '../../task/lifecycle.js';
import { lifecycleWithFanIn } from '../../workflow/fan-in.js';
import { type HistoryStore, historyRetentionDays } from '../../workflow/history-store.js';
import { DynamoHistoryStore } from '../../aws/dynamo-history-store.js';
import { TaskSubmitter } from '../../task/submit.js';
import { type FunctionDeps, type FunctionOptions, functionDeps } from './on-aws.js';

/** What submits tasks and answers an owner's requests about them. */
export interface SubmitServices {
  readonly submitter: TaskSubmitter;
  readonly lifecycle: TaskLifecycle;
  /** The history store of workflow runs, when the configuration names a history table. */
  readonly history?: HistoryStore;
  /** What they were built on (the API function adds its schedules service on the same). */
  readonly deps: FunctionDeps & { readonly registry: TaskRegistry; readonly idSecret: string };
}

/**
 * The submitter and the lifecycle on the function's table and queues.
 * @throws MissingEnvironmentError without an id secret (KAJ_ID_SECRET): task ids derived from
 * idempotency keys are an HMAC under it (docs/security.md), so a deployment must have its own.
 */
export function createSubmitServices(
  config: FunctionConfig,
  registry: TaskRegistry,
  options: FunctionOptions = {},
): SubmitServices {
  if (config.idSecret === undefined) throw new MissingEnvironmentError(ENV.idSecret);
  const deps = { ...functionDeps(config, options), registry, idSecret: config.idSecret };
  const history =
    config.historyTableName === undefined
      ? undefined
      : new DynamoHistoryStore(deps.clients.dynamodb, config.historyTableName);
  // A cancel through the API ends tasks too: a child's end reaches its run, a run's cancel its children.
  const lifecycle = lifecycleWithFanIn(
    deps,
    history === undefined
      ? undefined
      : { ...deps, history, historyRetentionDays: historyRetentionDays(deps.settings, registry) },
  );
  return {
    submitter: new TaskSubmitter(deps, lifecycle),
    lifecycle,
    deps,
    ...(history === undefined ? {} : { history }),
  };
}

/**
 * Not a queue: where a producer's configuration names the dead-letter queues. A submit never
 * writes a dead letter (only a failed attempt does, in the consumer, or the sweeper after it), so
 * a producer has no DLQ URL and no permission on the DLQs (`KajStack.grantSubmit`); should any
 * code path ever try, SQS refuses this URL and the lifecycle leaves the letter to the sweeper.
 */
export const NO_DEAD_LETTER_QUEUE = 'kaj:producers-send-no-dead-letters';

/** A producer's configuration (the stack's `ProducerConfig` output and the id secret) as a function's. */
export function producerFunctionConfig(p: ProducerConfig, idSecret: string): FunctionConfig {
  if (idSecret === '') throw new ConfigError('idSecret', 'idSecret: the id secret is empty');
  const none = Object.fromEntries(PRIORITIES.map((pr) => [pr, NO_DEAD_LETTER_QUEUE])) as Record<Priority, string>;
  return {
    tableName: p.tableName,
    queueUrls: p.queueUrls,
    deadLetterQueueUrls: none,
    laneQueueUrls: p.laneQueueUrls,
    settings: runtimeSettings({ retentionDays: p.retentionDays }),
    idSecret,
  };
}

/** The submit services of a producer that submits directly, on the deployment's table and queues. */
export function createProducer(
  p: ProducerConfig,
  idSecret: string,
  registry: TaskRegistry,
  options: FunctionOptions = {},
): SubmitServices {
  return createSubmitServices(producerFunctionConfig(p, idSecret), registry, options);
}
