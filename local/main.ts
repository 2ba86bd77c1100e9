// The pinned AWS SDK warns that releases after January 2027 need Node 22; Kaj supports Node 20 locally and runs on nodejs22.x on Lambda.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../shared/config/errors.js';
import { ENV } from '../shared/config/resources.js';
import {
  type EnvironmentSettings,
  type ScheduleRules,
  scheduleRulesFromEnvironment,
  settingsFromEnvironment,
} from '../shared/config/settings.js';
import { ThroughputRecorder } from '../console/throughput.js';
import { systemClock } from '../shared/runtime/clock.js';
import { startLocalConsole } from './console.js';
import { consoleLogger } from './console-logger.js';
import { LOCAL_STATE_FILE, type LocalRuntime, startLocalRuntime } from './runtime.js';

/** `npm start [-- --reset] [--port 3000] [--in-memory]`: the whole of Kaj on this machine. */
const USAGE = `usage: npm start -- [--port N] [--reset] [--in-memory] [--log-level debug|info|warn|error]

  --port N        HTTP port of the API (default 3000)
  --reset         delete the saved local state (.kaj/) and start empty
  --in-memory     keep nothing on disk
  --log-level L   default info

Environment (as for the Lambda functions; see docs/deploy.md, Configuration):
  ${ENV.leaseSeconds}   lease of a running task, seconds (3-900; default 60)
  ${ENV.retentionDays}  days a finished task is kept (default 7)
`;

async function main(): Promise<void> {
  let args;
  try {
    args = parseArgs({
      options: {
        port: { type: 'string', default: '3000' },
        reset: { type: 'boolean', default: false },
        'in-memory': { type: 'boolean', default: false },
        'log-level': { type: 'string', default: 'info' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  const port = Number(args.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port must be an integer in [0, 65535], got "${args.port}"\n`);
    process.exit(2);
  }
  const level = args['log-level'];
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error') {
    process.stderr.write(`--log-level must be debug, info, warn or error, got "${level}"\n`);
    process.exit(2);
  }
  // The settings documented as environment variables (docs/deploy.md), read and checked as the
  // Lambda functions read them; a bad value stops here, naming the variable (exit 2, as for a bad flag).
  let envSettings: EnvironmentSettings;
  let scheduleRules: ScheduleRules;
  try {
    envSettings = settingsFromEnvironment(process.env);
    scheduleRules = scheduleRulesFromEnvironment(process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`kaj: ${err.message}\n`);
    process.exit(2);
  }
  const dataDir = resolve('.kaj', 'dynamodb');
  if (args.reset) rmSync(resolve('.kaj'), { recursive: true, force: true });
  if (!args['in-memory']) mkdirSync(dataDir, { recursive: true });

  const logger = consoleLogger(level);
  const localIdentity = process.env.KAJ_LOCAL_IDENTITY || undefined;
  if (localIdentity !== undefined && !/^[\x21-\x7e]{1,256}$/.test(localIdentity)) {
    process.stderr.write(`KAJ_LOCAL_IDENTITY must be 1-256 printable ASCII characters without spaces\n`);
    process.exit(2);
  }
  // Task outcomes per minute, for the console's throughput chart (local/console.ts).
  const throughput = new ThroughputRecorder(systemClock);
  const runtime = await startLocalRuntime({
    port,
    logger,
    metrics: throughput.metrics(),
    settings: envSettings,
    scheduling: scheduleRules,
    ...(args['in-memory'] ? {} : { dataDir }),
    // Owner of requests without an x-kaj-identity header (docs/security.md).
    ...(localIdentity === undefined ? {} : { identity: localIdentity }),
  });
  const r = runtime.resources;
  // Tells `kaj --local` (the admin CLI) where this runtime's emulators and resources are.
  mkdirSync(resolve('.kaj'), { recursive: true });
  writeFileSync(
    resolve(LOCAL_STATE_FILE),
    `${JSON.stringify(
      {
        pid: process.pid,
        apiUrl: runtime.url,
        endpoints: runtime.endpoints,
        resources: r,
        // The CLI acts with this deployment's settings (lease, retention), not the defaults.
        settings: {
          leaseSeconds: runtime.config.settings.leaseSeconds,
          retentionDays: runtime.config.settings.retentionDays,
        },
      },
      null,
      2,
    )}\n`,
  );
  const ui = await startLocalConsole(runtime, { throughput, logger });
  const schedules = await scheduleLines(runtime);
  process.stdout.write(`
  Kaj is running locally.

  Console    ${ui.url}   (queues, tasks, dead letters, schedules; actions on)
  API        ${runtime.url}/api/v1/tasks   (no auth locally; IAM SigV4 on AWS)
  Queues     ${Object.values(r.queueUrls).join('\n             ')}
  DLQs       ${Object.values(r.deadLetterQueueUrls).join('\n             ')}
  Table      ${r.tableName}   (${args['in-memory'] ? 'in memory' : `saved in ${dataDir}; --reset to start empty`})
  Emulators  SQS ${runtime.endpoints.sqs}   DynamoDB ${runtime.endpoints.dynamodb}
  Settings   lease ${runtime.config.settings.leaseSeconds} s (${ENV.leaseSeconds}), retention ${runtime.config.settings.retentionDays} days (${ENV.retentionDays})
  Schedules  ${schedules.join('\n             ')}
${runtime.recovered > 0 ? `  Recovered  ${runtime.recovered} unfinished task(s) from the saved table\n` : ''}${runtime.recoveredDeadLetters > 0 ? `  Recovered  ${runtime.recoveredDeadLetters} dead letter(s) of failed tasks (kaj dlq list --local)\n` : ''}
  Try:
    curl -s -X POST ${runtime.url}/api/v1/tasks -H 'content-type: application/json' \\
      -d '{"type":"send_email","payload":{"to":"ada@example.com","subject":"hi","simulate":{"transient_failures":2}}}'
    curl -s ${runtime.url}/api/v1/tasks/<task_id>

  Ctrl-C drains running tasks and exits.

`);

  let stoppingSince: number | undefined;
  const shutdown = (signal: string) => {
    if (stoppingSince !== undefined) {
      // Under `npm start`, Ctrl-C reaches this process twice: from the terminal (to the whole
      // foreground process group) and relayed by npm, which forwards SIGINT/SIGTERM to its
      // script. Only a deliberate second Ctrl-C, a moment later, forces the exit. (The start
      // script `exec`s node, so this is the process npm waits for: it exits last, after the drain.)
      if (Date.now() - stoppingSince < 1_500) return;
      process.stderr.write('second signal: exiting now; unfinished tasks return after their lease\n');
      process.exit(130);
    }
    stoppingSince = Date.now();
    logger.info(`${signal}: stopping consumers, letting running tasks finish (up to 30 s)`);
    rmSync(resolve(LOCAL_STATE_FILE), { force: true });
    void ui
      .close()
      .then(() => runtime.stop(30_000))
      .then((cutOff) => {
        logger.info(
          cutOff === 0 ? 'drained; bye' : `${cutOff} invocation(s) cut off; their tasks return after their lease`,
        );
        process.exit(0);
      });
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

/** The banner's schedule lines: each schedule with its next fire time (UTC), the first ten. */
async function scheduleLines(runtime: LocalRuntime): Promise<string[]> {
  const service = runtime.kaj.schedules;
  if (service === undefined) return ['(scheduler off)'];
  const { items } = await service.list(undefined, { limit: 200 });
  if (items.length === 0)
    return ['none yet: PUT /api/v1/schedules/{name} or declare them in defineTask({ schedules })'];
  const lines = items
    .slice(0, 10)
    .map(
      (s) =>
        `${s.name}  ${s.type}  ${s.when} (${s.timezone})  ${s.state === 'active' ? `next ${s.next_fire_time ?? '—'}` : s.state}`,
    );
  if (items.length > 10) lines.push(`…and ${items.length - 10} more (kaj schedules list --local)`);
  return lines;
}

main().catch((err: unknown) => {
  process.stderr.write(`kaj: could not start: ${err instanceof Error ? err.message : String(err)}\n`);
  if (err instanceof Error && /EADDRINUSE/.test(String(err)))
    process.stderr.write('  the port is taken: try --port 3001\n');
  process.exit(1);
});
