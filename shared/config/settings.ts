import { DEFAULTS, ENV, PRIORITIES, type Priority } from './resources.js';
import { checkCount, checkIntegerRange, checkRange, ConfigError, MissingEnvironmentError } from './errors.js';
import { checkLaneName, type LaneQueueUrls } from './lanes.js';

/** Settings of the running consumer/API/sweeper, validated once at start-up. */
export interface RuntimeSettings {
  /** Visibility held on a claimed message and the task's lease in the table. */
  readonly leaseSeconds: number;
  /** Heartbeat period: lease/3, so two heartbeats can fail before the lease runs out. */
  readonly heartbeatSeconds: number;
  readonly retentionDays: number;
  readonly outboxGraceSeconds: number;
  readonly watchdogSeconds: number;
  /** How long a message may wait for the record it was sent ahead of (docs/reliability.md). */
  readonly sendFirstWindowSeconds: number;
  readonly crashLoopReceives: number;
  /** Cancel-request poll period of a running task (0: only at heartbeats). */
  readonly cancelPollSeconds: number;
  readonly historyLength: number;
  /** The queue visibility timeout: a task timeout must stay below it. */
  readonly queueVisibilityTimeoutSeconds: number;
  /** The queues' redrive maxReceiveCount (a deferral behind a limit must never bring a message to it). */
  readonly maxReceiveCount: number;
}

export function runtimeSettings(overrides: Partial<Omit<RuntimeSettings, 'heartbeatSeconds'>> = {}): RuntimeSettings {
  const leaseSeconds = overrides.leaseSeconds ?? DEFAULTS.leaseSeconds;
  const queueVisibilityTimeoutSeconds =
    overrides.queueVisibilityTimeoutSeconds ?? DEFAULTS.queueVisibilityTimeoutSeconds;
  const s: RuntimeSettings = {
    leaseSeconds,
    heartbeatSeconds: leaseSeconds / 3,
    retentionDays: overrides.retentionDays ?? DEFAULTS.retentionDays,
    outboxGraceSeconds: overrides.outboxGraceSeconds ?? DEFAULTS.outboxGraceSeconds,
    watchdogSeconds: overrides.watchdogSeconds ?? DEFAULTS.watchdogSeconds,
    sendFirstWindowSeconds: overrides.sendFirstWindowSeconds ?? DEFAULTS.sendFirstWindowSeconds,
    crashLoopReceives: overrides.crashLoopReceives ?? DEFAULTS.crashLoopReceives,
    cancelPollSeconds: overrides.cancelPollSeconds ?? DEFAULTS.cancelPollSeconds,
    historyLength: overrides.historyLength ?? DEFAULTS.historyLength,
    queueVisibilityTimeoutSeconds,
    maxReceiveCount: overrides.maxReceiveCount ?? DEFAULTS.maxReceiveCount,
  };
  checkIntegerRange('maxReceiveCount', s.maxReceiveCount, 1, 1000);
  checkRange('leaseSeconds', leaseSeconds, 3, 900);
  if (leaseSeconds > queueVisibilityTimeoutSeconds) {
    throw new ConfigError('leaseSeconds', 'leaseSeconds must not exceed the queue visibility timeout');
  }
  // No bound from the task timeout: a lazily claimed task's first heartbeat (lease/3, within the
  // visibility timeout) holds its message for a lease. Lambda's own rule (visibility ≥ the
  // consumer function's timeout) is the stack's to keep (infra/config.ts).
  checkIntegerRange('retentionDays', s.retentionDays, 1, 3650);
  if (!(s.outboxGraceSeconds > 0)) throw new ConfigError('outboxGraceSeconds', 'outboxGraceSeconds must be > 0');
  if (!(s.watchdogSeconds >= s.outboxGraceSeconds)) {
    throw new ConfigError('watchdogSeconds', 'watchdogSeconds must be >= outboxGraceSeconds');
  }
  if (!(s.sendFirstWindowSeconds > 0)) {
    throw new ConfigError('sendFirstWindowSeconds', 'sendFirstWindowSeconds must be > 0');
  }
  checkCount('crashLoopReceives', s.crashLoopReceives);
  checkRange('cancelPollSeconds', s.cancelPollSeconds, 0, 900);
  checkCount('historyLength', s.historyLength);
  return s;
}

/** Everything a function learns from its environment, read once per cold start. */
export interface FunctionConfig {
  readonly tableName: string;
  readonly queueUrls: Readonly<Record<Priority, string>>;
  readonly deadLetterQueueUrls: Readonly<Record<Priority, string>>;
  readonly settings: RuntimeSettings;
  /** KAJ_ID_SECRET: present for the API function, which derives task ids from idempotency keys. */
  readonly idSecret?: string;
  /** KAJ_SCHEDULES_TABLE_NAME: present for the functions that read or write schedules (API, scheduler). */
  readonly schedulesTableName?: string;
  /** KAJ_LIMITS_TABLE_NAME: present for the consumers, which enforce the flow-control limits. */
  readonly limitsTableName?: string;
  /** KAJ_HISTORY_TABLE_NAME: present for the consumers (which run workflows) and the API, when a type is a workflow. */
  readonly historyTableName?: string;
  /** KAJ_LANE_QUEUE_URLS: the queues of every lane but the default one (`{}` without lanes). */
  readonly laneQueueUrls?: LaneQueueUrls;
  /** KAJ_SCHEDULE_*: the deployment's schedule rules, those set (the scheduler's settings check them). */
  readonly scheduleRules?: ScheduleRules;
}

/**
 * The deployment's rules for schedules, one source for the CDK stack (`scheduleMinIntervalSeconds`,
 * `scheduleAllowSecondsField`, `scheduleMaxPerOwner` in the stack's config) and the local
 * runtime; validated by `schedulerSettings()`.
 */
export interface ScheduleRules {
  /** Smallest interval between two times of one schedule (`every`, `cron`). @default 60 */
  readonly minIntervalSeconds?: number;
  /** Accept 6-field crons (seconds first). @default false */
  readonly allowSecondsField?: boolean;
  /** Schedules one API caller may own. @default 1000 */
  readonly maxPerOwner?: number;
}

/** Reads the KAJ_SCHEDULE_* variables (unset or empty: the default). @throws ConfigError naming the variable */
export function scheduleRulesFromEnvironment(env: Readonly<Record<string, string | undefined>>): ScheduleRules {
  const out: { minIntervalSeconds?: number; allowSecondsField?: boolean; maxPerOwner?: number } = {};
  const number = (name: string): number | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new ConfigError(name, `${name} must be an integer >= 1, got "${v}"`);
    return n;
  };
  const min = number(ENV.scheduleMinIntervalSeconds);
  if (min !== undefined) out.minIntervalSeconds = min;
  const max = number(ENV.scheduleMaxPerOwner);
  if (max !== undefined) out.maxPerOwner = max;
  const seconds = env[ENV.scheduleAllowSecondsField];
  if (seconds !== undefined && seconds !== '') {
    if (seconds !== 'true' && seconds !== 'false') {
      throw new ConfigError(ENV.scheduleAllowSecondsField, `${ENV.scheduleAllowSecondsField} must be true or false`);
    }
    out.allowSecondsField = seconds === 'true';
  }
  return out;
}

export function loadFunctionConfig(env: Readonly<Record<string, string | undefined>> = process.env): FunctionConfig {
  const need = (name: string): string => {
    const v = env[name];
    if (v === undefined || v === '') throw new MissingEnvironmentError(name);
    return v;
  };
  const num = (name: string): number | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new ConfigError(name, `${name} must be a number, got "${v}"`);
    return n;
  };
  const queueUrls = {} as Record<Priority, string>;
  const deadLetterQueueUrls = {} as Record<Priority, string>;
  for (const p of PRIORITIES) {
    queueUrls[p] = need(ENV.queueUrl(p));
    deadLetterQueueUrls[p] = need(ENV.dlqUrl(p));
  }
  const overrides: { leaseSeconds?: number; retentionDays?: number } = {};
  const lease = num(ENV.leaseSeconds);
  if (lease !== undefined) overrides.leaseSeconds = lease;
  const retention = num(ENV.retentionDays);
  if (retention !== undefined) overrides.retentionDays = retention;
  const idSecret = env[ENV.idSecret];
  const schedulesTableName = env[ENV.schedulesTableName];
  const limitsTableName = env[ENV.limitsTableName];
  const historyTableName = env[ENV.historyTableName];
  const lanes = env[ENV.laneQueueUrls];
  const scheduleRules = scheduleRulesFromEnvironment(env);
  return {
    tableName: need(ENV.tableName),
    queueUrls,
    deadLetterQueueUrls,
    settings: runtimeSettings(overrides),
    ...(idSecret === undefined || idSecret === '' ? {} : { idSecret }),
    ...(schedulesTableName === undefined || schedulesTableName === '' ? {} : { schedulesTableName }),
    ...(limitsTableName === undefined || limitsTableName === '' ? {} : { limitsTableName }),
    ...(historyTableName === undefined || historyTableName === '' ? {} : { historyTableName }),
    ...(lanes === undefined || lanes === '' ? {} : { laneQueueUrls: parseLaneQueueUrls(lanes) }),
    ...(Object.keys(scheduleRules).length === 0 ? {} : { scheduleRules }),
  };
}

/** Reads KAJ_LANE_QUEUE_URLS: `{ lane: { high, normal, low } }`. @throws ConfigError naming the variable */
export function parseLaneQueueUrls(raw: string): LaneQueueUrls {
  const bad = (why: string) => new ConfigError(ENV.laneQueueUrls, `${ENV.laneQueueUrls} ${why}`);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new ConfigError(ENV.laneQueueUrls, `${ENV.laneQueueUrls} is not JSON`, { cause: err });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('must be a JSON object');
  const out: Record<string, Record<Priority, string>> = {};
  for (const [lane, urls] of Object.entries(value)) {
    checkLaneName(lane);
    if (typeof urls !== 'object' || urls === null) throw bad(`: lane "${lane}" must map priorities to URLs`);
    const byPriority = {} as Record<Priority, string>;
    for (const p of PRIORITIES) {
      const url = (urls as Record<string, unknown>)[p];
      if (typeof url !== 'string' || url === '') throw bad(`: lane "${lane}" has no ${p} queue URL`);
      byPriority[p] = url;
    }
    out[lane] = byPriority;
  }
  return out;
}

/** The inverse of `loadFunctionConfig`, for the CDK stack and the local runtime. */
export function functionEnvironment(c: {
  tableName: string;
  schedulesTableName?: string;
  limitsTableName?: string;
  historyTableName?: string;
  /** Queue URLs of the non-default lanes (CDK tokens are fine: they stay inside the JSON string). */
  laneQueueUrls?: LaneQueueUrls;
  queueUrls: Readonly<Record<Priority, string>>;
  deadLetterQueueUrls: Readonly<Record<Priority, string>>;
  leaseSeconds?: number;
  retentionDays?: number;
  scheduleRules?: ScheduleRules;
}): Record<string, string> {
  const env: Record<string, string> = { [ENV.tableName]: c.tableName };
  if (c.schedulesTableName !== undefined) env[ENV.schedulesTableName] = c.schedulesTableName;
  if (c.limitsTableName !== undefined) env[ENV.limitsTableName] = c.limitsTableName;
  if (c.historyTableName !== undefined) env[ENV.historyTableName] = c.historyTableName;
  if (c.laneQueueUrls !== undefined && Object.keys(c.laneQueueUrls).length > 0) {
    env[ENV.laneQueueUrls] = JSON.stringify(c.laneQueueUrls);
  }
  for (const p of PRIORITIES) {
    env[ENV.queueUrl(p)] = c.queueUrls[p];
    env[ENV.dlqUrl(p)] = c.deadLetterQueueUrls[p];
  }
  if (c.leaseSeconds !== undefined) env[ENV.leaseSeconds] = String(c.leaseSeconds);
  if (c.retentionDays !== undefined) env[ENV.retentionDays] = String(c.retentionDays);
  return { ...env, ...scheduleRulesEnvironment(c.scheduleRules ?? {}) };
}

/** The KAJ_SCHEDULE_* variables of the rules that are set: the inverse of `scheduleRulesFromEnvironment`. */
export function scheduleRulesEnvironment(rules: ScheduleRules): Record<string, string> {
  const env: Record<string, string> = {};
  if (rules.minIntervalSeconds !== undefined) env[ENV.scheduleMinIntervalSeconds] = String(rules.minIntervalSeconds);
  if (rules.allowSecondsField !== undefined) env[ENV.scheduleAllowSecondsField] = String(rules.allowSecondsField);
  if (rules.maxPerOwner !== undefined) env[ENV.scheduleMaxPerOwner] = String(rules.maxPerOwner);
  return env;
}

/** The settings documented as environment variables (docs/deploy.md, "Settings of the functions and `npm start`"). */
export type EnvironmentSettings = Partial<Pick<RuntimeSettings, 'leaseSeconds' | 'retentionDays'>>;

/**
 * Reads `KAJ_LEASE_SECONDS` and `KAJ_RETENTION_DAYS` as `loadFunctionConfig` reads them
 * (unset or empty: the default; else a number), and validates them with `runtimeSettings`,
 * for runtimes that do not take their resources from the environment (`npm start`).
 * Returns only the variables that are set, as overrides for `runtimeSettings`.
 * @throws ConfigError whose `setting` is the variable's name, and whose message names it too.
 */
export function settingsFromEnvironment(
  env: Readonly<Record<string, string | undefined>> = process.env,
): EnvironmentSettings {
  const variables = [
    ['leaseSeconds', ENV.leaseSeconds],
    ['retentionDays', ENV.retentionDays],
  ] as const;
  const out: { leaseSeconds?: number; retentionDays?: number } = {};
  for (const [setting, name] of variables) {
    const v = env[name];
    if (v === undefined || v === '') continue;
    const n = Number(v);
    if (!Number.isFinite(n)) throw new ConfigError(name, `${name} must be a number, got "${v}"`);
    out[setting] = n;
  }
  try {
    runtimeSettings(out);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const name = variables.find(([setting]) => setting === err.setting)?.[1];
    if (name === undefined) throw err;
    throw new ConfigError(name, `${name}=${env[name] ?? ''}: ${err.message}`, { cause: err });
  }
  return out;
}
