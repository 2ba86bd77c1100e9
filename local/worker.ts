// The pinned AWS SDK warns that releases after January 2027 need Node 22; Kaj supports Node 20 locally.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * A consumer-only process: the emulated SQS event source mappings and the consumer, for
 * queues and a table that already exist (made by `npm start` or a test's local runtime).
 * No API, no sweeper. It exists so that a worker can be SIGKILLed, SIGSTOPped or run out of
 * memory without taking the emulators, the API or the test with it.
 *
 *   tsx local/worker.ts --sqs URL --dynamodb URL --prefix P [--lease S]
 *                       [--registry-module PATH [--registry-export NAME]] [...]
 *
 * SIGTERM / SIGINT: stop polling, let running tasks finish for --grace-seconds, hand the
 * messages of the rest back to the queue, exit 0. A second signal exits at once (130).
 *
 * @module
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createKajOnAws } from '../shared/service/all-in-one.js';
import { processGate } from '../shared/service/consumer/exclusive-gate.js';
import { laneNames } from '../shared/config/lanes.js';
import { DEFAULTS } from '../shared/config/resources.js';
import { runtimeSettings, type FunctionConfig } from '../shared/config/settings.js';
import { emulatorClients, findResources, laneQueueUrlsOf } from '../shared/aws/wiring.js';
import { TaskRegistry } from '../shared/task/define.js';
import { consoleLogger } from './console-logger.js';
import type { SqsEventSource } from './event-source.js';
import { laneEventSource, laneSources } from './lane-sources.js';
import { RequestCounter } from './request-counter.js';

const USAGE = `usage: tsx local/worker.ts --sqs URL --dynamodb URL --prefix P [options]

  --sqs URL                SQS endpoint (the runtime's, moto's)
  --dynamodb URL           DynamoDB endpoint
  --prefix P               resource prefix the queues and table were made with
  --lease S                lease seconds (default ${DEFAULTS.leaseSeconds}); must match the API/sweeper's
  --crash-loop-receives N  crashes before a task is failed (default ${DEFAULTS.crashLoopReceives})
  --outbox-grace S         outbox grace seconds (default ${DEFAULTS.outboxGraceSeconds})
  --watchdog S             watchdog seconds (default: the shared default)
  --send-first-window S    how long a message waits for its record (default ${DEFAULTS.sendFirstWindowSeconds})
  --registry-module PATH   module exporting the task registry (default: tasks/index.ts)
  --registry-export NAME   its export: a TaskRegistry or a function returning one
                           (default: createRegistry, registry or default, whichever exists)
  --concurrency N          concurrent invocations per priority queue of each lane
                           (default: the lane's localConcurrency / concurrency, else DEFAULTS.concurrency)
  --lane NAME              poll only this lane's queues ("default" for the default lane; default: every lane)
  --max-receive-count N    the queues' redrive maxReceiveCount (default ${DEFAULTS.maxReceiveCount})
  --batch-size N           messages per invocation (default ${DEFAULTS.batchSize})
  --wait-seconds S         long-poll wait (default 20)
  --grace-seconds S        on SIGTERM, how long running tasks may finish (default 30)
  --counts-file PATH       write the AWS requests made and metrics emitted (JSON) there every
                           second and at exit (benchmarks read it)
  --log-level L            debug|info|warn|error (default info)
`;

interface WorkerArgs {
  sqs: string;
  dynamodb: string;
  prefix: string;
  lease?: number;
  crashLoopReceives?: number;
  outboxGrace?: number;
  watchdog?: number;
  sendFirstWindow?: number;
  registryModule?: string;
  registryExport?: string;
  concurrency?: number;
  lane?: string;
  maxReceiveCount?: number;
  countsFile?: string;
  batchSize: number;
  waitSeconds: number;
  graceSeconds: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

function fail(message: string, code = 2): never {
  process.stderr.write(`kaj-worker: ${message}\n\n${USAGE}`);
  process.exit(code);
}

function parse(argv: string[]): WorkerArgs {
  let v;
  try {
    v = parseArgs({
      args: argv,
      options: {
        sqs: { type: 'string' },
        dynamodb: { type: 'string' },
        prefix: { type: 'string' },
        lease: { type: 'string' },
        'crash-loop-receives': { type: 'string' },
        'outbox-grace': { type: 'string' },
        watchdog: { type: 'string' },
        'send-first-window': { type: 'string' },
        'registry-module': { type: 'string' },
        'registry-export': { type: 'string' },
        concurrency: { type: 'string' },
        lane: { type: 'string' },
        'counts-file': { type: 'string' },
        'max-receive-count': { type: 'string' },
        'batch-size': { type: 'string' },
        'wait-seconds': { type: 'string' },
        'grace-seconds': { type: 'string' },
        'log-level': { type: 'string', default: 'info' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (err) {
    fail((err as Error).message);
  }
  if (v.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const num = (name: string, raw: string | undefined, min: number): number | undefined => {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min) fail(`--${name} must be a number >= ${min}, got "${raw}"`);
    return n;
  };
  if (!v.sqs || !v.dynamodb || !v.prefix) fail('--sqs, --dynamodb and --prefix are required');
  const level = v['log-level'];
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error')
    fail(`bad --log-level "${level}"`);
  const args: WorkerArgs = {
    sqs: v.sqs,
    dynamodb: v.dynamodb,
    prefix: v.prefix,
    batchSize: num('batch-size', v['batch-size'], 1) ?? DEFAULTS.batchSize,
    waitSeconds: num('wait-seconds', v['wait-seconds'], 0) ?? 20,
    graceSeconds: num('grace-seconds', v['grace-seconds'], 0) ?? 30,
    logLevel: level,
  };
  const opt = {
    lease: num('lease', v.lease, 3),
    crashLoopReceives: num('crash-loop-receives', v['crash-loop-receives'], 1),
    outboxGrace: num('outbox-grace', v['outbox-grace'], 0),
    watchdog: num('watchdog', v.watchdog, 0),
    sendFirstWindow: num('send-first-window', v['send-first-window'], 0),
    concurrency: num('concurrency', v.concurrency, 1),
    maxReceiveCount: num('max-receive-count', v['max-receive-count'], 1),
  };
  for (const [k, val] of Object.entries(opt))
    if (val !== undefined) (args as unknown as Record<string, unknown>)[k] = val;
  if (v.lane !== undefined) args.lane = v.lane;
  if (v['counts-file'] !== undefined) args.countsFile = v['counts-file'];
  if (v['registry-module'] !== undefined) args.registryModule = v['registry-module'];
  if (v['registry-export'] !== undefined) args.registryExport = v['registry-export'];
  return args;
}

async function loadRegistry(path: string | undefined, exportName: string | undefined): Promise<TaskRegistry> {
  if (path === undefined) return (await import('../tasks/index.js')).registry;
  const mod = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>;
  const names = exportName !== undefined ? [exportName] : ['createRegistry', 'registry', 'default'];
  for (const name of names) {
    let value = mod[name];
    if (typeof value === 'function' && !(value instanceof TaskRegistry)) value = (value as () => unknown)();
    if (value instanceof TaskRegistry) return value;
  }
  throw new Error(`${path} exports no task registry (looked for ${names.join(', ')})`);
}

async function main(): Promise<void> {
  const args = parse(process.argv.slice(2));
  const logger = consoleLogger(args.logLevel);
  const clients = emulatorClients({ sqs: args.sqs, dynamodb: args.dynamodb });
  const { sqs, dynamodb } = clients;

  const registry = await loadRegistry(args.registryModule, args.registryExport);
  let resources;
  try {
    // Never creates anything: the runtime that owns the prefix made the queues and table.
    resources = await findResources(clients, args.prefix, registry.lanes);
  } catch (err) {
    process.stderr.write(
      `kaj-worker: the queues and table of prefix "${args.prefix}" were not found at ${args.sqs} / ${args.dynamodb} ` +
        `(${err instanceof Error ? err.name : String(err)}); start the runtime first\n`,
    );
    process.exit(1);
  }
  const overrides: {
    leaseSeconds?: number;
    crashLoopReceives?: number;
    outboxGraceSeconds?: number;
    watchdogSeconds?: number;
    sendFirstWindowSeconds?: number;
    maxReceiveCount?: number;
  } = {};
  if (args.maxReceiveCount !== undefined) overrides.maxReceiveCount = args.maxReceiveCount;
  if (args.lease !== undefined) overrides.leaseSeconds = args.lease;
  if (args.crashLoopReceives !== undefined) overrides.crashLoopReceives = args.crashLoopReceives;
  if (args.outboxGrace !== undefined) overrides.outboxGraceSeconds = args.outboxGrace;
  if (args.watchdog !== undefined) overrides.watchdogSeconds = args.watchdog;
  if (args.sendFirstWindow !== undefined) overrides.sendFirstWindowSeconds = args.sendFirstWindow;
  const config: FunctionConfig = {
    tableName: resources.tableName,
    ...(resources.limitsTableName === undefined ? {} : { limitsTableName: resources.limitsTableName }),
    ...(resources.historyTableName === undefined ? {} : { historyTableName: resources.historyTableName }),
    queueUrls: resources.queueUrls,
    deadLetterQueueUrls: resources.deadLetterQueueUrls,
    laneQueueUrls: laneQueueUrlsOf(resources),
    settings: runtimeSettings(overrides),
  };
  const counter = args.countsFile === undefined ? undefined : new RequestCounter();
  if (counter !== undefined && args.countsFile !== undefined) {
    counter.instrument(sqs, 'sqs');
    counter.instrument(dynamodb, 'dynamodb');
    const file = args.countsFile;
    setInterval(() => counter.save(file), 1000).unref();
    process.on('exit', () => counter.save(file));
  }
  const kaj = createKajOnAws(config, registry, {
    sqs,
    dynamodb,
    logger,
    ...(counter === undefined ? {} : { metrics: counter.metrics() }),
  });
  const limiter = kaj.limiter;
  counter?.track(() => {
    const gate = processGate.closed;
    return {
      ...(limiter === undefined
        ? {}
        : {
            limiterLateStarts: limiter.lateStarts,
            limiterPausedStarts: limiter.pausedStarts,
            limiterLocalWaits: limiter.localWaits,
          }),
      gateClosedMs: gate.ms,
      ranAlone: gate.alone,
    };
  });

  const every = (n: number | undefined) => (n === undefined ? undefined : { high: n, normal: n, low: n });
  const concurrency = every(args.concurrency);
  const lanes = laneSources(resources, registry.lanes, {
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(concurrency === undefined
      ? {}
      : { laneConcurrency: Object.fromEntries(Object.keys(registry.lanes).map((l) => [l, concurrency])) }),
    batchSize: args.batchSize,
  }).filter((s) => args.lane === undefined || s.lane === args.lane);
  if (lanes.length === 0) fail(`no lane "${args.lane}" (lanes: ${laneNames(registry.lanes).join(', ')})`);
  const sources: SqsEventSource[] = lanes.map((q) =>
    laneEventSource(sqs, q, {
      waitTimeSeconds: args.waitSeconds,
      leaseSeconds: config.settings.leaseSeconds,
      handler: (event, context) => kaj.processBatch(event, context),
      logger,
    }),
  );
  for (const s of sources) s.start();
  // Always printed (whatever the log level): supervisors and tests wait for this line.
  process.stdout.write(
    `kaj-worker ready pid=${process.pid} prefix=${args.prefix} lease_seconds=${config.settings.leaseSeconds} types=${registry.types().join(',')}\n`,
  );

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      logger.warn(`second ${signal}: exiting now; unfinished tasks return after their lease`);
      process.exit(130);
    }
    stopping = true;
    logger.info(`${signal}: stopping polling; running tasks may finish for ${args.graceSeconds}s`);
    void Promise.all(sources.map((s) => s.stop(args.graceSeconds * 1000)))
      .then((counts) => {
        const cutOff = counts.reduce((a, b) => a + b, 0);
        logger.info(
          cutOff === 0
            ? 'worker drained; bye'
            : `${cutOff} invocation(s) cut off; their messages were handed back and their tasks return after their lease`,
        );
        process.exit(0);
      })
      .catch((err: unknown) => {
        logger.error('shutdown failed', { error: String(err) });
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `kaj-worker: could not start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
