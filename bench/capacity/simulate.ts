/**
 * One replay of the reference workload through Kaj's real code on the virtual clock.
 *
 *   producers ─► API throttle (token bucket: the stage's rate and burst) ─► submitter.submit
 *     ─► MeteredTaskStore + SimTaskQueue ─► SimEventSource per priority ─► processBatch (consumer)
 *   and the sweeper every minute, as EventBridge runs it.
 *
 * What is real: `createKaj` and everything behind it — the submitter, the consumer's claim,
 * heartbeat, timeout and outcome writes, the sweeper. What is modelled: the AWS services (an
 * in-memory table and queues that answer instantly; Lambda's pollers and scaling; the API
 * throttle), the producers (they queue locally when throttled and send as fast as the API
 * admits, so nothing is lost and the wait is counted from the moment a task was produced) and
 * the task handlers (they sleep their duration on the virtual clock).
 *
 * @module
 */
import * as z from 'zod';
import type { KajConfig } from '../../infra/config.js';
import { createKaj, type KajDeps } from '../../shared/service/all-in-one.js';
import { PRIORITIES, type Priority, resourceNames } from '../../shared/config/resources.js';
import { runtimeSettings } from '../../shared/config/settings.js';
import { ExclusiveGate } from '../../shared/service/consumer/exclusive-gate.js';
import type { TaskQueue } from '../../shared/task/task-queue.js';
import type { TaskStore } from '../../shared/task/task-store.js';
import { defineTask, TaskRegistry } from '../../shared/task/define.js';
import { type FunctionConcurrency, SimEventSource } from './event-source.js';
import { attributed, decorate, PeakMeter } from './meter.js';
import { MeteredTaskStore } from './metered-store.js';
import { SimTaskQueue } from './sim-queue.js';
import { VirtualClock } from '../../testing/virtual-clock.js';
import { hourlyRates, SeededRandom, type Workload } from './workload.js';
import { Times as Samples } from '../payroll/sim-provider.js';

export interface SimOptions {
  readonly workload: Workload;
  readonly seed: number;
  /** Replay from this hour of the day (0-23; fractions allowed) ... */
  readonly fromHour: number;
  /** ... measuring from this hour on (what comes before warms the mappings up) ... */
  readonly measureFromHour: number;
  /** ... to this one (may pass 24: the next day has the same shape). */
  readonly toHour: number;
  /** Progress lines on stderr. */
  readonly progress?: (line: string) => void;
}

/**
 * What a replay measured. Waits (per priority) are those of the tasks produced in the measured
 * period: started ones, and those still waiting at the end counted with their wait so far (a
 * percentile that falls among the latter is a lower bound: `lowerBound`); `p99Fresh` leaves the
 * injected backlog out.
 */
export type SimReport = Awaited<ReturnType<typeof simulate>>;

const STORE_CALLS = ['create', 'get', 'update', 'listOutboxDue'] as const satisfies readonly (keyof TaskStore)[];
const QUEUE_CALLS = [
  'send',
  'sendMany',
  'sendDead',
  'changeVisibility',
  'changeVisibilityMany',
] as const satisfies readonly (keyof TaskQueue)[];

/** Latency of each table / queue request the sweeper makes (its 50 s budget then bounds a sweep). */
const SWEEPER_REQUEST_MS = 10;
/** A Monday, so that the replayed day starts at a clean UTC midnight. */
const DAY_START = Date.UTC(2026, 0, 5);
const HOUR = 3_600_000;

/** `14:15` for a virtual time (`+1d 02:00` on the next day). */
function clockTime(ms: number): string {
  const minutes = Math.round((ms - DAY_START) / 60_000);
  const day = Math.floor(minutes / 1440);
  const hh = String(Math.floor((minutes % 1440) / 60)).padStart(2, '0');
  const mm = String(minutes % 60).padStart(2, '0');
  return `${day > 0 ? `+${day}d ` : ''}${hh}:${mm}`;
}

const quantile = (sorted: Float64Array, q: number): number =>
  sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN);

/**
 * A percentile of waits where some tasks never started: those count with the wait so far
 * (`censored`, a lower bound of their true wait). The true percentile then lies between the
 * combined one and the started tasks' value at the same rank (at least that many tasks waited no
 * longer); it is reported as exact when those agree within 1 %, else as a lower bound.
 */
function waitPercentile(started: Samples, censored: Samples, q: number): { ms: number; lowerBound: boolean } {
  const s = started.sorted();
  const all = new Samples();
  for (const v of s) all.push(v);
  for (const v of censored.sorted()) all.push(v);
  const sorted = all.sorted();
  const ms = quantile(sorted, q);
  const rank = Math.min(sorted.length - 1, Math.floor(q * sorted.length));
  const upper = rank < s.length ? (s[rank] as number) : Number.POSITIVE_INFINITY;
  return { ms, lowerBound: upper > ms * 1.01 + 1 };
}

/** Work the producers have produced and the API has not admitted yet. */
interface Pending {
  readonly priority: Priority;
  readonly at: number;
  readonly ms: number;
}

/** What one priority's tasks went through; `fresh…`: the injected backlog left out. */
const priorityStats = () => ({
  /** Waits of the tasks produced in the measured period that started, and of those that never did. */
  waits: new Samples(),
  freshWaits: new Samples(),
  censored: new Samples(),
  freshCensored: new Samples(),
  arrived: 0,
  ran: 0,
  /** Backlog tasks not started yet, and when the last one started. */
  backlogLeft: 0,
  lastBacklogStart: undefined as number | undefined,
  maxBacklog: 0,
  /** When the queue was back under one batch, from the start of the peak. */
  recoveredMs: undefined as number | undefined,
});

export async function simulate(label: string, config: KajConfig, o: SimOptions) {
  const started = performance.now();
  const w = o.workload;
  const rates = hourlyRates(w);
  const from = DAY_START + o.fromHour * HOUR;
  const measureFrom = DAY_START + o.measureFromHour * HOUR;
  const until = DAY_START + o.toHour * HOUR;
  const peakStart = DAY_START + w.peakHour * HOUR + (o.fromHour > w.peakHour ? 24 * HOUR : 0);

  const time = new VirtualClock(from, { wholeMilliseconds: true });
  const meter = new PeakMeter(() => time.now());
  const store = new MeteredTaskStore(() => time.now(), meter);
  const queue = new SimTaskQueue(time, meter, config.queueVisibilityTimeoutSeconds * 1000);
  // Arrivals and durations draw from their own stream, so both configurations see the same day.
  const arrivals = new SeededRandom(o.seed);
  const stats = Object.fromEntries(PRIORITIES.map((p) => [p, priorityStats()])) as Record<
    Priority,
    ReturnType<typeof priorityStats>
  >;
  /** Tasks whose handler is running (a lazily claimed task still reads `queued` in the table). */
  const running = new Set<string>();

  const work = defineTask({
    type: 'work',
    schema: z.object({ ms: z.number().int().nonnegative(), at: z.number(), b: z.literal(1).optional() }),
    handler: async (payload, ctx) => {
      const s = stats[ctx.priority];
      if (time.now() >= measureFrom) s.ran += 1;
      if (payload.at >= measureFrom) {
        s.waits.push(time.now() - payload.at);
        if (payload.b === undefined) s.freshWaits.push(time.now() - payload.at);
      }
      if (payload.b === 1) {
        s.backlogLeft -= 1;
        s.lastBacklogStart = time.now();
      }
      running.add(ctx.taskId);
      await time.sleep(payload.ms);
      running.delete(ctx.taskId);
      return null;
    },
  });
  const deps: KajDeps = {
    store,
    queue,
    registry: new TaskRegistry([work]),
    settings: runtimeSettings({
      leaseSeconds: config.leaseSeconds,
      retentionDays: config.retentionDays,
      queueVisibilityTimeoutSeconds: config.queueVisibilityTimeoutSeconds,
    }),
    queueNames: resourceNames(config.stackName).queues,
    clock: time,
    random: new SeededRandom(o.seed ^ 0x5eed),
  };
  const storeOf = (who: string): TaskStore => attributed(store, STORE_CALLS, meter, who);
  const queueOf = (who: string): TaskQueue => attributed(queue, QUEUE_CALLS, meter, who);
  const api = createKaj({ ...deps, store: storeOf('api'), queue: queueOf('api') });
  // The sweeper's Lambda waits SWEEPER_REQUEST_MS for every table and queue request.
  const slow = async (call: () => unknown) => {
    await time.sleep(SWEEPER_REQUEST_MS);
    return call();
  };
  const sweeper = createKaj({
    ...deps,
    store: decorate(storeOf('sweeper'), STORE_CALLS, slow),
    queue: decorate(queueOf('sweeper'), QUEUE_CALLS, slow),
  });
  const consumerDeps = { ...deps, store: storeOf('consumer'), queue: queueOf('consumer') };
  const fn: FunctionConcurrency = { busy: 0, peak: 0 };
  const sources = {} as Record<Priority, SimEventSource>;
  for (const p of PRIORITIES) {
    // Each execution environment has its own Kaj, its own gate (one batch at a time, as on Lambda).
    sources[p] = new SimEventSource(p, config, queue, time, fn, () => {
      const k = createKaj({ ...consumerDeps, gate: new ExclusiveGate() });
      return (event, context) => k.processBatch(event, context);
    });
  }
  queue.onVisible = (p) => sources[p].pump();

  // The API: a token bucket at the stage's rate and burst in front of submitter.submit.
  const { rateLimit, burstLimit } = config.throttling;
  let tokens = burstLimit;
  let refilledAt = time.now();
  const pending: Pending[] = [];
  let pendingHead = 0;
  let drainScheduled = false;
  let accepted = 0;
  let maxProducerBacklog = 0;
  const admitWaits = new Samples();
  const submit = (p: Priority, at: number, ms: number, backlog: boolean) => {
    const payload = backlog ? { ms, at, b: 1 as const } : { ms, at };
    void api.submitter.submit({ type: 'work', priority: p, payload }, { owner: 'capacity' });
  };
  const admit = () => {
    const now = time.now();
    tokens = Math.min(burstLimit, tokens + ((now - refilledAt) * rateLimit) / 1000);
    refilledAt = now;
    while (pendingHead < pending.length && tokens >= 1) {
      const t = pending[pendingHead++] as Pending;
      tokens -= 1;
      accepted += 1;
      meter.add('api.accepted');
      admitWaits.push(now - t.at);
      submit(t.priority, t.at, t.ms, false);
    }
    if (pendingHead > 65_536 && pendingHead * 2 > pending.length) {
      pending.splice(0, pendingHead);
      pendingHead = 0;
    }
    if (pendingHead < pending.length && !drainScheduled) {
      drainScheduled = true;
      time.at(Math.max(1, Math.ceil(((1 - tokens) * 1000) / rateLimit)), () => {
        drainScheduled = false;
        admit();
      });
    }
  };

  // Producers: a Poisson process per hour at that hour's rate. Arrival times are kept exact and
  // only their timers rounded to the clock's millisecond, so rounding does not change the rate.
  let arrivalAt: number = from;
  const nextArrival = () => {
    const hour = Math.floor((arrivalAt - DAY_START) / HOUR);
    const hourEnd = (hour + 1) * HOUR + DAY_START;
    const next = arrivalAt + arrivals.exp((rates[hour % 24] as number) / 1000);
    if (next >= hourEnd) {
      // Memoryless: start the next hour's process afresh at its rate.
      arrivalAt = hourEnd;
      nextArrival();
      return;
    }
    arrivalAt = next;
    time.at(Math.round(next) - time.now(), () => {
      const p = arrivals.priority(w.mix);
      if (time.now() >= measureFrom) stats[p].arrived += 1;
      pending.push({ priority: p, at: time.now(), ms: arrivals.duration(w) });
      admit();
      nextArrival();
    });
  };
  nextArrival();

  // The backlog: already accepted and queued when the peak starts (as after a 5-minute outage).
  if (peakStart >= from && peakStart < until) {
    time.at(peakStart - from, () => {
      // Its writes and sends happened before the peak: they do not count at 14:00.
      meter.muted = true;
      for (let i = 0; i < w.backlog; i += 1) {
        const p = arrivals.priority(w.mix);
        if (time.now() >= measureFrom) stats[p].arrived += 1;
        stats[p].backlogLeft += 1;
        submit(p, time.now(), arrivals.duration(w), true);
      }
      // The submits finish once the promise chains they started settle, before the clock moves on.
      time.at(1, () => {
        meter.muted = false;
      });
    });
  }

  // The sweeper, every minute (one run at a time, as a scheduled Lambda with its 50 s budget).
  let sweeping = false;
  let sweeperResent = 0;
  time.every(60_000, () => {
    if (sweeping) return;
    sweeping = true;
    void sweeper
      .sweep(50_000)
      .then((r) => {
        sweeperResent += r.sent;
      })
      .finally(() => {
        sweeping = false;
      });
  });

  // Once a second: the backlogs, and a progress line every hour.
  time.at(measureFrom - from, () => {
    // The warm-up is over: peaks count from here.
    meter.reset();
    accepted = 0;
    fn.peak = fn.busy;
    for (const p of PRIORITIES) {
      sources[p].peakBusy = sources[p].busy;
      sources[p].invocations = 0;
    }
  });
  time.every(1000, () => {
    if (time.now() < measureFrom) return;
    for (const p of PRIORITIES) {
      const v = queue.visibleCount(p);
      const s = stats[p];
      if (v > s.maxBacklog) s.maxBacklog = v;
      if (time.now() > peakStart && s.recoveredMs === undefined && v < config.batchSize[p])
        s.recoveredMs = time.now() - peakStart;
    }
    const producerBacklog = pending.length - pendingHead;
    if (producerBacklog > maxProducerBacklog) maxProducerBacklog = producerBacklog;
    if ((time.now() - DAY_START) % (HOUR / 4) === 0) {
      o.progress?.(
        `  ${label} ${clockTime(time.now())}  queued ${PRIORITIES.map((p) => queue.visibleCount(p)).join('/')}` +
          `  at producers ${producerBacklog}  running ${fn.busy}  (${((performance.now() - started) / 1000).toFixed(0)} s)`,
      );
    }
  });

  const restore = time.installGlobalTimers();
  try {
    await time.runUntil(until);
  } finally {
    restore();
  }
  meter.flush();

  // Tasks produced in the measured period that never started: at the producers, or queued.
  const unstarted = (p: Priority, at: number, backlog: boolean) => {
    if (at < measureFrom) return;
    stats[p].censored.push(until - at);
    if (!backlog) stats[p].freshCensored.push(until - at);
  };
  for (let i = pendingHead; i < pending.length; i += 1) {
    const t = pending[i] as Pending;
    unstarted(t.priority, t.at, false);
  }
  for (const r of store.records()) {
    if (r.status !== 'queued' || running.has(r.task_id)) continue;
    const payload = r.payload as { at: number; b?: 1 };
    unstarted(r.priority, payload.at, payload.b === 1);
  }
  const priorityReport = (p: Priority) => {
    const s = stats[p];
    return {
      arrived: s.arrived,
      started: s.waits.length,
      ran: s.ran,
      p50: waitPercentile(s.waits, s.censored, 0.5),
      p99: waitPercentile(s.waits, s.censored, 0.99),
      p99Fresh: waitPercentile(s.freshWaits, s.freshCensored, 0.99),
      maxBacklog: s.maxBacklog,
      endBacklog: queue.visibleCount(p),
      backlogDrainMs:
        s.backlogLeft === 0 && s.lastBacklogStart !== undefined ? s.lastBacklogStart - peakStart : undefined,
      backlogLeft: s.backlogLeft,
      recoveredMs: s.recoveredMs,
      /** The queue was never back under one batch. */
      unrecovered: s.recoveredMs === undefined,
      peakConcurrency: sources[p].peakBusy,
      invocations: sources[p].invocations,
    };
  };
  const peak = (name: string) => meter.peak.get(name) ?? 0;
  return {
    perPriority: Object.fromEntries(PRIORITIES.map((p) => [p, priorityReport(p)])) as Record<
      Priority,
      ReturnType<typeof priorityReport>
    >,
    api: {
      accepted,
      maxProducerBacklog,
      p99AdmitWaitMs: quantile(admitWaits.sorted(), 0.99),
      peakAcceptedPerSecond: peak('api.accepted'),
    },
    consumerPeakConcurrency: fn.peak,
    /** Most of each count in a second (`ddb.writes`, `sqs.requests`, ...). */
    peaks: Object.fromEntries(meter.peak),
    peakReads: peak('ddb.reads') + peak('ddb.reads.eventual'),
    peakIndexWrites: peak('gsi.writes'),
    /** Totals of each count, and per caller as `who:name` (api, consumer, sweeper, poller). */
    totals: Object.fromEntries(meter.total),
    sweeperResent,
    realSeconds: (performance.now() - started) / 1000,
  };
}
