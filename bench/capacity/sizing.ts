/**
 * Capacity arithmetic (docs/capacity.md): Little's law for the consumers, a fluid model of a
 * whole day, and the sizing table. Pure functions; the simulation checks them against the real
 * code during the peak.
 *
 * @module
 */
import type { KajConfig } from '../../infra/config.js';
import { PRIORITIES, type Priority } from '../../shared/config/resources.js';
import { hourlyRates, type Workload } from './workload.js';

/** Invocation overhead assumed by the formulas: poll, invoke, and the consumer's table/queue requests. */
export const INVOCATION_OVERHEAD_S = 0.05;

/**
 * How long a full batch takes: as long as its slowest task. For durations uniform in
 * [d(1−s), d(1+s)] the expected maximum of n is d(1−s) + 2ds·n/(n+1).
 */
export function batchSeconds(taskSeconds: number, spread: number, batchSize: number): number {
  return taskSeconds * (1 - spread) + 2 * taskSeconds * spread * (batchSize / (batchSize + 1));
}

/**
 * Tasks per second a mapping serves when saturated (every invocation busy with a full batch):
 * invocations × batch / batch duration. Below saturation batches are smaller, but then nothing waits.
 */
export function serviceRate(
  maxConcurrency: number,
  batchSize: number,
  taskSeconds: number,
  spread: number,
  overheadS = INVOCATION_OVERHEAD_S,
): number {
  return (maxConcurrency * batchSize) / (batchSeconds(taskSeconds, spread, batchSize) + overheadS);
}

/**
 * Little's law: tasks in flight = arrival rate × time in the system; invocations = tasks in
 * flight / batch size (with the batch lasting as long as its slowest task, plus overhead).
 */
export function invocationsNeeded(
  perSecond: number,
  taskSeconds: number,
  spread: number,
  batchSize: number,
  overheadS = INVOCATION_OVERHEAD_S,
): number {
  return (perSecond * (batchSeconds(taskSeconds, spread, batchSize) + overheadS)) / batchSize;
}

/**
 * The day as a fluid: each second, every priority's queue grows by what the API admits for it
 * and shrinks by what its saturated mapping serves; the API admits at most its rate limit (what
 * it refuses waits at the producers). Deterministic and cheap: the whole day in a blink, where
 * the simulation replays the peak through the real code.
 *
 * Per priority: the saturated service rate, the largest queue and its hour, the queue at
 * midnight, the seconds from the start of the peak until the last task queued then starts (queues
 * are first in, first out) and until the queue is empty again (undefined: not that day); and the
 * most tasks waiting at the producers for the API, and those it admitted.
 */
export function fluidDay(w: Workload, config: KajConfig, overheadS = INVOCATION_OVERHEAD_S) {
  const rates = hourlyRates(w);
  const mu = {} as Record<Priority, number>;
  const q = {} as Record<Priority, number>;
  const max = {} as Record<Priority, { v: number; h: number }>;
  const drained = {} as Record<Priority, number | undefined>;
  const lastStarts = {} as Record<Priority, number>;
  for (const p of PRIORITIES) {
    mu[p] = serviceRate(config.concurrency[p], config.batchSize[p], w.taskSeconds, w.spread, overheadS);
    q[p] = 0;
    max[p] = { v: 0, h: 0 };
  }
  let producers = 0;
  let maxProducers = 0;
  let admitted = 0;
  const peakStart = w.peakHour * 3600;
  for (let s = 0; s < 86_400; s += 1) {
    const h = Math.floor(s / 3600);
    if (s === peakStart) {
      for (const p of PRIORITIES) {
        q[p] += w.backlog * w.mix[p];
        lastStarts[p] = q[p] / mu[p];
      }
    }
    producers += rates[h] as number;
    const admit = Math.min(producers, config.throttling.rateLimit);
    producers -= admit;
    admitted += admit;
    maxProducers = Math.max(maxProducers, producers);
    for (const p of PRIORITIES) {
      q[p] = Math.max(0, q[p] + admit * w.mix[p] - mu[p]);
      if (q[p] > max[p].v) max[p] = { v: q[p], h };
      if (s >= peakStart && drained[p] === undefined && q[p] === 0) drained[p] = s + 1 - peakStart;
    }
  }
  const fluid = (p: Priority) => ({
    serviceRate: mu[p],
    maxBacklog: Math.round(max[p].v),
    maxBacklogHour: max[p].h,
    endOfDayBacklog: Math.round(q[p]),
    lastOfBacklogStartsSeconds: lastStarts[p] ?? 0,
    emptyAgainSeconds: drained[p],
  });
  const perPriority = Object.fromEntries(PRIORITIES.map((p) => [p, fluid(p)])) as Record<
    Priority,
    ReturnType<typeof fluid>
  >;
  return {
    perPriority,
    maxProducerBacklog: Math.round(maxProducers),
    admitted: Math.round(admitted),
  };
}

/** Lambda, API Gateway and DynamoDB defaults that bind first (docs/capacity.md, "Quotas"). */
const QUOTAS = {
  lambdaAccountConcurrency: 1_000,
  mappingMaxConcurrency: 1_000,
  apiAccountRps: 10_000,
  dynamoOnDemandWarmWrites: 4_000,
  dynamoOnDemandTableWrites: 40_000,
} as const;

/**
 * The sizing table: the seed's day shape (peak = 3.0 × the daily mean) scaled to each volume. Per
 * row: the consumer invocations busy at the peak with full batches, the suggested maxConcurrency
 * per priority (peak need × headroom, at least 2, split by the mix), the table writes per second
 * at the peak (twice the steady figure while a backlog drains), what needs more than the
 * account's defaults, and whether `kajDefaults` carry the peak at all.
 * @param writesPerTask table writes per task, measured by the simulation (submit + outcome ...)
 */
export function sizingTable(
  base: Workload,
  volumes: readonly number[],
  durations: readonly number[],
  batchSize: number,
  writesPerTask: number,
  kajDefaults: Pick<KajConfig, 'concurrency' | 'throttling'>,
  headroom = 2,
) {
  const rows = [];
  for (const tasksPerDay of volumes) {
    const peakPerSecond = base.peakPerSecond * (tasksPerDay / base.tasksPerDay);
    for (const taskSeconds of durations) {
      const inFlight = peakPerSecond * taskSeconds;
      const concurrency = {} as Record<Priority, number>;
      let invocations = 0;
      for (const p of PRIORITIES) {
        const need = invocationsNeeded(peakPerSecond * base.mix[p], taskSeconds, base.spread, batchSize);
        invocations += need;
        concurrency[p] = Math.max(2, roundUp(need * headroom));
      }
      const total = PRIORITIES.reduce((s, p) => s + concurrency[p], 0);
      const apiRateLimit = Math.min(QUOTAS.apiAccountRps, roundUp(Math.max(100, peakPerSecond * 3)));
      const writesPerSecond = Math.round(peakPerSecond * writesPerTask * 2);
      const binds: string[] = [];
      if (total > QUOTAS.lambdaAccountConcurrency * 0.8) binds.push(`Lambda concurrency (${total} > 80 % of 1,000)`);
      if (PRIORITIES.some((p) => concurrency[p] > QUOTAS.mappingMaxConcurrency)) {
        binds.push('1,000 per mapping (raise batchSize)');
      }
      if (peakPerSecond * 3 > QUOTAS.apiAccountRps) binds.push('API Gateway 10,000 rps per account (shared)');
      if (writesPerSecond > QUOTAS.dynamoOnDemandWarmWrites) binds.push('DynamoDB warm throughput (pre-warm)');
      const defaultsCarry =
        kajDefaults.throttling.rateLimit >= peakPerSecond &&
        PRIORITIES.every(
          (p) =>
            serviceRate(kajDefaults.concurrency[p], batchSize, taskSeconds, base.spread) >= peakPerSecond * base.mix[p],
        );
      rows.push({
        defaultsCarry,
        tasksPerDay,
        taskSeconds,
        peakPerSecond,
        inFlight,
        invocations,
        concurrency,
        apiRateLimit,
        writesPerSecond,
        binds,
      });
    }
  }
  return rows;
}

/** Rounds up to a figure an operator would write down (2 significant digits). */
function roundUp(v: number): number {
  if (v <= 10) return Math.ceil(v);
  const mag = 10 ** (Math.floor(Math.log10(v)) - 1);
  return Math.ceil(v / mag) * mag;
}
