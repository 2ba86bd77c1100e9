import type { Priority } from '../config/resources.js';
import type { DeadLetter } from '../queue/message.js';
import { ConditionFailedError } from '../store/errors.js';
import type { TaskChanges } from '../store/task-store.js';
import { CLAIMABLE_FRESH, outboxFields, SQS_DELAY_MS } from './changes.js';
import { ignoreConflict } from './fence.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { OutboxTarget, TaskRecord, TaskStatus } from './model.js';
import { isFinished } from './state-machine.js';

/**
 * The outbox: every unfinished task owes a message (or a dead letter) until a send is
 * confirmed, and keeps an entry as a watchdog after that (docs/reliability.md, "The invariant").
 * This class sends what a record owes and moves its entry; the sweeper calls `sweepEntry`.
 */
export class TaskOutbox {
  constructor(private readonly d: LifecycleDeps) {}

  /** Outbox fields for a message owed to `target`, to be sent at `runAtMs`. */
  fields(target: OutboxTarget, priority: Priority, runAtMs: number): Pick<TaskRecord, 'outbox_pk' | 'outbox_due'> {
    return outboxFields(target, priority, runAtMs, this.d.clock.now(), this.d.settings);
  }

  /**
   * Sends the message a task is owed (its outbox entry). After a queue send the entry stays as
   * a watchdog, due `watchdogSeconds` after run_at (claims and heartbeats leave it there);
   * after a dead letter it is removed.
   * Returns 'deferred' for a delay SQS cannot hold yet (the sweeper sends it later).
   * @throws QueueUnavailableError when the send fails; the entry stays for the sweeper.
   */
  async dispatch(record: TaskRecord): Promise<'sent' | 'deferred' | 'none'> {
    if (record.outbox_pk === undefined) return 'none';
    if (record.outbox_pk.startsWith('queue#'))
      return this.sendQueued(record, record.priority, Date.parse(record.run_at));
    await this.d.queue.sendDead(deadLetterOf(record, this.d.clock.now()));
    await this.confirmSent(record, { remove: ['outbox_pk', 'outbox_due'] }, ['failed']);
    return 'sent';
  }

  /**
   * Sends the task's current dispatch again — to `priority` (default its own), due at `runAtMs`
   * (default its run_at) — for an operator's redrive to another queue, or for the local runtime,
   * whose in-memory queues lost their messages. The claim absorbs any duplicate.
   * @throws QueueUnavailableError
   */
  resend(
    record: TaskRecord,
    o: { readonly priority?: Priority; readonly runAtMs?: number } = {},
  ): Promise<'sent' | 'deferred'> {
    return this.sendQueued(record, o.priority ?? record.priority, o.runAtMs ?? Date.parse(record.run_at));
  }

  /**
   * Sends a task's message to a queue. The watchdog then backs off exponentially: the next look
   * is as far away as the task has already waited (at least watchdogSeconds), so a long backlog
   * or a consumer outage costs a few extra messages per task (1 h, 2 h, 4 h, …), not one per
   * watchdog period.
   */
  private async sendQueued(record: TaskRecord, priority: Priority, runAt: number): Promise<'sent' | 'deferred'> {
    const now = this.d.clock.now();
    const delayMs = runAt - now;
    if (delayMs > SQS_DELAY_MS) return 'deferred';
    await this.sendMessage(record, Math.max(0, delayMs) / 1000, priority);
    const waited = Math.max(0, now - runAt);
    await this.confirmSent(
      record,
      { set: { outbox_due: Math.max(runAt, now) + Math.max(this.d.settings.watchdogSeconds * 1000, waited) } },
      CLAIMABLE_FRESH,
    );
    return 'sent';
  }

  /** Sends what is owed, leaving it to the sweeper if SQS is unavailable right now. */
  async dispatchQuietly(record: TaskRecord): Promise<void> {
    try {
      await this.dispatch(record);
    } catch (err) {
      this.d.logger.warn('send failed; the sweeper will send it', {
        task_id: record.task_id,
        outbox: record.outbox_pk,
        error: err instanceof Error ? err.name : String(err),
      });
    }
  }

  /**
   * True while a queued task's message has not been confirmed sent: a confirmed send moves the
   * entry's due time to the watchdog (run_at + watchdogSeconds or later).
   */
  sendUnconfirmed(record: TaskRecord): boolean {
    if (record.outbox_pk === undefined || record.outbox_due === undefined) return false;
    if (!CLAIMABLE_FRESH.includes(record.status)) return false;
    return record.outbox_due < Date.parse(record.run_at) + this.d.settings.watchdogSeconds * 1000;
  }

  /**
   * The sweeper found this task's outbox entry due. Sends what is owed; for a running task,
   * extends the watchdog while its lease is live, and re-sends its message once the lease has
   * long expired (its worker died and its message is gone): the claim then reclaims it as a crash.
   */
  async sweepEntry(record: TaskRecord): Promise<'sent' | 'deferred' | 'extended' | 'none'> {
    const now = this.d.clock.now();
    if (record.status === 'running') {
      const leaseUntil = record.lease_until ?? 0;
      const fence = { leaseToken: record.lease_token, status: ['running'] as TaskStatus[] };
      if (leaseUntil > now) {
        // Look again shortly after the lease would run out.
        const due = leaseUntil + this.d.settings.outboxGraceSeconds * 1000;
        await this.d.store.update(record.task_id, { set: { outbox_due: due } }, fence).catch(ignoreConflict);
        return 'extended';
      }
      await this.sendMessage(record, 0);
      this.d.logger.warn('running task lost its worker and its message; message re-sent', {
        task_id: record.task_id,
        lease_expired_ms_ago: now - leaseUntil,
      });
      await this.d.store
        .update(record.task_id, { set: { outbox_due: now + this.d.settings.watchdogSeconds * 1000 } }, fence)
        .catch(ignoreConflict);
      return 'sent';
    }
    if (isFinished(record.status) && !record.outbox_pk?.startsWith('dlq#')) {
      await this.d.store
        .update(
          record.task_id,
          { remove: ['outbox_pk', 'outbox_due'] },
          { status: [record.status], outboxPending: true },
        )
        .catch(ignoreConflict);
      return 'none';
    }
    if (CLAIMABLE_FRESH.includes(record.status) && Date.parse(record.run_at) < now) {
      this.d.logger.info('sending (or re-sending) a queued task’s message', {
        task_id: record.task_id,
        status: record.status,
      });
    }
    return this.dispatch(record);
  }

  /** The task's message (its current dispatch) to its priority queue. */
  private sendMessage(record: TaskRecord, delaySeconds: number, priority: Priority = record.priority): Promise<void> {
    return this.d.queue.send(
      priority,
      { task_id: record.task_id, dispatch_id: record.dispatch_id, timeout_seconds: record.timeout_seconds },
      { delaySeconds, type: record.type },
    );
  }

  /** Records that the owed message went out, unless the task moved on meanwhile. */
  private async confirmSent(record: TaskRecord, changes: TaskChanges, statuses: readonly TaskStatus[]): Promise<void> {
    try {
      await this.d.store.update(record.task_id, changes, {
        dispatchId: record.dispatch_id,
        status: statuses,
        outboxPending: true,
      });
    } catch (err) {
      // Claimed or superseded already: its entry belongs to the new state now.
      if (err instanceof ConditionFailedError) return;
      // The message is out; the sweeper may send a duplicate, which the claim absorbs.
      this.d.logger.warn('outbox entry not updated after send', { task_id: record.task_id, error: String(err) });
    }
  }
}

/** The dead letter of a failed task, as the DLQ of its priority holds it. */
export function deadLetterOf(record: TaskRecord, now: number): DeadLetter {
  return {
    task_id: record.task_id,
    dispatch_id: record.dispatch_id,
    type: record.type,
    priority: record.priority,
    attempts: record.attempts,
    reason: record.last_error?.message ?? 'failed',
    ...(record.last_error === undefined ? {} : { last_error: record.last_error }),
    failed_at: record.finished_at ?? new Date(now).toISOString(),
  };
}
