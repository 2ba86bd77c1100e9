/**
 * The one source of truth for Kaj's resource names, key schema and settings.
 *
 * Read by the CDK stack (`infra/`) and by the local runtime (`local/`) alike, so the
 * queues and table a developer gets from `npm start` are the ones `cdk deploy` makes.
 */

export const PRIORITIES = ['high', 'normal', 'low'] as const;
export type Priority = (typeof PRIORITIES)[number];

export function isPriority(value: unknown): value is Priority {
  return typeof value === 'string' && (PRIORITIES as readonly string[]).includes(value);
}

/** DynamoDB key schema of the task table. Attribute names are part of the storage contract. */
export const TABLE_SCHEMA = {
  partitionKey: 'task_id',
  /** TTL attribute (epoch seconds), set only on finished tasks. */
  ttlAttribute: 'expires_at',
  /**
   * Sparse GSI: the outbox. An item carries `outbox_pk` / `outbox_due` only while something for
   * it waits in the table: a delay beyond SQS's 15 minutes, a send that failed, a dead letter not
   * yet written. Tasks sent at once never enter it (docs/reliability.md, "Send first, then put").
   * Keys only: a status change never writes the index; the sweeper reads the item itself.
   * Partitions are sharded (`queue#normal#3`) so no one index partition takes the write rate of
   * a whole priority (DynamoDB allows 1,000 writes/s per partition).
   */
  outboxIndex: {
    name: 'outbox',
    partitionKey: 'outbox_pk',
    sortKey: 'outbox_due',
    projection: 'KEYS_ONLY',
    shards: 8,
  },
  /**
   * Sparse GSI: the listing (`GET /api/v1/tasks?status=…`, `kaj tasks list`). An item carries
   * `list_pk` (its listed status) / `list_sk` (`<ISO time it entered that status>#<task id>`)
   * only while it is `retrying`, `failed`, `cancelled`, or `running` past its first heartbeat
   * (docs/architecture.md, "Listing"). Every write that puts it there or takes it out already
   * changes the task's status, so a task that succeeds at its first attempt and within
   * one heartbeat period never enters it: the success path costs no index write. The heartbeat
   * and the other writes of a listed task change no projected attribute (`lease_until` is not
   * projected), so they cost no index write either.
   */
  listIndex: {
    name: 'list',
    partitionKey: 'list_pk',
    sortKey: 'list_sk',
    projection: 'INCLUDE',
    /** What a list row shows: small, fixed-size attributes (no payload, result or history). */
    nonKeyAttributes: [
      'type',
      'status',
      'owner',
      'priority',
      'tenant',
      'attempts',
      'max_attempts',
      'created_at',
      'updated_at',
      'run_at',
      'started_at',
      'finished_at',
      'last_error',
      'cancel_requested',
    ],
  },
} as const;

/**
 * Key schema of the schedules table (`<prefix>-schedules`): one item per schedule.
 *
 * Sparse GSI `due`: a schedule carries `due_pk` (`due#<shard>`) / `due_at` only while the tick has
 * something to do for it (an active schedule's next time, a buffered run to re-check), so a paused
 * or finished schedule costs the tick nothing. The tick Queries each shard for `due_at <= now +
 * lookahead` (no Scan). Keys only: the tick reads each due schedule itself (a consistent read, to
 * act on the latest version), so projecting the whole item would only double the index writes of
 * every fire (an index entry is deleted and written again whenever `due_at` moves; with ALL each
 * costs the item's size). Sharded so that 10,000 schedules due in one minute stay far below
 * DynamoDB's 1,000 writes/s per index partition.
 */
export const SCHEDULE_TABLE_SCHEMA = {
  partitionKey: 'name',
  dueIndex: {
    name: 'due',
    partitionKey: 'due_pk',
    sortKey: 'due_at',
    projection: 'KEYS_ONLY',
    shards: 8,
  },
} as const;

/**
 * Key schema of the limits table (`<prefix>-limits`): the shared state of the flow-control
 * limits (`shared/limit/`), one small item per limit (and per key of a keyed limit): a
 * concurrency item holds its leases (`holders`: holder id → lease end), a rate item its GCRA
 * time (`tat`) and a pause learnt from a provider's 429. Every worker on every Lambda instance
 * reads and writes the same items with conditional updates, which is what makes a limit global.
 * Items of keyed limits expire (TTL `expires_at`) once unused for a day.
 */
export const LIMIT_TABLE_SCHEMA = {
  partitionKey: 'pk',
  ttlAttribute: 'expires_at',
} as const;

/**
 * Key schema of the history table (`<prefix>-history`): the histories of workflow runs
 * (`shared/workflow/history-store.ts`), one partition per run (`run_id`, the workflow task's id),
 * one small immutable item per entry, sorted by the entry's `key` (`step#…`, `fail#…`, `sleep#…`),
 * so that a resume reads the whole history back in one strongly consistent Query. The stack makes
 * the table only when a task type is a workflow (`defineWorkflow`). An entry that carries
 * `expires_at` (epoch seconds, TTL) is deleted by DynamoDB after that time.
 */
export const HISTORY_TABLE_SCHEMA = {
  partitionKey: 'run_id',
  sortKey: 'key',
  ttlAttribute: 'expires_at',
} as const;

/** Settings shared by every deployment unless overridden. Times are in seconds. */
export const DEFAULTS = {
  /** Visibility a consumer holds on a claimed message; heartbeats extend it every lease/3. */
  leaseSeconds: 60,
  /** Consumer Lambda timeout. The queue visibility timeout must be at least this (Lambda refuses the mapping otherwise). */
  consumerTimeoutSeconds: 300,
  /** Queue visibility timeout: the backstop if a consumer dies before it shortens it to the lease. */
  queueVisibilityTimeoutSeconds: 330,
  /** Task handler timeout unless the type or the request says otherwise. */
  taskTimeoutSeconds: 60,
  /** Largest task timeout accepted: leaves the consumer time to record the outcome. */
  maxTaskTimeoutSeconds: 270,
  maxAttempts: 5,
  maxAttemptsLimit: 25,
  backoffBaseSeconds: 2,
  backoffCapSeconds: 300,
  /** SQS DelaySeconds limit; longer delays are held in the table and sent by the sweeper. */
  maxSqsDelaySeconds: 900,
  /** Receives of one message before SQS itself moves it to the DLQ (crash-loop backstop). */
  maxReceiveCount: 10,
  /**
   * Crashes attributed to a task (its worker died while it ran alone — see docs/reliability.md,
   * "Crash loops") before it is failed. Per type: `defineTask({ crashLimit })`.
   */
  crashLoopReceives: 3,
  /**
   * How often a running task looks for a cancel request (an eventually consistent read, half a
   * read unit). Tasks shorter than this never pay for it; 0 leaves it to the heartbeat.
   */
  cancelPollSeconds: 5,
  /**
   * Main queue retention: SQS's maximum. A task sent at once is kept by its message alone (no
   * outbox entry), so the message must outlive any consumer outage an operator could miss.
   */
  queueRetentionSeconds: 14 * 24 * 3600,
  dlqRetentionSeconds: 14 * 24 * 3600,
  /** How long a finished task stays readable before DynamoDB TTL removes it. */
  retentionDays: 7,
  /** Grace before the sweeper sends a message that the submitter or consumer did not confirm sending. */
  outboxGraceSeconds: 30,
  /**
   * Watchdog: a queued task whose message was sent but which has not been claimed this long
   * after its run_at gets its message sent again (a lost or expired message must not strand it).
   */
  watchdogSeconds: 3600,
  /**
   * Send first, then put: how long a consumer waits for the record a message was sent ahead of
   * (not found yet, or still at the previous dispatch) before it drops the message. Longer than
   * any writer can take between its send and its write: the consumer function's timeout, plus
   * a minute (the API function's is shorter).
   */
  sendFirstWindowSeconds: 360,
  /** Payload / result size limits (bytes of serialized JSON). */
  maxPayloadBytes: 32 * 1024,
  maxResultBytes: 32 * 1024,
  /** History entries a workflow run may record unless its type says otherwise (`defineWorkflow`). */
  maxHistoryEntries: 10_000,
  /**
   * How long a workflow run may last unless its type says otherwise (`defineWorkflow({ maxRunDays })`):
   * its history is kept this long plus the deployment's retention, and a run older than this
   * fails (its history would start to expire). At most the longest sleep, 365 days.
   */
  maxRunDays: 90,
  /** Children (`wf.run`) a workflow run may start unless its type says otherwise. */
  maxChildren: 10_000,
  /**
   * A waiting run looks up its open children this long after they started (a child's end that
   * was not recorded — its writer died in between — is found so), then at intervals that grow
   * with the child's age up to `childCheckMaxMs`.
   */
  childCheckMs: 15 * 60_000,
  childCheckMaxMs: 6 * 3_600_000,
  /**
   * The largest `maxActiveRuns` a workflow type (a pipeline) may declare: its slots are holders of
   * one limits-table item, which stays under 3 KB so.
   */
  maxActiveRunsLimit: 50,
  /** A pipeline's runs active at once (per owner) unless it says otherwise: Airflow's default too. */
  pipelineMaxActiveRuns: 16,
  /** A pipeline run's deadline in days unless it says otherwise. */
  pipelineMaxRunDays: 7,
  /** How often a run waiting for an active-run slot (`maxActiveRuns`) looks again. */
  admitPollMs: 30_000,
  /** The longest backfill (dates of one request) unless the pipeline says otherwise (`maxBackfillRuns`). */
  maxBackfillDays: 366,
  /** The largest `maxHistoryEntries` a workflow type may declare. */
  maxHistoryEntriesLimit: 100_000,
  /** The longest durable sleep of a workflow: 365 days. */
  maxSleepMs: 365 * 86_400_000,
  maxRequestBytes: 64 * 1024,
  /** A batch submit's body (up to 100 tasks): 1 MiB, well under API Gateway's 10 MB and Lambda's 6 MB. */
  maxBatchRequestBytes: 1024 * 1024,
  /** Attempts kept in a task's history. */
  historyLength: 10,
  /** SQS event source mapping. */
  batchSize: 10,
  maxBatchingWindowSeconds: 0,
  /** Per-priority maximum concurrency of the consumers (Lambda's minimum is 2). High gets the largest share. */
  concurrency: { high: 10, normal: 5, low: 2 } satisfies Record<Priority, number>,
  /**
   * Scheduler tick period (the EventBridge rule on AWS, a timer locally). Each tick hands SQS every
   * time due before the next tick, with `DelaySeconds` for its exact second.
   */
  scheduleTickSeconds: 60,
  /**
   * A time the tick sees later than this after it fell due counts as missed (the misfire policy
   * decides). Two and a half ticks: a tick may defer a time whose previous run is still going
   * until the next one, and EventBridge may start a tick a few seconds late.
   */
  scheduleMisfireGraceSeconds: 150,
  /** `catch_up` default: missed times older than this are dropped. */
  scheduleCatchupWindowSeconds: 3600,
  /** Runs one tick creates for one schedule at most (a long catch-up continues at the next tick). */
  scheduleMaxRunsPerTick: 60,
  /** Entries kept in a schedule's recent runs. */
  scheduleRecentRuns: 10,
  /** Times one backfill request may cover. */
  scheduleMaxBackfill: 500,
  /** Schedules one tick works on at once. */
  scheduleTickConcurrency: 32,
  /** Largest herd-spreading window. */
  scheduleMaxJitterSeconds: 3600,
  /**
   * The smallest interval between two times of a schedule (`every`, and `cron` with 5 or 6
   * fields): one minute, the tick's own period on AWS.
   */
  scheduleMinIntervalSeconds: 60,
  /** Whether a 6-field cron (seconds first) is accepted. */
  scheduleAllowSecondsField: false,
  /**
   * Schedules one API caller may own. A thousand: well above any real use of one principal, well
   * below what would make its schedules a noticeable share of a tick (32 at a time, 60 s each).
   */
  scheduleMaxPerOwner: 1000,
  /**
   * Flow control: the first deferral of a task refused by a limit brings its message back after
   * about this long (jittered); further refusals in a row (the limit stays saturated) double it up
   * to `limitDeferCapSeconds`. A deferral counts no attempt and writes nothing to the task.
   */
  limitDeferBaseSeconds: 1,
  limitDeferCapSeconds: 120,
  /**
   * How long a worker may wait in-process for a start its limit can give soon: a rate slot due
   * within this time, or a concurrency slot another task of the same process releases. Beyond
   * it the message is deferred instead (a waiting Lambda invocation is billed).
   */
  limitLocalWaitMs: 1000,
  /**
   * Rate starts are taken at least this far ahead, so that the store's answer (a round trip)
   * comes before the start, which is then kept to the microsecond instead of used late. The
   * limiter asks further ahead when it measures a longer path (`shared/limit/lead.ts`).
   */
  limitStartLeadMs: 50,
  /** Items of keyed limits (per tenant, per account) unused this long expire (TTL). */
  limitKeyTtlSeconds: 86_400,
} as const;

export interface ResourceNames {
  readonly table: string;
  /** The schedules table. */
  readonly schedules: string;
  /** The limits table (flow control). */
  readonly limits: string;
  /** The history table (workflow runs' histories). */
  readonly history: string;
  readonly queues: Readonly<Record<Priority, string>>;
  readonly deadLetterQueues: Readonly<Record<Priority, string>>;
}

/**
 * Names of every resource for a deployment prefix (the CDK stack name, or `kaj-local`).
 * Names are stable so that the admin CLI and operators can find them.
 */
export function resourceNames(prefix: string): ResourceNames {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(prefix)) {
    throw new Error(`resource prefix "${prefix}" is invalid: use 1-40 letters, digits, "-" or "_"`);
  }
  const queues = {} as Record<Priority, string>;
  const deadLetterQueues = {} as Record<Priority, string>;
  for (const p of PRIORITIES) {
    queues[p] = `${prefix}-${p}`;
    deadLetterQueues[p] = `${prefix}-${p}-dlq`;
  }
  return {
    table: `${prefix}-tasks`,
    schedules: `${prefix}-schedules`,
    limits: `${prefix}-limits`,
    history: `${prefix}-history`,
    queues,
    deadLetterQueues,
  };
}

/**
 * Environment variables through which the functions learn their resources.
 * The CDK stack sets them; the local runtime sets them for its in-process handlers.
 */
export const ENV = {
  tableName: 'KAJ_TABLE_NAME',
  /** The schedules table (set for the API and scheduler functions). */
  schedulesTableName: 'KAJ_SCHEDULES_TABLE_NAME',
  /** The limits table (set for the consumers, which enforce the limits). */
  limitsTableName: 'KAJ_LIMITS_TABLE_NAME',
  /** The history table (set for the consumers, which run workflows, and the API, which shows a run's steps). */
  historyTableName: 'KAJ_HISTORY_TABLE_NAME',
  /** JSON `{ lane: { high: url, normal: url, low: url } }`: the queues of every non-default lane. */
  laneQueueUrls: 'KAJ_LANE_QUEUE_URLS',
  queueUrl: (p: Priority) => `KAJ_QUEUE_URL_${p.toUpperCase()}`,
  dlqUrl: (p: Priority) => `KAJ_DLQ_URL_${p.toUpperCase()}`,
  leaseSeconds: 'KAJ_LEASE_SECONDS',
  retentionDays: 'KAJ_RETENTION_DAYS',
  /** The deployment's schedule rules (API and scheduler functions); unset: the defaults. */
  scheduleMinIntervalSeconds: 'KAJ_SCHEDULE_MIN_INTERVAL_SECONDS',
  scheduleAllowSecondsField: 'KAJ_SCHEDULE_ALLOW_SECONDS_FIELD',
  scheduleMaxPerOwner: 'KAJ_SCHEDULE_MAX_PER_OWNER',
  /** HMAC key for task ids derived from idempotency keys (the API function's only secret). */
  idSecret: 'KAJ_ID_SECRET',
  logLevel: 'POWERTOOLS_LOG_LEVEL',
} as const;

/** Lambda entry points, relative to the repository root. Each exports `handler`. */
export const FUNCTION_ENTRIES = {
  api: 'functions/api.ts',
  consumer: 'functions/consumer.ts',
  sweeper: 'functions/sweeper.ts',
  scheduler: 'functions/scheduler.ts',
} as const;
