/**
 * moto for the integration suites, started through `test/support/moto_server.py`: moto's own
 * server, but running one request at a time, so that a conditional UpdateItem is atomic and a
 * GetItem never sees half of one (see that file for why `python3 -m moto.server` is not enough).
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { EMULATOR_ACCOUNT_ID, type RunningMoto } from '../../local/emulators.js';

export { motoAvailable } from '../../local/emulators.js';

/** The launcher every moto of Kaj's is started with (`python3 MOTO_LAUNCHER -H host -p port`). */
export const MOTO_LAUNCHER = fileURLToPath(new URL('./moto_server.py', import.meta.url));

/**
 * Spawns the serializing moto launcher on `127.0.0.1` (account `000000000000`) and waits, at most
 * 30 s, until it answers HTTP.
 * @throws if python3 or moto is missing, or moto exits or does not answer in time.
 */
export async function startMoto(opts: { port?: number } = {}): Promise<RunningMoto> {
  const port = opts.port || (await freePort());
  const child = spawn('python3', [MOTO_LAUNCHER, '-H', '127.0.0.1', '-p', String(port)], {
    env: { ...process.env, MOTO_ACCOUNT_ID: EMULATOR_ACCOUNT_ID },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let early: string | undefined;
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not run python3: ${err.message}`));
    child.once('exit', (code, signal) => resolve(`moto exited (code ${code}, signal ${signal})`));
  });
  void exited.then((why) => (early = why));

  const deadline = Date.now() + 30_000;
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

/** SIGTERM, then SIGKILL if it has not exited within 3 s. */
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

async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  await new Promise((r) => srv.close(r));
  if (addr === null || typeof addr === 'string') throw new Error('no TCP address');
  return addr.port;
}
