/**
 * The payroll run simulated on a virtual clock through Kaj's own flow control: slips at month
 * end, each a PDF render (0.8 s, `cpu` lane, holds a `database` connection) that submits an email
 * (1.2 s, `io` lane, uses `email_provider`) to a provider that answers 429 (Retry-After: 1 s) to
 * any call beyond 40 in a sliding second.
 *
 * Real (imported, unchanged): the `Limiter` (one per simulated process, all on one limits table),
 * `FlowControl` (admissions, `defer`, `waitForStart`, `learn`, `release`), the task registry and
 * limit resolution, `classifyError` and `afterFailure`.
 *
 * Modelled: the limits table (`SimLimitStore`: testing/memory-limit-store.ts's fake behind
 * conditional UpdateItems of 5 ms each, billed in write units); SQS as a heap of messages by
 * visibility per lane, and Lambda as `workers` consumers per lane over `processes` execution
 * environments, each taking the next visible message when free;
 * the SQS requests Lambda's pollers and Kaj make (`esmRequests`, visibility changes, sends); the
 * consumer's path per message in Kaj's order (claim read, admission, for a redelivery the claim
 * write and the message hold, `waitForStart`, the handler, the outcome write, `release`, the
 * delete), each table or queue request taking `requestMs`; the handlers as sleeps (the render
 * submits the email at its end; the email calls the provider at its start).
 *
 * Not modelled: Lambda's batch boundary, cold starts, heartbeats, crashes, and any delay between
 * the handler's start and the provider seeing the call.
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import * as z from 'zod';
import { DEFAULTS } from '../../shared/config/resources.js';
import { FlowControl } from '../../shared/service/consumer/flow-control.js';
import type { LimitDeclarations } from '../../shared/limit/declaration.js';
import { Limiter } from '../../shared/limit/limiter.js';
import { resolveLimits } from '../../shared/limit/spec.js';
import { type Classification, classifyError } from '../../shared/retry/classify.js';
import { afterFailure } from '../../shared/retry/decide.js';
import { RetryableError } from '../../shared/retry/errors.js';
import { noMetrics, silentLogger } from '../../shared/runtime/logger.js';
import type { Admissions } from '../../shared/task/admission.js';
import {
  type AnyTaskDefinition,
  defineLanes,
  defineTask,
  resolvePolicy,
  type TaskContext,
  TaskRegistry,
} from '../../shared/task/define.js';
import type { TaskRecord } from '../../shared/task/model.js';
import { SeededRandom } from '../capacity/workload.js';
import { esmRequests } from '../lib/request-counting.js';
import { MinHeap } from '../../testing/min-heap.js';
import { VirtualClock } from '../../testing/virtual-clock.js';
import { addTally, type CallTally, newTally, SimLimitStore } from './sim-limit-store.js';
import { SimProvider, steadyRate } from './sim-provider.js';
import { PAYROLL_LIMITS } from './tasks.js';

/** A configuration of the limits: both must declare `email_provider` and `database`. */
export interface PayrollConfig {
  readonly name: string;
  readonly limits: LimitDeclarations;
}

/** Kaj's email limit without the rate's margin for the way to the provider: here a call arrives at its start. */
const { arrivalJitterMs: _, ...kajEmail } = PAYROLL_LIMITS.kaj.email_provider;

/** The two configurations of the issue, as the workers of `bench:payroll` declare them (./tasks.ts). */
export const PAYROLL_CONFIGS = {
  seed: { name: 'seed', limits: PAYROLL_LIMITS.seed },
  kaj: { name: 'kaj', limits: { ...PAYROLL_LIMITS.kaj, email_provider: kajEmail } },
} as const satisfies Record<string, PayrollConfig>;

/**
 * The figures, and lanes sized so that neither is the binding constraint: 100 email
 * workers for a limit of 50 at once (a refused message must find a free worker to be refused and
 * deferred), 64 render workers for a `database` limit of 60 (a few more than the limit, so the
 * limit, not Lambda, caps the renders and its cap is exercised: 60 / 0.8 s = 75 renders/s against
 * the 40 emails/s needed). Durations are fixed (`spread` 0), as the issue gives them.
 */
export const DEFAULT_MODEL = {
  renderMs: 800,
  emailMs: 1200,
  /** Each duration is drawn uniformly within ±spread of its mean (0: fixed). */
  spread: 0,
  /** The provider accepts at most this many calls in any window of `providerWindowMs`. */
  providerLimit: 40,
  providerWindowMs: 1000,
  retryAfterSeconds: 1,
  /** How long a refused call takes to come back with its 429. */
  rejectMs: 50,
  /** Round trip of one limits-table UpdateItem. */
  storeLatencyMs: 5,
  /** Round trip of one task-table or SQS request the consumer waits for. */
  requestMs: 5,
  /** A message's share of an invocation's overhead (25 ms per batch of 10). */
  receiveMs: 2.5,
  /** Per lane (`cpu`: renders; `io`: emails), handlers at once, spread over processes with a limiter each. */
  lanes: { cpu: { workers: 64, processes: 8 }, io: { workers: 100, processes: 10 } },
  maxAttempts: DEFAULTS.maxAttempts as number,
  /** The limiter's knobs. */
  localWaitMs: DEFAULTS.limitLocalWaitMs as number,
  reserve: 1,
};
export type PayrollModel = typeof DEFAULT_MODEL;
type LaneShape = PayrollModel['lanes']['cpu'];

export interface PayrollOptions {
  readonly config: PayrollConfig;
  readonly slips: number;
  readonly seed: number;
  readonly model?: Partial<PayrollModel>;
  /** Every acquire granted at once, nothing asked of the store: what the checks see without flow control. */
  readonly bypassLimiter?: boolean;
}

/** What a run measured. Times in seconds. */
export type PayrollReport = Awaited<ReturnType<typeof simulatePayroll>>;

/** Month end, 18:00 UTC: the run starts with every render queued. */
const T0 = Date.UTC(2026, 10, 30, 18, 0, 0);

/**
 * The floor of a configuration: slips ÷ the binding email rate, the least of the provider's
 * rate, the declared rate and concurrency ÷ the email's duration (seed: 45 / 1.2 s = 37.5/s;
 * kaj: 40/s).
 */
export function floorSeconds(config: PayrollConfig, slips: number, model: Partial<PayrollModel> = {}): number {
  const m = { ...DEFAULT_MODEL, ...model };
  const spec = resolveLimits(config.limits).get('email_provider');
  let perSecond = (m.providerLimit * 1000) / m.providerWindowMs;
  if (spec?.rate !== undefined) perSecond = Math.min(perSecond, (spec.rate.count * 1000) / spec.rate.perMs);
  if (spec?.concurrency !== undefined) perSecond = Math.min(perSecond, spec.concurrency / (m.emailMs / 1000));
  return slips / perSecond;
}

type Kind = 'render' | 'email';

interface Task {
  readonly kind: Kind;
  readonly slip: number;
  readonly record: TaskRecord;
}

interface Message {
  readonly task: Task;
  receives: number;
  visibleAt: number;
  seq: number;
}

const earlier = (a: Message, b: Message) => a.visibleAt < b.visibleAt || (a.visibleAt === b.visibleAt && a.seq < b.seq);

interface Process {
  readonly flow: FlowControl;
  readonly admissions: Admissions;
}

interface Lane {
  /** Its SQS queue: messages by the time they become visible, then by send order (close enough to a standard queue). */
  readonly queue: MinHeap<Message>;
  readonly idle: Process[];
  wakeAt: number;
}

export async function simulatePayroll(o: PayrollOptions) {
  const wallStart = performance.now();
  const cpuStart = process.cpuUsage();
  const m: PayrollModel = { ...DEFAULT_MODEL, ...o.model };
  const floorS = floorSeconds(o.config, o.slips, m);
  const clock = new VirtualClock(T0);
  const simRandom = new SeededRandom(o.seed);
  const kajRandom = new SeededRandom(o.seed ^ 0x5eed);
  const attribution = new AsyncLocalStorage<CallTally>();
  const store = new SimLimitStore({
    clock,
    latencyMs: m.storeLatencyMs,
    attribute: () => attribution.getStore(),
  });
  const provider = new SimProvider(o.slips, m.providerLimit, m.providerWindowMs, m.retryAfterSeconds);
  const duration = (mean: number) => mean * (1 - m.spread + 2 * m.spread * simRandom.next());

  // ---- counters -------------------------------------------------------------------------------
  const sqs = { delivered: 0, acknowledged: 0, cmvDefer: 0, cmvHold: 0, send: 0 };
  const table = { reads: 0, writes: 0 };
  const deferrals = { render: 0, email: 0, refreshed: 0, byReason: {} as Record<string, number> };
  const acquires = {
    granted: 0,
    refused: 0,
    grant: newTally(),
    refusal: newTally(),
    startWaitMs: 0,
    holdMs: 0,
    emailGrants: 0,
  };
  const running = { render: 0, email: 0 };
  const peaks = { render: 0, email: 0 };
  let finished = 0;
  let failed = 0;
  let retries = 0;
  let lastFinish = T0;

  // ---- the task types, as a deployment declares them -----------------------------------------
  const lanes: Record<Kind, Lane> = {
    render: { queue: new MinHeap(earlier), idle: [], wakeAt: Number.POSITIVE_INFINITY },
    email: { queue: new MinHeap(earlier), idle: [], wakeAt: Number.POSITIVE_INFINITY },
  };
  const payload = z.strictObject({ slip: z.number().int().nonnegative() });
  const render = defineTask({
    type: 'render_slip',
    schema: payload,
    lane: 'cpu',
    uses: ['database'],
    maxAttempts: m.maxAttempts,
    handler: async (p) => {
      await clock.sleep(duration(m.renderMs));
      // The email task, submitted through Kaj: send first, then put (visible once both are done).
      await clock.sleep(m.requestMs);
      sqs.send += 1;
      await clock.sleep(m.requestMs);
      table.writes += 1;
      send(lanes.email, newTask('email', p.slip), 0);
      return null;
    },
  });
  const email = defineTask({
    type: 'send_slip',
    schema: payload,
    lane: 'io',
    uses: ['email_provider'],
    maxAttempts: m.maxAttempts,
    handler: async (p) => {
      const answer = provider.send(p.slip, clock.now());
      if (!answer.ok) {
        await clock.sleep(m.rejectMs);
        throw new RetryableError('provider: 429 Too Many Requests', { retryAfterSeconds: answer.retryAfterSeconds });
      }
      await clock.sleep(duration(m.emailMs));
      return null;
    },
  });
  const defs: Record<Kind, AnyTaskDefinition> = { render, email };
  const lanesDeclared = defineLanes({ cpu: {}, io: {} });
  const registry = new TaskRegistry([render, email], { lanes: lanesDeclared, limits: o.config.limits });
  const emailSpec = registry.limits.get('email_provider');
  const dbSpec = registry.limits.get('database');
  const policies = { render: resolvePolicy(render), email: resolvePolicy(email) };
  const limiters: Limiter[] = [];

  const newTask = (kind: Kind, slip: number): Task => {
    const at = new Date(clock.now()).toISOString();
    const def = defs[kind];
    return {
      kind,
      slip,
      record: {
        task_id: `${kind}-${slip}`,
        type: def.type,
        priority: 'normal',
        status: 'queued',
        payload: { slip },
        attempts: 0,
        max_attempts: m.maxAttempts,
        timeout_seconds: DEFAULTS.taskTimeoutSeconds,
        run_at: at,
        created_at: at,
        updated_at: at,
        history: [],
        idempotency_key: `slip:2026-11:emp-${slip}`,
        lane: def.lane,
        fingerprint: '',
        lease_token: 0,
        dispatch_id: '1',
      },
    };
  };

  // ---- processes: one limiter and one flow control each ---------------------------------------
  const newProcess = (): Process => {
    const limiter = o.bypassLimiter
      ? undefined
      : new Limiter({
          store,
          clock,
          random: kajRandom,
          logger: silentLogger,
          leaseSeconds: DEFAULTS.leaseSeconds,
          localWaitMs: m.localWaitMs,
          reserve: m.reserve,
        });
    if (limiter !== undefined) limiters.push(limiter);
    const flow = new FlowControl({
      registry,
      ...(limiter === undefined ? {} : { limiter }),
      clock,
      random: kajRandom,
      logger: silentLogger,
      metrics: noMetrics,
      maxReceiveCount: DEFAULTS.maxReceiveCount,
      deferral: { baseSeconds: DEFAULTS.limitDeferBaseSeconds, capSeconds: DEFAULTS.limitDeferCapSeconds },
    });
    const admissions: Admissions = flow.admissions() ?? {
      admit: async (record) => ({ kind: 'granted', permit: { taskId: record.task_id, startAt: clock.now() } }),
      release: async () => {},
    };
    return { flow, admissions };
  };
  const workersOf = (lane: Lane, shape: LaneShape) => {
    const procs = Array.from({ length: shape.processes }, newProcess);
    for (let w = 0; w < shape.workers; w += 1) lane.idle.push(procs[w % procs.length] as Process);
  };
  workersOf(lanes.render, m.lanes.cpu);
  workersOf(lanes.email, m.lanes.io);

  // ---- SQS and Lambda --------------------------------------------------------------------------
  let sent = 0;
  /** Puts `m` on the lane's queue, visible from `visibleAt` (a deferral puts it back with a new send order). */
  const enqueue = (lane: Lane, m: Message, visibleAt: number) => {
    m.visibleAt = visibleAt;
    m.seq = sent++;
    lane.queue.push(m);
  };
  const send = (lane: Lane, task: Task, delayMs: number) => {
    enqueue(lane, { task, receives: 0, visibleAt: 0, seq: 0 }, clock.now() + delayMs);
    pump(lane);
  };
  const pump = (lane: Lane) => {
    const now = clock.now();
    for (;;) {
      const top = lane.queue.peek();
      if (top === undefined || top.visibleAt > now || lane.idle.length === 0) break;
      lane.queue.pop();
      const i = Math.floor(simRandom.next() * lane.idle.length);
      const proc = lane.idle[i] as Process;
      lane.idle[i] = lane.idle[lane.idle.length - 1] as Process;
      lane.idle.pop();
      void consume(lane, proc, top).then(() => {
        lane.idle.push(proc);
        pump(lane);
      });
    }
    const top = lane.queue.peek();
    if (top !== undefined && top.visibleAt > now && top.visibleAt < lane.wakeAt) {
      const at = top.visibleAt;
      lane.wakeAt = at;
      clock.at(at - now, () => {
        if (lane.wakeAt === at) lane.wakeAt = Number.POSITIVE_INFINITY;
        pump(lane);
      });
    }
  };
  const track = <T>(tally: CallTally, work: () => Promise<T>): Promise<T> => attribution.run(tally, work);

  // ---- the consumer's path for one message ----------------------------------------------------
  const consume = async (lane: Lane, proc: Process, msg: Message): Promise<void> => {
    const { task } = msg;
    const record = task.record;
    msg.receives += 1;
    sqs.delivered += 1;
    await clock.sleep(m.receiveMs);
    // The claim reads the task (consistent GetItem), then asks its limits.
    await clock.sleep(m.requestMs);
    table.reads += 1;
    const tally = newTally();
    const asked = clock.now();
    const admission = await track(tally, () => proc.admissions.admit(record));
    if (admission.kind === 'refused') {
      acquires.refused += 1;
      addTally(acquires.refusal, tally);
      const deferral = proc.flow.defer(admission.refusal, record, msg.receives, record.priority);
      deferrals[task.kind] += 1;
      const reason = `${admission.refusal.limit}:${admission.refusal.reason}`;
      deferrals.byReason[reason] = (deferrals.byReason[reason] ?? 0) + 1;
      await clock.sleep(m.requestMs);
      if (deferral.refresh) {
        // A fresh copy, delayed; this one is acknowledged (deleted by the mapping).
        deferrals.refreshed += 1;
        sqs.send += 1;
        sqs.acknowledged += 1;
        send(lane, task, deferral.seconds * 1000);
      } else {
        sqs.cmvDefer += 1;
        enqueue(lane, msg, clock.now() + deferral.seconds * 1000);
        pump(lane);
      }
      return;
    }
    const permit = admission.permit;
    const grantedAt = clock.now();
    record.attempts += 1;
    if (msg.receives > 1) {
      // A redelivery is claimed by a write at once, and its message held for a lease.
      await clock.sleep(m.requestMs);
      table.writes += 1;
      await clock.sleep(m.requestMs);
      sqs.cmvHold += 1;
    }
    await proc.flow.waitForStart(permit);
    acquires.granted += 1;
    addTally(acquires.grant, tally);
    if (task.kind === 'email') {
      acquires.startWaitMs += clock.now() - asked;
      acquires.emailGrants += 1;
    }
    running[task.kind] += 1;
    if (running[task.kind] > peaks[task.kind]) peaks[task.kind] = running[task.kind];
    const def = defs[task.kind];
    let failure: Classification | undefined;
    try {
      await def.handler({ slip: task.slip }, contextOf(record));
    } catch (err) {
      failure = classifyError(err);
    }
    running[task.kind] -= 1;
    if (failure === undefined) {
      await clock.sleep(m.requestMs);
      table.writes += 1;
      if (task.kind === 'email') done();
    } else {
      const lost = failure;
      await proc.flow.learn(def, record, lost);
      const next = afterFailure(record.attempts, record.max_attempts, failure, policies[task.kind].backoff, kajRandom);
      if (next.kind === 'retry') {
        retries += 1;
        await clock.sleep(m.requestMs);
        sqs.send += 1;
        await clock.sleep(m.requestMs);
        table.writes += 1;
        send(lane, task, next.delayMs);
      } else {
        await clock.sleep(m.requestMs);
        table.writes += 1;
        failed += 1;
        if (task.kind === 'email') done();
        else finished += 1; // its slip will never be emailed
      }
    }
    await proc.admissions.release(permit);
    if (task.kind === 'email') acquires.holdMs += clock.now() - grantedAt;
    sqs.acknowledged += 1;
  };
  const done = () => {
    finished += 1;
    lastFinish = clock.now();
  };
  const signal = new AbortController().signal;
  const contextOf = (record: TaskRecord): TaskContext => ({
    taskId: record.task_id,
    attempt: record.attempts,
    maxAttempts: record.max_attempts,
    priority: record.priority,
    signal,
    logger: silentLogger,
  });

  // ---- the run ---------------------------------------------------------------------------------
  for (let slip = 0; slip < o.slips; slip += 1) {
    enqueue(lanes.render, { task: newTask('render', slip), receives: 0, visibleAt: 0, seq: 0 }, T0);
    sqs.send += 1;
  }
  pump(lanes.render);
  // Given up (reported incomplete) after ten floors of virtual time.
  const end = await clock.run(T0 + 10 * floorS * 1000, () => finished >= o.slips);
  const cpu = process.cpuUsage(cpuStart);

  const tasks = 2 * o.slips;
  const esm = esmRequests(sqs.delivered, sqs.acknowledged, 10);
  const sqsTotal = esm.receive + esm.deleteBatch + sqs.cmvDefer + sqs.cmvHold + sqs.send;
  const deferred = deferrals.render + deferrals.email;
  const makespanS = ((end === 'done' ? lastFinish : clock.now()) - T0) / 1000;
  const per = (t: CallTally, n: number): CallTally => ({
    calls: n === 0 ? 0 : t.calls / n,
    updateItems: n === 0 ? 0 : t.updateItems / n,
    writeUnits: n === 0 ? 0 : t.writeUnits / n,
  });
  return {
    seed: o.seed,
    slips: o.slips,
    bypassed: o.bypassLimiter === true,
    /** Every slip emailed or failed before the time limit. */
    complete: end === 'done',
    makespanS,
    floorS,
    ratio: makespanS / floorS,
    provider: {
      calls: provider.calls.length,
      status429: provider.refused,
      /** Most calls (accepted or not) in any window of the provider's length. */
      peakCallsPerWindow: provider.peakPerWindow('calls'),
      /** Accepted emails per second once under way (10th to 90th percentile of the accepted calls). */
      steadyRate: steadyRate(provider.accepted.values(), 1e6),
      duplicates: provider.duplicates,
      emailed: provider.emailed(),
    },
    failed,
    retries,
    /** The limits as declared (the checks hold the peaks to them). */
    caps: {
      ...(emailSpec?.concurrency === undefined ? {} : { email: emailSpec.concurrency }),
      ...(dbSpec?.concurrency === undefined ? {} : { database: dbSpec.concurrency }),
      window: m.providerLimit,
    },
    peaks: {
      emails: peaks.email,
      renders: peaks.render,
      /** Holders of each concurrency item at once (the table's own count). */
      emailHolders: store.tally.peakHolders.get('c#email_provider') ?? 0,
      databaseHolders: store.tally.peakHolders.get('c#database') ?? 0,
    },
    deferrals: {
      total: deferred,
      render: deferrals.render,
      email: deferrals.email,
      byReason: deferrals.byReason,
      refreshed: deferrals.refreshed,
      perTask: deferred / tasks,
    },
    acquires: {
      /** Starts the limiters forfeited because the store's answer came after them. */
      lateStarts: limiters.reduce((n, l) => n + l.lateStarts, 0),
      perGrant: per(acquires.grant, acquires.granted),
      perRefusal: per(acquires.refusal, acquires.refused),
      meanStartWaitMs: acquires.emailGrants === 0 ? 0 : acquires.startWaitMs / acquires.emailGrants,
      /** From an email's grant to its release: what its concurrency slot costs (Little's law). */
      meanHoldMs: acquires.emailGrants === 0 ? 0 : acquires.holdMs / acquires.emailGrants,
    },
    store: {
      totalCalls: store.totalCalls,
      updateItems: store.tally.updateItems,
      writeUnits: store.tally.writeUnits,
      callsPerTask: store.totalCalls / tasks,
      writeUnitsPerTask: store.tally.writeUnits / tasks,
    },
    sqs: {
      total: sqsTotal,
      perTask: sqsTotal / tasks,
      /** Its visibility change (or refresh) and its share of the receive. */
      perDeferral: deferred === 0 ? 0 : (sqs.cmvDefer + 1.1 * deferrals.refreshed + deferred / 10) / deferred,
    },
    /** Task-table requests (counted, not simulated). */
    table,
    sim: {
      wallS: (performance.now() - wallStart) / 1000,
      cpuS: (cpu.user + cpu.system) / 1e6,
    },
  };
}

/** The goals of the issue, as checks: what a run fell short of (empty when it met them all). */
export function goalViolations(r: PayrollReport, maxRatio = 1.05): string[] {
  const out: string[] = [];
  if (!r.complete) out.push('the run did not finish within its time limit');
  if (r.ratio > maxRatio)
    out.push(`makespan ${r.makespanS.toFixed(1)} s is ${r.ratio.toFixed(3)}× the floor (> ${maxRatio})`);
  out.push(...safetyViolations(r));
  return out;
}

/** The safety checks alone: limits held, the provider never over its rate, every slip emailed exactly once. */
export function safetyViolations(r: PayrollReport): string[] {
  const out: string[] = [];
  if (r.provider.status429 > 0) out.push(`${r.provider.status429} calls answered 429`);
  if (r.provider.peakCallsPerWindow > r.caps.window) {
    out.push(`${r.provider.peakCallsPerWindow} calls in one window (provider limit ${r.caps.window})`);
  }
  if (r.caps.email !== undefined && r.peaks.emails > r.caps.email) {
    out.push(`${r.peaks.emails} emails at once (email_provider concurrency ${r.caps.email})`);
  }
  if (r.caps.database !== undefined && r.peaks.renders > r.caps.database) {
    out.push(`${r.peaks.renders} renders at once (database concurrency ${r.caps.database})`);
  }
  if (r.caps.email !== undefined && r.peaks.emailHolders > r.caps.email) {
    out.push(`${r.peaks.emailHolders} email_provider slots held at once`);
  }
  if (r.caps.database !== undefined && r.peaks.databaseHolders > r.caps.database) {
    out.push(`${r.peaks.databaseHolders} database slots held at once`);
  }
  if (r.provider.duplicates > 0) out.push(`${r.provider.duplicates} duplicate emails`);
  if (r.failed > 0) out.push(`${r.failed} tasks failed`);
  if (r.provider.emailed !== r.slips) out.push(`${r.provider.emailed} of ${r.slips} slips emailed`);
  return out;
}
