/**
 * Task types that use flow-control limits, for the flow-control suites (test/integration/flow-control/): loadable by
 * `local/worker.ts` (`--registry-module test/support/limit-tasks.ts`) as well as in-process.
 *
 * Every handler appends to an execution log shared across processes, one line when it starts and
 * one when it ends, stamped with the handler's own clock:
 * `S|E <task_id> <epoch_ms> <attempt> <type> <worker label> <pid>`. The lines are appended
 * synchronously with O_APPEND, so a line written before a SIGKILL is there after it. A test reads
 * concurrency (overlapping S…E intervals) and rates (S stamps) from it.
 *
 * Configured through the environment the test passes to its workers:
 * - `KAJ_LIMIT_LOG`: the execution log (no log when unset);
 * - `KAJ_WORKER_LABEL`: the worker's name in the log (default `pid-<pid>`);
 * - `KAJ_PROVIDER_URL`: the HTTP provider `provider_call` calls (test/support/flow-bench.ts).
 *
 * @module
 */
import { appendFileSync } from 'node:fs';
import * as z from 'zod';
import { defineLanes, defineLimits, defineTask, RetryableError, TaskRegistry } from '../../shared/task/define.js';
import { abortableSleep } from '../../testing/wait.js';
import { readLogFields } from '../../testing/worker-tasks.js';

/** The limits the types use. */
export const LIMITS = defineLimits({
  /** 3 workers × 20 concurrency against this: never more than 5 running at once. */
  pool: { concurrency: 5 },
  /**
   * At most 20 starts in any 1 s window, as the handlers see them: the limiter spaces its grants
   * T = (1,000 + 200) / 20 = 60 ms apart, so a handler that begins up to 200 ms after its grant
   * (three workers and the emulators share two cores) still keeps every window of its own clock
   * at 20 — what `arrivalJitterMs` is for.
   */
  rated: { rate: '20/s', arrivalJitterMs: 200 },
  /**
   * At most 10 starts in any 1 s window, with handlers that block their worker's event loop: a
   * start's timer often fires late there. T = (1,000 + 40) / 10 = 104 ms; a start may be used up
   * to half the 40 ms margin late (the limiter's slack), later it is taken again.
   */
  tenth: { rate: '10/s', arrivalJitterMs: 40 },
  /** A provider's 429 with Retry-After pauses it for every worker. */
  provider: { rate: '10/s', learnRetryAfter: true },
  /** One at a time: tasks behind it are deferred again and again. */
  single: { concurrency: 1 },
  /** Five at a time per tenant. */
  per_tenant: { concurrency: 5 },
});

/** One lane besides the default one. */
export const LANES = defineLanes({ io: {} });

export interface LimitTaskOptions {
  /** Execution log path. @default process.env.KAJ_LIMIT_LOG (no log when unset) */
  readonly execLog?: string;
  /** @default process.env.KAJ_WORKER_LABEL ?? `pid-${pid}` */
  readonly label?: string;
  /** @default process.env.KAJ_PROVIDER_URL */
  readonly providerUrl?: string;
}

const fast = { baseSeconds: 0.2, capSeconds: 1 };

const sleep = abortableSleep;

const sleepPayload = z.object({
  ms: z.number().int().min(0).max(120_000),
  /** Sleep this long instead on the task's first run (counted in the execution log, across processes). */
  first_ms: z.number().int().min(0).max(120_000).optional(),
});

/** The limit task types. Exported as the registry factory `local/worker.ts` looks for. */
export function createRegistry(o: LimitTaskOptions = {}): TaskRegistry {
  const label = o.label ?? process.env.KAJ_WORKER_LABEL ?? `pid-${process.pid}`;
  const logPath = o.execLog ?? process.env.KAJ_LIMIT_LOG;
  const providerUrl = o.providerUrl ?? process.env.KAJ_PROVIDER_URL;
  const log = (event: 'S' | 'E', taskId: string, attempt: number, type: string) => {
    if (logPath)
      appendFileSync(logPath, `${event} ${taskId} ${Date.now()} ${attempt} ${type} ${label} ${process.pid}\n`);
  };
  /** Logs the start; true when no earlier start of the task is in the log (its first run). */
  const start = (taskId: string, attempt: number, type: string): boolean => {
    const earlier = logPath ? readLimitLog(logPath).some((e) => e.event === 'S' && e.taskId === taskId) : false;
    log('S', taskId, attempt, type);
    return !earlier;
  };
  const sleeper = (type: string, uses: readonly ('pool' | 'rated' | 'single')[]) =>
    defineTask({
      type,
      schema: sleepPayload,
      uses,
      maxAttempts: 5,
      backoff: fast,
      handler: async (p, ctx) => {
        const first = start(ctx.taskId, ctx.attempt, type);
        await sleep(first && p.first_ms !== undefined ? p.first_ms : p.ms, ctx.signal);
        log('E', ctx.taskId, ctx.attempt, type);
        return { worker: label, pid: process.pid, attempt: ctx.attempt };
      },
    });

  return new TaskRegistry(
    [
      sleeper('pooled', ['pool']),
      sleeper('rated', ['rated']),
      sleeper('single', ['single']),
      defineTask({
        type: 'busy_rated',
        description:
          'Blocks its worker’s event loop for `spin_ms` (CPU work): the timers of the worker’s other tasks fire late.',
        schema: z.object({ spin_ms: z.number().int().min(0).max(5_000) }),
        uses: ['tenth'],
        maxAttempts: 5,
        backoff: fast,
        handler: async (p, ctx) => {
          log('S', ctx.taskId, ctx.attempt, 'busy_rated');
          const until = Date.now() + p.spin_ms;
          while (Date.now() < until) {
            // CPU work: nothing else of this process runs meanwhile.
          }
          log('E', ctx.taskId, ctx.attempt, 'busy_rated');
          return { worker: label, attempt: ctx.attempt };
        },
      }),
      defineTask({
        type: 'provider_call',
        description: 'Calls the test provider once; a 429 becomes RetryableError({ retryAfterSeconds }).',
        schema: z.object({}),
        uses: ['provider'],
        maxAttempts: 5,
        backoff: fast,
        handler: async (_p, ctx) => {
          log('S', ctx.taskId, ctx.attempt, 'provider_call');
          if (providerUrl === undefined) throw new Error('KAJ_PROVIDER_URL is not set');
          const res = await fetch(`${providerUrl}/call?task=${ctx.taskId}&worker=${label}`, { signal: ctx.signal });
          await res.arrayBuffer();
          log('E', ctx.taskId, ctx.attempt, 'provider_call');
          if (res.status === 429) {
            const after = Number(res.headers.get('retry-after') ?? '1');
            throw new RetryableError('the provider answered 429', { retryAfterSeconds: after, code: 'HTTP_429' });
          }
          if (!res.ok) throw new RetryableError(`the provider answered ${res.status}`);
          return { worker: label, attempt: ctx.attempt };
        },
      }),
      defineTask({
        type: 'tenant_work',
        description: 'Sleeps `ms`, holding a slot of its tenant’s share of `per_tenant`.',
        schema: z.object({ ms: z.number().int().min(0).max(120_000) }),
        uses: [{ limit: 'per_tenant', key: (_p, t) => t.tenant ?? 'none' }],
        handler: async (p, ctx) => {
          log('S', ctx.taskId, ctx.attempt, 'tenant_work');
          await sleep(p.ms, ctx.signal);
          log('E', ctx.taskId, ctx.attempt, 'tenant_work');
          return { worker: label, attempt: ctx.attempt };
        },
      }),
      defineTask({
        type: 'io_work',
        description: 'A task of the io lane.',
        schema: z.object({}),
        lane: 'io',
        handler: async (_p, ctx) => {
          log('S', ctx.taskId, ctx.attempt, 'io_work');
          log('E', ctx.taskId, ctx.attempt, 'io_work');
          return { worker: label, attempt: ctx.attempt };
        },
      }),
    ],
    { lanes: LANES, limits: LIMITS },
  );
}

/** One line of the execution log. */
export interface LimitExecution {
  readonly event: 'S' | 'E';
  readonly taskId: string;
  /** The handler's clock (epoch ms). */
  readonly at: number;
  readonly attempt: number;
  readonly type: string;
  readonly worker: string;
  readonly pid: number;
}

/** Reads an execution log (missing file: empty). A torn last line (a kill mid-write) is skipped. */
export function readLimitLog(path: string): LimitExecution[] {
  const out: LimitExecution[] = [];
  for (const [event, taskId, at, attempt, type, worker, pid] of readLogFields(path)) {
    if ((event !== 'S' && event !== 'E') || !taskId || !at || !attempt || !type || !worker || !pid) continue;
    out.push({ event, taskId, at: Number(at), attempt: Number(attempt), type, worker, pid: Number(pid) });
  }
  return out;
}

/** One run of a handler: from its start to its end (`end` undefined: it never ended, e.g. killed). */
export interface Run {
  readonly taskId: string;
  readonly worker: string;
  readonly start: number;
  readonly end: number | undefined;
}

/** The runs in a log, pairing each start with the next end of the same task on the same process. */
export function runsOf(entries: readonly LimitExecution[]): Run[] {
  const open = new Map<string, LimitExecution[]>();
  const runs: Run[] = [];
  for (const e of entries) {
    const key = `${e.taskId} ${e.pid}`;
    if (e.event === 'S') {
      open.set(key, [...(open.get(key) ?? []), e]);
      continue;
    }
    const started = open.get(key)?.shift();
    if (started !== undefined) runs.push({ taskId: e.taskId, worker: e.worker, start: started.at, end: e.at });
  }
  for (const list of open.values()) {
    for (const s of list) runs.push({ taskId: s.taskId, worker: s.worker, start: s.at, end: undefined });
  }
  return runs.sort((a, b) => a.start - b.start);
}

/**
 * The most runs in progress at once. A run holds [start, end): at equal stamps an end comes
 * before a start (a slot is released after its handler's end line, never before). A run without
 * an end counts until `openUntil`.
 */
export function maxConcurrent(runs: readonly Run[], openUntil = Number.POSITIVE_INFINITY): number {
  const events: [number, number][] = [];
  for (const r of runs) {
    events.push([r.start, 1]);
    events.push([r.end ?? openUntil, -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, delta] of events) {
    now += delta;
    max = Math.max(max, now);
  }
  return max;
}

/** The most stamps in any window [t, t + windowMs). */
export function maxInWindow(stamps: readonly number[], windowMs: number): number {
  const sorted = [...stamps].sort((a, b) => a - b);
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi += 1) {
    while ((sorted[hi] as number) - (sorted[lo] as number) >= windowMs) lo += 1;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}
