import { PRIORITIES, type Priority } from '../../shared/config/resources.js';
import type { LimitSpec } from '../../shared/limit/spec.js';
import { type LimitStatusRow, limitStatus } from '../../shared/limit/status.js';
import type { LimitStore } from '../../shared/limit/limit-store.js';
import type { Clock } from '../../shared/runtime/clock.js';
import type { TaskListingReader } from '../../shared/task/task-store.js';
import { countTableDelayed, type TableDelayedCount } from '../../shared/task/delayed-count.js';
import { TASK_STATUSES, type TaskStatus } from '../../shared/task/model.js';

export interface QueueDepth {
  /** Ready to be received. */
  readonly visible: number;
  /** Received and not yet deleted (being worked on, or held by a listing). */
  readonly inFlight: number;
  /** Sent with a delay that has not run out (SQS holds at most 15 minutes of it). */
  readonly delayed: number;
}

/** Queue attributes (GetQueueAttributes). */
export interface QueueInspector {
  /** @param lane a lane's queue instead of the default lane's (`kind: 'queue'` only; DLQs are shared) */
  depth(kind: 'queue' | 'dlq', priority: Priority, lane?: string): Promise<QueueDepth>;
  /** The lanes besides the default one whose queues it knows. */
  lanes?(): string[];
}

/** The few attributes a status count reads per task (a Scan with a projection). */
export interface StatusItem {
  readonly task_id: string;
  readonly status: TaskStatus;
  readonly run_at?: string;
  readonly discarded_at?: string;
}

/** Reads every task's status: a full table Scan (read capacity ∝ table size). */
export interface StatusSource {
  scanStatuses(): AsyncIterable<StatusItem[]>;
}

export interface StatusTally {
  readonly counts: Record<TaskStatus, number>;
  readonly total: number;
  /** Failed tasks an operator discarded (purged). */
  readonly discarded: number;
  /** The queued/retrying task that has waited longest past its run_at: an age the table can tell. */
  readonly oldestWaiting?: { readonly task_id: string; readonly run_at: string; readonly age_seconds: number };
}

/** Counts statuses page by page, so a large table is never held in memory. */
export class StatusTallier {
  private readonly counts = Object.fromEntries(TASK_STATUSES.map((s) => [s, 0])) as Record<TaskStatus, number>;
  private total = 0;
  private discarded = 0;
  private oldest: { task_id: string; run_at: string; at: number } | undefined;

  constructor(private readonly now: number) {}

  add(items: Iterable<StatusItem>): void {
    for (const it of items) {
      this.total += 1;
      if (it.status in this.counts) this.counts[it.status] += 1;
      if (it.discarded_at !== undefined) this.discarded += 1;
      if ((it.status === 'queued' || it.status === 'retrying' || it.status === 'waiting') && it.run_at !== undefined) {
        const at = Date.parse(it.run_at);
        if (at <= this.now && (this.oldest === undefined || at < this.oldest.at)) {
          this.oldest = { task_id: it.task_id, run_at: it.run_at, at };
        }
      }
    }
  }

  result(): StatusTally {
    const o = this.oldest;
    return {
      counts: { ...this.counts },
      total: this.total,
      discarded: this.discarded,
      ...(o === undefined
        ? {}
        : {
            oldestWaiting: { task_id: o.task_id, run_at: o.run_at, age_seconds: Math.round((this.now - o.at) / 1000) },
          }),
    };
  }
}

export interface QueueStats {
  readonly priority: Priority;
  readonly queue: QueueDepth & {
    /**
     * Age of the oldest message: SQS's GetQueueAttributes has no such attribute (CloudWatch's
     * ApproximateAgeOfOldestMessage does), and peeking would count as a receive towards the
     * redrive policy, so it is not shown. `--by-status` gives the oldest waiting task instead.
     */
    readonly oldestAgeSeconds: null;
  };
  readonly dlq: Pick<QueueDepth, 'visible' | 'inFlight'>;
}

/** The queue of a lane other than the default one (its dead letters are in the shared DLQs). */
export interface LaneQueueStats {
  readonly lane: string;
  readonly priority: Priority;
  readonly queue: QueueDepth;
}

export interface StatsSnapshot {
  readonly at: string;
  readonly queues: QueueStats[];
  /** The other lanes' queues, when the deployment has lanes. */
  readonly lanes?: LaneQueueStats[];
  /** Every declared limit's use right now (holders, free slots, rate starts, pauses, refusals). */
  readonly limits?: LimitStatusRow[];
  /**
   * Tasks waiting in the table for their message (a delay beyond SQS's 15 minutes, which the
   * queues' `delayed` does not see), every lane's, counted up to a bound per outbox partition.
   */
  readonly delayedInTable?: TableDelayedCount;
  readonly byStatus?: StatusTally;
}

export async function collectStats(
  deps: {
    inspector: QueueInspector;
    statuses?: StatusSource;
    clock: Clock;
    /** The limits table and the declared limits (none: no limits section). */
    limits?: { readonly store: Pick<LimitStore, 'list'>; readonly specs: ReadonlyMap<string, LimitSpec> };
    /** The outbox index, to count the tasks delayed in the table (none: not counted). */
    outbox?: Pick<TaskListingReader, 'readOutbox'>;
  },
  o: { byStatus: boolean },
): Promise<StatsSnapshot> {
  const queues = await Promise.all(
    PRIORITIES.map(async (priority): Promise<QueueStats> => {
      const [q, d] = await Promise.all([
        deps.inspector.depth('queue', priority),
        deps.inspector.depth('dlq', priority),
      ]);
      return { priority, queue: { ...q, oldestAgeSeconds: null }, dlq: { visible: d.visible, inFlight: d.inFlight } };
    }),
  );
  const lanes: LaneQueueStats[] = [];
  for (const lane of deps.inspector.lanes?.() ?? []) {
    for (const priority of PRIORITIES)
      lanes.push({ lane, priority, queue: await deps.inspector.depth('queue', priority, lane) });
  }
  let limits: LimitStatusRow[] | undefined;
  if (deps.limits !== undefined && deps.limits.specs.size > 0) {
    limits = limitStatus(deps.limits.specs, await deps.limits.store.list(), deps.clock.now());
  }
  const delayedInTable = deps.outbox === undefined ? undefined : await countTableDelayed(deps.outbox);
  let byStatus: StatusTally | undefined;
  if (o.byStatus && deps.statuses !== undefined) {
    const tallier = new StatusTallier(deps.clock.now());
    for await (const page of deps.statuses.scanStatuses()) tallier.add(page);
    byStatus = tallier.result();
  }
  return {
    at: new Date(deps.clock.now()).toISOString(),
    queues,
    ...(lanes.length === 0 ? {} : { lanes }),
    ...(limits === undefined ? {} : { limits }),
    ...(delayedInTable === undefined ? {} : { delayedInTable }),
    ...(byStatus === undefined ? {} : { byStatus }),
  };
}
