/**
 * Deployment configuration of a Kaj stack: schema, defaults and validation.
 *
 * Sources, later ones winning (objects such as `concurrency` are merged key by key):
 *   1. built-in defaults (mostly `DEFAULTS` from shared/config/resources.ts),
 *   2. `cdk.json` → `context` → `"kaj:config": { ... }` (an object, or a JSON string),
 *   3. single keys on the command line: `cdk deploy -c kaj:alarmEmail=ops@example.com`
 *      (values are parsed as JSON when they parse, so `-c kaj:deletionProtection=false` is a boolean),
 *   4. `KajStackProps.config` when the stack is built from code.
 *
 * Anything invalid fails synth with an {@link InvalidConfigError} that names the key.
 */
import type { Node } from 'constructs';
import * as z from 'zod';
import { ConfigError } from '../shared/config/errors.js';
import {
  defineLanes,
  type LaneArchitecture,
  type LaneDeclaration,
  type LaneDeclarations,
  laneQueueNames,
} from '../shared/config/lanes.js';
import { DEFAULTS, ENV, PRIORITIES, type Priority, resourceNames } from '../shared/config/resources.js';
import { functionEnvironment, runtimeSettings, type ScheduleRules } from '../shared/config/settings.js';
import { schedulerSettings } from '../shared/schedule/settings.js';
import { InvalidConfigError } from './errors.js';

/** Context key holding the configuration object. */
export const CONFIG_CONTEXT_KEY = 'kaj:config';
/** Prefix of single-key context overrides (`-c kaj:<key>=<value>`). */
export const CONFIG_CONTEXT_PREFIX = 'kaj:';

export const AUTH_MODES = ['iam', 'none'] as const;
export type AuthMode = (typeof AUTH_MODES)[number];

/**
 * Which API Gateway API fronts the API function: `http` (an HTTP API, payload format 2.0: $1.00 per
 * million requests) or `rest` (a REST API, payload format 1.0: $3.50 per million; what LocalStack's
 * free edition emulates, and what API keys, usage plans, request validation, WAF and private
 * endpoints need). Same routes, auth, throttling, access logs and alarms either way.
 */
export const API_KINDS = ['http', 'rest'] as const;
export type ApiKind = (typeof API_KINDS)[number];

/** Powertools log levels. */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Retention values CloudWatch Logs accepts, in days. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

/** Lambda's limits for an SQS event source mapping's maximum concurrency. */
export const MIN_MAX_CONCURRENCY = 2;
export const MAX_MAX_CONCURRENCY = 1000;
/** Lambda's hard timeout limit. */
export const MAX_LAMBDA_TIMEOUT_SECONDS = 900;
/**
 * The consumer must outlive the longest task it accepts (DEFAULTS.maxTaskTimeoutSeconds)
 * with time to record the outcome.
 */
export const MIN_CONSUMER_TIMEOUT_SECONDS = DEFAULTS.maxTaskTimeoutSeconds + 30;
/** SQS lets a DLQ's RedriveAllowPolicy (byQueue) name at most this many source queues. */
export const MAX_REDRIVE_SOURCE_QUEUES = 10;
/**
 * Lanes a deployment may declare besides the default one: every lane's priority-p queue
 * dead-letters into the deployment's priority-p DLQ, which lists the default lane's queue and one
 * per lane as its redrive sources.
 */
export const MAX_LANES = MAX_REDRIVE_SOURCE_QUEUES - 1;
/** How much longer than its consumer's timeout a lane's queues hide a received message (330 s for 300 s by default). */
export const LANE_VISIBILITY_MARGIN_SECONDS = 30;
/** Lambda's limit on a function's environment variables, measured as their JSON. */
export const MAX_LAMBDA_ENVIRONMENT_BYTES = 4 * 1024;

/** The largest `scheduleMaxPerOwner` synth accepts. */
export const MAX_SCHEDULES_PER_OWNER = 1_000_000;

/** Stack names double as the resource prefix: CloudFormation stack-name rules ∩ resourceNames(). */
const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,39}$/;

const int = (min: number, max: number) => z.int().min(min).max(max);

/**
 * A per-priority setting: one number for all priorities, or `{ high?, normal?, low? }`; a priority
 * left out gets its default.
 */
function perPriority(value: z.ZodInt, defaults: Readonly<Record<Priority, number>>) {
  return z
    .preprocess(
      (v) => (typeof v === 'number' ? { high: v, normal: v, low: v } : v),
      z.strictObject({
        high: value.default(defaults.high),
        normal: value.default(defaults.normal),
        low: value.default(defaults.low),
      }),
    )
    .prefault({});
}

/** The same number for every priority. */
const each = (v: number): Record<Priority, number> => ({ high: v, normal: v, low: v });

/**
 * Named sizings for a known load (docs/capacity.md has the arithmetic and the simulation behind
 * each). A preset only supplies defaults: any key the user sets, in any layer, wins over it, and
 * per-priority settings and `throttling` merge key by key (`capacity: '10m-per-day'` with
 * `concurrency: { low: 10 }` keeps the preset's high and normal).
 */
export const CAPACITY_PRESETS = {
  /**
   * The reference workload: 10 M tasks a day, a 350/s peak hour (10/80/10 % high/normal/low), 5 s
   * tasks, and a 105,000-task backlog (5 minutes of the peak) to drain during the peak. Little's
   * law with batches of 10: invocations = rate × batch time / 10, a batch lasting as long as its
   * slowest task (≈ 5.9 s for 5 s ± 20 %), so one invocation serves ≈ 1.7 tasks/s. The peak needs
   * high 21, normal 164, low 21; these maxima start the last of the backlog's share after ≈ 1.7 /
   * 2.7 / 3.4 minutes (the queues are empty again after ≈ 2.6 / 6 / 11), and high and normal carry
   * the peak even if tasks run 50 % longer than planned (low: 40 %).
   * They total 390, under Lambda's default 1,000 concurrent executions with room for the API
   * function and the rest of the account. The API admits 1,000 requests/s (burst 2,000): ≈ 3× the
   * peak's submits, for GETs, retries and bursts, a tenth of API Gateway's account quota.
   * Normal and low wait up to 1 s to fill a batch: without a window, pollers invoke with whatever
   * is visible, batches hold 1-5 tasks below saturation, and Lambda bills a whole 5 s invocation per
   * handful of tasks; with it batches are full (≈ 10), for ≤ 1 s more latency at quiet hours.
   */
  '10m-per-day': {
    throttling: { rateLimit: 1_000, burstLimit: 2_000 },
    concurrency: { high: 60, normal: 300, low: 30 },
    maxBatchingWindowSeconds: { high: 0, normal: 1, low: 1 },
  },
} as const satisfies Record<
  string,
  {
    throttling: { rateLimit: number; burstLimit: number };
    concurrency: Record<Priority, number>;
    maxBatchingWindowSeconds?: Record<Priority, number>;
  }
>;
export type CapacityPreset = keyof typeof CAPACITY_PRESETS;
const CAPACITY_PRESET_NAMES = Object.keys(CAPACITY_PRESETS) as [CapacityPreset, ...CapacityPreset[]];

/**
 * The configuration: every key, its validation, its default (mostly `DEFAULTS` from
 * shared/config/resources.ts) and its description, once. `KajConfig`, `DEFAULT_CONFIG`,
 * `CONFIG_KEYS` and {@link configReference} (the documentation's table) are derived from it.
 */
export const configSchema = z.strictObject({
  stackName: z
    .string()
    .regex(STACK_NAME, 'must start with a letter and contain 1-40 letters, digits or "-"')
    .default('kaj')
    .describe(
      'CloudFormation stack name; also the prefix of every resource name (`<stackName>-high`, `<stackName>-tasks`...).',
    ),
  authMode: z
    .enum(AUTH_MODES)
    .default('iam')
    .describe('API authorization: `iam` (SigV4, default) or `none` (anyone with the URL can submit tasks).'),
  api: z
    .enum(API_KINDS)
    .default('http')
    .describe(
      'API Gateway API kind: `http` (HTTP API, $1.00 per million requests, default) or `rest` (REST API, $3.50 per ' +
        "million: LocalStack's free edition, and API keys, usage plans, request validation, WAF, private endpoints). " +
        'Same routes, auth, throttling, access logs and alarms.',
    ),
  capacity: z
    .enum(CAPACITY_PRESET_NAMES)
    .optional()
    .describe(
      'A named sizing (docs/capacity.md): `10m-per-day` sets `throttling`, `concurrency` and ' +
        '`maxBatchingWindowSeconds` for 10 M tasks a day (350/s peak, 5 s tasks). Keys you set yourself win over the preset.',
    ),
  concurrency: perPriority(int(MIN_MAX_CONCURRENCY, MAX_MAX_CONCURRENCY), DEFAULTS.concurrency).describe(
    "Maximum concurrency of each priority's event source mapping (Lambda's minimum is 2).",
  ),
  batchSize: perPriority(int(1, 10_000), each(DEFAULTS.batchSize)).describe(
    'Messages per consumer invocation, per priority.',
  ),
  maxBatchingWindowSeconds: perPriority(int(0, 300), each(DEFAULTS.maxBatchingWindowSeconds)).describe(
    'Seconds the event source mapping may wait to fill a batch, per priority.',
  ),
  consumerTimeoutSeconds: int(MIN_CONSUMER_TIMEOUT_SECONDS, MAX_LAMBDA_TIMEOUT_SECONDS)
    .default(DEFAULTS.consumerTimeoutSeconds)
    .describe('Consumer Lambda timeout.'),
  queueVisibilityTimeoutSeconds: int(0, 43_200)
    .default(DEFAULTS.queueVisibilityTimeoutSeconds)
    .describe('Visibility timeout of the three priority queues; must be >= consumerTimeoutSeconds.'),
  leaseSeconds: int(3, 900)
    .default(DEFAULTS.leaseSeconds)
    .describe('Visibility a consumer holds on a claimed message (heartbeats renew it every lease/3).'),
  consumerMemoryMiB: int(128, 10_240).default(256).describe('Memory of the consumer function.'),
  retentionDays: int(1, 3650)
    .default(DEFAULTS.retentionDays)
    .describe('Days a finished task stays readable before DynamoDB TTL removes it.'),
  logLevel: z
    .preprocess((v) => (typeof v === 'string' ? v.toUpperCase() : v), z.enum(LOG_LEVELS))
    .default('INFO')
    .describe('Powertools log level of the functions.'),
  logRetentionDays: z
    .int()
    .refine((d) => (LOG_RETENTION_DAYS as readonly number[]).includes(d), {
      message: `must be one of ${LOG_RETENTION_DAYS.join(', ')}`,
    })
    .default(30)
    .describe("Retention of the functions' and the API's log groups."),
  alarmEmail: z
    .email()
    .optional()
    .describe(
      'Email subscribed to the alarm topic every stack has (output AlarmTopicArn). No subscription when unset.',
    ),
  oldestMessageAgeAlarmSeconds: int(60, 1_209_600)
    .default(900)
    .describe('Alarm when the oldest message of a priority queue is older than this.'),
  deletionProtection: z
    .boolean()
    .default(true)
    .describe('DynamoDB deletion protection on the task table, the schedules table and the limits table.'),
  outboxIndexProjection: z
    .enum(['KEYS_ONLY', 'ALL'])
    .default('KEYS_ONLY')
    .describe(
      "Projection of the task table's outbox index. Stacks deployed by earlier versions of Kaj set `ALL`: DynamoDB cannot change an existing index's projection.",
    ),
  retainData: z
    .boolean()
    .default(true)
    .describe(
      'Keep the task table, the schedules table, the limits table and the dead-letter queues when the stack is deleted.',
    ),
  throttling: z
    .strictObject({ rateLimit: int(1, 10_000).default(100), burstLimit: int(1, 5_000).default(200) })
    .prefault({})
    .describe('Default route throttling of the API stage (requests per second, burst).'),
  dashboard: z
    .boolean()
    .default(true)
    .describe("Create the CloudWatch dashboard ($3/month beyond the free tier's 3 dashboards)."),
  scheduleMinIntervalSeconds: int(1, 86_400)
    .default(DEFAULTS.scheduleMinIntervalSeconds)
    .describe(
      'Smallest interval between two times of one schedule (`every`, `cron`), in seconds: a schedule that fires ' +
        'more often is refused (422 naming `every` or `cron`).',
    ),
  scheduleAllowSecondsField: z
    .boolean()
    .default(DEFAULTS.scheduleAllowSecondsField)
    .describe('Accept 6-field crons (seconds first); refused (422 naming `cron`) when false.'),
  scheduleMaxPerOwner: int(1, MAX_SCHEDULES_PER_OWNER)
    .default(DEFAULTS.scheduleMaxPerOwner)
    .describe(
      'Schedules one API caller may own: a create beyond it is refused (422 `schedule_limit_reached` naming `name`). ' +
        "Schedules declared in code and an operator's (CLI, console) are not counted.",
    ),
  encryptAlarmTopic: z
    .boolean()
    .default(false)
    .describe(
      'Encrypt the alarm topic with a customer managed KMS key ($1/month, up to $3 after its yearly rotations). ' +
        'Off by default: alarm notifications carry alarm names and metric values only, never task data, and ' +
        'CloudWatch alarms cannot publish to a topic under the AWS managed key `aws/sns`.',
    ),
});

/** Configuration as written by a user (cdk.json or `KajStackProps.config`): every key optional. */
export type KajConfigInput = z.input<typeof configSchema>;

/** Configuration with every default applied and every rule checked. */
export type KajConfig = {
  readonly [K in keyof z.output<typeof configSchema>]: Readonly<z.output<typeof configSchema>[K]>;
};

/** The configuration a plain `cdk deploy` gets. */
export const DEFAULT_CONFIG: KajConfig = configSchema.parse({});

/** Known top-level keys, for single-key context overrides. */
export const CONFIG_KEYS = Object.keys(configSchema.shape) as (keyof KajConfigInput)[];

/** One row of the configuration reference (docs/deploy.md, Configuration): key, default, meaning. */
export interface ConfigReferenceRow {
  readonly key: keyof KajConfigInput;
  /** The default as JSON, or `undefined` for a key that is unset by default. */
  readonly default: string | undefined;
  readonly description: string;
}

/** The configuration reference, from the schema: every key in order with its default and description. */
export function configReference(): ConfigReferenceRow[] {
  return CONFIG_KEYS.map((key) => {
    const value: unknown = DEFAULT_CONFIG[key];
    return {
      key,
      default: value === undefined ? undefined : JSON.stringify(value),
      description: configSchema.shape[key].description ?? '',
    };
  });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Merges `over` onto `base`; nested plain objects (per-priority settings, throttling) key by key. */
function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const prev = out[k];
    out[k] = isPlainObject(prev) && isPlainObject(v) ? { ...prev, ...v } : v;
  }
  return out;
}

/** A command-line context value is a string: read it as JSON when it is JSON. */
function coerceCliValue(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}

/**
 * Collects the raw configuration from a construct node's context:
 * `kaj:config` (object or JSON string) merged with single `kaj:<key>` overrides.
 */
export function readContextConfig(node: Node): Record<string, unknown> {
  let base: Record<string, unknown> = {};
  const raw: unknown = node.tryGetContext(CONFIG_CONTEXT_KEY);
  if (raw !== undefined) {
    const value = coerceCliValue(raw);
    if (!isPlainObject(value)) {
      throw new InvalidConfigError(CONFIG_CONTEXT_KEY, [
        { key: CONFIG_CONTEXT_KEY, message: 'must be an object (or a JSON object string)' },
      ]);
    }
    base = value;
  }
  const all = node.getAllContext() as Record<string, unknown>;
  for (const [ctxKey, value] of Object.entries(all)) {
    if (!ctxKey.startsWith(CONFIG_CONTEXT_PREFIX) || ctxKey === CONFIG_CONTEXT_KEY) continue;
    const key = ctxKey.slice(CONFIG_CONTEXT_PREFIX.length);
    if (!(CONFIG_KEYS as string[]).includes(key)) {
      throw new InvalidConfigError(ctxKey, [
        { key: ctxKey, message: `is not a Kaj setting (known: ${CONFIG_KEYS.join(', ')})` },
      ]);
    }
    base = merge(base, { [key]: coerceCliValue(value) });
  }
  return base;
}

function describe(issue: z.core.$ZodIssue): { key: string; message: string } {
  if (issue.code === 'unrecognized_keys') {
    const key = [...issue.path, issue.keys[0] ?? ''].join('.');
    return { key, message: `is not a Kaj setting (known: ${CONFIG_KEYS.join(', ')})` };
  }
  const key = issue.path.length > 0 ? issue.path.join('.') : CONFIG_CONTEXT_KEY;
  const got = 'input' in issue && issue.input !== undefined ? ` (got ${JSON.stringify(issue.input)})` : '';
  return { key, message: `is invalid: ${issue.message}${got}` };
}

/**
 * Validates raw configuration layers and applies the defaults.
 * @param layers later layers override earlier ones
 * @throws InvalidConfigError naming the key(s) at fault
 */
export function parseConfig(...layers: readonly unknown[]): KajConfig {
  let merged: Record<string, unknown> = {};
  for (const layer of layers) {
    if (layer === undefined) continue;
    if (!isPlainObject(layer)) {
      throw new InvalidConfigError(CONFIG_CONTEXT_KEY, [{ key: CONFIG_CONTEXT_KEY, message: 'must be an object' }]);
    }
    merged = merge(merged, layer);
  }
  merged = withPreset(merged);
  const parsed = configSchema.safeParse(merged, { reportInput: true });
  if (!parsed.success) {
    const problems = parsed.error.issues.map(describe);
    throw new InvalidConfigError(problems[0]?.key ?? CONFIG_CONTEXT_KEY, problems);
  }
  const config: KajConfig = parsed.data;
  checkRelations(config);
  return config;
}

/**
 * The preset named by `capacity` under the user's own settings: the preset's values are defaults
 * that any explicit key overrides (nested objects key by key). An unknown name is left for the
 * schema to reject, naming `capacity`.
 */
function withPreset(merged: Record<string, unknown>): Record<string, unknown> {
  const name = merged.capacity;
  if (typeof name !== 'string' || !Object.hasOwn(CAPACITY_PRESETS, name)) return merged;
  return merge(structuredClone(CAPACITY_PRESETS[name as CapacityPreset]) as Record<string, unknown>, merged);
}

/** Rules that involve more than one key. */
function checkRelations(c: KajConfig): void {
  const problems: { key: string; message: string }[] = [];
  if (c.queueVisibilityTimeoutSeconds < c.consumerTimeoutSeconds) {
    problems.push({
      key: 'queueVisibilityTimeoutSeconds',
      message:
        `(${c.queueVisibilityTimeoutSeconds}) must be >= consumerTimeoutSeconds (${c.consumerTimeoutSeconds}): ` +
        'Lambda refuses an SQS event source whose visibility timeout is shorter than the function timeout',
    });
  }
  for (const p of PRIORITIES) {
    if (c.batchSize[p] > 10 && c.maxBatchingWindowSeconds[p] < 1) {
      problems.push({
        key: `maxBatchingWindowSeconds.${p}`,
        message: `must be >= 1 when batchSize.${p} (${c.batchSize[p]}) is above 10 (Lambda rule)`,
      });
    }
  }
  if (c.leaseSeconds > c.queueVisibilityTimeoutSeconds) {
    problems.push({
      key: 'leaseSeconds',
      message: `(${c.leaseSeconds}) must not exceed queueVisibilityTimeoutSeconds (${c.queueVisibilityTimeoutSeconds})`,
    });
  }
  // The functions validate their settings at cold start (shared/config/settings.ts): run the same
  // check now so that a setting the runtime would refuse fails synth instead of every invocation.
  try {
    runtimeSettings({ leaseSeconds: c.leaseSeconds, retentionDays: c.retentionDays });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push({ key: e.setting, message: `is refused by the function runtime: ${e.message}` });
  }
  try {
    schedulerSettings(scheduleRulesOf(c));
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    problems.push({ key: e.setting, message: `is refused by the scheduler: ${e.message}` });
  }
  const first = problems[0];
  if (first) throw new InvalidConfigError(first.key, problems);
}

/** The deployment's schedule rules, as the API and scheduler functions get them (KAJ_SCHEDULE_*). */
export function scheduleRulesOf(c: KajConfig): Required<ScheduleRules> {
  return {
    minIntervalSeconds: c.scheduleMinIntervalSeconds,
    allowSecondsField: c.scheduleAllowSecondsField,
    maxPerOwner: c.scheduleMaxPerOwner,
  };
}

/** Resolves the configuration of a stack: context of `node` (cdk.json / `-c`) then `overrides`. */
export function resolveConfig(node: Node, overrides?: KajConfigInput): KajConfig {
  return parseConfig(readContextConfig(node), overrides);
}

/** How a lane's consumer and its event source mappings are sized, the deployment's settings filling in. */
export interface LaneSettings {
  readonly memoryMiB: number;
  readonly timeoutSeconds: number;
  readonly architecture: LaneArchitecture;
  /**
   * The lane's queues' visibility timeout: the deployment's, or the consumer's timeout plus
   * {@link LANE_VISIBILITY_MARGIN_SECONDS} when that is longer (Lambda refuses a mapping whose
   * queue's visibility timeout is shorter than the function's timeout).
   */
  readonly visibilityTimeoutSeconds: number;
  /** Each priority's event source mapping. */
  readonly mappings: Readonly<
    Record<
      Priority,
      { readonly maxConcurrency: number; readonly batchSize: number; readonly maxBatchingWindowSeconds: number }
    >
  >;
}

/**
 * A lane's settings: what it declares, else the deployment's consumer settings (memory, timeout,
 * each priority's batch size, batching window and maximum concurrency), on arm64.
 */
export function laneSettings(config: KajConfig, lane: LaneDeclaration): LaneSettings {
  const timeoutSeconds = lane.timeoutSeconds ?? config.consumerTimeoutSeconds;
  const mappings = {} as Record<Priority, LaneSettings['mappings'][Priority]>;
  for (const p of PRIORITIES) {
    mappings[p] = {
      maxConcurrency: lane.concurrency?.[p] ?? config.concurrency[p],
      batchSize: lane.batchSize ?? config.batchSize[p],
      maxBatchingWindowSeconds: config.maxBatchingWindowSeconds[p],
    };
  }
  return {
    memoryMiB: lane.memoryMiB ?? config.consumerMemoryMiB,
    timeoutSeconds,
    architecture: lane.architecture ?? 'arm64',
    visibilityTimeoutSeconds: Math.max(
      config.queueVisibilityTimeoutSeconds,
      timeoutSeconds + LANE_VISIBILITY_MARGIN_SECONDS,
    ),
    mappings,
  };
}

/**
 * Checks a deployment's lanes: at most {@link MAX_LANES}, and each as `defineLanes` checks it
 * (its name, and its values' ranges).
 * @throws InvalidConfigError naming `lanes` (or `lanes.<name>.<option>`)
 */
export function checkLanes(lanes: LaneDeclarations): void {
  const names = Object.keys(lanes);
  if (names.length > MAX_LANES) {
    throw new InvalidConfigError('lanes', [
      {
        key: 'lanes',
        message:
          `declares ${names.length} lanes (${names.join(', ')}): at most ${MAX_LANES}. Every lane's queues ` +
          `dead-letter into the deployment's DLQs, and SQS lets a DLQ accept at most ${MAX_REDRIVE_SOURCE_QUEUES} ` +
          "source queues (the default lane's and one per lane). Put task types that are sized alike in one lane.",
      },
    ]);
  }
  try {
    defineLanes(lanes);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new InvalidConfigError(e.setting, [{ key: e.setting, message: `is invalid: ${e.message}` }]);
  }
}

/**
 * A queue URL as long as the stack's can be in any region and account: the environment's size is
 * checked at synth, when the stack's region and account are not known yet.
 */
const longestQueueUrl = (name: string) => `https://sqs.ap-southeast-5.amazonaws.com.cn/123456789012/${name}`;

/**
 * The largest environment any Kaj function can get for these lanes, measured as Lambda measures
 * it (its JSON): every variable any function gets, with the longest queue URLs and table names
 * the stack can have and a 64-character ID secret.
 */
export function largestEnvironmentBytes(stackName: string, laneNames: readonly string[]): number {
  const names = resourceNames(stackName);
  const urls = (queueNames: Readonly<Record<Priority, string>>) =>
    Object.fromEntries(PRIORITIES.map((p) => [p, longestQueueUrl(queueNames[p])])) as Record<Priority, string>;
  const env = {
    ...functionEnvironment({
      tableName: names.table,
      schedulesTableName: names.schedules,
      limitsTableName: names.limits,
      historyTableName: names.history,
      laneQueueUrls: Object.fromEntries(laneNames.map((lane) => [lane, urls(laneQueueNames(stackName, lane))])),
      queueUrls: urls(names.queues),
      deadLetterQueueUrls: urls(names.deadLetterQueues),
      leaseSeconds: DEFAULTS.leaseSeconds,
      retentionDays: DEFAULTS.retentionDays,
      // The API function's: the longest values the schedule rules can take.
      scheduleRules: { minIntervalSeconds: 86_400, allowSecondsField: false, maxPerOwner: MAX_SCHEDULES_PER_OWNER },
    }),
    [ENV.idSecret]: 'x'.repeat(64),
    [ENV.logLevel]: 'CRITICAL',
    POWERTOOLS_SERVICE_NAME: 'kaj',
    POWERTOOLS_METRICS_NAMESPACE: 'Kaj',
    NODE_OPTIONS: '--enable-source-maps',
  };
  return Buffer.byteLength(JSON.stringify(env), 'utf8');
}

/**
 * Lambda refuses a function whose environment is larger than 4 KB, and every function gets every
 * lane's queue URLs (`KAJ_LANE_QUEUE_URLS`): many lanes with a long stack name would fail the
 * deploy, so they fail synth instead.
 * @throws InvalidConfigError naming `lanes`
 */
export function checkLaneEnvironmentSize(stackName: string, laneNames: readonly string[]): void {
  const bytes = largestEnvironmentBytes(stackName, laneNames);
  if (bytes > MAX_LAMBDA_ENVIRONMENT_BYTES) {
    throw new InvalidConfigError('lanes', [
      {
        key: 'lanes',
        message:
          `make the functions' environment up to ${bytes} bytes (${ENV.laneQueueUrls} holds every lane's queue ` +
          `URLs), above Lambda's ${MAX_LAMBDA_ENVIRONMENT_BYTES}: declare fewer lanes, or shorten the lane names ` +
          `or the stack name "${stackName}"`,
      },
    ]);
  }
}
