/**
 * Log bytes per task, and what the deployed logger and metric writer cost in CPU.
 *
 *   npm run bench:logs -- [--runs 3] [--iterations 5000]
 *
 * Bytes: one first-attempt-success batch of 10 through the consumer and the 10 submits that made
 * it through the API, driven through the real code (the local runtime on the embedded emulators:
 * `kaj.handleHttp` behind its HTTP server, `kaj.processBatch` with one SQS event of 10 records)
 * with the logger and metrics of shared/service/observability.ts as deployed. The consumer's
 * invocation is followed by `metrics.flush()` as its entry point does; the API function writes no
 * metric line (submissions are counted by a metric filter on the access log, infra/constructs/api.ts).
 * Everything the process writes to stdout/stderr during an invocation is counted line by line.
 *
 * Lambda adds no platform line (JSON log format, system logs at WARN). The access-log line is not
 * written by this process: it is modelled from the format of infra/constructs/api.ts with typical
 * values (below) and added per submit. The first version's logging (Powertools Logger and
 * `singleMetric()`, Lambda's text format with START/END/REPORT, a 13-field access log) is measured
 * in docs/measured.md.
 *
 * CPU: per batch of 10 tasks (10 counts + 10 durations + a flush) for the metric writer, and per
 * log line for the logger, user+system CPU time over `--iterations` batches.
 *
 * Every figure is the median of `--runs` runs (at least 3).
 */
import { parseArgs } from 'node:util';
import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import * as z from 'zod';
import { ACCESS_LOG_FORMAT } from '../infra/constructs/api.js';
import { EMULATOR_REGION } from '../local/emulators.js';
import { sqsRecordOf } from '../local/event-source.js';
import { startLocalRuntime } from '../local/runtime.js';
import { METRICS } from '../shared/config/metrics.js';
import { createLogger, createMetrics } from '../shared/service/observability.js';
import type { Metrics } from '../shared/runtime/logger.js';
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
    // not JSON: a warning of a library, say
  }
  return 'other';
}

const bytes = (line: string) => Buffer.byteLength(line, 'utf8');

// --- the access-log line -----------------------------------------------------------------------

/** Typical `$context` values of a signed submit (an assumed-role producer, 202 in 38 ms); `-` is what API Gateway writes for none. */
const TYPICAL_CONTEXT: Readonly<Record<string, string>> = {
  '$context.requestId': 'JxQ2kgGHIAMEbZw=',
  '$context.identity.sourceIp': '203.0.113.10',
  '$context.identity.userArn': 'arn:aws:sts::123456789012:assumed-role/kaj-producer/worker-1',
  '$context.routeKey': 'POST /api/v1/tasks',
  '$context.status': '202',
  '$context.responseLatency': '38',
  '$context.error.message': '-',
};

/** The line API Gateway writes for ACCESS_LOG_FORMAT (JSON.stringify'd, as api.ts passes it) with typical values. */
const ACCESS_LOG_LINE = JSON.stringify(ACCESS_LOG_FORMAT).replace(/\$context\.[A-Za-z.]+/g, (v) => {
  const value = TYPICAL_CONTEXT[v];
  if (value === undefined) throw new Error(`no typical value for ${v}: add one to TYPICAL_CONTEXT`);
  return value;
});

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

async function measure(rt: Awaited<ReturnType<typeof startLocalRuntime>>) {
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
    metrics.flush();
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
function perTask(r: RunResult): Record<string, number> {
  const sum = (ws: Written[], kind: LineKind) => ws.filter((w) => w.kind === kind).reduce((a, w) => a + w.bytes, 0);
  const access = bytes(ACCESS_LOG_LINE);
  const rows: Record<string, number> = {
    'consumer application lines': sum(r.consumer, 'app') / BATCH,
    'consumer EMF lines': sum(r.consumer, 'emf') / BATCH,
    'consumer other lines': sum(r.consumer, 'other') / BATCH,
    'API application lines': sum(r.api, 'app') / BATCH,
    'API EMF lines': sum(r.api, 'emf') / BATCH,
    'API other lines': sum(r.api, 'other') / BATCH,
    'API access-log line (modelled)': access,
  };
  const total = Object.values(rows).reduce((a, b) => a + b, 0);
  rows['total bytes per task'] = total;
  rows['  without the access log'] = total - access;
  // The lines written, and the access-log line of the task's submit.
  rows['log events per task'] = (r.consumer.length + r.api.length) / BATCH + 1;
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
  const lean = createLogger({ level: 'INFO' });
  const lines = ITERATIONS * BATCH;
  return {
    'metrics: hand-written EMF (shared/service/observability.ts)':
      cpuMicros(ITERATIONS, batch(createMetrics())) / BATCH,
    'log line: createLogger().info': cpuMicros(lines, () => lean.info('task succeeded', FIELDS)),
    'log line: createLogger().debug at INFO (dropped)': cpuMicros(lines, () => lean.debug('task succeeded', FIELDS)),
  };
}

// --- main ---------------------------------------------------------------------------------------

const metrics = createMetrics();
/** True while a submit runs: the API function writes no metric line, so its counts go nowhere. */
let apiPhase = false;
const rt = await startLocalRuntime({
  registry,
  port: 0,
  prefix: `bench-logs-${process.pid}`,
  logger: createLogger({ level: 'INFO' }),
  metrics: {
    count: (name, type, v) => (apiPhase ? undefined : metrics.count(name, type, v)),
    durationMs: (type, ms) => metrics.durationMs(type, ms),
  },
  consumers: false,
  sweepIntervalMs: 3_600_000,
});
const byteRuns: Record<string, number>[] = [];
const leftoverInfo = new Map<string, number>();
try {
  for (let run = 0; run < RUNS; run += 1) {
    const r = await measure(rt);
    byteRuns.push(perTask(r));
    for (const w of [...r.consumer, ...r.api]) {
      if (w.kind === 'app' && w.level === 'INFO') {
        const key = w.message ?? '';
        leftoverInfo.set(key, (leftoverInfo.get(key) ?? 0) + w.bytes / BATCH / RUNS);
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

console.log(
  `\nKaj log bytes per task: ${BATCH} first-attempt successes of one type in one consumer batch, and their ${BATCH} ` +
    `submits; median of ${RUNS} runs (${new Date().toISOString()})`,
);
for (const key of Object.keys(byteRuns[0] ?? {})) {
  console.log(
    `  ${key.padEnd(36)}${median(byteRuns.map((r) => r[key] ?? Number.NaN))
      .toFixed(1)
      .padStart(9)}`,
  );
}
console.log(
  '  (shared/service/observability.ts; JSON log format with system logs at WARN: no Lambda platform line;\n' +
    '   the access log of infra/constructs/api.ts)',
);
console.log(`  access-log line: ${ACCESS_LOG_LINE}`);
if (leftoverInfo.size > 0) {
  const perTaskInfo = [...leftoverInfo.values()].reduce((a, b) => a + b, 0);
  console.log(
    `  ${perTaskInfo.toFixed(1)} B/task are INFO lines of the happy path (at debug they would cost nothing): ` +
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
const capture = new Capture();
capture.start();
createLogger({ level: 'INFO' }).info('task succeeded', FIELDS);
const line = capture.stop().reduce((a, l) => a + bytes(l), 0);
console.log(`  ${'bytes of that line: createLogger()'.padEnd(52)}${String(line).padStart(8)}`);
