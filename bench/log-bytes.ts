/**
 * Log bytes per task, and what the loggers and metric writers cost in CPU .
 *
 *   npm run bench:logs -- [--runs 3] [--iterations 5000]
 *
 * Bytes: one first-attempt-success batch of 10 through the consumer and the 10 submits that made
 * it through the API, driven through the real code (the local runtime on the embedded emulators:
 * `kaj.handleHttp` behind its HTTP server, `kaj.processBatch` with one SQS event of 10 records),
 * each invocation followed by `metrics.flush()` as the function entry points do, with everything
 * the process writes to stdout/stderr during an invocation counted line by line. Two setups:
 *
 * - before: Powertools Logger at INFO (with the X-Ray trace id Lambda sets; today's debug lines at
 *   INFO, as they were before they moved to debug), Powertools Metrics through `singleMetric()` per
 *   count, Lambda's text log format with its START/END/REPORT lines, and the 13-field access-log line;
 * - after: shared/service/observability.ts as deployed, JSON log format with system logs at WARN (no
 *   platform line), and the access-log line of infra/constructs/api.ts.
 *
 * Platform lines and the access-log line are not written by this process: they are modelled from
 * their formats with typical values (below) and added per invocation / per submit.
 *
 * CPU: per batch of 10 tasks (10 counts + 10 durations + a flush) for each metric writer, and per
 * log line for each logger, user+system CPU time over `--iterations` batches.
 *
 * Every figure is the median of `--runs` runs (at least 3).
 */
import { parseArgs } from 'node:util';
import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import { MetricUnit, Metrics as PowertoolsMetrics } from '@aws-lambda-powertools/metrics';
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { ACCESS_LOG_FORMAT } from '../infra/constructs/api.js';
import { EMULATOR_REGION } from '../local/emulators.js';
import { sqsRecordOf } from '../local/event-source.js';
import { startLocalRuntime } from '../local/runtime.js';
import { METRICS } from '../shared/config/metrics.js';
import { createLogger, createMetrics, type InvocationMetrics } from '../shared/service/observability.js';
import type { Logger, Metrics } from '../shared/runtime/logger.js';
import { defineTask, TaskRegistry } from '../shared/task/define.js';
import { median, medianLine, num } from './lib/report.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    iterations: { type: 'string', default: '5000' },
  },
});
const RUNS = num(values.runs, 'runs', true, 3);
const ITERATIONS = num(values.iterations, 'iterations', true, 100);

/** Tasks per consumer batch, and submits per run. */
const BATCH = 10;
const TASK_TYPE = 'send_email';

// --- what the process writes --------------------------------------------------------------------

/** Collects every line written to stdout/stderr between start() and stop(), writing none of them. */
class Capture {
  lines: string[] = [];
  private partial = '';
  private restore: (() => void) | undefined;

  start(): void {
    const streams = [process.stdout, process.stderr] as const;
    const originals = streams.map((s) => s.write);
    const take = (chunk: unknown, encoding?: unknown, cb?: unknown): boolean => {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      const parts = (this.partial + text).split('\n');
      this.partial = parts.pop() ?? '';
      this.lines.push(...parts);
      const done = typeof encoding === 'function' ? encoding : cb;
      if (typeof done === 'function') (done as () => void)();
      return true;
    };
    for (const s of streams) s.write = take as typeof s.write;
    this.restore = () => {
      streams.forEach((s, i) => {
        s.write = originals[i] as typeof s.write;
      });
    };
  }

  stop(): string[] {
    this.restore?.();
    this.restore = undefined;
    if (this.partial !== '') this.lines.push(this.partial);
    const out = this.lines;
    this.lines = [];
    this.partial = '';
    return out;
  }
}

type LineKind = 'app' | 'emf' | 'other';

function kindOf(line: string): LineKind {
  try {
    const doc = JSON.parse(line) as Record<string, unknown>;
    if (typeof doc._aws === 'object') return 'emf';
    if (typeof doc.level === 'string') return 'app';
  } catch {
    // not JSON: e.g. Powertools' "No application metrics to publish" warning
  }
  return 'other';
}

const bytes = (line: string) => Buffer.byteLength(line, 'utf8');

// --- the two setups -----------------------------------------------------------------------------

/**
 * What the functions used before: Powertools Logger, and Metrics through singleMetric().
 * With `debugAsInfo`, `debug` logs at INFO: the happy path's per-task lines ("task succeeded") were
 * INFO lines before they moved to debug, so this is the old logging on today's code.
 */
function powertoolsLogger(debugAsInfo = false): Logger {
  const pt = new PowertoolsLogger({ serviceName: METRICS.serviceName, logLevel: 'INFO' });
  return {
    debug: (message, fields) => {
      const log = debugAsInfo ? pt.info.bind(pt) : pt.debug.bind(pt);
      return fields ? log(message, fields) : log(message);
    },
    info: (message, fields) => (fields ? pt.info(message, fields) : pt.info(message)),
    warn: (message, fields) => (fields ? pt.warn(message, fields) : pt.warn(message)),
    error: (message, fields) => (fields ? pt.error(message, fields) : pt.error(message)),
  };
}

function powertoolsSingleMetrics(): InvocationMetrics {
  const metrics = new PowertoolsMetrics({ namespace: METRICS.namespace, serviceName: METRICS.serviceName });
  const single = (taskType: string | undefined) => {
    const m = metrics.singleMetric();
    if (taskType !== undefined) m.addDimension(METRICS.taskTypeDimension, taskType);
    return m;
  };
  return {
    count: (name, taskType, value = 1) => single(taskType).addMetric(name, MetricUnit.Count, value),
    durationMs: (taskType, ms) => single(taskType).addMetric(METRICS.duration, MetricUnit.Milliseconds, ms),
    flush: () => metrics.publishStoredMetrics(),
  };
}

/**
 * The alternative to a hand-written writer: the same per-invocation aggregation, published through
 * one Powertools Metrics (a line per TaskType, and one more for the counts without one).
 */
function powertoolsAggregatedMetrics(): InvocationMetrics {
  const pt = new PowertoolsMetrics({ namespace: METRICS.namespace, serviceName: METRICS.serviceName });
  let untyped = new Map<string, number>();
  let typed = new Map<string, { counts: Map<string, number>; durations: number[] }>();
  const group = (t: string) => {
    let g = typed.get(t);
    if (g === undefined) {
      g = { counts: new Map(), durations: [] };
      typed.set(t, g);
    }
    return g;
  };
  return {
    count: (name, t, v = 1) => {
      const counts = t === undefined ? untyped : group(t).counts;
      counts.set(name, (counts.get(name) ?? 0) + v);
    },
    durationMs: (t, ms) => {
      group(t).durations.push(ms);
    },
    flush: () => {
      for (const [t, g] of typed) {
        pt.addDimension(METRICS.taskTypeDimension, t);
        for (const [name, v] of g.counts) pt.addMetric(name, MetricUnit.Count, v);
        for (const ms of g.durations) pt.addMetric(METRICS.duration, MetricUnit.Milliseconds, ms);
        pt.publishStoredMetrics();
      }
      if (untyped.size > 0) {
        for (const [name, v] of untyped) pt.addMetric(name, MetricUnit.Count, v);
        pt.publishStoredMetrics();
      }
      untyped = new Map();
      typed = new Map();
    },
  };
}

/** The access-log format before it was cut down. */
const BEFORE_ACCESS_LOG_FORMAT: Readonly<Record<string, string>> = {
  requestId: '$context.requestId',
  requestTime: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  caller: '$context.identity.caller',
  userArn: '$context.identity.userArn',
  routeKey: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  responseLatency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  authorizerError: '$context.authorizer.error',
};

/** Typical `$context` values of a signed submit (an assumed-role producer, 202 in 38 ms); `-` is what API Gateway writes for none. */
const TYPICAL_CONTEXT: Readonly<Record<string, string>> = {
  '$context.requestId': 'JxQ2kgGHIAMEbZw=',
  '$context.requestTime': '01/Dec/2026:12:00:00 +0000',
  '$context.identity.sourceIp': '203.0.113.10',
  '$context.identity.caller': 'AROA3XFRBF23EXAMPLE1:worker-1',
  '$context.identity.userArn': 'arn:aws:sts::123456789012:assumed-role/kaj-producer/worker-1',
  '$context.routeKey': 'POST /api/v1/tasks',
  '$context.status': '202',
  '$context.protocol': 'HTTP/1.1',
  '$context.responseLength': '166',
  '$context.responseLatency': '38',
  '$context.integrationLatency': '35',
  '$context.integrationErrorMessage': '-',
  '$context.authorizer.error': '-',
  '$context.error.message': '-',
};

/** The line API Gateway writes for `format` (JSON.stringify'd, as api.ts passes it) with typical values. */
function accessLogLine(format: Readonly<Record<string, string>>): string {
  return JSON.stringify(format).replace(/\$context\.[A-Za-z.]+/g, (v) => {
    const value = TYPICAL_CONTEXT[v];
    if (value === undefined) throw new Error(`no typical value for ${v}: add one to TYPICAL_CONTEXT`);
    return value;
  });
}

const REQUEST_ID = '6f1e8a3c-2b4d-4e5f-9a7b-1c2d3e4f5a6b';
/** Lambda's text-format platform lines of one warm invocation (system log level INFO). */
const TEXT_PLATFORM_LINES = [
  `START RequestId: ${REQUEST_ID} Version: $LATEST`,
  `END RequestId: ${REQUEST_ID}`,
  `REPORT RequestId: ${REQUEST_ID}\tDuration: 48.12 ms\tBilled Duration: 49 ms\tMemory Size: 256 MB\tMax Memory Used: 97 MB\t`,
];

/**
 * A setup: its logger and metrics, Lambda's own lines per invocation, the access-log line of one
 * request, and whether the API function writes a metric line per request (no more: submissions
 * are counted by a metric filter on the access log, infra/constructs/api.ts).
 */
type Setup = ReturnType<typeof setups>[number];

const setups = () => [
  {
    name: 'before',
    logger: powertoolsLogger(true),
    metrics: powertoolsSingleMetrics(),
    platformLines: TEXT_PLATFORM_LINES,
    accessLog: accessLogLine(BEFORE_ACCESS_LOG_FORMAT),
    apiMetrics: true,
  },
  {
    name: 'after',
    logger: createLogger({ level: 'INFO' }),
    metrics: createMetrics(),
    platformLines: [],
    accessLog: accessLogLine(ACCESS_LOG_FORMAT),
    apiMetrics: false,
  },
];

// --- one run: 10 submits, one consumer batch ------------------------------------------------------

interface Written {
  readonly kind: LineKind;
  readonly bytes: number;
  readonly level?: string;
  readonly message?: string;
}

function classify(lines: readonly string[]): Written[] {
  return lines
    .filter((l) => l !== '')
    .map((l) => {
      const kind = kindOf(l);
      if (kind !== 'app') return { kind, bytes: bytes(l) };
      const doc = JSON.parse(l) as { level: string; message: string };
      return { kind, bytes: bytes(l), level: doc.level, message: doc.message };
    });
}

const registry = new TaskRegistry([
  defineTask({
    type: TASK_TYPE,
    schema: z.object({ to: z.string(), subject: z.string() }),
    // Kaj's lines only: a handler's own logging is the task author's.
    handler: async () => ({ delivered: true }),
  }),
]);

type RunResult = Awaited<ReturnType<typeof measure>>;

async function measure(setup: Setup, rt: Awaited<ReturnType<typeof startLocalRuntime>>) {
  const capture = new Capture();
  const api: Written[] = [];
  const ids: string[] = [];
  for (let i = 0; i < BATCH; i += 1) {
    capture.start();
    let res: Response;
    apiPhase = true;
    try {
      res = await fetch(`${rt.url}/api/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: TASK_TYPE, payload: { to: `user${i}@example.com`, subject: 'Your receipt' } }),
      });
      if (setup.apiMetrics) setup.metrics.flush();
    } finally {
      apiPhase = false;
      api.push(...classify(capture.stop()));
    }
    if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
    ids.push(((await res.json()) as { task_id: string }).task_id);
  }

  const queueUrl = rt.resources.queueUrls.normal;
  const messages: Message[] = [];
  const deadline = Date.now() + 30_000;
  while (messages.length < BATCH) {
    if (Date.now() > deadline) throw new Error(`only ${messages.length}/${BATCH} messages arrived`);
    const out = await rt.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: BATCH - messages.length,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    messages.push(...(out.Messages ?? []));
  }
  const event: SQSEvent = {
    Records: messages.map((m) => sqsRecordOf(m, rt.resources.queueArns.normal, EMULATOR_REGION)),
  };
  capture.start();
  let consumer: Written[];
  try {
    const response = await rt.kaj.processBatch(event, { getRemainingTimeInMillis: () => 290_000 });
    setup.metrics.flush();
    if (response.batchItemFailures.length > 0) throw new Error(`batch failures: ${JSON.stringify(response)}`);
  } finally {
    consumer = classify(capture.stop());
  }
  await rt.clients.sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
    }),
  );
  for (const id of ids) {
    const record = await rt.kaj.store.get(id);
    if (record?.status !== 'succeeded' || record.attempts !== 1) {
      throw new Error(
        `task ${id} is ${record?.status} after ${record?.attempts} attempt(s), not a first-attempt success`,
      );
    }
  }
  return { api, consumer };
}

/** Per-task rows of one run (bytes, and log events). */
function perTask(setup: Setup, r: RunResult): Record<string, number> {
  const sum = (ws: Written[], kind: LineKind) => ws.filter((w) => w.kind === kind).reduce((a, w) => a + w.bytes, 0);
  const count = (ws: Written[]) => ws.length;
  const platformBytes = setup.platformLines.reduce((a, l) => a + bytes(l), 0);
  // One consumer invocation for the batch, one API invocation per submit.
  const invocationsPerTask = 1 / BATCH + 1;
  const access = setup.accessLog === undefined ? 0 : bytes(setup.accessLog);
  const rows: Record<string, number> = {
    'consumer application lines': sum(r.consumer, 'app') / BATCH,
    'consumer EMF lines': sum(r.consumer, 'emf') / BATCH,
    'consumer other lines': sum(r.consumer, 'other') / BATCH,
    'API application lines': sum(r.api, 'app') / BATCH,
    'API EMF lines': sum(r.api, 'emf') / BATCH,
    'API other lines': sum(r.api, 'other') / BATCH,
    'Lambda platform lines (modelled)': platformBytes * invocationsPerTask,
    'API access-log line (modelled)': access,
  };
  const total = Object.values(rows).reduce((a, b) => a + b, 0);
  rows['total bytes per task'] = total;
  rows['  without the access log'] = total - access;
  rows['log events per task'] =
    (count(r.consumer) + count(r.api)) / BATCH +
    setup.platformLines.length * invocationsPerTask +
    (setup.accessLog === undefined ? 0 : 1);
  // PutLogEvents counts 26 bytes per event on top of the message (its batch-size rule).
  rows['  with 26 B per event'] = total + 26 * rows['log events per task'];
  return rows;
}

// --- CPU ----------------------------------------------------------------------------------------

/** CPU microseconds (user + system) per call of `body`, over `n` calls after a warm-up, output discarded. */
function cpuMicros(n: number, body: (i: number) => void): number {
  const capture = new Capture();
  capture.start();
  try {
    for (let i = 0; i < Math.max(50, n / 10); i += 1) body(i);
    capture.stop();
    capture.start();
    const t0 = process.cpuUsage();
    for (let i = 0; i < n; i += 1) body(i);
    const d = process.cpuUsage(t0);
    return (d.user + d.system) / n;
  } finally {
    capture.stop();
  }
}

const FIELDS = { task_id: 't_5c0a9e1f2b3c4d5e6f708192a3b4c5d6', type: TASK_TYPE, attempt: 1, duration_ms: 12 };

function cpuRun(): Record<string, number> {
  const batch = (m: Metrics & { flush(): void }) => () => {
    for (let i = 0; i < BATCH; i += 1) {
      m.count(METRICS.succeeded, TASK_TYPE);
      m.durationMs(TASK_TYPE, 10 + i);
    }
    m.flush();
  };
  const ptLogger = powertoolsLogger();
  const lean = createLogger({ level: 'INFO' });
  const lines = ITERATIONS * BATCH;
  return {
    'metrics: Powertools singleMetric() per count': cpuMicros(ITERATIONS, batch(powertoolsSingleMetrics())) / BATCH,
    'metrics: Powertools, aggregated per flush': cpuMicros(ITERATIONS, batch(powertoolsAggregatedMetrics())) / BATCH,
    'metrics: hand-written EMF (shared/service/observability.ts)':
      cpuMicros(ITERATIONS, batch(createMetrics())) / BATCH,
    'log line: Powertools Logger.info': cpuMicros(lines, () => ptLogger.info('task succeeded', FIELDS)),
    'log line: createLogger().info': cpuMicros(lines, () => lean.info('task succeeded', FIELDS)),
    'log line: createLogger().debug at INFO (dropped)': cpuMicros(lines, () => lean.debug('task succeeded', FIELDS)),
  };
}

function lineBytes(): Record<string, number> {
  const capture = new Capture();
  capture.start();
  powertoolsLogger().info('task succeeded', FIELDS);
  const pt = capture.stop();
  capture.start();
  createLogger({ level: 'INFO' }).info('task succeeded', FIELDS);
  const lean = capture.stop();
  return {
    'bytes of that line: Powertools Logger': pt.reduce((a, l) => a + bytes(l), 0),
    'bytes of that line: createLogger()': lean.reduce((a, l) => a + bytes(l), 0),
  };
}

// --- main ---------------------------------------------------------------------------------------

// Lambda sets the trace id on every invocation; Powertools Logger adds it to each line.
process.env._X_AMZN_TRACE_ID ??= 'Root=1-674c1f80-0f1e2d3c4b5a69788796a5b4;Parent=53995c3f42cd8ad8;Sampled=0';

const all = setups();
let current: Setup = all[0] as Setup;
// The runtime is wired once; each run points it at one setup's logger and metrics.
const logger: Logger = {
  debug: (m, f) => current.logger.debug(m, f),
  info: (m, f) => current.logger.info(m, f),
  warn: (m, f) => current.logger.warn(m, f),
  error: (m, f) => current.logger.error(m, f),
};
/** True while a submit runs: the API's counts go nowhere unless the setup's API writes metrics. */
let apiPhase = false;
const metrics: Metrics = {
  count: (name, type, v) => (apiPhase && !current.apiMetrics ? undefined : current.metrics.count(name, type, v)),
  durationMs: (type, ms) => current.metrics.durationMs(type, ms),
};
const rt = await startLocalRuntime({
  registry,
  port: 0,
  prefix: `bench-logs-${process.pid}`,
  logger,
  metrics,
  consumers: false,
  sweepIntervalMs: 3_600_000,
});
const byteRuns = new Map<string, Record<string, number>[]>(all.map((s) => [s.name, []]));
const leftoverInfo = new Map<string, number>();
try {
  for (let run = 0; run < RUNS; run += 1) {
    for (const setup of all) {
      current = setup;
      const r = await measure(setup, rt);
      byteRuns.get(setup.name)?.push(perTask(setup, r));
      if (setup.name === 'after') {
        for (const w of [...r.consumer, ...r.api]) {
          if (w.kind === 'app' && w.level === 'INFO') {
            const key = w.message ?? '';
            leftoverInfo.set(key, (leftoverInfo.get(key) ?? 0) + w.bytes / BATCH / RUNS);
          }
        }
      }
    }
    process.stderr.write(`bytes: run ${run + 1}/${RUNS} done\n`);
  }
} finally {
  await rt.stop(2_000);
}

const cpuRuns: Record<string, number>[] = [];
for (let run = 0; run < RUNS; run += 1) {
  cpuRuns.push(cpuRun());
  process.stderr.write(`cpu: run ${run + 1}/${RUNS} done\n`);
}

const fmt = (v: number) => v.toFixed(1).padStart(9);
console.log(
  `\nKaj log bytes per task: ${BATCH} first-attempt successes of one type in one consumer batch, and their ${BATCH} ` +
    `submits; median of ${RUNS} runs (${new Date().toISOString()})`,
);
console.log(`  ${''.padEnd(36)}${'before'.padStart(9)}${'after'.padStart(9)}`);
const before = byteRuns.get('before') ?? [];
const after = byteRuns.get('after') ?? [];
for (const key of Object.keys(before[0] ?? {})) {
  const b = median(before.map((r) => r[key] ?? Number.NaN));
  const a = median(after.map((r) => r[key] ?? Number.NaN));
  console.log(`  ${key.padEnd(36)}${fmt(b)}${fmt(a)}`);
}
console.log(
  '  (before: Powertools Logger at INFO + singleMetric(), text log format with START/END/REPORT, 13-field access log;\n' +
    '   after: shared/service/observability.ts, JSON log format with system logs at WARN, infra/constructs/api.ts access log)',
);
console.log(`  before access-log line: ${accessLogLine(BEFORE_ACCESS_LOG_FORMAT)}`);
console.log(`  after access-log line:  ${accessLogLine(ACCESS_LOG_FORMAT)}`);
if (leftoverInfo.size > 0) {
  const perTaskInfo = [...leftoverInfo.values()].reduce((a, b) => a + b, 0);
  console.log(
    `  of "after", ${perTaskInfo.toFixed(1)} B/task are INFO lines of the happy path (at debug they would cost nothing): ` +
      [...leftoverInfo].map(([m, b]) => `"${m}" ${b.toFixed(1)} B`).join(', '),
  );
}

console.log(
  `\nCPU per task or per line (µs, user+system), ${ITERATIONS} batches of ${BATCH} (counts + durations + flush) / ` +
    `${ITERATIONS * BATCH} log lines; median of ${RUNS} runs`,
);
for (const key of Object.keys(cpuRuns[0] ?? {})) {
  console.log(
    medianLine(
      key.padEnd(52),
      cpuRuns.map((r) => r[key] ?? Number.NaN),
      8,
    ),
  );
}
for (const [key, v] of Object.entries(lineBytes())) console.log(`  ${key.padEnd(52)}${String(v).padStart(8)}`);
