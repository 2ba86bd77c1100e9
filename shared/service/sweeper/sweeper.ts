import { METRICS } from '../../config/metrics.js';
import type { LifecycleDeps, TaskLifecycle } from '../../task/lifecycle.js';
import { outboxPartitions, type TaskRecord } from '../../task/model.js';
import { forEachBounded } from '../../runtime/bounded.js';

export interface SweepReport {
  /** Messages (and dead letters) sent. */
  sent: number;
  /** Delays still beyond SQS's reach. */
  deferred: number;
  /** Watchdogs moved on: live leases, or stale entries of finished tasks removed. */
  extended: number;
  failed: number;
  /** Index entries that no longer matched their task (GSIs lag on AWS; a torn write locally): skipped. */
  stale: number;
}

/** Due entries acted on at once: one sweep sends a backlog in parallel, never unbounded. */
const SWEEP_CONCURRENCY = 8;
/** Outbox partitions (shards) queried at once. */
const PARTITION_CONCURRENCY = 6;

/**
 * Enforces the invariant of docs/reliability.md: whatever waits in the table is sent when it
 * comes due — a delay beyond SQS's 15 minutes that came within reach, a send that failed, a dead
 * letter not yet written, the message of a running task whose worker vanished with it. Reads
 * every shard of every outbox partition; runs every minute on AWS and on a timer locally.
 */
export class OutboxSweeper {
  constructor(
    private readonly d: LifecycleDeps,
    private readonly lifecycle: TaskLifecycle,
    private readonly pageSize = 100,
  ) {}

  /** @param budgetMs stop starting new pages after this long (the function's own timeout bounds the rest) */
  async sweep(budgetMs = 50_000): Promise<SweepReport> {
    const report: SweepReport = { sent: 0, deferred: 0, extended: 0, failed: 0, stale: 0 };
    const started = this.d.clock.now();
    // Partitions are read side by side (most are empty: one Query each), entries within one too.
    await forEachBounded(outboxPartitions(), PARTITION_CONCURRENCY, async (partition) => {
      for (;;) {
        const due = await this.d.store.listOutboxDue(partition, this.d.clock.now(), this.pageSize);
        let progressed = 0;
        await forEachBounded(due, SWEEP_CONCURRENCY, async (entry) => {
          const r = await this.sweepOne(entry.task_id, partition, report);
          if (r !== undefined && r !== 'deferred') progressed += 1;
        });
        // A short page means the partition is drained; no progress means only failures/deferrals are left.
        if (due.length < this.pageSize || progressed === 0 || this.d.clock.now() - started > budgetMs) break;
      }
    });
    if (report.sent + report.failed + report.stale > 0) this.d.logger.info('outbox swept', { ...report });
    return report;
  }

  /** Acts on one due entry; counts it in `report`. */
  private async sweepOne(
    taskId: string,
    partition: string,
    report: SweepReport,
  ): Promise<'sent' | 'deferred' | 'extended' | 'none' | undefined> {
    try {
      // The index is eventually consistent, keys only (and a local torn write can leave a
      // phantom): act on the item itself, and only if it still owes what the entry says.
      const current = await this.d.store.get(taskId);
      if (!stillDue(current, partition, this.d.clock.now())) {
        report.stale += 1;
        return undefined;
      }
      const r = await this.lifecycle.outboxes.sweepEntry(current);
      if (r === 'sent') {
        report.sent += 1;
        this.d.metrics.count(METRICS.sweptMessages, current.type);
      } else if (r === 'deferred') report.deferred += 1;
      else report.extended += 1;
      return r;
    } catch (err) {
      report.failed += 1;
      this.d.metrics.count(METRICS.sweeperItemFailures, undefined);
      this.d.logger.warn('sweeper could not send; will try next run', {
        task_id: taskId,
        partition,
        error: err instanceof Error ? err.name : String(err),
      });
      return undefined;
    }
  }
}

function stillDue(current: TaskRecord | undefined, partition: string, now: number): current is TaskRecord {
  return (
    current !== undefined &&
    current.outbox_pk === partition &&
    current.outbox_due !== undefined &&
    current.outbox_due <= now
  );
}
