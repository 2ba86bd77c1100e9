import type { Priority } from '../config/resources.js';
import { ConditionFailedError } from './store-errors.js';
import type { TaskChanges } from './task-store.js';
import { cancelChanges, finishedExpiry, iso, nextDispatchId, outboxFields } from './changes.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { TaskRecord } from './model.js';
import { deadLetterOf, type TaskOutbox } from './outbox.js';
import { isFinished, transition } from './state-machine.js';
import {
  type Changed,
  type DeadLetterRef,
  type LetterRewriteOutcome,
  type MoveResetOutcome,
  type Operator,
  type PurgeOutcome,
  type RecoveryOutcome,
  type RedriveOutcome,
  type RedriveRequest,
  type Sending,
  WAITING,
  auditEntry,
  checkOperator,
  dlqRetentionStart,
  planLetterPurge,
  planLetterRedrive,
  planRecordPurge,
  planRecordRedrive,
  redriveTarget,
} from './operations.js';

/** What `reopen` did. */
export type ReopenOutcome =
  | { readonly kind: 'reopened'; readonly record: TaskRecord; readonly sending: Sending }
  | Changed;

/**
 * Operator actions on task records (`TaskLifecycle.operations`): the writes of redrive, purge,
 * the native move and the local recovery. What each would do, and the types it answers with,
 * are `operations.ts`.
 */
export class OperatorActions {
  constructor(
    private readonly d: LifecycleDeps,
    private readonly outbox: TaskOutbox,
  ) {}

  // --- redrive

  /**
   * Redrives the task a DLQ message stands for (see `RedrivePlan`), on the record as the caller
   * read it. A reset is one conditional write (`status = failed` AND the message's dispatch id)
   * that leaves an outbox entry, so from then on the task runs even if the caller dies; the new
   * message is sent after it. The caller deletes the DLQ message only after this returns.
   */
  async redriveLetter(
    letter: DeadLetterRef,
    record: TaskRecord | undefined,
    request: RedriveRequest,
  ): Promise<RedriveOutcome> {
    checkOperator(request, letter.taskId);
    const plan = planLetterRedrive(letter, record, (r) => this.outbox.sendUnconfirmed(r));
    if (record === undefined || plan.action === 'leave') return { kind: 'skipped', reason: 'not_found' };
    switch (plan.action) {
      case 'discard_letter':
        return { kind: 'skipped', reason: plan.reason, status: plan.status };
      case 'reset':
        return this.reset(record, redriveTarget(request.to, letter.origin), request);
      case 'resume':
        return { kind: 'resumed', record, sending: await this.send(record) };
      case 'resend':
        return this.resend(record, redriveTarget(request.to, record.priority), request);
    }
  }

  /**
   * Redrives a dead task from its record alone (its dead letter is gone: lost with the in-memory
   * SQS of `npm start`, or deleted by hand). Only a `failed`, not discarded task is reset.
   */
  async redriveRecord(record: TaskRecord, request: RedriveRequest): Promise<RedriveOutcome> {
    checkOperator(request, record.task_id);
    const plan = planRecordRedrive(record);
    if (plan.action === 'skip') return { kind: 'skipped', reason: plan.reason, status: record.status };
    return this.reset(record, redriveTarget(request.to, record.priority), request);
  }

  /**
   * The native move's reset (`kaj dlq redrive --native`): failed → queued keeping the dispatch id,
   * so the message SQS moves back is claimable, with an outbox entry so the sweeper sends it
   * should the move fail.
   */
  async resetForMove(record: TaskRecord, request: RedriveRequest): Promise<MoveResetOutcome> {
    checkOperator(request, record.task_id);
    try {
      const reset = await this.d.store.update(
        record.task_id,
        this.resetChanges(record, redriveTarget(request.to, record.priority), request, record.dispatch_id),
        { status: ['failed'], dispatchId: record.dispatch_id },
      );
      return { kind: 'reset', record: reset };
    } catch (err) {
      return this.changed(err, record.task_id);
    }
  }

  /**
   * Writes a dead task's letter again: the record owes it again (a `dlq#` outbox entry) and it is
   * sent. For tasks that died while a native move ran, which may have taken their letter.
   * @throws QueueUnavailableError when the send fails; the entry stays for the sweeper.
   */
  async rewriteDeadLetter(record: TaskRecord): Promise<LetterRewriteOutcome> {
    const now = this.d.clock.now();
    let owed: TaskRecord;
    try {
      owed = await this.d.store.update(
        record.task_id,
        { set: outboxFields(record.task_id, 'dlq', record.priority, now, now, this.d.settings) },
        { status: ['failed'], dispatchId: record.dispatch_id },
      );
    } catch (err) {
      return this.changed(err, record.task_id);
    }
    await this.outbox.dispatch(owed);
    return { kind: 'rewritten', record: owed };
  }

  // --- purge

  /** Purges the task a DLQ message stands for (see `PurgePlan`), on the record as the caller read it. */
  async purgeLetter(letter: DeadLetterRef, record: TaskRecord | undefined, operator: Operator): Promise<PurgeOutcome> {
    checkOperator(operator, letter.taskId);
    const plan = planLetterPurge(letter, record);
    if (record === undefined) return { kind: 'skipped', reason: 'not_found' };
    switch (plan.action) {
      case 'delete':
        return { kind: 'skipped', reason: plan.reason, ...(plan.status === undefined ? {} : { status: plan.status }) };
      case 'leave':
        return { kind: 'skipped', reason: plan.reason, status: record.status };
      case 'mark':
        return this.discard(record, operator);
      case 'cancel':
        return this.cancelDiscarded(record, operator);
    }
  }

  /** Discards a dead task from its record alone (no dead letter at hand). Only a `failed` task is marked. */
  async discardRecord(record: TaskRecord, operator: Operator): Promise<PurgeOutcome> {
    checkOperator(operator, record.task_id);
    const plan = planRecordPurge(record);
    if (plan.action === 'skip') return { kind: 'skipped', reason: plan.reason, status: record.status };
    return this.discard(record, operator);
  }

  // --- local recovery

  /**
   * `npm start` after a restart: the embedded SQS lost every message while the saved table kept
   * the tasks. An unfinished task gets its message again (same dispatch id: the claim accepts it;
   * a running one's arrives when its lease ends, and the claim reclaims it); a dead task (failed,
   * not discarded, its letter sent) that died within the DLQ retention gets its dead letter again.
   */
  async recover(record: TaskRecord): Promise<RecoveryOutcome> {
    const now = this.d.clock.now();
    if (record.status === 'failed') {
      if (record.discarded_at !== undefined) return { kind: 'skipped', reason: 'discarded' };
      if (record.outbox_pk !== undefined) return { kind: 'skipped', reason: 'letter_owed' };
      if (Date.parse(record.finished_at ?? record.updated_at) < dlqRetentionStart(now)) {
        return { kind: 'skipped', reason: 'letter_expired' };
      }
      try {
        await this.d.queue.sendDead(deadLetterOf(record, now));
        return { kind: 'dead_letter_sent' };
      } catch (error) {
        return { kind: 'dead_letter_unsent', error };
      }
    }
    if (isFinished(record.status)) return { kind: 'skipped', reason: 'finished' };
    if (record.status === 'running') {
      await this.sendCurrentMessage(record, record.priority, iso((record.lease_until ?? 0) + 1000), 'quietly');
      return { kind: 'requeued', record };
    }
    if (record.outbox_pk !== undefined) {
      await this.outbox.dispatchQuietly(record);
      return { kind: 'requeued', record };
    }
    // Sent at once, so kept by its message alone, which the restart lost: send it again.
    await this.sendCurrentMessage(record, record.priority, record.run_at, 'quietly');
    return { kind: 'requeued', record };
  }

  // --- the writes

  private async reset(record: TaskRecord, target: Priority, request: RedriveRequest): Promise<RedriveOutcome> {
    let reset: TaskRecord;
    try {
      reset = await this.d.store.update(
        record.task_id,
        this.resetChanges(record, target, request, nextDispatchId(this.d.random, record.dispatch_id)),
        {
          status: ['failed'],
          dispatchId: record.dispatch_id,
        },
      );
    } catch (err) {
      return this.changed(err, record.task_id);
    }
    return { kind: 'reset', record: reset, target, sending: await this.send(reset) };
  }

  /** An audit entry (and the count) first, fenced on the same dispatch; then the same message again. */
  private async resend(record: TaskRecord, target: Priority, request: RedriveRequest): Promise<RedriveOutcome> {
    const now = this.d.clock.now();
    let audited: TaskRecord;
    try {
      audited = await this.d.store.update(
        record.task_id,
        {
          set: { updated_at: iso(now) },
          add: { redrive_count: 1 },
          append: { audit: [auditEntry('redrive', request, now)] },
        },
        { status: WAITING, dispatchId: record.dispatch_id },
      );
    } catch (err) {
      return this.changed(err, record.task_id);
    }
    await this.sendCurrentMessage(audited, target, audited.run_at, 'or_throw');
    return { kind: 'resent', record: audited, target, was: record.status };
  }

  /** The record write of a redrive: failed → queued via the state machine, ready to be sent. */
  private resetChanges(record: TaskRecord, target: Priority, request: RedriveRequest, dispatchId: string): TaskChanges {
    const now = this.d.clock.now();
    return {
      set: {
        status: transition(record.status, 'redrive', record.task_id),
        priority: target,
        run_at: iso(now),
        updated_at: iso(now),
        dispatch_id: dispatchId,
        ...(request.keepAttempts ? {} : { attempts: 0, crashes: 0, unattributed_crashes: 0 }),
        ...outboxFields(record.task_id, 'queue', target, now, now, this.d.settings),
      },
      remove: ['finished_at', 'expires_at', 'discarded_at', 'lease_until', 'cancel_requested', 'solo'],
      add: { redrive_count: 1 },
      append: { audit: [auditEntry('redrive', request, now)] },
    };
  }

  // --- reopen

  /**
   * Reopens a finished workflow run (a pipeline's clear: its history says what runs again):
   * finished → queued, attempts reset, audited, one conditional write fenced on its status and
   * dispatch that leaves an outbox entry, then its message. `changed` when it moved meanwhile.
   */
  async reopen(record: TaskRecord, operator: Operator): Promise<ReopenOutcome> {
    checkOperator(operator, record.task_id);
    const now = this.d.clock.now();
    let reopened: TaskRecord;
    try {
      reopened = await this.d.store.update(
        record.task_id,
        {
          set: {
            status: transition(record.status, 'reopen', record.task_id),
            run_at: iso(now),
            updated_at: iso(now),
            dispatch_id: nextDispatchId(this.d.random, record.dispatch_id),
            attempts: 0,
            crashes: 0,
            unattributed_crashes: 0,
            ...outboxFields(record.task_id, 'queue', record.priority, now, now, this.d.settings),
          },
          remove: [
            'finished_at',
            'expires_at',
            'discarded_at',
            'lease_until',
            'cancel_requested',
            'solo',
            'result',
            'children_open',
            'wake_requested',
          ],
          append: { audit: [auditEntry('reopen', operator, now)] },
        },
        { status: [record.status], dispatchId: record.dispatch_id },
      );
    } catch (err) {
      return this.changed(err, record.task_id);
    }
    return { kind: 'reopened', record: reopened, sending: await this.send(reopened) };
  }

  /** Marks a failed task discarded (status stays failed), audited, fenced on its dispatch id. */
  private async discard(record: TaskRecord, operator: Operator): Promise<PurgeOutcome> {
    const now = this.d.clock.now();
    try {
      const discarded = await this.d.store.update(
        record.task_id,
        {
          set: { discarded_at: iso(now), updated_at: iso(now), expires_at: finishedExpiry(now, this.d.settings) },
          // Also cancels a dead letter still owed (outbox dlq#…): the task is discarded, not to be listed again.
          remove: ['outbox_pk', 'outbox_due'],
          append: { audit: [auditEntry('purge', operator, now)] },
        },
        { status: ['failed'], dispatchId: record.dispatch_id },
      );
      return { kind: 'discarded', record: discarded };
    } catch (err) {
      return this.changed(err, record.task_id);
    }
  }

  /** Cancels a waiting task whose only message is gone, and marks it discarded, audited. */
  private async cancelDiscarded(record: TaskRecord, operator: Operator): Promise<PurgeOutcome> {
    const now = this.d.clock.now();
    const cancel = cancelChanges(record, now, this.d.settings);
    try {
      const cancelled = await this.d.store.update(
        record.task_id,
        {
          ...cancel,
          set: { ...cancel.set, discarded_at: iso(now) },
          append: { audit: [auditEntry('purge', operator, now)] },
        },
        { status: [record.status], dispatchId: record.dispatch_id },
      );
      return { kind: 'cancelled', record: cancelled, was: record.status };
    } catch (err) {
      return this.changed(err, record.task_id);
    }
  }

  /** Sends what a (reset) record owes; a failed send leaves its outbox entry to the sweeper. */
  private async send(record: TaskRecord): Promise<Sending> {
    try {
      await this.outbox.dispatch(record);
      return { sent: true };
    } catch (error) {
      return { sent: false, error };
    }
  }

  /** Sends the task's current dispatch to `priority`, due at `runAt`; quietly leaves a failure to the sweeper. */
  private async sendCurrentMessage(
    record: TaskRecord,
    priority: Priority,
    runAt: string,
    mode: 'quietly' | 'or_throw',
  ): Promise<void> {
    try {
      await this.outbox.resend(record, { priority, runAtMs: Date.parse(runAt) });
    } catch (err) {
      if (mode === 'or_throw') throw err;
      this.d.logger.warn('send failed; the sweeper will send it', {
        task_id: record.task_id,
        error: err instanceof Error ? err.name : String(err),
      });
    }
  }

  private async changed(err: unknown, taskId: string): Promise<Changed> {
    if (!(err instanceof ConditionFailedError)) throw err;
    return { kind: 'changed', current: err.current ?? (await this.d.store.get(taskId)) };
  }
}
