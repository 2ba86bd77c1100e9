/**
 * CPU per task of the consumer function and per `POST /api/v1/tasks` of the API function, with
 * real AWS SDK clients talking to an instant DynamoDB + SQS endpoint in another process
 * (`bench/lib/instant-endpoint.ts`), so that what is measured is Kaj + the SDK, not a service.
 *
 *   npm run bench:cpu -- [--tasks 2000] [--runs 3] [--variant NAME]... [--logging silent|deployed]...
 *                        [--cpu-prof DIR]   (a V8 CPU profile of each worker, for `node --cpu-prof` readers)
 *
 * Each (variant, logging) pair runs in a fresh worker process (stdout to /dev/null, as a Lambda's
 * log lines go to a pipe): a warm-up round, then `--runs` rounds of
 * 1. submit: `--tasks` requests, one at a time, through the API function's wiring
 *    (`process.cpuUsage()` over the phase ÷ tasks), then
 * 2. consume: the messages those submits sent, as SQS events of 10 records, one invocation at a
 *    time, through the consumer function's wiring, with a no-op handler.
 * It prints the median and the minimum of the rounds (on a shared machine, interference only
 * adds CPU: the minimum is the least disturbed round), per variant and logging mode, and the AWS
 * requests per task the endpoint counted.
 *
 * Variants (`--variant`, repeatable; default all): see `VARIANTS` in bench/lib/cpu-variants.ts.
 * Logging: `silent` (no logger, no metrics) and `deployed` (`createLogger`/`createMetrics` of
 * shared/service/observability.ts at POWERTOOLS_LOG_LEVEL=INFO, flushed after each invocation as the
 * functions do).
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { APIGatewayProxyEventV2, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { PRIORITIES, type Priority } from '../shared/config/resources.js';
import type { FunctionConfig } from '../shared/config/settings.js';
import { runtimeSettings } from '../shared/config/settings.js';
import type { Logger, Metrics } from '../shared/runtime/logger.js';
import { defineTask, TaskRegistry } from '../shared/task/define.js';
import { connectInstantEndpoint, type SentMessage, startInstantEndpoint } from './lib/instant-endpoint.js';
import { VARIANTS, type VariantName } from './lib/cpu-variants.js';
import { median } from './lib/report.js';

const LOGGING = ['silent', 'deployed'] as const;
type Logging = (typeof LOGGING)[number];

interface WorkerArgs {
  readonly endpoint: string;
  readonly variant: VariantName;
  readonly logging: Logging;
  readonly tasks: number;
  /** Write a V8 CPU profile of the worker to this directory. */
  readonly cpuProf?: string;
}

/**
 * One round's µs of CPU per task, user + system and user alone (system time is mostly the loopback
 * TCP stack, which AWS would not cost), and AWS requests per task by target, for each phase.
 */
type RoundResult = {
  submitUs: number;
  submitUserUs: number;
  consumeUs: number;
  consumeUserUs: number;
  submitCalls: Record<string, number>;
  consumeCalls: Record<string, number>;
};

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

// ---------------------------------------------------------------------------------------------
// Worker

/** What a Lambda's environment gives the SDK: region, session credentials (a token adds a signed header). */
function lambdaLikeEnvironment(endpoint: string): Record<string, string> {
  return {
    AWS_REGION: REGION,
    AWS_ACCESS_KEY_ID: 'ASIABENCHBENCHBENCH0',
    AWS_SECRET_ACCESS_KEY: 'benchbenchbenchbenchbenchbenchbenchbench',
    AWS_SESSION_TOKEN: `IQoJb3JpZ2luX2VjE${'x'.repeat(900)}`,
    AWS_ENDPOINT_URL_DYNAMODB: endpoint,
    AWS_ENDPOINT_URL_SQS: endpoint,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'INFO',
    POWERTOOLS_SERVICE_NAME: 'kaj',
    POWERTOOLS_METRICS_NAMESPACE: 'Kaj',
    AWS_LAMBDA_FUNCTION_NAME: 'kaj-bench',
  };
}

function functionConfig(endpoint: string): FunctionConfig {
  const url = (name: string) => `${endpoint}/${ACCOUNT}/${name}`;
  const queueUrls = {} as Record<Priority, string>;
  const deadLetterQueueUrls = {} as Record<Priority, string>;
  for (const p of PRIORITIES) {
    queueUrls[p] = url(`kaj-bench-${p}`);
    deadLetterQueueUrls[p] = url(`kaj-bench-${p}-dlq`);
  }
  return {
    tableName: 'kaj-bench-tasks',
    queueUrls,
    deadLetterQueueUrls,
    settings: runtimeSettings(),
    idSecret: 'kaj-bench-id-secret',
  };
}

const noop = defineTask({
  type: 'noop',
  schema: z.object({ n: z.number().int() }),
  handler: async () => undefined,
});

function submitEvent(n: number): APIGatewayProxyEventV2 {
  const body = JSON.stringify({ type: 'noop', payload: { n } });
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/api/v1/tasks',
    rawQueryString: '',
    headers: { 'content-type': 'application/json', 'content-length': String(body.length), host: 'api.example.com' },
    requestContext: {
      accountId: ACCOUNT,
      apiId: 'bench',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method: 'POST', path: '/api/v1/tasks', protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent: 'bench' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
      authorizer: { iam: { userArn: `arn:aws:sts::${ACCOUNT}:assumed-role/producer/session-1` } },
    } as APIGatewayProxyEventV2['requestContext'],
    body,
    isBase64Encoded: false,
  };
}

/** A message as the event source mapping hands it to the consumer. */
function sqsRecord(m: SentMessage): SQSRecord {
  const queue = m.queueUrl.split('/').pop() ?? '';
  const now = String(Date.now());
  return {
    messageId: m.messageId,
    receiptHandle: `AQEB${m.messageId}${'r'.repeat(300)}`,
    body: m.body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: now,
      SenderId: 'AROABENCH:producer',
      ApproximateFirstReceiveTimestamp: now,
    },
    messageAttributes: Object.fromEntries(
      Object.entries(m.attributes).map(([k, a]) => [
        k,
        { dataType: a.DataType, stringValue: a.StringValue, stringListValues: [], binaryListValues: [] },
      ]),
    ),
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:${REGION}:${ACCOUNT}:${queue}`,
    awsRegion: REGION,
  };
}

const context = { getRemainingTimeInMillis: () => 900_000 };

function perTask(after: Record<string, number>, before: Record<string, number>, tasks: number) {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d > 0) out[k.replace(/^DynamoDB_20120810\./, 'ddb:').replace(/^AmazonSQS\./, 'sqs:')] = d / tasks;
  }
  return out;
}

/** Runs rounds when the parent asks (`'round'`), so the parent can interleave the variants. */
async function worker(args: WorkerArgs): Promise<void> {
  const endpoint = connectInstantEndpoint(args.endpoint);
  const registry = new TaskRegistry([noop]);
  const config = functionConfig(args.endpoint);
  let observe: { logger: Logger; metrics: Metrics & { flush(): void } } | undefined;
  if (args.logging === 'deployed') {
    const { createLogger, createMetrics } = await import('../shared/service/observability.js');
    observe = { logger: createLogger(), metrics: createMetrics() };
  }
  const flush = () => observe?.metrics.flush();
  const fns = await VARIANTS[args.variant](config, registry, observe ?? {});
  let n = 0;

  const round = async (): Promise<RoundResult> => {
    // Submit
    const s0 = await endpoint.stats();
    const events = Array.from({ length: args.tasks }, () => submitEvent(n++));
    let c0 = process.cpuUsage();
    for (const e of events) {
      try {
        const r = await fns.api(e);
        if (r.statusCode !== 202) throw new Error(`submit answered ${r.statusCode}: ${r.body}`);
      } finally {
        flush();
      }
    }
    const submit = process.cpuUsage(c0);
    const s1 = await endpoint.stats();
    // Consume what the submits sent
    const messages = fns.messages?.() ?? (await endpoint.messages());
    if (messages.length !== args.tasks) throw new Error(`expected ${args.tasks} messages, got ${messages.length}`);
    const batches: SQSEvent[] = [];
    for (let i = 0; i < messages.length; i += 10) {
      batches.push({ Records: messages.slice(i, i + 10).map(sqsRecord) });
    }
    c0 = process.cpuUsage();
    for (const batch of batches) {
      try {
        const r = await fns.consumer(batch, context);
        if (r.batchItemFailures.length > 0) throw new Error(`consumer failed ${r.batchItemFailures.length} records`);
      } finally {
        flush();
      }
    }
    const consume = process.cpuUsage(c0);
    const s2 = await endpoint.stats();
    const left = await endpoint.messages();
    if (left.length > 0) throw new Error(`the consumer sent ${left.length} messages; a no-op task sends none`);
    return {
      submitUs: (submit.user + submit.system) / args.tasks,
      submitUserUs: submit.user / args.tasks,
      consumeUs: (consume.user + consume.system) / args.tasks,
      consumeUserUs: consume.user / args.tasks,
      submitCalls: perTask(s1, s0, args.tasks),
      consumeCalls: perTask(s2, s1, args.tasks),
    };
  };

  process.on('message', (m) => {
    if (m === 'round') {
      round().then(
        (r) => process.send?.(r),
        (err: unknown) => {
          process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
          process.exit(1);
        },
      );
    } else if (m === 'stop') {
      void Promise.resolve(fns.close?.()).then(() => process.disconnect?.());
    }
  });
  process.send?.('ready');
}

// ---------------------------------------------------------------------------------------------
// Parent

type Worker = Awaited<ReturnType<typeof startWorker>>;

/** A worker process for one (variant, logging): `round()` runs one round in it. */
async function startWorker(args: WorkerArgs) {
  const child = fork(fileURLToPath(import.meta.url), ['--worker', JSON.stringify(args)], {
    execArgv: [...process.execArgv, ...(args.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${args.cpuProf}`] : [])],
    env: { ...process.env, ...lambdaLikeEnvironment(args.endpoint) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  const next = () =>
    new Promise<unknown>((resolve, reject) => {
      const onMessage = (m: unknown) => {
        child.off('exit', onExit);
        resolve(m);
      };
      const onExit = (code: number | null) => {
        child.off('message', onMessage);
        reject(new Error(`worker ${args.variant}/${args.logging} exited ${code}`));
      };
      child.once('message', onMessage);
      child.once('exit', onExit);
    });
  await next(); // 'ready'
  return {
    args,
    round: async () => {
      const reply = next();
      child.send('round');
      return (await reply) as RoundResult;
    },
    stop: async () => {
      child.send('stop');
      await exited;
    },
  };
}

function calls(c: Record<string, number>): string {
  const total = Object.values(c).reduce((a, b) => a + b, 0);
  return `${total.toFixed(1)} (${Object.entries(c)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(', ')})`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tasks: { type: 'string', default: '2000' },
      runs: { type: 'string', default: '3' },
      variant: { type: 'string', multiple: true },
      logging: { type: 'string', multiple: true },
      worker: { type: 'string' },
      'cpu-prof': { type: 'string' },
    },
  });
  if (values.worker !== undefined) {
    await worker(JSON.parse(values.worker) as WorkerArgs);
    return;
  }
  const tasks = Number(values.tasks);
  const runs = Number(values.runs);
  if (!Number.isInteger(tasks) || tasks < 10 || tasks % 10 !== 0) throw new Error('--tasks: a multiple of 10');
  if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs: a positive integer');
  const variants = (values.variant ?? Object.keys(VARIANTS)) as VariantName[];
  for (const v of variants)
    if (!(v in VARIANTS)) throw new Error(`unknown variant ${v}: ${Object.keys(VARIANTS).join(', ')}`);
  const loggings = (values.logging ?? LOGGING) as Logging[];
  for (const l of loggings) if (!LOGGING.includes(l)) throw new Error(`unknown logging ${l}`);

  const endpoint = await startInstantEndpoint();
  const workers: Worker[] = [];
  try {
    for (const logging of loggings) {
      for (const variant of variants) {
        workers.push(
          await startWorker({
            endpoint: endpoint.url,
            variant,
            logging,
            tasks,
            ...(values['cpu-prof'] === undefined ? {} : { cpuProf: values['cpu-prof'] }),
          }),
        );
      }
    }
    // Round-robin: every worker runs round r before any runs round r + 1, so that whatever else
    // the machine does meanwhile weighs on every variant alike. Round 0 is the warm-up.
    const rounds = new Map<Worker, RoundResult[]>(workers.map((w) => [w, []]));
    for (let r = 0; r <= runs; r++) {
      for (const w of workers) {
        const result = await w.round();
        if (r > 0) rounds.get(w)?.push(result);
      }
    }
    process.stdout.write(
      `CPU µs per task (process.cpuUsage user+system; user alone in brackets), median and minimum of ${runs} rounds × ${tasks} tasks after a warm-up round, variants interleaved; node ${process.version}\n`,
    );
    process.stdout.write(
      `${'variant'.padEnd(20)} ${'logging'.padEnd(9)} ${'submit median'.padStart(16)} ${'min'.padStart(5)} ${'consume median'.padStart(17)} ${'min'.padStart(5)}\n`,
    );
    for (const w of workers) {
      const rs = rounds.get(w) ?? [];
      const med = (f: (r: RoundResult) => number) => median(rs.map(f)).toFixed(0);
      const min = (f: (r: RoundResult) => number) => Math.min(...rs.map(f)).toFixed(0);
      const both = (total: (r: RoundResult) => number, user: (r: RoundResult) => number) =>
        `${med(total)} [${med(user)}]`;
      process.stdout.write(
        `${w.args.variant.padEnd(20)} ${w.args.logging.padEnd(9)} ${both(
          (r) => r.submitUs,
          (r) => r.submitUserUs,
        ).padStart(16)} ${min((r) => r.submitUs).padStart(5)} ${both(
          (r) => r.consumeUs,
          (r) => r.consumeUserUs,
        ).padStart(17)} ${min((r) => r.consumeUs).padStart(5)}\n`,
      );
    }
    process.stdout.write('\nEvery round (submit/consume, µs per task)\n');
    for (const w of workers) {
      const rs = rounds.get(w) ?? [];
      process.stdout.write(
        `  ${w.args.variant.padEnd(20)} ${w.args.logging.padEnd(9)} ${rs.map((r) => `${r.submitUs.toFixed(0)}/${r.consumeUs.toFixed(0)}`).join(' ')}\n`,
      );
    }
    process.stdout.write('\nAWS requests per task (counted at the endpoint, last round)\n');
    for (const w of workers) {
      const last = rounds.get(w)?.at(-1);
      if (last && w.args.logging === loggings[0]) {
        process.stdout.write(
          `  ${w.args.variant.padEnd(20)} submit ${calls(last.submitCalls)}; consume ${calls(last.consumeCalls)}\n`,
        );
      }
    }
  } finally {
    for (const w of workers) await w.stop().catch(() => {});
    await endpoint.stop();
  }
}

await main();
