/**
 * What the Lambda functions write to CloudWatch Logs: JSON log lines and EMF metric lines, both
 * on stdout. Written by hand, not with Powertools: Powertools' Logger and Metrics cost several
 * times the CPU per line, and `singleMetric()` (the only way Powertools emits different TaskType
 * values in one invocation) builds a new Metrics and Console per count and writes a line for each
 * (`npm run bench:logs` measures both).
 *
 * @module
 */
import { METRICS } from '../config/metrics.js';
import { ENV } from '../config/resources.js';
import type { Logger, Metrics } from '../runtime/logger.js';

/** Where finished lines go (one JSON document each, no newline). */
export type LineSink = (line: string) => void;

const stdoutSink: LineSink = (line) => {
  process.stdout.write(`${line}\n`);
};

// --- logs --------------------------------------------------------------------------------------

/** Log levels, most verbose first: Powertools' names, which `logLevel` in infra/config.ts accepts. */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Lambda's own variable: set to the function's `applicationLogLevel` when the log format is JSON. */
export const LAMBDA_LOG_LEVEL_ENV = 'AWS_LAMBDA_LOG_LEVEL';

const rank = (level: LogLevel) => LOG_LEVELS.indexOf(level);

function parseLevel(value: string | undefined): LogLevel | undefined {
  const v = value?.trim().toUpperCase();
  if (v === 'FATAL') return 'CRITICAL'; // Lambda's name for it
  return (LOG_LEVELS as readonly string[]).includes(v ?? '') ? (v as LogLevel) : undefined;
}

/**
 * The level a function logs at: `POWERTOOLS_LOG_LEVEL` (the deployment's `logLevel`, default INFO),
 * never more verbose than `AWS_LAMBDA_LOG_LEVEL` — Lambda drops what is below that anyway, so it is
 * not even formatted.
 */
export function logLevelFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): LogLevel {
  const configured = parseLevel(env[ENV.logLevel]) ?? 'INFO';
  const lambda = parseLevel(env[LAMBDA_LOG_LEVEL_ENV]);
  return lambda !== undefined && rank(lambda) > rank(configured) ? lambda : configured;
}

/** Members every line has; a field of the same name is written as `_<name>` instead. */
const RESERVED = ['level', 'message', 'timestamp', 'service'] as const;

/**
 * One log line: `{"level","message","timestamp","service",...fields}`. `level` and an RFC 3339
 * `timestamp` are what Lambda's log-level filter reads (JSON log format). Fields whose value is
 * `undefined` are left out; an Error value is written as its name, message and stack.
 */
export function formatLogLine(
  level: Exclude<LogLevel, 'SILENT'>,
  message: string,
  time: number,
  fields?: Record<string, unknown>,
): string {
  const head = `{"level":"${level}","message":${JSON.stringify(message)},"timestamp":"${new Date(time).toISOString()}","service":"${METRICS.serviceName}"`;
  if (fields === undefined) return `${head}}`;
  let body: string;
  try {
    body = JSON.stringify(normalized(fields));
  } catch (err) {
    // A BigInt or a cycle: keep the line, say why its fields are missing.
    body = JSON.stringify({ log_error: `fields not serializable: ${String(err)}` });
  }
  return body.length > 2 ? `${head},${body.slice(1)}` : `${head}}`;
}

/** `fields` itself unless it has a reserved name or an Error value (the common case allocates nothing). */
function normalized(fields: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const key of RESERVED) {
    if (key in fields) {
      copy ??= { ...fields };
      copy[`_${key}`] = copy[key];
      delete copy[key];
    }
  }
  for (const key in fields) {
    const v = fields[key];
    if (v instanceof Error) {
      copy ??= { ...fields };
      const k = (RESERVED as readonly string[]).includes(key) ? `_${key}` : key;
      copy[k] = { name: v.name, message: v.message, stack: v.stack };
    }
  }
  return copy ?? fields;
}

export interface LoggerOptions {
  /** @default {@link logLevelFromEnv} */
  readonly level?: LogLevel;
  /** @default a line on stdout */
  readonly write?: LineSink;
  /** @default Date.now */
  readonly now?: () => number;
}

const skip = () => {};

/**
 * Structured JSON logs, one line per event. The level is fixed at cold start: a disabled level is
 * a no-op. Never log payloads or results.
 *
 * @example
 * const logger = createLogger();
 * logger.warn('heartbeat failed; will try again', { task_id: 't_…', error: String(err) });
 * // {"level":"WARN","message":"heartbeat failed; will try again","timestamp":"…","service":"kaj","task_id":"t_…","error":"…"}
 */
export function createLogger(o: LoggerOptions = {}): Logger {
  const min = rank(o.level ?? logLevelFromEnv());
  const write = o.write ?? stdoutSink;
  const now = o.now ?? Date.now;
  const at = (level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR') =>
    rank(level) < min
      ? skip
      : (message: string, fields?: Record<string, unknown>) => write(formatLogLine(level, message, now(), fields));
  return { debug: at('DEBUG'), info: at('INFO'), warn: at('WARN'), error: at('ERROR') };
}

// --- metrics (CloudWatch embedded metric format) ------------------------------------------------

/** What one invocation recorded for one TaskType (or for none). */
interface Recorded {
  /** Counts by metric name, summed. */
  readonly counts: Map<string, number>;
  /** Every duration, in milliseconds, in order. */
  readonly durations: number[];
}

/** An invocation's metrics: without a TaskType, and per TaskType in the order first seen. */
export interface RecordedMetrics {
  readonly untyped: ReadonlyMap<string, number>;
  readonly byType: ReadonlyMap<
    string,
    { readonly counts: ReadonlyMap<string, number>; readonly durations: readonly number[] }
  >;
}

/** EMF allows at most 100 values in one metric's array. */
export const EMF_MAX_VALUES = 100;

type MetricDefinition = { Name: string; Unit: 'Count' | 'Milliseconds' };
type Members = Record<string, string | number | number[]>;

/**
 * The EMF lines of one flush. The dimension sets are the ones alarms and the dashboard read
 * (infra/constructs/observability.ts): `[service, TaskType]` for task metrics, `[service]` for
 * counts without a TaskType. A dimension's value is a member of the line, so one line holds one
 * TaskType value:
 *
 * - one line per TaskType present, with its counts (summed) and its durations (an array of
 *   values, so CloudWatch still computes percentiles);
 * - the counts without a TaskType ride on the first of those lines as a second directive (a line
 *   of their own when there is no typed metric, or when a name clashes);
 * - more than 100 durations of one type continue on lines carrying only TaskDuration.
 *
 * A consumer batch of one task type is therefore one line, however large the batch.
 */
export function emfLines(
  recorded: RecordedMetrics,
  timestamp: number,
  namespace: string = METRICS.namespace,
): string[] {
  const service = METRICS.serviceDimension;
  const lines: string[] = [];
  const render = (directives: { dims: string[]; metrics: MetricDefinition[] }[], members: Members) =>
    JSON.stringify({
      _aws: {
        Timestamp: timestamp,
        CloudWatchMetrics: directives.map((d) => ({
          Namespace: namespace,
          Dimensions: [d.dims],
          Metrics: d.metrics,
        })),
      },
      ...members,
    });
  const countsOf = (counts: ReadonlyMap<string, number>, members: Members): MetricDefinition[] => {
    const defs: MetricDefinition[] = [];
    for (const [name, value] of counts) {
      members[name] = value;
      defs.push({ Name: name, Unit: 'Count' });
    }
    return defs;
  };
  const durationValue = (values: readonly number[]) => (values.length === 1 ? (values[0] as number) : [...values]);

  let untypedPending = recorded.untyped.size > 0;
  const typedDims = [service, METRICS.taskTypeDimension];
  for (const [type, r] of recorded.byType) {
    const members: Members = { [service]: METRICS.serviceName, [METRICS.taskTypeDimension]: type };
    const metrics = countsOf(r.counts, members);
    const first = r.durations.slice(0, EMF_MAX_VALUES);
    if (first.length > 0) {
      members[METRICS.duration] = durationValue(first);
      metrics.push({ Name: METRICS.duration, Unit: 'Milliseconds' });
    }
    const directives = metrics.length > 0 ? [{ dims: typedDims, metrics }] : [];
    if (untypedPending && ![...recorded.untyped.keys()].some((name) => name in members)) {
      directives.push({ dims: [service], metrics: countsOf(recorded.untyped, members) });
      untypedPending = false;
    }
    if (directives.length > 0) lines.push(render(directives, members));
    for (let i = EMF_MAX_VALUES; i < r.durations.length; i += EMF_MAX_VALUES) {
      lines.push(
        render([{ dims: typedDims, metrics: [{ Name: METRICS.duration, Unit: 'Milliseconds' }] }], {
          [service]: METRICS.serviceName,
          [METRICS.taskTypeDimension]: type,
          [METRICS.duration]: durationValue(r.durations.slice(i, i + EMF_MAX_VALUES)),
        }),
      );
    }
  }
  if (untypedPending) {
    const members: Members = { [service]: METRICS.serviceName };
    lines.unshift(render([{ dims: [service], metrics: countsOf(recorded.untyped, members) }], members));
  }
  return lines;
}

export interface MetricsOptions {
  /** @default a line on stdout */
  readonly write?: LineSink;
  /** Timestamp of the lines. @default Date.now */
  readonly now?: () => number;
  /**
   * The CloudWatch namespace (`metricsNamespace(stack)`, set by the stack as
   * `POWERTOOLS_METRICS_NAMESPACE`). @default that variable, else `Kaj`
   */
  readonly namespace?: string;
}

/** The {@link Metrics} port plus `flush()`, which the function entry points call once per invocation. */
export interface InvocationMetrics extends Metrics {
  /** Writes what was recorded since the last flush ({@link emfLines}) and forgets it; nothing when nothing was. */
  flush(): void;
}

/**
 * CloudWatch metrics in the embedded metric format, aggregated per invocation: counts of the same
 * name and TaskType are summed, durations collected, and `flush()` writes one line per TaskType
 * present ({@link emfLines}) — for a consumer batch of one type, one line. Non-finite values are
 * ignored (they would make CloudWatch reject the whole line).
 */
export function createMetrics(o: MetricsOptions = {}): InvocationMetrics {
  const write = o.write ?? stdoutSink;
  const now = o.now ?? Date.now;
  const namespace = o.namespace ?? (process.env.POWERTOOLS_METRICS_NAMESPACE || METRICS.namespace);
  let untyped = new Map<string, number>();
  let byType = new Map<string, Recorded>();
  const typed = (type: string): Recorded => {
    let r = byType.get(type);
    if (r === undefined) {
      r = { counts: new Map(), durations: [] };
      byType.set(type, r);
    }
    return r;
  };
  return {
    count: (name, taskType, value = 1) => {
      if (!Number.isFinite(value)) return;
      const counts = taskType === undefined ? untyped : typed(taskType).counts;
      counts.set(name, (counts.get(name) ?? 0) + value);
    },
    durationMs: (taskType, ms) => {
      if (Number.isFinite(ms)) typed(taskType).durations.push(ms);
    },
    flush: () => {
      if (untyped.size === 0 && byType.size === 0) return;
      const recorded = { untyped, byType };
      untyped = new Map();
      byType = new Map();
      for (const line of emfLines(recorded, now(), namespace)) write(line);
    },
  };
}
