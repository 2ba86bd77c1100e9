import { PRIORITIES } from '../config/resources.js';
import { METRICS } from '../config/metrics.js';
import type { LifecycleDeps, TaskLifecycle } from '../task/lifecycle.js';
import { outboxKey, type OutboxTarget } from '../task/model.js';

export interface SweepReport {
  /** Messages (and dead letters) sent. */
  sent: number;
  /** Delays still beyond SQS's reach. */
  deferred: number;
  /** Watchdogs moved on: live leases, or stale entries of finished tasks removed. */
  extended: number;
  failed: number;
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
    const report: SweepReport = { sent: 0, deferred: 0, extended: 0, failed: 0 };
    const started = this.d.clock.now();
    const targets: OutboxTarget[] = ['dlq', 'queue'];
    for (const target of targets) {
      for (const priority of PRIORITIES) {
        const partition = outboxKey(target, priority);
        for (;;) {
          const due = await this.d.store.listOutboxDue(partition, this.d.clock.now(), this.pageSize);
          let progressed = 0;
          for (const record of due) {
            try {
              const r = await this.lifecycle.sweepEntry(record);
              if (r === 'sent') {
                report.sent += 1;
                this.d.metrics.count(METRICS.sweptMessages, record.type);
              } else if (r === 'deferred') report.deferred += 1;
              else report.extended += 1;
              if (r !== 'deferred') progressed += 1;
            } catch (err) {
              report.failed += 1;
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
    if (report.sent + report.failed > 0) this.d.logger.info('outbox swept', { ...report });
    return report;
  }
}
