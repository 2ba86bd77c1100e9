/**
 * Task types for the reliability suite and the soak, loadable by `local/worker.ts`
 * (`--registry-module test/integration/reliability/worker-tasks.ts`) as well as in-process.
 *
 * Every handler appends to an execution log (one line per start and per completion), so a test
 * in another process can count how often each task really ran — across SIGKILLs:
 * `S|E <task_id> <attempt> <worker label> <pid>`. The log is appended synchronously with
 * O_APPEND, so a line written before a kill is there after it.
 *
 * @module
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { defineTask, PermanentError, RetryableError, TaskRegistry } from '../../../shared/task/define.js';

export interface WorkerTaskOptions {
  /** Execution log path. @default process.env.KAJ_EXEC_LOG (no log when unset) */
  readonly execLog?: string;
  /** Shown in results and the log. @default process.env.KAJ_WORKER_LABEL ?? `pid-${pid}` */
  readonly label?: string;
}

const fast = { baseSeconds: 0.05, capSeconds: 0.5 };

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason);
    });
  });
}

/** Blocks the whole event loop (no timers, no heartbeats): a GC pause or a frozen VM, from inside. */
function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The worker task types. Exported as the registry factory `local/worker.ts` looks for. */
export function createRegistry(o: WorkerTaskOptions = {}): TaskRegistry {
  const label = o.label ?? process.env.KAJ_WORKER_LABEL ?? `pid-${process.pid}`;
  const logPath = o.execLog ?? process.env.KAJ_EXEC_LOG;
  const log = (event: 'S' | 'E', taskId: string, attempt: number) => {
    if (logPath) appendFileSync(logPath, `${event} ${taskId} ${attempt} ${label} ${process.pid}\n`);
  };
  const done = (taskId: string, attempt: number) => {
    log('E', taskId, attempt);
    return { worker: label, pid: process.pid, attempt };
  };

  return new TaskRegistry([
    defineTask({
      type: 'sleep',
      description: 'Sleeps `ms` on the first attempt and `retry_ms` after; stops when aborted (cooperative).',
      schema: z.object({ ms: z.number().int().min(0).max(120_000), retry_ms: z.number().int().min(0).optional() }),
      handler: async (p, ctx) => {
        log('S', ctx.taskId, ctx.attempt);
        await sleep(ctx.attempt === 1 ? p.ms : (p.retry_ms ?? p.ms), ctx.signal);
        return done(ctx.taskId, ctx.attempt);
      },
    }),
    defineTask({
      type: 'stubborn',
      description: 'Sleeps `ms` ignoring its abort signal (an uncooperative handler).',
      schema: z.object({ ms: z.number().int().min(0).max(120_000) }),
      handler: async (p, ctx) => {
        log('S', ctx.taskId, ctx.attempt);
        await sleep(p.ms);
        return done(ctx.taskId, ctx.attempt);
      },
    }),
    defineTask({
      type: 'block',
      description: 'Blocks the event loop for `ms` on the first attempt (a paused worker); `retry_ms` sleep after.',
      schema: z.object({ ms: z.number().int().min(0).max(120_000), retry_ms: z.number().int().min(0).default(0) }),
      handler: async (p, ctx) => {
        log('S', ctx.taskId, ctx.attempt);
        if (ctx.attempt === 1) blockEventLoop(p.ms);
        else await sleep(p.retry_ms, ctx.signal);
        return done(ctx.taskId, ctx.attempt);
      },
    }),
    defineTask({
      type: 'crasher',
      description: 'Calls process.exit(1): takes its worker down with it.',
      schema: z.object({}),
      handler: async (_p, ctx) => {
        log('S', ctx.taskId, ctx.attempt);
        process.exit(1);
      },
    }),
    defineTask({
      type: 'hog',
      description: 'Allocates until the heap limit kills the process (run the worker with --max-old-space-size).',
      schema: z.object({}),
      handler: async (_p, ctx) => {
        log('S', ctx.taskId, ctx.attempt);
        const hoard: unknown[] = [];
        for (;;) {
          hoard.push(new Array(1_000_000).fill(hoard.length));
          // Let heartbeats run now and then, as a real leaky handler would.
          if (hoard.length % 8 === 0) await sleep(1);
        }
      },
    }),
    defineTask({
      type: 'soak',
      description: 'Fails `fail_attempts` times with a retryable error, or always with a permanent one when `poison`.',
      schema: z.object({
        fail_attempts: z.number().int().min(0).max(10).default(0),
        poison: z.boolean().default(false),
        ms: z.number().int().min(0).max(10_000).default(0),
      }),
      maxAttempts: 5,
      backoff: fast,
      handler: async (p, ctx) => {
        log('S', ctx.taskId, ctx.attempt);
        if (p.ms > 0) await sleep(p.ms, ctx.signal);
        if (p.poison) throw new PermanentError('poison task: always fails', { code: 'POISON' });
        if (ctx.attempt <= p.fail_attempts) throw new RetryableError(`transient failure on attempt ${ctx.attempt}`);
        return done(ctx.taskId, ctx.attempt);
      },
    }),
  ]);
}

/** One line of the execution log. */
export interface Execution {
  readonly event: 'S' | 'E';
  readonly taskId: string;
  readonly attempt: number;
  readonly worker: string;
  readonly pid: number;
}

/** Reads an execution log (missing file: empty). A torn last line (a kill mid-write) is skipped. */
export function readExecLog(path: string): Execution[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const out: Execution[] = [];
  for (const line of text.split('\n')) {
    const [event, taskId, attempt, worker, pid] = line.split(' ');
    if ((event !== 'S' && event !== 'E') || !taskId || !attempt || !worker || !pid) continue;
    out.push({ event, taskId, attempt: Number(attempt), worker, pid: Number(pid) });
  }
  return out;
}
