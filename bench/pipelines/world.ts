/**
 * Kaj with pipelines on a virtual clock, every request billed: the world `npm run bench:pipelines`
 * runs its runs, backfills and idle days in.
 *
 *   scheduler tick (every minute) ─► ScheduleTicker ─► runs' tasks ─┐
 *   PipelineService (trigger, backfill) ───────────────────────────┤
 *                                                                  ▼
 *   AccountingTaskStore + CountingTaskQueue over SimTaskQueue ─► SimEventSource per priority
 *     ─► processBatch (consumer: runs, nodes, fan-in)  ─►  MeteredHistory, SimLimitStore
 *   and the sweeper every minute, as EventBridge runs both.
 *
 * What is real: `createKaj` and everything behind it. What is modelled: the AWS services (the
 * contract-tested fakes of testing/ behind the benches' billing decorators: task table
 * `bench/lib/dynamo-accounting.ts`, schedules table `schedule-accounting.ts`, history
 * `history-accounting.ts`, limits table `bench/payroll/sim-limit-store.ts`, SQS
 * `request-counting.ts`) and Lambda's pollers (`bench/capacity/event-source.ts`). Handlers sleep
 * on the virtual clock.
 *
 * Every request is also attributed to a side: `run` (a pipeline run's own task: its messages, its
 * invocations, its item) or `node` (the nodes' tasks), by the task type each message and item
 * belongs to; an invocation's shared requests (the poller's receive and delete, the batch's
 * visibility call) are split by its records. The schedules, history and limits tables are the
 * runs' alone.
 *
 * @module
 */
import { DEFAULT_CONFIG } from '../../infra/config.js';
import {
  DEFAULTS,
  PRIORITIES,
  type Priority,
  resourceNames,
  SCHEDULE_TABLE_SCHEMA,
  TABLE_SCHEMA,
} from '../../shared/config/resources.js';
import { runtimeSettings } from '../../shared/config/settings.js';
import { isPipeline } from '../../shared/pipeline/define.js';
import { createKaj, type Kaj, type KajDeps } from '../../shared/service/all-in-one.js';
import { ExclusiveGate } from '../../shared/service/consumer/exclusive-gate.js';
import type { TaskRegistry } from '../../shared/task/define.js';
import type { TaskMessage } from '../../shared/task/message.js';
import type { FailedVisibilityChange, TaskQueue, VisibilityChange } from '../../shared/task/task-queue.js';
import { seededRandom } from '../../testing/determinism.js';
import { MemoryScheduleStore } from '../../testing/memory-schedule-store.js';
import { MemoryTaskStore } from '../../testing/memory-task-store.js';
import { VirtualClock } from '../../testing/virtual-clock.js';
import { type FunctionConcurrency, SimEventSource } from '../capacity/event-source.js';
import { PeakMeter } from '../capacity/meter.js';
import { SimTaskQueue } from '../capacity/sim-queue.js';
import { AccountingTaskStore, DynamoLedger, type TableModel } from '../lib/dynamo-accounting.js';
import { MeteredHistory } from '../lib/history-accounting.js';
import { CountingTaskQueue, SqsLedger } from '../lib/request-counting.js';
import { AccountingScheduleStore } from '../lib/schedule-accounting.js';
import { SimLimitStore } from '../payroll/sim-limit-store.js';
import { type Side, type SideTally, sideTally } from './model.js';

export interface WorldOptions {
  readonly registry: TaskRegistry;
  /** Virtual epoch ms the world starts at (a whole minute: the ticks fall on minutes). */
  readonly start: number;
  readonly seed: number;
  readonly taskTable: TableModel;
  readonly schedulesTable: TableModel;
  /** How often a run waiting for a slot looks again. @default DEFAULTS.admitPollMs */
  readonly admitPollMs?: number;
  /** Run the scheduler's tick every minute. @default true */
  readonly scheduler?: boolean;
}

/** What the pollers and invocations did, by side (shares of shared requests included). */
export interface InvocationTally {
  /** Consumer invocations. */
  readonly invocations: SideTally;
  /** Records delivered (each a consumer delivery: Lambda time is charged per delivery). */
  readonly deliveries: SideTally;
  /** The pollers' ReceiveMessage (one per invocation) and DeleteMessageBatch (per 10 records acknowledged). */
  readonly receives: SideTally;
  readonly deletes: SideTally;
  /** Kaj's ChangeMessageVisibilityBatch requests. */
  readonly visibility: SideTally;
  /** Kaj's SendMessage requests, by the side of the task sent. */
  readonly sends: SideTally;
}

export type World = ReturnType<typeof pipelineWorld>;

/** The world, its clock at `start`; call `begin()` (sync the declared schedules) before running the clock. */
export function pipelineWorld(o: WorldOptions) {
  const time = new VirtualClock(o.start, { wholeMilliseconds: true });
  const meter = new PeakMeter(() => time.now());
  const sim = new SimTaskQueue(time, meter, DEFAULTS.queueVisibilityTimeoutSeconds * 1000);
  const tasks = new MemoryTaskStore();
  const ledgers = { tasks: new DynamoLedger(), schedules: new DynamoLedger(), sqs: new SqsLedger() };
  const history = new MeteredHistory();
  const limits = new SimLimitStore();
  const schedulesInner = new MemoryScheduleStore();
  const schedules = new AccountingScheduleStore(
    schedulesInner,
    o.schedulesTable,
    ledgers.schedules,
    SCHEDULE_TABLE_SCHEMA.dueIndex.name,
  );
  const pipelineTypes = new Set(o.registry.types().filter((t) => isPipeline(o.registry.get(t))));
  /** Each task's type, as its first message said (a message goes out before its record). */
  const typeOf = new Map<string, string>();
  const sideOfTask = (taskId: string | undefined): Side =>
    pipelineTypes.has(typeOf.get(taskId ?? '') ?? tasks.items.get(taskId ?? '')?.type ?? '') ? 'run' : 'node';
  const tally: InvocationTally = {
    invocations: sideTally(),
    deliveries: sideTally(),
    receives: sideTally(),
    deletes: sideTally(),
    visibility: sideTally(),
    sends: sideTally(),
  };
  /** The sides' shares of the invocation that received each handle. */
  const sharesOf = new Map<string, Record<Side, number>>();
  const queue = new AttributedQueue(new CountingTaskQueue(sim, ledgers.sqs), {
    sent(entries) {
      // SendMessage: one request; SendMessageBatch: one per 10 entries, split by entry.
      const share = Math.ceil(entries.length / 10) / entries.length;
      for (const { message, type } of entries) {
        if (!typeOf.has(message.task_id)) typeOf.set(message.task_id, type);
        tally.sends[pipelineTypes.has(type) ? 'run' : 'node'] += share;
      }
    },
    visibility(entries) {
      const shares = sharesOf.get(entries[0]?.receiptHandle ?? '') ?? { run: 0, node: 1 };
      const requests = Math.ceil(entries.length / 10);
      tally.visibility.run += requests * shares.run;
      tally.visibility.node += requests * shares.node;
    },
  });
  const deps: KajDeps = {
    store: new AccountingTaskStore(tasks, o.taskTable, ledgers.tasks, TABLE_SCHEMA.outboxIndex.name),
    queue,
    registry: o.registry,
    settings: runtimeSettings(),
    queueNames: resourceNames(DEFAULT_CONFIG.stackName).queues,
    clock: time,
    random: seededRandom(o.seed),
    history,
    limits,
    schedules,
    ...(o.admitPollMs === undefined ? {} : { admitPollMs: o.admitPollMs }),
  };
  const kaj: Kaj = createKaj(deps);
  const fn: FunctionConcurrency = { busy: 0, peak: 0 };
  const sources = {} as Record<Priority, SimEventSource>;
  for (const p of PRIORITIES) {
    // Each execution environment has its own Kaj, its own gate (one batch at a time, as on Lambda).
    sources[p] = new SimEventSource(p, DEFAULT_CONFIG, sim, time, fn, () => {
      const k = createKaj({ ...deps, gate: new ExclusiveGate() });
      return async (event, context) => {
        const sides = event.Records.map((r) => sideOfTask((JSON.parse(r.body) as TaskMessage).task_id));
        const shares = { run: 0, node: 0 };
        for (const s of sides) shares[s] += 1 / sides.length;
        for (const r of event.Records) sharesOf.set(r.receiptHandle, shares);
        for (const s of ['run', 'node'] as const) {
          tally.invocations[s] += shares[s];
          tally.receives[s] += shares[s];
        }
        sides.forEach((s) => {
          tally.deliveries[s] += 1;
        });
        const response = await k.processBatch(event, context);
        const acked = event.Records.length - response.batchItemFailures.length;
        for (const s of ['run', 'node'] as const) tally.deletes[s] += Math.ceil(acked / 10) * shares[s];
        return response;
      };
    });
  }
  sim.onVisible = (p) => sources[p].pump();

  return {
    registry: o.registry,
    time,
    kaj,
    tasks,
    ledgers,
    history,
    limits,
    schedules,
    schedulesInner,
    tally,
    fn,
    sideOfTask,
    pipelineTypes,
    /** Syncs the schedules declared in code (as the scheduler does at a cold start), then starts the minute timers. */
    async begin(): Promise<void> {
      const service = kaj.schedules;
      if (service === undefined) throw new Error('createKaj built no schedule service');
      await service.syncDeclared(o.registry.declaredSchedules());
      if (o.scheduler ?? true) {
        let ticking = false;
        time.every(DEFAULTS.scheduleTickSeconds * 1000, () => {
          if (ticking) return;
          ticking = true;
          void kaj.ticker?.tick(45_000).finally(() => {
            ticking = false;
          });
        });
      }
      let sweeping = false;
      time.every(60_000, () => {
        if (sweeping) return;
        sweeping = true;
        void kaj.sweep(50_000).finally(() => {
          sweeping = false;
        });
      });
    },
    /** Runs the clock to `untilMs` with the global timers virtual (the consumer's heartbeats and timeouts). */
    async runUntil(untilMs: number, done?: () => boolean): Promise<void> {
      const restore = time.installGlobalTimers();
      try {
        if (done === undefined) await time.runUntil(untilMs);
        else await time.run(untilMs, done);
      } finally {
        restore();
      }
    },
  };
}

interface QueueObserver {
  sent(entries: readonly { readonly message: TaskMessage; readonly type: string }[]): void;
  visibility(entries: readonly VisibilityChange[]): void;
}

/** The port, observed on its way to the counting decorator: which task each send and visibility call was for. */
class AttributedQueue implements TaskQueue {
  constructor(
    private readonly inner: CountingTaskQueue,
    private readonly observe: QueueObserver,
  ) {}

  send(...args: Parameters<TaskQueue['send']>): Promise<void> {
    this.observe.sent([{ message: args[1], type: args[2].type }]);
    return this.inner.send(...args);
  }

  sendMany(...args: Parameters<TaskQueue['sendMany']>): ReturnType<TaskQueue['sendMany']> {
    this.observe.sent(args[1]);
    return this.inner.sendMany(...args);
  }

  sendDead(...args: Parameters<TaskQueue['sendDead']>): Promise<void> {
    return this.inner.sendDead(...args);
  }

  changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void> {
    return this.inner.changeVisibility(priority, receiptHandle, seconds);
  }

  changeVisibilityMany(
    priority: Priority,
    entries: readonly VisibilityChange[],
    lane?: string,
  ): Promise<FailedVisibilityChange[]> {
    this.observe.visibility(entries);
    return this.inner.changeVisibilityMany(priority, entries, lane);
  }
}
