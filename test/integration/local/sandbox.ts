/**
 * Runs `npm start` (or local/main.ts) as a real child process, in a scratch project directory
 * that links to this repository's code. `npm start` writes `.kaj/` into its working directory
 * and removes `.kaj/local.json` when it stops: a scratch directory keeps that away from the
 * `.kaj/` of a developer's own `npm start` in this checkout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterEach } from 'vitest';
import { join, resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../../..');

/** A scratch project: `package.json` with this repository's real "start" script, code linked in. */
export function sandbox(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'kaj-start-'));
  for (const entry of ['node_modules', 'local', 'shared', 'console', 'tasks', 'functions', 'tsconfig.json']) {
    symlinkSync(join(REPO, entry), join(dir, entry));
  }
  const real = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: { start: string } };
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify(
      { name: 'kaj-start-sandbox', private: true, type: 'module', scripts: { start: real.scripts.start } },
      null,
      2,
    ),
  );
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Started {
  readonly child: ChildProcess;
  /** Everything written to stdout and stderr so far, in arrival order. */
  output(): string;
  /** Resolves with the exit (code, signal) of the process spawned. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** Waits (bounded) until the output matches. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** SIGKILLs the whole process group if anything of it is still running. Idempotent. */
  kill(): void;
}

/**
 * Spawns `command args` in `dir` as the leader of a new process group (so that a test can
 * clean up everything it started, by that group's id, even if a grandchild outlives npm).
 */
export function start(
  dir: string,
  command: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Started {
  const child = spawn(command, args, {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', ...env },
  });
  let text = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString();
    for (const w of waiters) w();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => {
      resolve({ code, signal, at: Date.now() });
      for (const w of waiters) w();
    }),
  );
  return {
    child,
    output: () => text,
    exited,
    waitFor(re, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = re.exec(text);
          if (m !== null) {
            done();
            resolve(m);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            done();
            reject(new Error(`exited (${child.exitCode ?? child.signalCode}) before printing ${re}:\n${text}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${re} within ${timeoutMs} ms:\n${text}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    kill() {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is gone already.
      }
    },
  };
}

/** Whether a process with this id exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What a running `npm start` wrote to `.kaj/local.json` in its directory. */
export function localState(dir: string): {
  pid: number;
  apiUrl: string;
  endpoints: { sqs: string; dynamodb: string };
  resources: { tableName: string };
} {
  const file = join(dir, '.kaj', 'local.json');
  if (!existsSync(file)) throw new Error(`${file} does not exist`);
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Polls `probe` every 100 ms until it returns a value (bounded). For state in another process. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A process started in a fresh sandbox, and the sandbox's directory. */
export interface SandboxRun extends Started {
  readonly dir: string;
}

/**
 * Starts a command in a fresh sandbox, one per test: registers an `afterEach` that kills what the
 * test started and removes its sandbox.
 */
export function sandboxPerTest(): (
  command: string,
  args: readonly string[],
  env?: Record<string, string>,
) => SandboxRun {
  let box: ReturnType<typeof sandbox> | undefined;
  let proc: Started | undefined;
  afterEach(() => {
    proc?.kill();
    box?.remove();
    proc = undefined;
    box = undefined;
  });
  return (command, args, env) => {
    box = sandbox();
    proc = start(box.dir, command, args, env);
    return { ...proc, dir: box.dir };
  };
}

/** `npm start` on in-memory emulators and a free port, its banner printed. */
export async function startNpm(run: ReturnType<typeof sandboxPerTest>): Promise<SandboxRun> {
  const npm = run('npm', ['start', '--', '--port', '0', '--in-memory']);
  await npm.waitFor(/Kaj is running locally[\s\S]*Ctrl-C drains/);
  return npm;
}
