/**
 * The operator rules every `kaj` command shares: `--version`; one `--yes` rule for every command
 * that changes or removes something; the `--reason` cap (the domain's, refused before any
 * request); and the process itself, spawned as an operator runs it — a reader that goes away
 * (`kaj … | head`) ends it quietly, and SIGTERM stops `kaj ui`, also when npx started it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { YES_HELP } from '../../../cli/confirm.js';
import type { LocalRuntime } from '../../../local/runtime.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { MAX_REASON_LENGTH } from '../../../shared/task/operations.js';
import { type CliRuntime, capturedIo, startCliRuntime, waitFor } from './harness.js';

const BIN = new URL('../../../bin/kaj.mjs', import.meta.url).pathname;
const VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

const registry = new TaskRegistry([defineTask({ type: 'later', schema: z.object({}), handler: async () => ({}) })]);
let runtime: LocalRuntime;
let dir: string;
let kaj: CliRuntime['kaj'];
let stop = async () => {};

beforeAll(async () => {
  ({ runtime, dir, kaj, stop } = await startCliRuntime(registry, 'op'));
}, 60_000);

afterAll(() => stop());

/** A task that waits an hour (in the table): cancellable for the whole test. */
async function delayedTask(): Promise<string> {
  const { record } = await runtime.kaj.submitter.submit(
    { type: 'later', payload: {}, priority: 'normal', delay_seconds: 3_600 },
    { owner: 'local' },
  );
  return record.task_id;
}
const record = async (id: string) => (await runtime.kaj.store.get(id)) as TaskRecord;

/** A terminal that answers `answer` to the one question it is asked. */
function terminal(answer: string) {
  const captured = capturedIo();
  const asked: string[] = [];
  return {
    asked,
    ctx: {
      io: { ...captured.io, stdinIsTTY: true, stderrIsTTY: true },
      prompt: async (q: string) => {
        asked.push(q);
        return answer;
      },
    },
  };
}

describe('kaj --version', () => {
  it("prints package.json's version, exit 0", async () => {
    for (const flag of ['--version', '-V'])
      expect(await kaj([flag])).toEqual({ code: 0, out: `${VERSION}\n`, err: '' });
  });
});

describe('--yes: every command that changes or removes something takes it, asks without it, refuses with no terminal', () => {
  const DESTRUCTIVE = [
    ['dlq', 'redrive'],
    ['dlq', 'purge'],
    ['tasks', 'cancel'],
    ['task', 'cancel'],
    ['schedules', 'delete'],
  ];

  it.each(DESTRUCTIVE)('kaj %s %s --help offers --yes', async (...path) => {
    const r = await kaj([...path, '--help']);
    expect(r.code).toBe(0);
    // Help wraps long lines: compare with the whitespace folded.
    expect(r.out.replace(/\s+/g, ' ')).toContain(`--yes ${YES_HELP}`);
  });

  it('task cancel: refused without --yes and a terminal (exit 2, unchanged); "n" changes nothing (exit 1); "y" or --yes cancels', async () => {
    const id = await delayedTask();
    const refused = await kaj(['task', 'cancel', id, '--local']);
    expect(refused).toMatchObject({ code: 2, out: '' });
    expect(refused.err).toMatch(new RegExp(`refusing to cancel task ${id} without --yes \\(no terminal to ask on\\)`));
    expect(refused.err).not.toMatch(/dry-run/);

    const no = terminal('n');
    expect(await kaj(['task', 'cancel', id, '--local'], no.ctx)).toMatchObject({ code: 1 });
    expect(no.asked).toEqual([`Cancel task ${id}? [y/N] `]);
    expect((await record(id)).status).toBe('queued');

    const yes = terminal('y');
    expect(await kaj(['task', 'cancel', id, '--local'], yes.ctx)).toMatchObject({ code: 0 });
    expect((await record(id)).status).toBe('cancelled');

    const other = await delayedTask();
    expect(await kaj(['task', 'cancel', other, '--local', '--yes', '--reason', 'not needed'])).toMatchObject({
      code: 0,
    });
    expect((await record(other)).audit).toEqual([
      expect.objectContaining({ action: 'cancel', by: 'tester', reason: 'not needed' }),
    ]);
  });

  it('schedules delete: refused without --yes and a terminal (exit 2, the schedule stays); "n" keeps it; --yes deletes', async () => {
    const spec = JSON.stringify({ type: 'later', cron: '0 0 1 1 *' });
    expect((await kaj(['schedules', 'put', 'yearly', '--local', '--spec', spec])).code).toBe(0);
    const refused = await kaj(['schedules', 'delete', 'yearly', '--local']);
    expect(refused).toMatchObject({ code: 2, out: '' });
    expect(refused.err).toMatch(/refusing to delete schedule yearly without --yes/);
    const no = terminal('no');
    expect(await kaj(['schedules', 'delete', 'yearly', '--local'], no.ctx)).toMatchObject({ code: 1 });
    expect((await kaj(['schedules', 'show', 'yearly', '--local'])).code).toBe(0);
    expect(await kaj(['schedules', 'delete', 'yearly', '--local', '--yes'])).toMatchObject({ code: 0 });
    expect((await kaj(['schedules', 'show', 'yearly', '--local'])).code).toBe(1);
  });
});

describe(`--reason: at most ${MAX_REASON_LENGTH} characters, as the console; refused (exit 2) before any request`, () => {
  const long = 'r'.repeat(120 * 1024);

  it.each([
    [['dlq', 'redrive', '--yes']],
    [['dlq', 'redrive', '--yes', '--native']],
    [['dlq', 'purge', '--yes', '--type', 'later']],
    [['tasks', 'cancel', '--yes', '--status', 'delayed']],
    [['task', 'cancel', 'TASK', '--yes']],
  ])('kaj %j --reason <120 KB>', async (args) => {
    const id = await delayedTask();
    const r = await kaj([...args.map((a) => (a === 'TASK' ? id : a)), '--local', '--reason', long]);
    expect(r).toEqual({
      code: 2,
      out: '',
      err: `kaj: error: --reason: at most ${MAX_REASON_LENGTH} characters (got ${long.length})\n(add --help for usage)\n`,
    });
    const after = await record(id);
    expect(after.status).toBe('queued');
    expect(after.audit).toBeUndefined();
  });

  it(`${MAX_REASON_LENGTH} characters are taken`, async () => {
    const id = await delayedTask();
    const reason = 'k'.repeat(MAX_REASON_LENGTH);
    expect(await kaj(['task', 'cancel', id, '--local', '--yes', '--reason', reason])).toMatchObject({ code: 0 });
    expect((await record(id)).audit?.[0]?.reason).toBe(reason);
  });
});

/** The environment of a process started by hand (not by npm). */
function plainEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('npm_')) delete env[k];
  return env;
}

/** What a spawned process wrote, and its end. */
function watch(child: ChildProcess) {
  let out = '';
  let err = '';
  child.stdout?.on('data', (b: Buffer) => void (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => void (err += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { out: () => out, err: () => err, exited };
}

/** The pids of every process below `pid` (Linux: /proc/<pid>/task/<tid>/children). */
function descendants(pid: number): number[] {
  let kids: number[] = [];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .split(/\s+/)
      .filter((s) => s !== '')
      .map(Number);
  } catch {
    return [];
  }
  return kids.flatMap((k) => [k, ...descendants(k)]);
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Whether something accepts connections at this URL: a TCP connect, which the kernel answers
 * whatever the server's load (a page request could take longer than any timeout on a loaded
 * machine); refused once the server is closed.
 */
function serving(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

const STACK_TRACE = /^\s+at .+[(:]\d+|Error: (write )?EPIPE|Unhandled 'error' event/m;

describe('the kaj process', () => {
  it('kaj stats --watch | a reader that stops reading: kaj ends by itself, exit 0, no stack trace', async () => {
    // --watch writes forever: the write after the reader is gone fails with EPIPE, whenever it comes.
    const child = spawn(process.execPath, [BIN, 'stats', '--local', '--watch', '1', '--json'], {
      cwd: dir,
      env: plainEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (b: Buffer) => void (err += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const first = await new Promise<string>((resolve) =>
      child.stdout.once('data', (b: Buffer) => resolve(b.toString())),
    );
    child.stdout.destroy();
    expect(first).toMatch(/^\{"at":/);
    expect(await exited).toBe(0);
    expect(err).not.toMatch(STACK_TRACE);
  }, 120_000);

  it('kaj ui stops on SIGTERM: the console closes its server, exit 143', async () => {
    const child = spawn(process.execPath, [BIN, 'ui', '--local', '--port', '0'], {
      cwd: dir,
      env: plainEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const w = watch(child);
    const url = await waitFor(
      'kaj ui to print its URL',
      async () => /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(w.out())?.[1],
      90_000,
    );
    expect(await serving(url)).toBe(true);
    child.kill('SIGTERM');
    expect(await w.exited).toEqual({ code: 143, signal: null });
    expect(w.err()).toMatch(/console stopped/);
    expect(await serving(url)).toBe(false);
  }, 120_000);

  it('npx kaj ui stops when npx gets SIGTERM (npm hands it to the shell it started kaj through)', async () => {
    // `npx kaj` in a directory whose node_modules/.bin has kaj: npm runs it through `sh -c`.
    mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
    symlinkSync(BIN, join(dir, 'node_modules', '.bin', 'kaj'));
    const npx = spawn('npx', ['--offline', '--no-install', 'kaj', 'ui', '--local', '--port', '0'], {
      cwd: dir,
      env: plainEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const w = watch(npx);
    const url = await waitFor(
      'kaj ui to print its URL',
      async () => /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(w.out())?.[1],
      90_000,
    );
    const below = descendants(npx.pid as number);
    expect(below.length).toBeGreaterThan(0);
    npx.kill('SIGTERM');
    await w.exited;
    try {
      await waitFor('every process npx started to end', async () => (below.some(alive) ? undefined : true), 60_000);
    } finally {
      // Failed: leave no orphan serving behind.
      for (const pid of below.filter(alive)) process.kill(pid, 'SIGKILL');
    }
    expect(await serving(url)).toBe(false);
    expect(w.err()).not.toMatch(STACK_TRACE);
  }, 180_000);
});
