/**
 * Embedded AWS emulators for Kaj's local runtime and integration tests.
 *
 * - SQS: `local-aws-sqs` (patched, see `patches/local-aws-sqs+2.0.2.patch`), in this process.
 * - DynamoDB: `dynalite`, in this process (in memory, or LevelDB when `dataDir` is given; then
 *   its secondary indexes are rebuilt from the items before it opens, see dynalite-indexes.ts).
 * - Optionally moto (`python3 -m moto.server`, or its one-request-at-a-time launcher) as a child
 *   process, for checks against a second, independent emulator.
 * - The targets (embedded, moto, an endpoint) the integration suites and the soak run on.
 *
 * @module
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import dynalite from 'dynalite';
import { createRequestHandler } from 'local-aws-sqs';
import { EMULATOR_ACCOUNT_ID, EMULATOR_REGION, type Endpoints } from '../shared/aws/wiring.js';
import { rebuildSecondaryIndexes, type IndexRebuildReport } from './dynalite-indexes.js';

/** Endpoints of the emulators started by {@link startEmulators}. */
export interface RunningEmulators {
  /** SQS endpoint, e.g. `http://127.0.0.1:45123`. */
  sqsEndpoint: string;
  /** DynamoDB endpoint, e.g. `http://127.0.0.1:45124`. */
  dynamoEndpoint: string;
  /** With `dataDir`: what the start-up rebuild of the secondary indexes found and fixed. */
  indexRebuild?: IndexRebuildReport;
  /** Closes both servers (dropping open connections, e.g. long polls). Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link startEmulators}. */
export interface StartEmulatorsOptions {
  /** Interface to listen on; default `127.0.0.1`. */
  host?: string;
  /** SQS port; 0 or omitted picks a free port. */
  sqsPort?: number;
  /** DynamoDB port; 0 or omitted picks a free port. */
  dynamoPort?: number;
  /** Directory where dynalite persists tables (LevelDB); in memory when omitted. */
  dataDir?: string;
}

// Account id (moto's `MOTO_ACCOUNT_ID` below too) and region of the emulators' queue URLs and ARNs.
export { EMULATOR_ACCOUNT_ID, EMULATOR_REGION };

/**
 * Starts local-aws-sqs and dynalite in this process.
 *
 * SQS runs with `emulateQueueCreationLifecycle: false` (a deleted queue's name can be
 * reused at once) and `validateDlqDestination: true` (a RedrivePolicy's DLQ must exist).
 * DynamoDB tables turn ACTIVE at once (CreateTable itself still answers CREATING).
 *
 * @throws if a port cannot be bound; nothing is left running in that case.
 */
export async function startEmulators(opts: StartEmulatorsOptions = {}): Promise<RunningEmulators> {
  const host = opts.host ?? '127.0.0.1';
  // Before dynalite opens the store (and anything can query it): a previous process killed
  // mid-write may have left the indexes out of step with the items (see dynalite-indexes.ts).
  const indexRebuild = opts.dataDir === undefined ? undefined : await rebuildSecondaryIndexes(opts.dataDir);

  // createRequestHandler rather than createSqsServer: the latter never rejects on a listen error.
  const { service, requestHandler } = createRequestHandler({
    port: opts.sqsPort ?? 0,
    hostname: host,
    accountId: EMULATOR_ACCOUNT_ID,
    region: EMULATOR_REGION,
    emulateQueueCreationLifecycle: false,
    validateDlqDestination: true,
  });
  const sqs = createServer((req, res) => void requestHandler(req, res));
  const sqsPort = await listen(sqs, opts.sqsPort ?? 0, host);
  service.PORT = sqsPort; // queue URLs carry the real port when 0 was asked for

  const dynamo = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(opts.dataDir !== undefined ? { path: opts.dataDir } : {}),
  });
  const dynamoRequests = inFlight(dynamo);
  let dynamoPort: number;
  try {
    dynamoPort = await listen(dynamo, opts.dynamoPort ?? 0, host);
  } catch (err) {
    await closeServer(sqs);
    // dynalite closes its store (and so releases the LevelDB lock of dataDir) only from the
    // close() of a listening server: listen anywhere, then close.
    await listen(dynamo, 0, '127.0.0.1')
      .then(() => closeServer(dynamo))
      .catch(() => undefined);
    throw err;
  }

  let stopping: Promise<void> | undefined;
  return {
    sqsEndpoint: `http://${host}:${sqsPort}`,
    dynamoEndpoint: `http://${host}:${dynamoPort}`,
    ...(indexRebuild === undefined ? {} : { indexRebuild }),
    stop() {
      // dynalite closes its store once its HTTP server has closed, without waiting for a request
      // already queued on one of its item locks, which then throws "Database is closed" from a
      // timer (an uncaught exception): let the requests in flight end first (at most 3 s).
      stopping ??= Promise.all([closeServer(sqs), dynamoRequests.settled(3_000).then(() => closeServer(dynamo))]).then(
        () => undefined,
      );
      return stopping;
    },
  };
}

/** Counts a server's requests in flight; `settled` resolves once none is (or after `maxMs`). */
function inFlight(server: Server): { settled(maxMs: number): Promise<void> } {
  let active = 0;
  server.on('request', (_req, res: { once(event: 'close', f: () => void): void }) => {
    active += 1;
    res.once('close', () => {
      active -= 1;
    });
  });
  return {
    async settled(maxMs) {
      const deadline = Date.now() + maxMs;
      while (active > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    },
  };
}

async function listen(server: Server, port: number, host: string): Promise<number> {
  // No idle timeout on keep-alive connections (Node's default closes them after 5 s). The clients
  // of these servers mostly live in the same process: when the server's idle timer fires in the
  // same turn of the event loop as a client's write on that socket (a loaded machine stretches
  // the turn), the client reads ECONNRESET for a request that was never served. stop() still
  // closes every connection (closeAllConnections).
  server.keepAliveTimeout = 0;
  server.listen(port, host);
  await once(server, 'listening'); // rejects on 'error' (e.g. EADDRINUSE)
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('server has no TCP address');
  return addr.port;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) =>
      err && (err as NodeJS.ErrnoException).code !== 'ERR_SERVER_NOT_RUNNING' ? reject(err) : resolve(),
    );
    server.closeAllConnections(); // keep-alive sockets and pending long polls
  });
}

/** A moto server started by {@link startMoto}. */
export interface RunningMoto {
  /** e.g. `http://localhost:5000`. */
  endpoint: string;
  /** SIGTERM, then SIGKILL if it has not exited within 3 s. Idempotent. */
  stop(): Promise<void>;
}

let motoChecked: boolean | undefined;

/** Whether `python3 -c "import moto"` succeeds (checked once, then cached). */
export function motoAvailable(): boolean {
  motoChecked ??= spawnSync('python3', ['-c', 'import moto'], { stdio: 'ignore', timeout: 30_000 }).status === 0;
  return motoChecked;
}

/**
 * moto's server run one request at a time, so that its conditional writes are atomic and its
 * reads isolated as DynamoDB's are (see the file for why `python3 -m moto.server` is not enough).
 * The integration suites, the soak and the deploy rehearsal start moto with it.
 */
export const MOTO_LAUNCHER = fileURLToPath(new URL('./moto_server.py', import.meta.url));

/**
 * Spawns `python3 -m moto.server -H 127.0.0.1 -p PORT` (account `000000000000`), or the script
 * `launcher` with the same arguments, and waits (at most 30 s) until it answers HTTP.
 *
 * @param opts.port - port to use; omitted or 0 picks a free one.
 * @param opts.launcher - a Python script to run instead of `-m moto.server`, e.g. {@link MOTO_LAUNCHER}.
 * @throws if python3 or moto is missing, or moto exits or does not answer in time.
 */
export async function startMoto(opts: { port?: number; launcher?: string } = {}): Promise<RunningMoto> {
  const port = opts.port || (await freePort());
  const server = opts.launcher === undefined ? ['-m', 'moto.server'] : [opts.launcher];
  const child = spawn('python3', [...server, '-H', '127.0.0.1', '-p', String(port)], {
    env: { ...process.env, MOTO_ACCOUNT_ID: EMULATOR_ACCOUNT_ID },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not run python3: ${err.message}`));
    child.once('exit', (code, signal) => resolve(`moto exited (code ${code}, signal ${signal})`));
  });

  const deadline = Date.now() + 30_000;
  let early: string | undefined;
  void exited.then((why) => (early = why));
  for (;;) {
    if (early !== undefined) {
      const hint = /No module named/.test(stderr) ? ' — install it with `pip install "moto[server]"`' : '';
      throw new Error(`${early}${hint}\n${stderr.trim()}`);
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}/moto-api/`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      await killChild(child, exited);
      throw new Error(`moto did not answer on port ${port} within 30 s\n${stderr.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://localhost:${port}`,
    stop() {
      stopping ??= killChild(child, exited);
      return stopping;
    },
  };
}

async function killChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(true), 3000))),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** A local TCP port free right now (nothing listens on it once this returns). */
export async function freePort(): Promise<number> {
  const srv = createNetServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  await new Promise((r) => srv.close(r));
  if (addr === null || typeof addr === 'string') throw new Error('no TCP address');
  return addr.port;
}

// ---------------------------------------------------------------------------------------------
// Targets: which emulators a test suite or a benchmark runs against.

/** Emulators to run against: `start()` gives their endpoints (none: start the embedded ones in-process). */
export interface EmulatorTarget {
  readonly name: string;
  start(): Promise<{ endpoints?: Endpoints; stop(): Promise<void> }>;
}

/** The embedded emulators, started by the local runtime itself. */
export const EMBEDDED_TARGET: EmulatorTarget = {
  name: 'embedded',
  start: async () => ({ stop: async () => {} }),
};

/** moto, through {@link MOTO_LAUNCHER} (one request at a time): one endpoint for both services. */
export const MOTO_TARGET: EmulatorTarget = {
  name: 'moto',
  start: async () => {
    const m = await startMoto({ launcher: MOTO_LAUNCHER });
    return { endpoints: { sqs: m.endpoint, dynamodb: m.endpoint }, stop: () => m.stop() };
  },
};

/** An emulator already running at `url` (LocalStack): one endpoint for both services; nothing to stop. */
export function endpointTarget(url: string): EmulatorTarget {
  return {
    name: `endpoint ${url}`,
    start: async () => ({ endpoints: { sqs: url, dynamodb: url }, stop: async () => {} }),
  };
}

/**
 * Every target available here: the embedded emulators always, moto when `python3 -c "import moto"`
 * works, and `external` (`KAJ_TEST_ENDPOINT`, e.g. LocalStack) when given.
 */
export function emulatorTargets(external: string | undefined = process.env.KAJ_TEST_ENDPOINT): EmulatorTarget[] {
  const list = [EMBEDDED_TARGET];
  if (motoAvailable()) list.push(MOTO_TARGET);
  if (external) list.push(endpointTarget(external));
  return list;
}
