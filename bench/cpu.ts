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
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod';
import { sqsRecordOf } from '../local/event-source.js';
import { PRIORITIES, type Priority } from '../shared/config/resources.js';
import { functionEnvironment, loadFunctionConfig } from '../shared/config/settings.js';
import type { Logger, Metrics } from '../shared/runtime/logger.js';
import { defineTask, TaskRegistry } from '../shared/task/define.js';
import { apiEvent } from '../testing/fixtures.js';
import { VARIANTS, type VariantName } from './lib/cpu-variants.js';
import { connectInstantEndpoint, type SentMessage, startInstantEndpoint } from './lib/instant-endpoint.js';
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
 * One phase of a round, per task: µs of CPU, user + system and user alone (system time is mostly
 * the loopback TCP stack, which AWS would not cost), and AWS requests by target.
 */
interface Phase {
  readonly us: number;
  readonly userUs: number;
  readonly calls: Record<string, number>;
}
const PHASES = ['submit', 'consume'] as const;
type RoundResult = Record<(typeof PHASES)[number], Phase>;

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

// ---------------------------------------------------------------------------------------------
// Worker

/**
 * What a Lambda's environment gives the SDK (region, session credentials: a token adds a signed
 * header) and the function (its resources, as the stack sets them).
 */
function lambdaLikeEnvironment(endpoint: string): Record<string, string> {
  const urls = (suffix: string) => {
    const out = {} as Record<Priority, string>;
    for (const p of PRIORITIES) out[p] = `${endpoint}/${ACCOUNT}/kaj-bench-${p}${suffix}`;
    return out;
  };
  return {
    ...functionEnvironment({ tableName: 'kaj-bench-tasks', queueUrls: urls(''), deadLetterQueueUrls: urls('-dlq') }),
    KAJ_ID_SECRET: 'kaj-bench-id-secret',
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

const noop = defineTask({
  type: 'noop',
  schema: z.object({ n: z.number().int() }),
  handler: async () => undefined,
});

/** A signed `POST /api/v1/tasks` as API Gateway hands it to the API function. */
function submitEvent(n: number) {
  const body = JSON.stringify({ type: 'noop', payload: { n } });
  return apiEvent('POST', '/api/v1/tasks', {
    body,
    headers: { 'content-length': String(body.length), host: 'api.example.com' },
    userArn: `arn:aws:sts::${ACCOUNT}:assumed-role/producer/session-1`,
  });
}

/** A message as the event source mapping hands it to the consumer. */
function sqsRecord(m: SentMessage): SQSRecord {
  const message = {
    MessageId: m.messageId,
    ReceiptHandle: `AQEB${m.messageId}${'r'.repeat(300)}`,
    Body: m.body,
    MessageAttributes: m.attributes,
  };
  return sqsRecordOf(message, `arn:aws:sqs:${REGION}:${ACCOUNT}:${m.queueUrl.split('/').pop()}`, REGION);
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
  const config = loadFunctionConfig();
  let observe: { logger: Logger; metrics: Metrics & { flush(): void } } | undefined;
  if (args.logging === 'deployed') {
    const { createLogger, createMetrics } = await import('../shared/service/observability.js');
    observe = { logger: createLogger(), metrics: createMetrics() };
  }
  const flush = () => observe?.metrics.flush();
  const fns = await VARIANTS[args.variant](config, registry, observe ?? {});
  let n = 0;

  /** Invokes `invoke` on each input, one at a time, each followed by a metrics flush as the functions do. */
  const phase = async <T>(inputs: readonly T[], invoke: (input: T) => Promise<void>): Promise<Phase> => {
    const s0 = await endpoint.stats();
    const c0 = process.cpuUsage();
    for (const input of inputs) {
      try {
        await invoke(input);
      } finally {
        flush();
      }
    }
    const c = process.cpuUsage(c0);
    const calls = perTask(await endpoint.stats(), s0, args.tasks);
    return { us: (c.user + c.system) / args.tasks, userUs: c.user / args.tasks, calls };
  };

  const round = async (): Promise<RoundResult> => {
    const events = Array.from({ length: args.tasks }, () => submitEvent(n++));
    const submit = await phase(events, async (e) => {
      const r = await fns.api(e);
      if (r.statusCode !== 202) throw new Error(`submit answered ${r.statusCode}: ${r.body}`);
    });
    // Consume what the submits sent, 10 records an event.
    const messages = fns.messages?.() ?? (await endpoint.messages());
    if (messages.length !== args.tasks) throw new Error(`expected ${args.tasks} messages, got ${messages.length}`);
    const batches: SQSEvent[] = [];
    for (let i = 0; i < messages.length; i += 10) batches.push({ Records: messages.slice(i, i + 10).map(sqsRecord) });
    const consume = await phase(batches, async (batch) => {
      const r = await fns.consumer(batch, context);
      if (r.batchItemFailures.length > 0) throw new Error(`consumer failed ${r.batchItemFailures.length} records`);
    });
    const left = await endpoint.messages();
    if (left.length > 0) throw new Error(`the consumer sent ${left.length} messages; a no-op task sends none`);
    return { submit, consume };
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
      const cells = PHASES.map((p) => {
        const med = (f: (x: Phase) => number) => median(rs.map((r) => f(r[p]))).toFixed(0);
        const min = Math.min(...rs.map((r) => r[p].us)).toFixed(0);
        return `${`${med((x) => x.us)} [${med((x) => x.userUs)}]`.padStart(p === 'submit' ? 16 : 17)} ${min.padStart(5)}`;
      });
      process.stdout.write(`${w.args.variant.padEnd(20)} ${w.args.logging.padEnd(9)} ${cells.join(' ')}\n`);
    }
    process.stdout.write('\nEvery round (submit/consume, µs per task)\n');
    for (const w of workers) {
      const rs = rounds.get(w) ?? [];
      process.stdout.write(
        `  ${w.args.variant.padEnd(20)} ${w.args.logging.padEnd(9)} ${rs.map((r) => `${r.submit.us.toFixed(0)}/${r.consume.us.toFixed(0)}`).join(' ')}\n`,
      );
    }
    process.stdout.write('\nAWS requests per task (counted at the endpoint, last round)\n');
    for (const w of workers) {
      const last = rounds.get(w)?.at(-1);
      if (last && w.args.logging === loggings[0]) {
        process.stdout.write(
          `  ${w.args.variant.padEnd(20)} submit ${calls(last.submit.calls)}; consume ${calls(last.consume.calls)}\n`,
        );
      }
    }
  } finally {
    for (const w of workers) await w.stop().catch(() => {});
    await endpoint.stop();
  }
}

await main();
