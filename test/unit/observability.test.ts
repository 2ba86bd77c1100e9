import { describe, expect, it } from 'vitest';
import { METRICS, metricsNamespace } from '../../shared/config/metrics.js';
import { ENV } from '../../shared/config/resources.js';
import {
  createLogger,
  createMetrics,
  EMF_MAX_VALUES,
  formatLogLine,
  LAMBDA_LOG_LEVEL_ENV,
  logLevelFromEnv,
} from '../../shared/service/observability.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0, 123);

function sink(): { lines: string[]; write: (line: string) => void } {
  const lines: string[] = [];
  return { lines, write: (line) => lines.push(line) };
}

interface EmfDirective {
  Namespace: string;
  Dimensions: string[][];
  Metrics: { Name: string; Unit?: string }[];
}
type EmfDocument = { _aws: { Timestamp: number; CloudWatchMetrics: EmfDirective[] } } & Record<string, unknown>;

/**
 * Parses a line and checks it against the EMF specification (CloudWatch User Guide, "Specification:
 * Embedded metric format"): a JSON object with `_aws.Timestamp` (integer ms) and
 * `_aws.CloudWatchMetrics` (MetricDirectives: Namespace, Dimensions — arrays of ≤ 9 keys, each a
 * top-level string member — and ≤ 100 Metrics, each naming a top-level member that is a number or
 * an array of ≤ 100 numbers).
 */
function parseEmf(line: string): EmfDocument {
  expect(line).not.toContain('\n');
  const doc = JSON.parse(line) as EmfDocument;
  expect(Number.isInteger(doc._aws.Timestamp)).toBe(true);
  expect(doc._aws.CloudWatchMetrics.length).toBeGreaterThan(0);
  for (const d of doc._aws.CloudWatchMetrics) {
    expect(Object.keys(d).sort()).toEqual(['Dimensions', 'Metrics', 'Namespace']);
    expect(d.Namespace).toBe(METRICS.namespace);
    for (const set of d.Dimensions) {
      expect(set.length).toBeLessThanOrEqual(9);
      for (const key of set) expect(typeof doc[key], `dimension ${key}`).toBe('string');
    }
    expect(d.Metrics.length).toBeGreaterThan(0);
    expect(d.Metrics.length).toBeLessThanOrEqual(100);
    for (const m of d.Metrics) {
      const v = doc[m.Name];
      const values = Array.isArray(v) ? v : [v];
      expect(values.length, m.Name).toBeGreaterThan(0);
      expect(values.length, m.Name).toBeLessThanOrEqual(EMF_MAX_VALUES);
      for (const x of values) expect(Number.isFinite(x), `${m.Name} = ${JSON.stringify(v)}`).toBe(true);
    }
  }
  return doc;
}

/** Each metric of a line as `{dimensions, name, unit, value}`, the way CloudWatch extracts it. */
function extracted(doc: EmfDocument) {
  return doc._aws.CloudWatchMetrics.flatMap((d) =>
    d.Dimensions.flatMap((set) =>
      d.Metrics.map((m) => ({
        dimensions: Object.fromEntries(set.map((k) => [k, doc[k]])),
        name: m.Name,
        unit: m.Unit,
        value: doc[m.Name],
      })),
    ),
  );
}

const typed = (type: string) => ({
  [METRICS.serviceDimension]: METRICS.serviceName,
  [METRICS.taskTypeDimension]: type,
});
const untyped = { [METRICS.serviceDimension]: METRICS.serviceName };

describe('createMetrics', () => {
  it("writes in the namespace it is given, else POWERTOOLS_METRICS_NAMESPACE (the stack's), else Kaj", () => {
    const namespaces = (o: { namespace?: string }) => {
      const lines: string[] = [];
      const m = createMetrics({ write: (l) => lines.push(l), now: () => T0, ...o });
      m.count(METRICS.succeeded, 'job');
      m.flush();
      return lines.flatMap((l) => (JSON.parse(l) as EmfDocument)._aws.CloudWatchMetrics.map((d) => d.Namespace));
    };
    const before = process.env.POWERTOOLS_METRICS_NAMESPACE;
    try {
      delete process.env.POWERTOOLS_METRICS_NAMESPACE;
      expect(namespaces({})).toEqual(['Kaj']);
      expect(namespaces({ namespace: metricsNamespace('kaj-prod') })).toEqual(['Kaj/kaj-prod']);
      process.env.POWERTOOLS_METRICS_NAMESPACE = 'Kaj/kaj-staging';
      expect(namespaces({})).toEqual(['Kaj/kaj-staging']);
    } finally {
      if (before === undefined) delete process.env.POWERTOOLS_METRICS_NAMESPACE;
      else process.env.POWERTOOLS_METRICS_NAMESPACE = before;
    }
  });

  it('a batch of ten tasks of one type is one line: counts summed, durations as an array', () => {
    const out = sink();
    const metrics = createMetrics({ write: out.write, now: () => T0 });
    for (let i = 0; i < 10; i += 1) {
      metrics.count(METRICS.succeeded, 'send_email');
      metrics.durationMs('send_email', 10 + i);
    }
    metrics.flush();
    expect(out.lines).toHaveLength(1);
    const doc = parseEmf(out.lines[0]!);
    expect(doc._aws.Timestamp).toBe(T0);
    expect(extracted(doc)).toEqual([
      { dimensions: typed('send_email'), name: METRICS.succeeded, unit: 'Count', value: 10 },
      {
        dimensions: typed('send_email'),
        name: METRICS.duration,
        unit: 'Milliseconds',
        value: [10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
      },
    ]);
  });

  it('counts without a TaskType ride on the same line, under the service dimension alone', () => {
    const out = sink();
    const metrics = createMetrics({ write: out.write, now: () => T0 });
    metrics.count(METRICS.claimsRejected, undefined);
    metrics.count(METRICS.succeeded, 'a', 2);
    metrics.count(METRICS.claimsRejected, undefined, 3);
    metrics.durationMs('a', 7);
    metrics.flush();
    expect(out.lines).toHaveLength(1);
    expect(extracted(parseEmf(out.lines[0]!))).toEqual([
      { dimensions: typed('a'), name: METRICS.succeeded, unit: 'Count', value: 2 },
      { dimensions: typed('a'), name: METRICS.duration, unit: 'Milliseconds', value: 7 },
      { dimensions: untyped, name: METRICS.claimsRejected, unit: 'Count', value: 4 },
    ]);
  });

  it('one line per TaskType present (a dimension value is a member of the line)', () => {
    const out = sink();
    const metrics = createMetrics({ write: out.write, now: () => T0 });
    metrics.count(METRICS.succeeded, 'a');
    metrics.count(METRICS.failed, 'b');
    metrics.count(METRICS.succeeded, 'a');
    metrics.count(METRICS.consumerItemFailures, undefined);
    metrics.flush();
    expect(out.lines.map((l) => extracted(parseEmf(l)))).toEqual([
      [
        { dimensions: typed('a'), name: METRICS.succeeded, unit: 'Count', value: 2 },
        { dimensions: untyped, name: METRICS.consumerItemFailures, unit: 'Count', value: 1 },
      ],
      [{ dimensions: typed('b'), name: METRICS.failed, unit: 'Count', value: 1 }],
    ]);
  });

  it('counts without a TaskType only: one line with the service dimension alone (what the item-failure alarms read)', () => {
    const out = sink();
    const metrics = createMetrics({ write: out.write, now: () => T0 });
    metrics.count(METRICS.sweeperItemFailures, undefined);
    metrics.count(METRICS.sweeperItemFailures, undefined);
    metrics.flush();
    expect(out.lines.map((l) => extracted(parseEmf(l)))).toEqual([
      [{ dimensions: untyped, name: METRICS.sweeperItemFailures, unit: 'Count', value: 2 }],
    ]);
  });

  it('a name recorded both with and without a TaskType gets a line of its own for each', () => {
    const out = sink();
    const metrics = createMetrics({ write: out.write, now: () => T0 });
    metrics.count(METRICS.cancelled, 'a');
    metrics.count(METRICS.cancelled, undefined);
    metrics.flush();
    expect(out.lines.map((l) => extracted(parseEmf(l)))).toEqual([
      [{ dimensions: untyped, name: METRICS.cancelled, unit: 'Count', value: 1 }],
      [{ dimensions: typed('a'), name: METRICS.cancelled, unit: 'Count', value: 1 }],
    ]);
  });

  it('more than 100 durations of one type continue on lines of TaskDuration alone', () => {
    const out = sink();
    const metrics = createMetrics({ write: out.write, now: () => T0 });
    for (let i = 0; i < 2 * EMF_MAX_VALUES + 5; i += 1) metrics.durationMs('big', i);
    metrics.count(METRICS.succeeded, 'big', 2 * EMF_MAX_VALUES + 5);
    metrics.flush();
    const docs = out.lines.map(parseEmf);
    expect(docs.map((d) => extracted(d).map((m) => m.name))).toEqual([
      [METRICS.succeeded, METRICS.duration],
      [METRICS.duration],
      [METRICS.duration],
    ]);
    const all = docs.flatMap((d) => {
      const v = d[METRICS.duration];
      return Array.isArray(v) ? v : [v];
    });
    expect(all).toEqual(Array.from({ length: 2 * EMF_MAX_VALUES + 5 }, (_, i) => i));
    for (const d of docs) expect(d[METRICS.taskTypeDimension]).toBe('big');
  });

  it('writes nothing when nothing was recorded, and forgets what it flushed', () => {
    const out = sink();
    const metrics = createMetrics({ write: out.write, now: () => T0 });
    metrics.flush();
    expect(out.lines).toEqual([]);
    metrics.count(METRICS.submitted, 'a');
    metrics.flush();
    metrics.flush();
    expect(out.lines).toHaveLength(1);
    metrics.count(METRICS.submitted, 'a');
    metrics.flush();
    expect(out.lines.map((l) => parseEmf(l)[METRICS.submitted])).toEqual([1, 1]);
  });

  it('ignores values CloudWatch would reject the whole line for', () => {
    const out = sink();
    const metrics = createMetrics({ write: out.write, now: () => T0 });
    metrics.count(METRICS.succeeded, 'a', Number.NaN);
    metrics.durationMs('a', Number.POSITIVE_INFINITY);
    metrics.flush();
    expect(out.lines).toEqual([]);
  });

  it('writes to stdout by default', () => {
    const written: string[] = [];
    const original = process.stdout.write;
    process.stdout.write = ((chunk: string) => {
      written.push(chunk);
      return true;
    }) as typeof process.stdout.write;
    try {
      const metrics = createMetrics();
      metrics.count(METRICS.submitted, 'a');
      metrics.flush();
    } finally {
      process.stdout.write = original;
    }
    expect(written).toHaveLength(1);
    expect(written[0]!.endsWith('}\n')).toBe(true);
    expect(parseEmf(written[0]!.trimEnd())[METRICS.submitted]).toBe(1);
  });
});

describe('createLogger', () => {
  it('writes one JSON line with level, message, timestamp, service and the fields', () => {
    const out = sink();
    const logger = createLogger({ level: 'INFO', write: out.write, now: () => T0 });
    logger.warn('heartbeat failed; will try again', { task_id: 't_1', attempt: 2, cause: undefined });
    expect(out.lines).toHaveLength(1);
    expect(out.lines[0]).toBe(
      '{"level":"WARN","message":"heartbeat failed; will try again","timestamp":"2026-12-01T12:00:00.123Z",' +
        '"service":"kaj","task_id":"t_1","attempt":2}',
    );
  });

  it('writes nothing below its level', () => {
    const out = sink();
    const logger = createLogger({ level: 'WARN', write: out.write, now: () => T0 });
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e', { x: 1 });
    expect(out.lines.map((l) => (JSON.parse(l) as { level: string }).level)).toEqual(['WARN', 'ERROR']);
    const silent = sink();
    const none = createLogger({ level: 'SILENT', write: silent.write });
    none.error('e');
    expect(silent.lines).toEqual([]);
    const all = sink();
    const debug = createLogger({ level: 'DEBUG', write: all.write });
    debug.debug('d');
    expect(all.lines).toHaveLength(1);
  });

  it('keeps the line valid: reserved names renamed, errors spelled out, unserializable fields reported', () => {
    const line = formatLogLine('ERROR', 'x', T0, { level: 'fake', message: 'm', error: new TypeError('boom') });
    const doc = JSON.parse(line) as Record<string, any>;
    expect(doc.level).toBe('ERROR');
    expect(doc.message).toBe('x');
    expect(doc._level).toBe('fake');
    expect(doc._message).toBe('m');
    expect(doc.error).toMatchObject({ name: 'TypeError', message: 'boom' });
    expect(doc.error.stack).toContain('boom');
    const bad = JSON.parse(formatLogLine('INFO', 'y', T0, { n: 1n })) as Record<string, unknown>;
    expect(bad.message).toBe('y');
    expect(String(bad.log_error)).toMatch(/not serializable/);
    expect(formatLogLine('INFO', 'z', T0, {})).toBe(formatLogLine('INFO', 'z', T0));
  });
});

describe('logLevelFromEnv', () => {
  it('POWERTOOLS_LOG_LEVEL (default INFO), never more verbose than Lambda’s AWS_LAMBDA_LOG_LEVEL', () => {
    expect(logLevelFromEnv({})).toBe('INFO');
    expect(logLevelFromEnv({ [ENV.logLevel]: 'debug' })).toBe('DEBUG');
    expect(logLevelFromEnv({ [ENV.logLevel]: 'nonsense' })).toBe('INFO');
    // Lambda's application filter at INFO drops DEBUG lines anyway: do not format them.
    expect(logLevelFromEnv({ [ENV.logLevel]: 'DEBUG', [LAMBDA_LOG_LEVEL_ENV]: 'INFO' })).toBe('INFO');
    // The configured WARN stands although Lambda lets INFO through (it must, for the EMF lines).
    expect(logLevelFromEnv({ [ENV.logLevel]: 'WARN', [LAMBDA_LOG_LEVEL_ENV]: 'INFO' })).toBe('WARN');
    expect(logLevelFromEnv({ [LAMBDA_LOG_LEVEL_ENV]: 'FATAL' })).toBe('CRITICAL');
  });
});
