import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createKajOnAws, LOCAL_OWNER, type Kaj } from '../shared/service/all-in-one.js';
import { DEFAULTS, type Priority, resourceNames } from '../shared/config/resources.js';
import type { ScheduleService } from '../shared/schedule/service.js';
import type { SchedulerSettings } from '../shared/schedule/settings.js';
import { runtimeSettings, type FunctionConfig, type RuntimeSettings } from '../shared/config/settings.js';
import { emulatorClients, type Endpoints, laneQueueUrlsOf } from '../shared/aws/wiring.js';
import type { Clock } from '../shared/runtime/clock.js';
import { silentLogger, type Logger, type Metrics } from '../shared/runtime/logger.js';
import type { RandomSource } from '../shared/runtime/random.js';
import type { TaskRegistry } from '../shared/task/define.js';
import type { TaskRecord } from '../shared/task/model.js';
import { registry as defaultRegistry } from '../tasks/index.js';
import { ensureResources, type LocalResources } from './bootstrap.js';
import { laneEventSource, laneSources } from './lane-sources.js';
import type { IndexRebuildReport } from './dynalite-indexes.js';
import { startEmulators, type RunningEmulators } from './emulators.js';
import type { SqsEventSource } from './event-source.js';
import { createApiServer } from './http-server.js';
import { serialInterval } from './serial-timer.js';

export { LOCAL_STATE_FILE } from '../shared/config/local-state.js';

/** A Node request listener for the paths outside `/api/`. */
export type PageHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** How often a run waiting for an active-run slot looks again on `npm start`. */
export const LOCAL_ADMIT_POLL_MS = 2_000;

export interface LocalRuntimeOptions {
  readonly registry?: TaskRegistry;
  /** Resource prefix (stack name). @default 'kaj-local' */
  readonly prefix?: string;
  /** HTTP port; 0 picks a free one. @default 3000 */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** Use these endpoints (moto, LocalStack) instead of starting the embedded emulators. */
  readonly endpoints?: Endpoints;
  /**
   * Persist the embedded DynamoDB here; in memory when omitted. At start its indexes are rebuilt
   * from the items, and the messages the in-memory SQS lost are written again (recoverMessages).
   */
  readonly dataDir?: string;
  readonly settings?: Partial<Omit<RuntimeSettings, 'heartbeatSeconds'>>;
  /** Concurrent consumer invocations per priority, in the default lane. @default DEFAULTS.concurrency */
  readonly concurrency?: Partial<Record<Priority, number>>;
  /**
   * Concurrent invocations per priority of the other lanes (by lane).
   * @default each lane's `localConcurrency`, else its `concurrency`, else DEFAULTS.concurrency
   */
  readonly laneConcurrency?: Readonly<Record<string, Partial<Record<Priority, number>>>>;
  /** @default DEFAULTS.batchSize */
  readonly batchSize?: number;
  /** Long-poll wait. @default 20 */
  readonly waitTimeSeconds?: number;
  /** Start the consumers. Tests that only exercise the API turn them off. @default true */
  readonly consumers?: boolean;
  /** How often the sweeper runs. @default 5000 (60 s on AWS) */
  readonly sweepIntervalMs?: number;
  /**
   * The scheduler's settings here; `tickSeconds` is how often it ticks (60 s on AWS). Each tick
   * hands SQS the times due before the next one, so a shorter tick changes no fire time.
   * @default { tickSeconds: 1 }
   */
  readonly scheduling?: Partial<SchedulerSettings>;
  /** Run the scheduler (sync the schedules declared in code, then tick). @default true */
  readonly scheduler?: boolean;
  /** How often a run waiting for an active-run slot (`maxActiveRuns`) looks again. @default LOCAL_ADMIT_POLL_MS */
  readonly admitPollMs?: number;
  /** SQS redrive maxReceiveCount of the queues created here. @default DEFAULTS.maxReceiveCount */
  readonly maxReceiveCount?: number;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  readonly clock?: Clock;
  readonly random?: RandomSource;
  /** Owner of API requests (there is no IAM locally). @default LOCAL_OWNER ('local') */
  readonly identity?: string;
}

export interface LocalRuntime {
  readonly url: string;
  readonly kaj: Kaj;
  readonly resources: LocalResources;
  readonly config: FunctionConfig;
  readonly clients: { readonly sqs: SQSClient; readonly dynamodb: DynamoDBClient };
  readonly endpoints: Endpoints;
  /** Tasks re-enqueued at start because the persisted table outlived the in-memory queues. */
  readonly recovered: number;
  /** Dead letters written again at start, for the same reason (failed tasks not purged). */
  readonly recoveredDeadLetters: number;
  /** What the start-up rebuild of the persisted table's indexes fixed (with `dataDir` only). */
  readonly indexRebuild?: IndexRebuildReport;
  /** What the start-up sync of the schedules declared in code did (when the scheduler runs). */
  readonly scheduleSync?: Awaited<ReturnType<ScheduleService['syncDeclared']>>;
  /** Consumer invocations so far, per priority (every lane's together). */
  invocations(): Record<Priority, number>;
  /** Serves the paths outside `/api/` with `handler` from now on (the console, local/console.ts). */
  servePages(handler: PageHandler): void;
  /** Stop polling, let running tasks finish for `graceMs`, close everything. Returns tasks cut off. */
  stop(graceMs?: number): Promise<number>;
}

/**
 * The whole of Kaj on this machine: emulators, queues and table (from the same definitions
 * as the CDK stack), the API handler behind an HTTP server, the consumer behind an emulated
 * event source mapping per priority queue, and the sweeper on a timer.
 */
export async function startLocalRuntime(o: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const logger = o.logger ?? silentLogger;
  let emulators: RunningEmulators | undefined;
  let endpoints = o.endpoints;
  if (endpoints === undefined) {
    emulators = await startEmulators(o.dataDir === undefined ? {} : { dataDir: o.dataDir });
    endpoints = { sqs: emulators.sqsEndpoint, dynamodb: emulators.dynamoEndpoint };
    const fixed = emulators.indexRebuild;
    if (fixed !== undefined && fixed.removed + fixed.added + fixed.rewritten > 0) {
      logger.warn(
        'the saved table was written by a process killed mid-write: its indexes were rebuilt from the items',
        {
          stale_entries_removed: fixed.removed,
          missing_entries_added: fixed.added,
          entries_rewritten: fixed.rewritten,
        },
      );
    }
  }
  const clients = emulatorClients(endpoints);
  const { sqs, dynamodb } = clients;
  const registry = o.registry ?? defaultRegistry;
  const maxReceiveCount = o.maxReceiveCount ?? DEFAULTS.maxReceiveCount;
  const settings = runtimeSettings({ maxReceiveCount, ...o.settings });
  const resources = await ensureResources({ sqs, dynamodb }, o.prefix ?? 'kaj-local', {
    maxReceiveCount,
    visibilityTimeoutSeconds: settings.queueVisibilityTimeoutSeconds,
    lanes: registry.lanes,
  });
  const config: FunctionConfig = {
    tableName: resources.tableName,
    schedulesTableName: resourceNames(resources.prefix).schedules,
    ...(resources.limitsTableName === undefined ? {} : { limitsTableName: resources.limitsTableName }),
    ...(resources.historyTableName === undefined ? {} : { historyTableName: resources.historyTableName }),
    queueUrls: resources.queueUrls,
    deadLetterQueueUrls: resources.deadLetterQueueUrls,
    laneQueueUrls: laneQueueUrlsOf(resources),
    settings,
  };
  const kaj = createKajOnAws(config, registry, {
    sqs,
    dynamodb,
    logger,
    ...(o.metrics === undefined ? {} : { metrics: o.metrics }),
    ...(o.clock === undefined ? {} : { clock: o.clock }),
    ...(o.random === undefined ? {} : { random: o.random }),
    // No IAM here: requests belong to the local identity (docs/security.md).
    defaultOwner: o.identity ?? LOCAL_OWNER,
    scheduling: { tickSeconds: 1, ...o.scheduling },
    // A pipeline run waiting for its slot (maxActiveRuns) looks again within seconds here, not 30 s.
    admitPollMs: o.admitPollMs ?? LOCAL_ADMIT_POLL_MS,
  });
  // Schedules declared in code are synced before anything runs (an invalid one stops the start).
  const scheduleSync =
    o.scheduler === false || kaj.schedules === undefined
      ? undefined
      : await kaj.schedules.syncDeclared(registry.declaredSchedules());

  // Only the embedded SQS forgets its messages on a restart (and only a saved table remembers tasks).
  const recovery =
    emulators === undefined || o.dataDir === undefined
      ? { requeued: 0, deadLetters: 0 }
      : await recoverMessages({ kaj, dynamodb, tableName: resources.tableName, logger });

  let pages: PageHandler | undefined;
  const server = createApiServer((event) => kaj.handleHttp(event), { pages: () => pages });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 3000, o.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  // Each lane's queues get their own emulated mappings, with the lane's own concurrency, as each
  // lane gets its own consumer function on AWS. One process runs them all here.
  const sources: { priority: Priority; source: SqsEventSource }[] = [];
  if (o.consumers !== false) {
    for (const q of laneSources(resources, registry.lanes, o)) {
      const source = laneEventSource(sqs, q, {
        waitTimeSeconds: o.waitTimeSeconds ?? 20,
        leaseSeconds: settings.leaseSeconds,
        handler: (event, context) => kaj.processBatch(event, context),
        logger,
      });
      source.start();
      sources.push({ priority: q.priority, source });
    }
  }

  // One sweep at a time, as on AWS (one scheduled invocation a minute, well under its timeout):
  // a backlog is never swept twice at once (which sent the same owed message twice).
  const sweeps = serialInterval(
    () =>
      kaj.sweep().then(
        () => {},
        (err: unknown) => logger.warn('sweep failed', { error: String(err) }),
      ),
    o.sweepIntervalMs ?? 5_000,
  );

  const ticker = kaj.ticker;
  const ticks =
    o.scheduler === false || ticker === undefined
      ? undefined
      : serialInterval(
          () =>
            ticker.tick().then(
              (report) => {
                if (report.failures > 0) logger.warn('scheduler tick: some schedules failed', { ...report });
              },
              (err: unknown) => logger.warn('scheduler tick failed', { error: String(err) }),
            ),
          (o.scheduling?.tickSeconds ?? 1) * 1000,
        );

  let stopped: Promise<number> | undefined;
  return {
    url: `http://${o.host ?? '127.0.0.1'}:${port}`,
    kaj,
    resources,
    config,
    clients: { sqs, dynamodb },
    endpoints,
    recovered: recovery.requeued,
    recoveredDeadLetters: recovery.deadLetters,
    ...(emulators?.indexRebuild === undefined ? {} : { indexRebuild: emulators.indexRebuild }),
    ...(scheduleSync === undefined ? {} : { scheduleSync }),
    servePages: (handler) => {
      pages = handler;
    },
    invocations: () => {
      const counts = { high: 0, normal: 0, low: 0 };
      for (const { priority, source } of sources) counts[priority] += source.invocationCount;
      return counts;
    },
    stop: (graceMs = 30_000) => {
      stopped ??= (async () => {
        await new Promise<void>((r) => server.close(() => r()));
        const cutOff = (await Promise.all(sources.map((s) => s.source.stop(graceMs)))).reduce((a, b) => a + b, 0);
        await sweeps.stop();
        await ticks?.stop();
        clients.destroy();
        await emulators?.stop();
        return cutOff;
      })();
      return stopped;
    },
  };
}

/**
 * The embedded SQS keeps messages in memory while the table can persist on disk, so after a
 * restart no task has a message. From the saved table, once, each task goes through the
 * domain's recovery (`TaskLifecycle.operations.recover`):
 * - each unfinished task gets its message again (it runs again);
 * - each dead task (`failed`, not purged) gets its dead letter again, so `kaj dlq list/redrive/
 *   purge` see it as before the restart. Not for a failed task that still owes its dead letter
 *   (an outbox entry `dlq#…`: the sweeper writes that one), nor for one that died longer ago than
 *   the DLQ retention (on AWS its letter would have expired too).
 * (On AWS both survive; this exists only for the local runtime.)
 */
async function recoverMessages(d: {
  kaj: Kaj;
  dynamodb: DynamoDBClient;
  tableName: string;
  logger: Logger;
}): Promise<{ requeued: number; deadLetters: number }> {
  let requeued = 0;
  let deadLetters = 0;
  for await (const page of scanTable(d.dynamodb, d.tableName)) {
    for (const item of page) {
      const out = await d.kaj.lifecycle.operations.recover(item);
      if (out.kind === 'requeued') requeued += 1;
      else if (out.kind === 'dead_letter_sent') deadLetters += 1;
      else if (out.kind === 'dead_letter_unsent') {
        // Not fatal: `kaj dlq redrive/purge --task ID` also work from the record alone.
        d.logger.warn('could not write the dead letter of a failed task again', {
          task_id: item.task_id,
          error: String(out.error),
        });
      }
    }
  }
  return { requeued, deadLetters };
}

/** Every task of the saved table, page by page (a Scan: the local table is small). */
async function* scanTable(dynamodb: DynamoDBClient, tableName: string): AsyncIterable<TaskRecord[]> {
  const doc = DynamoDBDocumentClient.from(dynamodb);
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: startKey }));
    yield (page.Items ?? []) as TaskRecord[];
    startKey = page.LastEvaluatedKey;
  } while (startKey !== undefined);
}
