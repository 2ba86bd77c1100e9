/**
 * What a task costs on AWS, per scenario, from what Kaj's code actually does:
 *
 *   npm run bench:cost -- [--tasks 100] [--runs 3] [--consumer-ms 1.5] [--api-ms 2] [--sweeper-ms 20]
 *                         [--log-bytes 1700] [--access-log-bytes 178] [--batch-fill 10] [--idle-pollers 5] [--log]
 *
 * Drives the real composition root (`createKaj`: `submitter.submit`, `processBatch`, `sweep`) over an
 * in-memory store and queue with a fake clock, through two decorators on the ports: one bills every
 * DynamoDB request by AWS's rules, index writes included, from the item images before and after
 * (bench/lib/dynamo-accounting.ts); one counts every SQS request (bench/lib/request-counting.ts).
 * Lambda's event source mapping is modelled: its receives and deletes are not Kaj's calls but are
 * on the bill. The table's key schema, its indexes and their projections, the functions' memory and
 * the mappings' batch size are read from the synthesized CDK template, so the figures follow the
 * code and the infrastructure as they are when it runs. Prices: bench/prices.ts (dated).
 *
 * Scenarios (tasks go through processBatch in batches of up to the mapping's batch size; the
 * sweeper runs on its schedule of fake time until every task is finished and the outbox is empty):
 *   a  first-attempt success, payload < 1 KB     d  delayed by 1 h (run_at beyond SQS's 15 min)
 *   b  first-attempt success, 1 KB payload        e  failed at once (PermanentError): dead letter
 *   c  one retry, then success                     f  each submit replayed once (same idempotency key)
 *   g, h, i  first-attempt success, submitted with POST /api/v1/tasks/batch, 1 / 10 / 100 a request
 *   l  a workflow run of four steps (the `order` example's shape)
 *   m  a workflow run: two steps, a signal sent through the signal route, two steps, a child task
 *      (the `loan_application` example's shape over 50,000); its child's costs included
 *   p  a run of the `nightly_sales` pipeline, fired by its schedule (one line; the detail: `npm run bench:pipelines`)
 *   j, k  first-attempt success, submitted directly by the producer (`kaj/client/direct`: the same
 *         submit code in the producer's process, on its IAM role), one a call / 10 a call
 *         (`submitMany`: one SendMessageBatch): no API Gateway request, no API function invocation,
 *         no access-log line. The producer's own compute (its Lambda or container time spent in the
 *         submit) is the producer's, not Kaj's: not counted.
 *
 * Log bytes: `--log-bytes` is what one task submitted alone through the API writes (`npm run
 * bench:logs`), of which `--access-log-bytes` is the API's access-log line, written once per HTTP
 * request; a batch request writes one line for all its tasks, a direct submit none.
 *
 * Counts are deterministic (a fake clock, a seeded random source): the runs agree exactly, and the
 * median of ≥ 3 runs is printed anyway with a check that they agreed.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
import { parseArgs } from 'node:util';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { createKaj } from '../shared/service/all-in-one.js';
import { DEFAULTS, PRIORITIES, resourceNames, TABLE_SCHEMA } from '../shared/config/resources.js';
import { runtimeSettings } from '../shared/config/settings.js';
import { defineTask, PermanentError, TaskRegistry } from '../shared/task/define.js';
import { isFinished } from '../shared/task/state-machine.js';
import { type DeploymentModel, readDeployment } from './lib/deployment.js';
import {
  AccountingTaskStore,
  DynamoLedger,
  summarize,
  isInIndex,
  itemSize,
  queryReadUnits,
} from './lib/dynamo-accounting.js';
import { CountingTaskQueue, esmRequests, idleReceivesPerDay, SqsLedger } from './lib/request-counting.js';
import { BYTES_PER_GB, cost, PRICES, PRICES_AS_OF, PRICES_REGION } from './prices.js';
import { BenchClock, seededRandom } from '../testing/determinism.js';
import { fmt as format, median, num, printTable, repeat, usd } from './lib/report.js';
import { MemoryTaskQueue, type ReceivedTaskMessage } from '../testing/memory-task-queue.js';
import { MemoryTaskStore } from '../testing/memory-task-store.js';
import { defineWorkflow } from '../shared/workflow/define.js';
import { historyRetentionDays } from '../shared/workflow/history-store.js';
import { signalRoute } from '../shared/service/api/signals.js';
import { MeteredHistory } from './lib/history-accounting.js';
import { pipelineCostLine } from './pipelines/cost-line.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '100' },
    runs: { type: 'string', default: '3' },
    'consumer-ms': { type: 'string', default: '1.5' },
    'api-ms': { type: 'string', default: '2' },
    'sweeper-ms': { type: 'string', default: '20' },
    'log-bytes': { type: 'string', default: '1700' },
    'access-log-bytes': { type: 'string', default: '178' },
    'batch-fill': { type: 'string' },
    'idle-pollers': { type: 'string', default: '5' },
    log: { type: 'boolean', default: false },
  },
});
const opt = (name: Exclude<keyof typeof values, 'log'>, integer: boolean, min: number): number =>
  num(values[name], name, integer, min);
const OPTS = {
  tasks: opt('tasks', true, 1),
  runs: opt('runs', true, 3),
  consumerMs: opt('consumer-ms', false, 0),
  apiMs: opt('api-ms', false, 0),
  sweeperMs: opt('sweeper-ms', false, 0),
  logBytes: opt('log-bytes', false, 0),
  /** Of `logBytes`, the API's access-log line (infra/constructs/api.ts), once per HTTP request. */
  accessLogBytes: opt('access-log-bytes', false, 0),
  idlePollers: opt('idle-pollers', false, 0),
  /** Messages per consumer batch under the load costed (default: the mapping's batch size, i.e. full batches). */
  batchFill: values['batch-fill'] === undefined ? undefined : opt('batch-fill', true, 1),
};

const DAY_S = 86_400;
const MONTH_S = 30.4375 * DAY_S;
/** DynamoDB storage counts 100 bytes of overhead per item. */
const ITEM_STORAGE_OVERHEAD = 100;
const START = Date.parse('2026-12-01T00:00:00.250Z');
/** Fake time after which a scenario that has not settled is reported as such. */
const HORIZON_MS = 48 * 3600 * 1000;
/** A realistic owner: an IAM role ARN (its length is part of every item). */
const CALLER = { owner: 'arn:aws:iam::123456789012:role/kaj-producer' };
const LAMBDA_CONTEXT = { getRemainingTimeInMillis: () => 300_000 };
/** What a receive of the event source mapping hides a message for: the queue's visibility timeout. */
const VISIBILITY_S = DEFAULTS.queueVisibilityTimeoutSeconds;

const payloadSchema = z.object({
  to: z.string(),
  subject: z.string(),
  body: z.string().optional(),
  fail_attempts: z.number().int().optional(),
  permanent: z.boolean().optional(),
});
const sendEmail = defineTask({
  type: 'send_email',
  schema: payloadSchema,
  handler: async (p, ctx) => {
    if (p.permanent === true) throw new PermanentError('bench: permanent failure');
    if (ctx.attempt <= (p.fail_attempts ?? 0)) throw new Error('bench: transient failure');
    return { sent: true };
  },
});
/** A result of about 100 bytes, as a step returning an id and a few fields would. */
const stepResult = (name: string) => ({ id: `${name}-0123456789abcdef`, status: 'ok', amount: 1234.5 });
const registry = new TaskRegistry([
  sendEmail,
  // The order example's shape (tasks/order.ts): four steps.
  defineWorkflow({
    type: 'order_flow',
    schema: z.object({}),
    run: async (_p, wf) => {
      for (const name of ['reserve_stock', 'charge_payment', 'make_invoice', 'send_email'])
        await wf.step(name, () => stepResult(name));
      return 'done';
    },
  }),
  // The loan example's shape (tasks/loan-application.ts, over 50,000): two steps, the manager's
  // signal (sent by the scenario through the signal route), two steps, the SMS as a child task.
  defineWorkflow({
    type: 'loan_flow',
    schema: z.object({}),
    run: async (_p, wf) => {
      await wf.step('verify_documents', () => stepResult('verify_documents'));
      await wf.step('risk_score', () => stepResult('risk_score'));
      await wf.waitForSignal('manager_approval', { timeout: '48h' });
      await wf.step('contract_pdf', () => stepResult('contract_pdf'));
      await wf.step('disburse', () => stepResult('disburse'));
      await wf.run(sendEmail, SMALL, { name: 'send_sms' });
      return 'approved';
    },
  }),
]);

const SMALL = { to: 'ada@example.com', subject: 'Your report is ready' };
/** A payload whose JSON is exactly 1,024 bytes. */
const ONE_KB = { ...SMALL, body: 'x'.repeat(1024 - JSON.stringify({ ...SMALL, body: '' }).length) };

interface Scenario {
  readonly key: string;
  readonly title: string;
  body(i: number): Record<string, unknown>;
  /** Each submit is sent twice (a client retrying after a lost response). */
  readonly replay?: boolean;
  /** Submitted through `POST /api/v1/tasks/batch`, this many tasks a request (direct: a `submitMany` call). */
  readonly batch?: number;
  /** Submitted by the producer itself (`kaj/client/direct`): no HTTP request, no API invocation. */
  readonly direct?: boolean;
  /** A workflow run: once every run waits, this signal is sent to each through the signal route. */
  readonly signal?: string;
  /** A workflow run: its steps (what a "per million steps" figure divides by). */
  readonly steps?: number;
}

const SCENARIOS: readonly Scenario[] = [
  { key: 'a', title: 'success <1KB', body: () => ({ type: 'send_email', payload: SMALL }) },
  { key: 'b', title: 'success 1KB', body: () => ({ type: 'send_email', payload: ONE_KB }) },
  { key: 'c', title: '1 retry', body: () => ({ type: 'send_email', payload: { ...SMALL, fail_attempts: 1 } }) },
  { key: 'd', title: 'delay 1h', body: () => ({ type: 'send_email', payload: SMALL, delay_seconds: 3600 }) },
  { key: 'e', title: 'failed (DLQ)', body: () => ({ type: 'send_email', payload: { ...SMALL, permanent: true } }) },
  {
    key: 'f',
    title: 'replayed submit',
    body: (i) => ({ type: 'send_email', payload: SMALL, idempotency_key: `order-${i}` }),
    replay: true,
  },
  { key: 'g', title: 'batch of 1', body: () => ({ type: 'send_email', payload: SMALL }), batch: 1 },
  { key: 'h', title: 'batch of 10', body: () => ({ type: 'send_email', payload: SMALL }), batch: 10 },
  { key: 'i', title: 'batch of 100', body: () => ({ type: 'send_email', payload: SMALL }), batch: 100 },
  {
    key: 'j',
    title: 'direct single, excl. producer CPU',
    body: () => ({ type: 'send_email', payload: SMALL }),
    direct: true,
  },
  {
    key: 'k',
    title: 'direct batch 10, excl. producer CPU',
    body: () => ({ type: 'send_email', payload: SMALL }),
    batch: 10,
    direct: true,
  },
  { key: 'l', title: 'workflow: order, 4 steps', body: () => ({ type: 'order_flow', payload: {} }), steps: 4 },
  {
    key: 'm',
    title: 'workflow: loan, 4 steps+signal+child',
    body: () => ({ type: 'loan_flow', payload: {} }),
    signal: 'manager_approval',
    steps: 4,
  },
];

/**
 * The event Lambda's SQS event source mapping invokes the consumer with for messages it received.
 * Each record's message id is its receipt handle (unique per receive), which is what a
 * `batchItemFailures` entry then names.
 */
function toSqsEvent(messages: readonly ReceivedTaskMessage[], queueName: string, now: number): SQSEvent {
  const arn = `arn:aws:sqs:us-east-1:000000000000:${queueName}`;
  const records: SQSRecord[] = messages.map((m) => ({
    messageId: m.receiptHandle,
    receiptHandle: m.receiptHandle,
    body: m.body,
    attributes: {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: String(now),
      SenderId: 'AROAEXAMPLE:kaj',
      ApproximateFirstReceiveTimestamp: String(now),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(m.attributes).map(([k, a]) => [
        k,
        { dataType: a.dataType, stringValue: a.value, stringListValues: [], binaryListValues: [] },
      ]),
    ),
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: 'us-east-1',
  }));
  return { Records: records };
}

/** Per-task figures of one run (everything divided by the number of tasks). */
type Measured = RunResult['measured'];
type RunResult = Awaited<ReturnType<typeof runScenario>>;

/** Kaj over an in-memory store and queue at START, every request it makes billed. */
function world(model: DeploymentModel, seed: number) {
  const clock = new BenchClock(START);
  const dynamo = new DynamoLedger();
  const sqs = new SqsLedger();
  const inner = new MemoryTaskStore();
  const memq = new MemoryTaskQueue({ now: () => clock.now() });
  const history = new MeteredHistory();
  const kaj = createKaj({
    history,
    store: new AccountingTaskStore(inner, model.table, dynamo, TABLE_SCHEMA.outboxIndex.name),
    queue: new CountingTaskQueue(memq, sqs),
    registry,
    settings: runtimeSettings(),
    queueNames: resourceNames('kaj').queues,
    clock,
    random: seededRandom(seed),
  });
  return { kaj, clock, dynamo, sqs, inner, memq, history };
}

async function runScenario(s: Scenario, model: DeploymentModel, seed: number) {
  const n = OPTS.tasks;
  const names = resourceNames('kaj');
  const outboxName = TABLE_SCHEMA.outboxIndex.name;
  const { kaj, clock, dynamo, sqs, inner, memq, history } = world(model, seed);
  const runs: string[] = [];
  let signalled = s.signal === undefined;
  const tag = (t: string): void => {
    dynamo.tag = t;
    sqs.tag = t;
  };

  let httpRequests = 0;
  let apiItems = 0;
  let delivered = 0;
  let acknowledged = 0;
  // The API function and a direct producer run the same submitter: only the request around it differs.
  const viaApi = s.direct !== true;
  const request = (tasks: number): void => {
    if (!viaApi) return;
    httpRequests += 1;
    apiItems += tasks;
  };
  tag(viaApi ? 'api' : 'producer');
  for (let i = 0; s.batch !== undefined && i < n; i += s.batch) {
    const bodies = Array.from({ length: Math.min(s.batch, n - i) }, (_, j) => s.body(i + j));
    await kaj.submitter.submitMany(bodies, CALLER);
    request(bodies.length);
  }
  for (let i = 0; s.batch === undefined && i < n; i++) {
    const body = s.body(i);
    runs.push((await kaj.submitter.submit(body, CALLER)).record.task_id);
    request(1);
    if (s.replay === true) {
      await kaj.submitter.submit(body, CALLER);
      request(1);
    }
  }

  const outbox = model.table.indexes.find((i) => i.name === outboxName);
  const settled = (): boolean =>
    memq.nextVisibleAt() === undefined &&
    [...inner.items.values()].every(
      (item) => isFinished(item.status) && (outbox === undefined || !isInIndex(item, outbox)),
    );
  const intervalMs = model.sweepIntervalSeconds * 1000;
  let nextSweep = START - (START % intervalMs) + intervalMs;
  for (;;) {
    for (let progressed = true; progressed; ) {
      progressed = false;
      for (const p of PRIORITIES) {
        const batch = memq.receive(p, { max: model.mappings.batchSize, visibilitySeconds: VISIBILITY_S });
        if (batch.length === 0) continue;
        progressed = true;
        tag('consumer');
        const response = await kaj.processBatch(toSqsEvent(batch, names.queues[p], clock.now()), LAMBDA_CONTEXT);
        const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
        for (const m of batch) {
          if (failed.has(m.receiptHandle)) continue;
          memq.deleteMessage(p, m.receiptHandle);
          acknowledged += 1;
        }
        delivered += batch.length;
      }
    }
    if (settled()) break;
    if (!signalled) {
      // Every run waits for its signal: someone sends it (an HTTP request to the API function).
      signalled = true;
      tag('api');
      const deps = {
        ...kaj,
        registry,
        history,
        now: () => clock.now(),
        historyRetentionDays: historyRetentionDays(runtimeSettings(), registry),
      };
      for (const id of runs) {
        await signalRoute(id, s.signal as string, { approved: true }, deps, CALLER.owner);
        request(1);
      }
      continue;
    }
    const next = Math.min(memq.nextVisibleAt() ?? Number.POSITIVE_INFINITY, nextSweep);
    if (next > START + HORIZON_MS) break;
    clock.t = Math.max(clock.t, next);
    if (clock.t >= nextSweep) {
      tag('sweeper');
      await kaj.sweep();
      nextSweep += intervalMs;
    }
  }

  const ops = dynamo.ops;
  const d = summarize(ops);
  const calls = (api: string): number =>
    sqs.calls.filter((c) => c.api === api && c.by === 'kaj').reduce((t, c) => t + c.requests, 0);
  const retentionS = runtimeSettings().retentionDays * DAY_S;
  let storageGbMonths = history.storageGbMonths;
  for (const item of inner.items.values()) {
    const created = Date.parse(String(item.created_at)) / 1000;
    const expires = typeof item.expires_at === 'number' ? item.expires_at : created + retentionS;
    storageGbMonths += ((itemSize(item) + ITEM_STORAGE_OVERHEAD) / BYTES_PER_GB) * ((expires - created) / MONTH_S);
  }
  const unsettled = [...inner.items.values()].filter(
    (item) => !isFinished(item.status) || (outbox !== undefined && isInIndex(item, outbox)),
  ).length;
  const measured = {
    tableWru: d.tableWru,
    indexWru: d.indexWru,
    // A sweep queries its partitions whether or not tasks are due: only what a Query reads
    // beyond an empty result is the tasks' (the rest is the idle cost, reported per day).
    rru: d.rru - d.requests.Query * queryReadUnits(0),
    puts: d.requests.PutItem,
    updates: d.requests.UpdateItem,
    gets: d.requests.GetItem,
    conditionFailures: d.conditionFailed,
    indexPut: d.indexChanges.put,
    indexMove: d.indexChanges.move,
    indexUpdate: d.indexChanges.update,
    indexDelete: d.indexChanges.delete,
    sqsSend: calls('SendMessage'),
    sqsSendBatch: calls('SendMessageBatch'),
    sqsVisibility: calls('ChangeMessageVisibility'),
    // A Lambda batch's messages held for one lease at its start, and extended.
    sqsVisibilityBatch: calls('ChangeMessageVisibilityBatch'),
    sqsKajBilled: sqs.calls.filter((c) => c.by === 'kaj').reduce((t, c) => t + c.billed, 0),
    acknowledged,
    httpRequests,
    // Tasks the API function handled (a batch request handles many): what its duration is charged by.
    apiItems,
    deliveries: delivered,
    storageGbMonths,
    historyWru: history.writeUnits,
    historyRru: history.readUnits,
    // Not per task: tasks left unfinished or in the outbox at the horizon.
    unsettled: unsettled * n,
  };
  for (const k of Object.keys(measured) as (keyof typeof measured)[]) measured[k] /= n;
  return { measured, ops };
}

/** Messages per consumer invocation costed: `--batch-fill`, else full batches. */
function batchFill(model: DeploymentModel): number {
  return OPTS.batchFill ?? model.mappings.batchSize;
}

/** Log bytes per task: the access-log line once per HTTP request, the rest (the consumer's) per task. */
function logBytesPerTask(m: Measured): number {
  const accessLog = Math.min(OPTS.accessLogBytes, OPTS.logBytes);
  return m.httpRequests * accessLog + (OPTS.logBytes - accessLog);
}

/** Dollars per million tasks, by service. */
function dollars(m: Measured, model: DeploymentModel) {
  const million = 1_000_000;
  const gb = (mib: number): number => mib / 1024;
  const fill = batchFill(model);
  const consumerInvocations = m.deliveries / fill;
  const esm = esmRequests(m.deliveries, m.acknowledged, fill);
  const dynamoWrites = cost(PRICES.dynamodb.writeRequestUnit, (m.tableWru + m.indexWru + m.historyWru) * million);
  const dynamoReads = cost(PRICES.dynamodb.readRequestUnit, (m.rru + m.historyRru) * million);
  const dynamoStorage = cost(PRICES.dynamodb.storage, m.storageGbMonths * million);
  const sqsBilled = m.sqsKajBilled + esm.receive + esm.deleteBatch;
  const lambda =
    cost(PRICES.lambda.request, (m.httpRequests + consumerInvocations) * million) +
    cost(
      PRICES.lambda.arm64GbSecond,
      million *
        (m.apiItems * (OPTS.apiMs / 1000) * gb(model.functions.api.memoryMiB) +
          m.deliveries * (OPTS.consumerMs / 1000) * gb(model.functions.consumer.memoryMiB)),
    );
  const row = {
    dynamoWrites,
    dynamoReads,
    dynamoStorage,
    dynamodb: dynamoWrites + dynamoReads + dynamoStorage,
    httpApi: cost(PRICES.apiGateway.httpApiRequest, m.httpRequests * million),
    sqs: cost(PRICES.sqs.request, sqsBilled * million),
    lambda,
    logs: cost(PRICES.cloudwatch.logIngestion, (logBytesPerTask(m) * million) / BYTES_PER_GB),
    consumerInvocations,
    esm,
    sqsBilled,
  };
  return { ...row, total: row.dynamodb + row.httpApi + row.sqs + row.lambda + row.logs };
}

function medianOf(runs: readonly Measured[]): Measured {
  const first = runs[0];
  if (first === undefined) throw new Error('no runs');
  const out = { ...first };
  for (const k of Object.keys(out) as (keyof Measured)[]) out[k] = median(runs.map((r) => r[k]));
  return out;
}

/** Idle cost of the sweeper: the requests one sweep of an empty table makes. */
async function idleSweep(model: DeploymentModel): Promise<{ queries: number; rru: number }> {
  const { kaj, dynamo } = world(model, 1);
  await kaj.sweep();
  return {
    queries: dynamo.ops.filter((o) => o.api === 'Query').length,
    rru: dynamo.ops.reduce((t, o) => t + o.rru, 0),
  };
}

const fmt = (v: number, digits = 2): string => format(v, digits, false);

function writeLog(title: string, result: RunResult): void {
  const first = result.ops.find((o) => o.taskId !== undefined)?.taskId;
  console.log(`\nDynamoDB requests of one task in ${title} (AWS rules; index = outbox GSI change and units):`);
  for (const o of result.ops.filter((x) => x.taskId === first)) {
    const index = o.index
      .filter((w) => w.change !== 'none')
      .map((w) => `${w.change} ${w.units}`)
      .join(', ');
    const units = o.api === 'GetItem' ? `RRU ${fmt(o.rru)}` : `WRU ${o.tableWru}${index ? ` + index ${index}` : ''}`;
    console.log(
      `  ${o.tag.padEnd(8)} ${o.api.padEnd(10)} ${o.ok ? 'ok    ' : 'FAILED'} ${units.padEnd(26)} ${o.label}`,
    );
  }
}

async function main(): Promise<void> {
  const model = await readDeployment();
  const outbox = model.table.indexes.find((i) => i.name === TABLE_SCHEMA.outboxIndex.name);
  const projection =
    outbox === undefined
      ? 'none'
      : outbox.projection.type === 'INCLUDE'
        ? `INCLUDE ${outbox.projection.nonKeyAttributes.join(',')}`
        : outbox.projection.type;
  console.log(
    `Kaj cost per task — ${OPTS.tasks} tasks per scenario, median of ${OPTS.runs} runs; prices ${PRICES_REGION} as of ${PRICES_AS_OF}`,
  );
  console.log(`Model: ${model.source}`);
  console.log(
    `  table key ${model.table.partitionKey}; GSIs: ${model.table.indexes.map((i) => `${i.name} (${i.partitionKey}${i.sortKey ? `, ${i.sortKey}` : ''}; ${i.projection.type})`).join(', ') || 'none'}`,
  );
  const f = model.functions;
  console.log(
    `  memory MiB: api ${f.api.memoryMiB}, consumer ${f.consumer.memoryMiB}, sweeper ${f.sweeper.memoryMiB} (${f.consumer.architecture}); ` +
      `${model.mappings.count} SQS mappings, batch ${model.mappings.batchSize}; sweep every ${model.sweepIntervalSeconds} s`,
  );
  for (const w of model.warnings) console.log(`  note: ${w}`);

  const results: { s: Scenario; m: Measured; identical: boolean; first: RunResult }[] = [];
  for (const s of SCENARIOS) {
    const runs = await repeat(OPTS.runs, (r) => runScenario(s, model, r));
    const ms = runs.map((r) => r.measured);
    // Storage depends on when a task finishes (a retry's jittered delay): compare the counts.
    const counts = (m: Measured): string => JSON.stringify({ ...m, storageGbMonths: 0 });
    const identical = ms.every((m) => counts(m) === counts(ms[0] as Measured));
    results.push({ s, m: medianOf(ms), identical, first: runs[0] as RunResult });
  }

  const cols = results.map((r) => `(${r.s.key}) ${r.s.title}`);
  const widths = [44, ...cols.map((c) => Math.max(13, c.length))];
  const per = (f: (m: Measured) => string): string[] => results.map((r) => f(r.m));
  const $ = (f: (d: ReturnType<typeof dollars>) => number): string[] => results.map((r) => usd(f(dollars(r.m, model))));
  const rows: string[][] = [
    ['DynamoDB, per task (AWS rules)'],
    ['  table WRU', ...per((m) => fmt(m.tableWru))],
    [`  index WRU (${TABLE_SCHEMA.outboxIndex.name}, ${projection})`, ...per((m) => fmt(m.indexWru))],
    ['  history WRU / RRU (workflows)', ...per((m) => `${fmt(m.historyWru)}/${fmt(m.historyRru)}`)],
    ['  total WRU', ...per((m) => fmt(m.tableWru + m.indexWru + m.historyWru))],
    [
      '  index writes put/move/update/delete',
      ...per((m) => [m.indexPut, m.indexMove, m.indexUpdate, m.indexDelete].map((x) => fmt(x)).join('/')),
    ],
    ['  RRU', ...per((m) => fmt(m.rru, 3))],
    ['  requests Put/Update/Get', ...per((m) => `${fmt(m.puts)}/${fmt(m.updates)}/${fmt(m.gets)}`)],
    ['  of which condition failed', ...per((m) => fmt(m.conditionFailures))],
    ['SQS, per task'],
    [
      '  Kaj: Send/SendBatch/ChangeVisibility(Batch)',
      ...per((m) => `${fmt(m.sqsSend)}/${fmt(m.sqsSendBatch)}/${fmt(m.sqsVisibility)}/${fmt(m.sqsVisibilityBatch)}`),
    ],
    [
      '  ESM (modelled): Receive/DeleteBatch',
      ...results.map((r) => {
        const e = dollars(r.m, model).esm;
        return `${fmt(e.receive)}/${fmt(e.deleteBatch)}`;
      }),
    ],
    ['  billed requests (64 KB chunks)', ...results.map((r) => fmt(dollars(r.m, model).sqsBilled))],
    ['Calls, per task'],
    [
      '  Kaj SDK calls (DynamoDB + SQS)',
      ...per((m) =>
        fmt(m.puts + m.updates + m.gets + m.sqsSend + m.sqsSendBatch + m.sqsVisibility + m.sqsVisibilityBatch),
      ),
    ],
    ['  HTTP API requests', ...per((m) => fmt(m.httpRequests))],
    [
      '  Lambda invocations api + consumer',
      ...results.map((r) => `${fmt(r.m.httpRequests)} + ${fmt(dollars(r.m, model).consumerInvocations)}`),
    ],
    ['  deliveries (records to processBatch)', ...per((m) => fmt(m.deliveries))],
    ['  log bytes', ...per((m) => fmt(logBytesPerTask(m), 1))],
    ['$ per million tasks'],
    ['  DynamoDB', ...$((d) => d.dynamodb)],
    [
      '    writes / reads / storage',
      ...results.map((r) => {
        const d = dollars(r.m, model);
        return `${d.dynamoWrites.toFixed(2)}/${d.dynamoReads.toFixed(2)}/${d.dynamoStorage.toFixed(2)}`;
      }),
    ],
    ['  HTTP API', ...$((d) => d.httpApi)],
    ['  SQS', ...$((d) => d.sqs)],
    ['  Lambda', ...$((d) => d.lambda)],
    ['  CloudWatch Logs', ...$((d) => d.logs)],
    ['  total', ...$((d) => d.total)],
    ['Check'],
    [
      '  counts identical in every run / unsettled',
      ...results.map((r) => `${r.identical ? 'yes' : 'NO'} / ${fmt(r.m.unsettled)}`),
    ],
  ];
  console.log('');
  printTable(['', ...cols], rows, widths);

  console.log('\nWorkflows (per run above; a step is one wf.step):');
  for (const r of results.filter((x) => x.s.steps !== undefined)) {
    const total = dollars(r.m, model).total;
    console.log(
      `  (${r.s.key}) ${r.s.title}: ${usd(total)} per million runs = ${usd(total / (r.s.steps as number))} per million steps, all in; ` +
        `Step Functions Standard: $${PRICES.stepFunctions.standardTransition.usd} per ${PRICES.stepFunctions.standardTransition.per.toLocaleString('en-US')} state transitions (at least one per step)`,
    );
  }
  console.log(await pipelineCostLine(model, OPTS));

  writeLog('(a)', results[0]?.first as RunResult);
  if (values.log) for (const r of results.slice(1)) writeLog(`(${r.s.key}) ${r.s.title}`, r.first);

  const idle = await idleSweep(model);
  const sweepsPerDay = DAY_S / model.sweepIntervalSeconds;
  const receivesPerDay = idleReceivesPerDay(OPTS.idlePollers) * model.mappings.count;
  const sweeperGbS = sweepsPerDay * (OPTS.sweeperMs / 1000) * (model.functions.sweeper.memoryMiB / 1024);
  const restSqs = cost(PRICES.sqs.request, receivesPerDay);
  const restDynamo = cost(PRICES.dynamodb.readRequestUnit, idle.rru * sweepsPerDay);
  const restLambda = cost(PRICES.lambda.request, sweepsPerDay) + cost(PRICES.lambda.arm64GbSecond, sweeperGbS);
  const restDay = restSqs + restDynamo + restLambda;
  const usd4 = (v: number): string => usd(v, 4);
  const perMonth = MONTH_S / DAY_S;
  console.log('\nAt rest (no tasks) — fixed costs per deployment, not per task; per day (per month):');
  console.log(
    `  ESM empty receives: ${fmt(receivesPerDay, 0)} (${OPTS.idlePollers} pollers × 86,400 s / 20 s long poll × ${model.mappings.count} queues; --idle-pollers) → SQS ${usd4(restSqs)} (${usd(restSqs * perMonth)})`,
  );
  console.log(
    `  sweeper: ${fmt(sweepsPerDay, 0)} runs × ${idle.queries} Query = ${fmt(idle.rru * sweepsPerDay, 0)} RRU → DynamoDB ${usd4(restDynamo)} (${usd(restDynamo * perMonth)}); ` +
      `${fmt(sweepsPerDay, 0)} invocations × ${OPTS.sweeperMs} ms (--sweeper-ms) → Lambda ${usd4(restLambda)} (${usd(restLambda * perMonth)})`,
  );
  console.log(`  total ${usd4(restDay)} per day, ${usd(restDay * perMonth)} per month (before free tiers)`);

  console.log('\nAssumptions:');
  for (const a of [
    `Lambda duration (billed, wall-clock) per task: consumer ${OPTS.consumerMs} ms per delivery, api ${OPTS.apiMs} ms per task submitted (--consumer-ms, --api-ms; a batch request is charged per task, no saving assumed); logs ${OPTS.logBytes} bytes per task submitted alone through the API (--log-bytes), of which the access-log line, ${OPTS.accessLogBytes} bytes (--access-log-bytes), once per HTTP request.`,
    "Direct (j, k): the producer's requests are the API function's (the same submitter), billed to the same table and queues; its own compute is not counted (it is the producer's, spent wherever it runs). Once per producer process it reads the id secret (Secrets Manager, $0.05 per 10,000 requests) and its identity (STS GetCallerIdentity, free): not per task, not counted.",
    `Batches of ${batchFill(model)} (${OPTS.batchFill === undefined ? "full: load keeps the mapping's batch filled" : '--batch-fill'}): the mapping's ReceiveMessage and DeleteMessageBatch cost 1/${Math.min(10, batchFill(model))} request per message delivered / acknowledged, a consumer invocation runs ${batchFill(model)} deliveries. The scenarios themselves run in batches of up to ${model.mappings.batchSize}.`,
    "ChangeVisibilityBatch: on Lambda the consumer holds a batch's messages for one lease from the start of its invocation (the mapping receives them with the queue's 330 s), so a crashed invocation's messages come back within about one lease: one ChangeMessageVisibilityBatch per invocation (1/batch per task, counted from the scenarios' own batches), more only for batches still running after lease/3. Local pollers receive with one lease and send none.",
    'Counts are deterministic (fake clock, seeded random): the median of the runs equals every run when "counts identical" says yes.',
    'Sweeper Query requests happen every run whatever the load: per task only the read units beyond an empty result count.',
    `Storage: each item (+100 B) kept from creation to its TTL (expires_at); TTL deletes are free; index entries' storage not counted.`,
    'Not counted: status reads (GET), data transfer, free tiers, CloudWatch custom metrics (fixed per metric-month, not per task), KMS.',
  ]) {
    console.log(`  - ${a}`);
  }
}

await main();
