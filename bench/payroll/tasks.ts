/**
 * The payroll run's task types, as a registry module the worker processes load
 * (`local/worker.ts --registry-module bench/payroll/tasks.ts`):
 * - `render_slip` (cpu lane, holds a `database` connection): renders the slip (simulated: it
 *   sleeps, so the 2-core machine measures scheduling, not itself), then submits the email
 *   through Kaj's own API with the idempotency key `slip:2026-11:emp-N` (a re-run render never
 *   makes a second email task);
 * - `send_slip` (io lane, uses `email_provider`): posts the email with that key as its
 *   `Idempotency-Key`; a 429 becomes `RetryableError({ retryAfterSeconds })`, which pauses the
 *   limit for every worker when the configuration learns from it.
 *
 * Configured by environment (the bench sets it for every worker): PAYROLL_CONFIG (`seed` | `kaj`),
 * PAYROLL_API (the runtime's URL), PAYROLL_PROVIDER (the provider's URL), PAYROLL_RENDER_MS,
 * PAYROLL_PERIOD (`2026-11`), PAYROLL_TIME_SCALE (rates divided by it; `1`), PAYROLL_JITTER_MS (the
 * rate's `arrivalJitterMs` instead of the declared 25).
 *
 * @module
 */
import * as z from 'zod';
import type { LimitDeclarations } from '../../shared/limit/declaration.js';
import { defineLanes, defineLimits, defineTask, RetryableError, TaskRegistry } from '../../shared/task/define.js';

/** The two configurations the issue compares. */
export const PAYROLL_LIMITS = {
  /** The seed's plan: concurrency as a proxy for the provider's rate (45 / 1.2 s = 37.5/s). */
  seed: defineLimits({ email_provider: { concurrency: 45 }, database: { concurrency: 60 } }),
  /** Kaj's: the provider's real rate, with a concurrency cap as a safety net. */
  kaj: defineLimits({
    email_provider: { rate: '40/s', arrivalJitterMs: 25, concurrency: 50, learnRetryAfter: true },
    database: { concurrency: 60 },
  }),
} as const satisfies Record<string, LimitDeclarations>;
export type PayrollConfig = keyof typeof PAYROLL_LIMITS;

/**
 * A configuration's limits with time stretched `timeScale` times (a whole divisor of 40): rates
 * divided by it, concurrencies unchanged — rate × duration, what a concurrency limit binds, stays
 * the same when durations are multiplied by the same factor. `arrivalJitterMs`, when given,
 * replaces the rate's declared one (`--jitter` of the bench).
 */
export function payrollLimits(config: PayrollConfig, timeScale = 1, arrivalJitterMs?: number): LimitDeclarations {
  const declared: LimitDeclarations = PAYROLL_LIMITS[config];
  if (timeScale === 1 && arrivalJitterMs === undefined) return declared;
  if (!Number.isInteger(40 / timeScale)) throw new Error(`time scale ${timeScale} does not divide 40`);
  return Object.fromEntries(
    Object.entries(declared).map(([name, d]) => [
      name,
      d.rate === undefined
        ? d
        : { ...d, rate: `${40 / timeScale}/s`, ...(arrivalJitterMs === undefined ? {} : { arrivalJitterMs }) },
    ]),
  );
}

/** Lanes: renders on the cpu lane (its concurrency models the vCPUs), emails on the io lane. */
export const PAYROLL_LANES = defineLanes({
  cpu: { localConcurrency: { high: 1, normal: 8, low: 1 }, batchSize: 5 },
  io: { localConcurrency: { high: 1, normal: 12, low: 1 }, batchSize: 5 },
});

const slip = z.strictObject({ emp: z.number().int().nonnegative() });

export function createRegistry(env: Readonly<Record<string, string | undefined>> = process.env): TaskRegistry {
  const config = (env.PAYROLL_CONFIG ?? 'kaj') as PayrollConfig;
  const api = env.PAYROLL_API ?? 'http://127.0.0.1:3000';
  const provider = env.PAYROLL_PROVIDER ?? 'http://127.0.0.1:0/send';
  const renderMs = Number(env.PAYROLL_RENDER_MS ?? 800);
  const timeScale = Number(env.PAYROLL_TIME_SCALE ?? 1);
  const jitter =
    env.PAYROLL_JITTER_MS === undefined || env.PAYROLL_JITTER_MS === '' ? undefined : Number(env.PAYROLL_JITTER_MS);
  const period = env.PAYROLL_PERIOD ?? '2026-11';
  const keyOf = (emp: number) => `slip:${period}:emp-${emp}`;

  const render = defineTask({
    type: 'render_slip',
    schema: slip,
    lane: 'cpu',
    uses: ['database'],
    timeoutSeconds: 30,
    handler: async (p, ctx) => {
      await new Promise((r) => setTimeout(r, renderMs));
      const res = await fetch(`${api}/api/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'send_slip', payload: p, idempotency_key: keyOf(p.emp) }),
        signal: ctx.signal,
      });
      if (res.status !== 202 && res.status !== 200) throw new RetryableError(`submit of the email: HTTP ${res.status}`);
      return { email_task: ((await res.json()) as { task_id: string }).task_id };
    },
  });
  const send = defineTask({
    type: 'send_slip',
    schema: slip,
    lane: 'io',
    uses: ['email_provider'],
    maxAttempts: 10,
    timeoutSeconds: 30,
    backoff: { baseSeconds: 1, capSeconds: 5 },
    handler: async (p, ctx) => {
      const res = await fetch(provider, {
        method: 'POST',
        headers: {
          'idempotency-key': keyOf(p.emp),
          'content-type': 'application/json',
          'x-started-at': String(Date.now()),
        },
        body: '{}',
        signal: ctx.signal,
      });
      if (res.status === 429) {
        throw new RetryableError('provider: 429', { retryAfterSeconds: Number(res.headers.get('retry-after') ?? 1) });
      }
      if (!res.ok) throw new RetryableError(`provider: HTTP ${res.status}`);
      return { sent: true };
    },
  });
  return new TaskRegistry([render, send], { lanes: PAYROLL_LANES, limits: payrollLimits(config, timeScale, jitter) });
}
