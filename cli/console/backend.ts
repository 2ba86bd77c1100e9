/**
 * The console's {@link ConsoleBackend} over the services `kaj` itself uses on a target: queue
 * depths and limits (`collectStats`, as `kaj stats`), the listing index (`TaskListing`, as
 * `kaj tasks list`), the record (`kaj task show`), the domain's audited cancel (`kaj task cancel`),
 * the DLQ listing, redrive and purge paths (`kaj dlq list/redrive/purge --task …`), the
 * schedule service (`kaj schedules …`) and, for workflow runs, the history store and the signal
 * route (`kaj task show`, `kaj task signal`). Nothing here writes a task record itself.
 *
 * @module
 */
import { PRIORITIES } from '../../shared/config/resources.js';
import type {
  BatchOutcome,
  ConsoleBackend,
  DeadLetterView,
  Overview,
  Progress,
  QueueDepthRow,
  ScheduleConsole,
  StatusCount,
  TaskPage,
  TaskQuery,
  Throughput,
  WorkflowConsole,
} from '../../console/model.js';
import { type SignalDeps, signalRoute } from '../../shared/service/api/signals.js';
import type { ListedTask } from '../../shared/task/task-store.js';
import type { TaskRegistry } from '../../shared/task/define.js';
import { type BoundedCount, countTableDelayed } from '../../shared/task/delayed-count.js';
import { isListingReader, listedAt, type TaskListing } from '../../shared/task/listing.js';
import { LISTED_STATUSES, type ListedStatus } from '../../shared/task/model.js';
import { type HistoryStore, historyRetentionDays } from '../../shared/workflow/history-store.js';
import type { BatchReport } from '../admin/batch.js';
import { listDeadLetters } from '../admin/list.js';
import { purgeDeadLetters } from '../admin/purge.js';
import { redriveDeadLetters } from '../admin/redrive.js';
import { collectStats } from '../admin/stats.js';
import { batchOptions } from '../commands/dlq/batch-command.js';
import { LIST_VISIBILITY_SECONDS, receiveTiming } from '../commands/dlq/selection.js';
import type { CliContext } from '../context.js';
import { CliError } from '../errors.js';
import { limitsOf, scheduleServiceOf, type Services } from '../services.js';
import type { CloudWatchReading, QueueRef } from './cloudwatch.js';

/** Tasks of a listed status the overview counts at most ("1,000+"): 10 index pages of 100. */
export const STATUS_COUNT_BOUND = 1_000;
/**
 * How long the overview reuses its index counts: the status counts (each reads up to 10 index
 * pages) and the count of tasks delayed in the table (27 outbox Queries).
 */
export const STATUS_COUNT_TTL_MS = 15_000;
/** Index entries one console page of tasks reads at most when it filters by priority or time. */
export const FILTER_READ_BUDGET = 1_000;
/** …and index requests. */
export const FILTER_REQUESTS = 20;

export interface BackendOptions {
  readonly registry: TaskRegistry;
  /** Throughput and queue ages: the local runtime's counters, or CloudWatch on a stack. */
  readonly metrics: (
    queues: readonly QueueRef[],
    now: number,
  ) => Promise<Pick<CloudWatchReading, 'throughput'> & Partial<CloudWatchReading>>;
  /** Stops long reads when the console stops. */
  readonly signal: AbortSignal;
  /** Whether to offer the schedules pages. @default true */
  readonly schedules?: boolean;
}

export function servicesBackend(ctx: CliContext, s: Services, o: BackendOptions): ConsoleBackend {
  const listing = (): TaskListing => {
    if (s.kaj.listing === undefined) throw new CliError(`${s.target.label} has no listing index`);
    return s.kaj.listing;
  };
  const queues: QueueRef[] = [
    ...PRIORITIES.map((priority) => ({ priority, url: s.resources.queueUrls[priority] })),
    ...Object.entries(s.resources.lanes ?? {}).flatMap(([lane, q]) =>
      PRIORITIES.map((priority) => ({ lane, priority, url: q.queueUrls[priority] })),
    ),
  ];
  const deps = { dlq: s.dlq, store: s.kaj.store, lifecycle: s.kaj.lifecycle, clock: ctx.clock, sleep: ctx.sleep };
  /** A redrive's or purge's options for these task ids, as `kaj dlq redrive|purge --task …` builds them. */
  const selected = (taskIds: readonly string[], onProgress: Progress) =>
    batchOptions(s, {
      queues: PRIORITIES,
      filter: { taskIds },
      dryRun: false,
      signal: o.signal,
      onProgress: (c) => onProgress({ ...c }),
    });
  const schedules = o.schedules === false ? undefined : scheduleConsole(ctx, s, o.registry);
  const history = s.kaj.history;
  const workflows =
    history === undefined
      ? undefined
      : workflowConsole({
          lifecycle: s.kaj.lifecycle,
          registry: o.registry,
          history,
          now: () => ctx.clock.now(),
          historyRetentionDays: historyRetentionDays(s.target.settings, o.registry),
        });
  // The auto-refresh (every 5 s) reuses the counts for a while: they are approximate anyway.
  type Counts = { readonly statuses: StatusCount[]; readonly delayedInTable: BoundedCount };
  let counted: { readonly at: number; readonly counts: Promise<Counts> } | undefined;
  const indexCounts = (now: number): Promise<Counts> => {
    if (counted === undefined || now - counted.at >= STATUS_COUNT_TTL_MS) {
      const counts = Promise.all([
        Promise.all(LISTED_STATUSES.map((status) => countStatus(listing(), status))),
        delayedInTable(),
      ]).then(([statuses, delayed]) => ({ statuses, delayedInTable: delayed }));
      counted = { at: now, counts };
      counts.catch(() => {
        if (counted?.counts === counts) counted = undefined;
      });
    }
    return counted.counts;
  };
  const delayedInTable = async (): Promise<BoundedCount> => {
    const store = s.kaj.store;
    if (!isListingReader(store)) throw new CliError(`${s.target.label} has no outbox index to count delayed tasks in`);
    return (await countTableDelayed(store)).total;
  };

  return {
    label: s.target.label,

    async overview(): Promise<Overview> {
      const now = ctx.clock.now();
      const [snap, counts, metrics] = await Promise.all([
        collectStats(
          { inspector: s.inspector, clock: ctx.clock, limits: limitsOf(s, o.registry.limits) },
          { byStatus: false },
        ),
        indexCounts(now),
        o.metrics(queues, now).catch((err: unknown): Partial<CloudWatchReading> & { throughput: Throughput } => ({
          throughput: { available: false, reason: err instanceof Error ? err.message : String(err) },
        })),
      ]);
      const age = (lane: string | undefined, priority: string) => {
        const url = queues.find((q) => q.lane === lane && q.priority === priority)?.url;
        return url === undefined ? null : (metrics.oldestAge?.get(url) ?? null);
      };
      const rows: QueueDepthRow[] = [
        ...snap.queues.map((q) => ({
          priority: q.priority,
          visible: q.queue.visible,
          inFlight: q.queue.inFlight,
          delayed: q.queue.delayed,
          oldestAgeSeconds: age(undefined, q.priority),
        })),
        ...(snap.lanes ?? []).map((l) => ({
          lane: l.lane,
          priority: l.priority,
          visible: l.queue.visible,
          inFlight: l.queue.inFlight,
          delayed: l.queue.delayed,
          oldestAgeSeconds: age(l.lane, l.priority),
        })),
      ];
      return {
        at: now,
        queues: rows,
        dlqs: snap.queues.map((q) => ({ priority: q.priority, visible: q.dlq.visible, inFlight: q.dlq.inFlight })),
        statuses: counts.statuses,
        delayedInTable: counts.delayedInTable,
        throughput: metrics.throughput,
        ...(snap.limits === undefined ? {} : { limits: snap.limits }),
      };
    },

    listTasks: (q) => listTasks(listing(), q),

    getTask: (taskId) => s.kaj.store.get(taskId),

    async cancelTask(taskId, operator) {
      const r = await s.kaj.lifecycle.requests.cancel(taskId, undefined, operator);
      return { status: r.status, requested: r.status === 'running' };
    },

    async deadLetters(limit): Promise<DeadLetterView> {
      const listed = await listDeadLetters(
        { dlq: s.dlq, store: s.kaj.store },
        {
          queues: PRIORITIES,
          filter: {},
          limit,
          visibilitySeconds: LIST_VISIBILITY_SECONDS,
          ...receiveTiming(s.target),
          // A message SQS moved carries no details: its record has them.
          loadRecords: 'moved',
          signal: o.signal,
        },
      );
      return {
        tasks: listed.tasks.map((t) => ({
          messageId: t.messageId,
          originPriority: t.originPriority,
          kind: t.kind,
          ...(t.taskId === undefined ? {} : { taskId: t.taskId }),
          ...(t.type === undefined ? {} : { type: t.type }),
          ...(t.attempts === undefined ? {} : { attempts: t.attempts }),
          ...(t.lastError === undefined ? {} : { lastError: t.lastError }),
          ...(t.deadSince === undefined ? {} : { deadSince: t.deadSince }),
          ...(t.status === undefined ? {} : { status: t.status }),
        })),
        received: listed.scan.received,
        truncated: listed.tasks.length >= limit,
      };
    },

    async redrive(selection, operator, onProgress) {
      const report = await redriveDeadLetters(deps, {
        ...selected(selection.taskIds, onProgress),
        to: 'original',
        keepAttempts: false,
        ...operator,
      });
      return outcome(report, report.redriven);
    },

    async purge(selection, operator, onProgress) {
      const report = await purgeDeadLetters(deps, {
        ...selected(selection.taskIds, onProgress),
        ...operator,
      });
      return outcome(report, report.purged);
    },

    ...(schedules === undefined ? {} : { schedules }),
    ...(workflows === undefined ? {} : { workflows }),
  };
}

/**
 * The console's workflow runs over a history store and the domain's signal route, as `kaj task
 * show` and `kaj task signal` use them: the console signals as an operator (no owner), who may
 * signal any run.
 */
export function workflowConsole(d: SignalDeps & { readonly history: HistoryStore }): WorkflowConsole {
  return {
    history: (runId) => d.history.read(runId),
    async signal(runId, name, payload) {
      const r = await signalRoute(runId, name, payload, d, undefined);
      return { woken: r.body.woken === true };
    },
  };
}

function outcome(r: Omit<BatchReport, 'done'>, done: number): BatchOutcome {
  return {
    selected: r.selected,
    done,
    skipped: r.skipped,
    failed: r.failed,
    interrupted: r.interrupted,
    items: r.items.map((i) => ({
      task_id: i.task_id,
      outcome: i.outcome,
      action: i.action,
      ...(i.detail === undefined ? {} : { detail: i.detail }),
    })),
  };
}

/** Counts a listed status by paging the index (100 a page), up to {@link STATUS_COUNT_BOUND}. */
export async function countStatus(listing: TaskListing, status: ListedStatus): Promise<StatusCount> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await listing.list({ status, limit: 100, ...(cursor === undefined ? {} : { cursor }) });
    n += page.items.length;
    cursor = page.cursor;
  } while (cursor !== undefined && n < STATUS_COUNT_BOUND);
  return { status, count: Math.min(n, STATUS_COUNT_BOUND), capped: cursor !== undefined };
}

/**
 * A page of the listing. Status and type are the index's own query; priority and time are
 * applied to the rows read, page after page of the index, until the page is full, the index
 * is at its end (or past `since`: it is newest first), or {@link FILTER_READ_BUDGET} rows or
 * {@link FILTER_REQUESTS} requests were read — then the cursor continues from there.
 */
export async function listTasks(listing: TaskListing, q: TaskQuery): Promise<TaskPage> {
  const base = { status: q.status, ...(q.type === undefined ? {} : { type: q.type }) };
  if (q.priority === undefined && q.since === undefined) {
    return listing.list({ ...base, limit: q.limit, ...(q.cursor === undefined ? {} : { cursor: q.cursor }) });
  }
  const items: ListedTask[] = [];
  let cursor = q.cursor;
  let read = 0;
  for (let requests = 1; ; requests += 1) {
    // Never more rows than the page still has room for: a cursor continues after a whole index
    // page, so a page read must not hold more matches than fit.
    const page = await listing.list({
      ...base,
      limit: Math.min(100, q.limit - items.length),
      ...(cursor === undefined ? {} : { cursor }),
    });
    read += page.items.length;
    let pastSince = false;
    for (const t of page.items) {
      if (q.since !== undefined && Date.parse(listedAt(t)) < q.since) {
        // Newest first: nothing after this row is newer. Delayed tasks come soonest due first,
        // in no order of when they were listed: the row is passed over, the read goes on.
        if (q.status === 'delayed') continue;
        pastSince = true;
        break;
      }
      if (q.priority === undefined || t.priority === q.priority) items.push(t);
    }
    cursor = page.cursor;
    if (pastSince || cursor === undefined) return { items };
    if (items.length >= q.limit || read >= FILTER_READ_BUDGET || requests >= FILTER_REQUESTS) return { items, cursor };
  }
}

function scheduleConsole(ctx: CliContext, s: Services, registry: TaskRegistry): ScheduleConsole {
  const service = scheduleServiceOf(ctx, s, registry);
  return {
    list: (cursor) => service.list(undefined, { limit: 200, ...(cursor === undefined ? {} : { cursor }) }),
    get: (name) => service.get(name, undefined),
    pause: (name, note) => service.pause(name, note, undefined),
    resume: (name) => service.resume(name, undefined),
    trigger: (name) => service.trigger(name, undefined),
  };
}
