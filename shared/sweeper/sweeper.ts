import { PRIORITIES } from '../config/resources.js';
import { METRICS } from '../config/metrics.js';
import type { LifecycleDeps, TaskLifecycle } from '../task/lifecycle.js';
import { outboxKey, type OutboxTarget, type TaskRecord } from '../task/model.js';

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

/**
 * Enforces the invariant of docs/reliability.md: every unfinished task has an outbox entry,
 * and when one comes due the sweeper acts on it — sends a message whose send was not
 * confirmed, a delay beyond SQS's 15 minutes that came within reach, a dead letter not yet
 * written; re-sends the message of a task nobody claimed long after its run_at or whose
 * worker vanished with its message. Runs every minute on AWS and on a timer locally.
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
    const targets: OutboxTarget[] = ['dlq', 'queue'];
    for (const target of targets) {
      for (const priority of PRIORITIES) {
        const partition = outboxKey(target, priority);
        for (;;) {
          const due = await this.d.store.listOutboxDue(partition, this.d.clock.now(), this.pageSize);
          let progressed = 0;
          for (const entry of due) {
            const record = entry;
            try {
              // The index is eventually consistent (and a local torn write can leave a phantom):
              // act on the item itself, and only if it still owes what the entry says.
              const current = await this.d.store.get(entry.task_id);
              if (!stillDue(current, partition, this.d.clock.now())) {
                report.stale += 1;
                continue;
              }
              const r = await this.lifecycle.sweepEntry(current);
              if (r === 'sent') {
                report.sent += 1;
                this.d.metrics.count(METRICS.sweptMessages, record.type);
              } else if (r === 'deferred') report.deferred += 1;
              else report.extended += 1;
              if (r !== 'deferred') progressed += 1;
            } catch (err) {
              report.failed += 1;
              this.d.metrics.count(METRICS.sweeperItemFailures, undefined);
              this.d.logger.warn('sweeper could not send; will try next run', {
                task_id: record.task_id,
                partition,
                error: err instanceof Error ? err.name : String(err),
              });
            }
          }
          // A short page means the partition is drained; no progress means only failures/deferrals are left.
          if (due.length < this.pageSize || progressed === 0 || this.d.clock.now() - started > budgetMs) break;
        }
      }
    }
    if (report.sent + report.failed + report.stale > 0) this.d.logger.info('outbox swept', { ...report });
    return report;
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
