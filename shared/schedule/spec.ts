/**
 * The wire form of a schedule (`PUT /api/v1/schedules/{name}`, and declarations in code) and its
 * normalisation to {@link ScheduleSpec}: durations to ms, times to epoch ms, defaults filled in.
 * Every failure is a {@link ScheduleValidationError} naming the field (a 422 at the API).
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { DEFAULTS, PRIORITIES } from '../config/resources.js';
import type { TaskRegistry } from '../task/define.js';
import { checkJsonValue } from '../task/json-value.js';
import { canonicalJson } from '../task/submit.js';
import type { ScheduleDeclaration } from './declaration.js';
import { ScheduleValidationError } from './errors.js';
import { MISFIRE_POLICIES, OVERLAP_POLICIES, type ScheduleSpec, type ScheduleTaskTemplate } from './model.js';
import type { SchedulerSettings } from './settings.js';
import { checkCron, formatDuration, isTimeZone, parseDuration, timesBetween, wallTimeToEpoch } from './timing.js';

/** The deployment's rules a spec is held to (`schedulerSettings()`); the defaults when not given. */
export type IntervalRules = Pick<SchedulerSettings, 'minIntervalSeconds' | 'allowSecondsField'>;

const DEFAULT_RULES: IntervalRules = {
  minIntervalSeconds: DEFAULTS.scheduleMinIntervalSeconds,
  allowSecondsField: DEFAULTS.scheduleAllowSecondsField,
};

/** A schedule's name: a letter or digit, then up to 127 letters, digits, `_ . : -`. */
export const SCHEDULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** @throws ScheduleValidationError (`name`) unless `name` matches {@link SCHEDULE_NAME} */
export function checkScheduleName(name: string): void {
  if (typeof name !== 'string' || !SCHEDULE_NAME.test(name)) {
    throw new ScheduleValidationError(
      'name',
      'name: must be a letter or digit followed by at most 127 letters, digits, "_", ".", ":" or "-"',
    );
  }
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 86_400 * SECOND;
const MAX_EVERY_MS = 366 * DAY;
const MAX_JITTER_MS = DEFAULTS.scheduleMaxJitterSeconds * SECOND;
const MIN_CATCHUP_MS = SECOND;
const MAX_CATCHUP_MS = 366 * DAY;
const MAX_LIMIT = 1_000_000;
const MAX_DESCRIPTION = 500;

/** A duration string (`15m`, `1h30m`) within `[minMs, maxMs]`. */
function duration(minMs: number, maxMs: number) {
  return z.string().check((ctx) => {
    const ms = parseDuration(ctx.value);
    const message =
      ms === undefined
        ? 'must be a duration such as 90s, 15m, 1h30m or 2d'
        : ms < minMs || ms > maxMs
          ? `must be between ${formatDuration(minMs)} and ${formatDuration(maxMs)}`
          : undefined;
    if (message !== undefined) ctx.issues.push({ code: 'custom', message, input: ctx.value });
  });
}

/** A time with its offset or `Z`. */
const instant = z.iso.datetime({
  offset: true,
  message: 'must be an ISO-8601 time with an offset or Z, such as 2026-01-01T12:00:00Z',
});

const wellFormed = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => s.isWellFormed(), 'must not contain a lone UTF-16 surrogate');

/**
 * The body of `PUT /api/v1/schedules/{name}`. Unknown fields are rejected. Checks each field on
 * its own; {@link parseScheduleSpec} adds the checks that span fields (exactly one of `cron`,
 * `every`, `at`; `end_at` after `start_at`; the task type and its payload).
 */
export const scheduleRequestSchema = z.strictObject({
  /** 5 fields (`minute hour day month weekday`), 6 with seconds first, or a nickname (`@daily`). */
  cron: z
    .string()
    .max(256)
    .check((ctx) => {
      const reason = checkCron(ctx.value, 'UTC');
      if (reason !== undefined) ctx.issues.push({ code: 'custom', message: reason, input: ctx.value });
    })
    .optional(),
  /**
   * A fixed interval, aligned to `start_at` when given, else to the Unix epoch; at least the
   * deployment's smallest interval (1 minute unless configured).
   */
  every: duration(SECOND, MAX_EVERY_MS).optional(),
  /** One time: with an offset or `Z`, or a local date-time read in `timezone`. */
  at: z.iso
    .datetime({
      offset: true,
      local: true,
      message: 'must be an ISO-8601 date-time such as 2026-12-24T18:00:00Z, or local as 2026-12-24T18:00:00',
    })
    .optional(),
  /** IANA zone the cron (and a local `at`) is read in. */
  timezone: z
    .string()
    .max(64)
    .refine(isTimeZone, 'must be an IANA time zone such as Europe/London, or UTC')
    .default('UTC'),
  start_at: instant.optional(),
  end_at: instant.optional(),
  limit: z.number().int().min(1).max(MAX_LIMIT).optional(),
  jitter: duration(0, MAX_JITTER_MS).optional(),
  overlap: z.enum(OVERLAP_POLICIES).default('forbid'),
  misfire: z.enum(MISFIRE_POLICIES).default('skip'),
  catchup_window: duration(MIN_CATCHUP_MS, MAX_CATCHUP_MS).optional(),
  type: z
    .string({ error: (issue) => (issue.input === undefined ? 'required: the task type each run creates' : undefined) })
    .min(1)
    .max(64),
  payload: z.unknown().optional(),
  priority: z.enum(PRIORITIES).default('normal'),
  max_attempts: z.number().int().min(1).max(DEFAULTS.maxAttemptsLimit).optional(),
  timeout_seconds: z.number().int().min(1).max(DEFAULTS.maxTaskTimeoutSeconds).optional(),
  description: wellFormed(MAX_DESCRIPTION).optional(),
});

export type ScheduleRequest = z.infer<typeof scheduleRequestSchema>;

/** A validated, normalised spec and the hash of it (equal bodies, equal hashes). */
export interface ParsedSpec {
  readonly spec: ScheduleSpec;
  readonly hash: string;
}

/**
 * Validates a schedule body and normalises it to a {@link ScheduleSpec}.
 *
 * `options.type` is the task type of a schedule declared in code: the body then carries no
 * `type` of its own. The payload is checked against the type's schema and stored as sent (JSON),
 * as `POST /api/v1/tasks` does. `hash` is the SHA-256 (hex) of the canonical JSON of the spec, so
 * key order and spelled-out defaults do not change it.
 *
 * @throws ScheduleValidationError whose `field` names the offending field (`cron`, `payload.to`, …)
 *   and whose message starts with it
 */
export function parseScheduleSpec(
  body: unknown,
  registry: TaskRegistry,
  options: { readonly type?: string; readonly rules?: IntervalRules } = {},
): ParsedSpec {
  let input = body;
  if (options.type !== undefined && isRecord(body)) {
    if (Object.hasOwn(body, 'type')) {
      throw new ScheduleValidationError(
        'type',
        `type: unknown field (a schedule declared in code creates tasks of its own type, "${options.type}")`,
      );
    }
    input = { ...body, type: options.type };
  }
  const parsed = scheduleRequestSchema.safeParse(input);
  if (!parsed.success) throw scheduleErrorOf(parsed.error);
  const req = parsed.data;

  const kinds = (['cron', 'every', 'at'] as const).filter((k) => req[k] !== undefined);
  if (kinds.length !== 1) {
    const given = kinds.length === 0 ? 'none was given' : `${kinds.join(' and ')} were given`;
    throw new ScheduleValidationError('cron', `cron: give exactly one of cron, every or at (${given})`);
  }
  const startAt = req.start_at === undefined ? undefined : Date.parse(req.start_at);
  const endAt = req.end_at === undefined ? undefined : Date.parse(req.end_at);
  if (startAt !== undefined && endAt !== undefined && endAt <= startAt) {
    throw new ScheduleValidationError('end_at', 'end_at: must be after start_at');
  }
  const at = req.at === undefined ? undefined : atTime(req.at, req.timezone);

  const task = taskTemplate(req, registry);

  const spec: Mutable<ScheduleSpec> = {
    timezone: req.timezone,
    jitter_ms: req.jitter === undefined ? 0 : durationMs(req.jitter),
    overlap: req.overlap,
    misfire: req.misfire,
    catchup_window_ms:
      req.catchup_window === undefined
        ? DEFAULTS.scheduleCatchupWindowSeconds * SECOND
        : durationMs(req.catchup_window),
    task,
  };
  if (req.cron !== undefined) spec.cron = req.cron.trim().split(/\s+/).join(' ');
  if (req.every !== undefined) spec.every_ms = durationMs(req.every);
  if (at !== undefined) spec.at = at;
  if (startAt !== undefined) spec.start_at = startAt;
  if (endAt !== undefined) spec.end_at = endAt;
  if (req.limit !== undefined) spec.limit = req.limit;
  if (req.description !== undefined) spec.description = req.description;
  checkInterval(spec, options.rules ?? DEFAULT_RULES);
  return { spec, hash: specHash(spec) };
}

/** Times of a cron looked at for its smallest interval. */
const INTERVAL_SAMPLE = 1000;
/** Where they start: a fixed instant, so a body is accepted or refused whenever it is sent. */
const INTERVAL_FROM = Date.UTC(2001, 0, 1);

/**
 * One rule for the smallest interval between two times of a schedule, `every` and `cron` alike:
 * at least `minIntervalSeconds`; a 6-field cron (seconds first) only where `allowSecondsField`.
 * A 5-field cron is never closer than a minute; with a larger minimum, or a seconds field, its
 * closest two times are looked for among its first 1,000 times from 2001-01-01 as UTC reads them
 * (so a daylight-saving change can bring two times of a zoned cron closer by the hour it moves).
 * @throws ScheduleValidationError naming `every` or `cron`
 */
export function checkInterval(spec: Pick<ScheduleSpec, 'cron' | 'every_ms'>, rules: IntervalRules): void {
  const minMs = rules.minIntervalSeconds * SECOND;
  if (spec.every_ms !== undefined && spec.every_ms < minMs) {
    throw new ScheduleValidationError(
      'every',
      `every: must be at least ${formatDuration(minMs)} (the deployment's smallest interval)`,
    );
  }
  if (spec.cron === undefined) return;
  const seconds = !spec.cron.startsWith('@') && spec.cron.split(' ').length === 6;
  if (seconds && !rules.allowSecondsField) {
    throw new ScheduleValidationError(
      'cron',
      'cron: a seconds field is not allowed in this deployment: give 5 fields (minute hour day-of-month month day-of-week)',
    );
  }
  if (!seconds && minMs <= MINUTE) return;
  const times = timesBetween(
    { cron: spec.cron, timezone: 'UTC' },
    INTERVAL_FROM,
    Number.POSITIVE_INFINITY,
    INTERVAL_SAMPLE,
  );
  for (let i = 1; i < times.length; i += 1) {
    const gap = (times[i] as number) - (times[i - 1] as number);
    if (gap < minMs) {
      throw new ScheduleValidationError(
        'cron',
        `cron: two of its times are ${formatDuration(gap)} apart, below the deployment's smallest interval (${formatDuration(minMs)})`,
      );
    }
  }
}

/**
 * A schedule declared in code (`defineTask({ …, schedules: [...] })`): its name is checked, the
 * rest parsed as a body whose task type is `type`.
 * @throws ScheduleValidationError, carrying the schedule's name
 */
export function parseDeclaration(
  decl: ScheduleDeclaration,
  type: string,
  registry: TaskRegistry,
  rules: IntervalRules = DEFAULT_RULES,
): { name: string; spec: ScheduleSpec; hash: string } {
  const { name, ...rest } = decl;
  try {
    checkScheduleName(name);
    return { name, ...parseScheduleSpec(rest, registry, { type, rules }) };
  } catch (err) {
    if (!(err instanceof ScheduleValidationError)) throw err;
    throw new ScheduleValidationError(err.field, err.message, {
      schedule: typeof name === 'string' ? name : undefined,
      cause: err.cause,
    });
  }
}

/**
 * The wire form of a spec, for API responses: durations as `1h30m`, times as ISO-8601 UTC, the
 * task's fields at the top level, defaults included. {@link parseScheduleSpec} gives back the
 * same spec (and hash) from it.
 */
export function renderSpec(spec: ScheduleSpec): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (spec.cron !== undefined) out.cron = spec.cron;
  if (spec.every_ms !== undefined) out.every = formatDuration(spec.every_ms);
  if (spec.at !== undefined) out.at = new Date(spec.at).toISOString();
  out.timezone = spec.timezone;
  if (spec.start_at !== undefined) out.start_at = new Date(spec.start_at).toISOString();
  if (spec.end_at !== undefined) out.end_at = new Date(spec.end_at).toISOString();
  if (spec.limit !== undefined) out.limit = spec.limit;
  out.jitter = formatDuration(spec.jitter_ms);
  out.overlap = spec.overlap;
  out.misfire = spec.misfire;
  out.catchup_window = formatDuration(spec.catchup_window_ms);
  out.type = spec.task.type;
  out.payload = spec.task.payload;
  out.priority = spec.task.priority;
  if (spec.task.max_attempts !== undefined) out.max_attempts = spec.task.max_attempts;
  if (spec.task.timeout_seconds !== undefined) out.timeout_seconds = spec.task.timeout_seconds;
  if (spec.description !== undefined) out.description = spec.description;
  return out;
}

/** SHA-256 (hex) of the canonical JSON of a normalised spec. */
function specHash(spec: ScheduleSpec): string {
  return createHash('sha256').update(canonicalJson(spec)).digest('hex');
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A duration the schema has already accepted. */
function durationMs(text: string): number {
  return parseDuration(text) ?? 0;
}

/** `at` as epoch ms: with its offset, or read in `timezone` when it has none. */
function atTime(text: string, timezone: string): number {
  const hasOffset = /(?:Z|[+-]\d\d:\d\d)$/i.test(text);
  const ms = hasOffset ? Date.parse(text) : Date.parse(`${text}Z`);
  if (Number.isNaN(ms)) throw new ScheduleValidationError('at', 'at: not a valid date-time');
  return hasOffset ? ms : wallTimeToEpoch(ms, timezone);
}

/** The task each run creates: its type known, its payload valid for the type and storable. */
function taskTemplate(req: ScheduleRequest, registry: TaskRegistry): ScheduleTaskTemplate {
  if (!registry.has(req.type)) {
    throw new ScheduleValidationError(
      'type',
      `type: unknown task type "${req.type}"; known types: ${registry.types().join(', ') || '(none)'}`,
    );
  }
  const raw: unknown = req.payload ?? {};
  const payloadResult = registry.get(req.type).schema.safeParse(raw);
  if (!payloadResult.success) throw scheduleErrorOf(payloadResult.error as z.ZodError, 'payload');
  // Stored as sent (JSON), not as the schema's output: the run's task is parsed again by the consumer.
  const checked = checkJsonValue(raw, 'payload', DEFAULTS.maxPayloadBytes);
  if (!checked.ok) throw new ScheduleValidationError(checked.path, `${checked.path}: ${checked.reason}`);
  const task: Mutable<ScheduleTaskTemplate> = { type: req.type, payload: checked.value, priority: req.priority };
  if (req.max_attempts !== undefined) task.max_attempts = req.max_attempts;
  if (req.timeout_seconds !== undefined) task.timeout_seconds = req.timeout_seconds;
  return task;
}

/**
 * A zod failure as the error naming its field, as `validationErrorOf` does for tasks (the first
 * issue). In the body, an unknown field is reported before any other issue: a misspelt field
 * explains what follows from it.
 */
function scheduleErrorOf(error: z.ZodError, prefix?: string): ScheduleValidationError {
  const unknown = prefix === undefined ? error.issues.find((i) => i.code === 'unrecognized_keys') : undefined;
  const issue = unknown ?? error.issues[0];
  const path = issue?.path.map(String) ?? [];
  if (issue?.code === 'unrecognized_keys') path.push(...issue.keys.slice(0, 1));
  const field =
    [prefix, ...path].filter((p): p is string => p !== undefined && p !== '').join('.') || (prefix ?? 'body');
  const message = issue?.code === 'unrecognized_keys' ? 'unknown field' : (issue?.message ?? 'invalid');
  return new ScheduleValidationError(field, `${field}: ${message}`, { cause: error });
}
