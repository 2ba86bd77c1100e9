import type { Priority } from '../config/resources.js';
import type { DeadLetter } from './message.js';
import type { OutgoingMessage } from './task-queue.js';
import { ConditionFailedError } from './store-errors.js';
import { CLAIMABLE_FRESH, outboxFields, sendableNow } from './changes.js';
import { ignoreConflict } from './fence.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { OutboxTarget, TaskRecord, TaskStatus } from './model.js';
import { isFinished } from './state-machine.js';

/**
 * Messages and the outbox. A task sent at once is kept by its message alone: the message goes
 * out first and the record is written after it, so no crash between the two can leave a record
 * without a message (docs/reliability.md, "Send first, then put"). What cannot be sent at once
 * waits in the table as an outbox entry — a delay beyond SQS's 15 minutes, a send that failed, a
 * dead letter owed — and the sweeper calls `sweepEntry` when it comes due.
 */
export class TaskOutbox {
  constructor(private readonly d: LifecycleDeps) {}

  /** Outbox fields for a message owed to `target`, to be sent at `runAtMs`. */
  fields(
    taskId: string,
    target: OutboxTarget,
    priority: Priority,
    runAtMs: number,
  ): Pick<TaskRecord, 'outbox_pk' | 'outbox_due'> {
    return outboxFields(taskId, target, priority, runAtMs, this.d.clock.now(), this.d.settings);
  }

  /**
   * The first half of "send first, then put": sends the message of a record about to be
   * written (a submit, a retry) and returns the fields that record must carry — none when the
   * message went out, an outbox entry when it could not (a delay beyond SQS's reach, or a failed
   * send: the sweeper sends it then). Never throws for the queue: the write is what commits.
   */
  async sendAhead(record: TaskRecord): Promise<Pick<TaskRecord, 'outbox_pk' | 'outbox_due'>> {
    const now = this.d.clock.now();
    const runAt = Date.parse(record.run_at);
    const owed = () => this.fields(record.task_id, 'queue', record.priority, runAt);
    if (!sendableNow(runAt, now)) return owed();
    try {
      await this.sendMessage(record, Math.max(0, runAt - now) / 1000);
      return {};
    } catch (err) {
      this.d.logger.warn('send failed; the task waits in the outbox for the sweeper', {
        task_id: record.task_id,
        error: err instanceof Error ? err.name : String(err),
      });
      return owed();
    }
  }

  /**
   * `sendAhead` for many records at once (a batch submit): the messages that can go now are
   * sent with as few requests as the queue allows (SQS: `SendMessageBatch`, 10 a request, per
   * priority and lane), entry by entry. Returns, in the records' order, the fields each record
   * must carry: none when its message went out, an outbox entry when it could not.
   */
  async sendAheadMany(records: readonly TaskRecord[]): Promise<Pick<TaskRecord, 'outbox_pk' | 'outbox_due'>[]> {
    const now = this.d.clock.now();
    const owed = (r: TaskRecord) => this.fields(r.task_id, 'queue', r.priority, Date.parse(r.run_at));
    const out: Pick<TaskRecord, 'outbox_pk' | 'outbox_due'>[] = records.map(() => ({}));
    const byPriority = new Map<Priority, { index: number; entry: OutgoingMessage }[]>();
    records.forEach((r, index) => {
      const runAt = Date.parse(r.run_at);
      if (!sendableNow(runAt, now)) {
        out[index] = owed(r);
        return;
      }
      const list = byPriority.get(r.priority) ?? [];
      list.push({ index, entry: this.outgoing(r, Math.max(0, runAt - now) / 1000) });
      byPriority.set(r.priority, list);
    });
    await Promise.all(
      [...byPriority].map(async ([priority, list]) => {
        const failed = await this.d.queue.sendMany(
          priority,
          list.map((l) => l.entry),
        );
        const indexOf = new Map(list.map((l) => [l.entry, l.index]));
        for (const f of failed) {
          const index = indexOf.get(f.entry) as number;
          const record = records[index] as TaskRecord;
          out[index] = owed(record);
          this.d.logger.warn('send failed; the task waits in the outbox for the sweeper', {
            task_id: record.task_id,
            error: f.error.name,
          });
        }
      }),
    );
    return out;
  }

  /**
   * Sends what a record's outbox entry owes, then removes the entry: after a queue send the
   * message keeps the task, after a dead letter there is nothing more to send.
   * Returns 'deferred' for a delay SQS cannot hold yet (the sweeper sends it later).
   * @throws QueueUnavailableError when the send fails; the entry stays for the sweeper.
   */
  async dispatch(record: TaskRecord): Promise<'sent' | 'deferred' | 'none'> {
    if (record.outbox_pk === undefined) return 'none';
    if (record.outbox_pk.startsWith('queue#'))
      return this.sendQueued(record, record.priority, Date.parse(record.run_at));
    await this.d.queue.sendDead(deadLetterOf(record, this.d.clock.now()));
    await this.confirmSent(record, ['failed']);
    return 'sent';
  }

  /**
   * Sends the task's current dispatch again — to `priority` (default its own), due at `runAtMs`
   * (default its run_at) — for an operator's redrive to another queue, or for the local runtime,
   * whose in-memory queues lost their messages. The claim absorbs any duplicate.
   * @throws QueueUnavailableError
   */
  async resend(
    record: TaskRecord,
    o: { readonly priority?: Priority; readonly runAtMs?: number } = {},
  ): Promise<'sent' | 'deferred'> {
    const runAt = o.runAtMs ?? Date.parse(record.run_at);
    const now = this.d.clock.now();
    if (!sendableNow(runAt, now)) return 'deferred';
    await this.sendMessage(record, Math.max(0, runAt - now) / 1000, o.priority ?? record.priority);
    return 'sent';
  }

  /** Sends a queued task's owed message and removes its entry. */
  private async sendQueued(record: TaskRecord, priority: Priority, runAt: number): Promise<'sent' | 'deferred'> {
    if ((await this.resend(record, { priority, runAtMs: runAt })) === 'deferred') return 'deferred';
    await this.confirmSent(record, ['queued', 'retrying', 'waiting', 'running']);
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

  /** True while a waiting task owes a message that can be sent now (its earlier send failed). */
  sendUnconfirmed(record: TaskRecord): boolean {
    if (record.outbox_pk === undefined || !record.outbox_pk.startsWith('queue#')) return false;
    if (!CLAIMABLE_FRESH.includes(record.status)) return false;
    return sendableNow(Date.parse(record.run_at), this.d.clock.now());
  }

  /**
   * The sweeper found this task's outbox entry due. Sends what is owed; for a running task (an
   * entry left by a send whose removal failed), extends the entry while its lease is live, and
   * re-sends its message once the lease has long expired (its worker died and its message is
   * gone): the claim then reclaims it as a crash.
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
    return this.dispatch(record);
  }

  /** The task's message (its current dispatch) to its priority queue. */
  private sendMessage(record: TaskRecord, delaySeconds: number, priority: Priority = record.priority): Promise<void> {
    const { message, ...options } = this.outgoing(record, delaySeconds);
    return this.d.queue.send(priority, message, options);
  }

  /** The message of a record's current dispatch, as the queue takes it. */
  private outgoing(record: TaskRecord, delaySeconds: number): OutgoingMessage {
    return {
      message: {
        task_id: record.task_id,
        dispatch_id: record.dispatch_id,
        timeout_seconds: record.timeout_seconds,
        sent_at: this.d.clock.now(),
        ...(record.tenant === undefined ? {} : { tenant: record.tenant }),
      },
      delaySeconds,
      type: record.type,
      ...(record.lane === undefined ? {} : { lane: record.lane }),
    };
  }

  /** Removes the entry whose message went out, unless the task moved on to another dispatch meanwhile. */
  private async confirmSent(record: TaskRecord, statuses: readonly TaskStatus[]): Promise<void> {
    try {
      await this.d.store.update(
        record.task_id,
        { remove: ['outbox_pk', 'outbox_due'] },
        { dispatchId: record.dispatch_id, status: statuses, outboxPending: true },
      );
    } catch (err) {
      // Finished or superseded already: its entry belongs to the new state now.
      if (err instanceof ConditionFailedError) return;
      // The message is out; the sweeper may send a duplicate, which the claim absorbs.
      this.d.logger.warn('outbox entry not removed after send', { task_id: record.task_id, error: String(err) });
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
