import { DEFAULTS, type Priority } from '../config/resources.js';
import { ConditionFailedError } from './store-errors.js';
import type { TaskChanges } from './task-store.js';
import { cancelChanges, finishedExpiry, iso, nextDispatchId, outboxFields } from './changes.js';
import { ValidationError } from './errors.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { AuditEntry, TaskRecord, TaskStatus } from './model.js';
import { deadLetterOf, type TaskOutbox } from './outbox.js';
import { isFinished, transition } from './state-machine.js';

/**
 * What an operator does to tasks, and what `npm start` does after a restart: every record write
 * of `kaj dlq redrive` (reset, resend, resume), `kaj dlq purge` (discard, cancel), of the native
 * move (`--native`) and of the local recovery of lost messages. Each is one conditional write,
 * fenced on the status and the dispatch id the caller saw, with the deployment's settings.
 *
 * Every operation answers with a typed outcome; `changed` means the record moved between the
 * caller's read and the write (another operator, the consumer): read `current` and decide again.
 * The `plan…` functions say what an operation would do (for a dry run) without doing it.
 * Choosing the tasks (reading DLQs, filters, pacing, reports) is the CLI's: `cli/admin/`.
 */

/** Who acts, and why: every operator write appends an audit entry. */
export interface Operator {
  readonly actor: string;
  /** At most {@link MAX_REASON_LENGTH} characters: every audit entry is kept in the task record. */
  readonly reason?: string;
}

/**
 * The longest reason an operator may give. Each redrive, purge or cancel appends its reason to
 * the task record's audit trail, and a DynamoDB item holds at most 400 KB: a few long reasons
 * would make the record too large for the next write.
 */
export const MAX_REASON_LENGTH = 200;

/**
 * Refuses a reason over {@link MAX_REASON_LENGTH} characters before anything is read or written.
 * @throws ValidationError (field `reason`)
 */
export function checkOperator(who: Operator, taskId?: string): void {
  if (who.reason !== undefined && who.reason.length > MAX_REASON_LENGTH) {
    throw new ValidationError(
      'reason',
      `reason: at most ${MAX_REASON_LENGTH} characters (got ${who.reason.length})`,
      taskId === undefined ? {} : { taskId },
    );
  }
}

export interface RedriveRequest extends Operator {
  /** Where to send the task: `original` is the queue it died on. */
  readonly to: 'original' | Priority;
  /** Keep `attempts` and `crashes` (by default both go back to 0: the task gets its full retries). */
  readonly keepAttempts: boolean;
}

/** A message in a DLQ that names a task: a consumer's dead letter, or a task message SQS moved there. */
export interface DeadLetterRef {
  readonly taskId: string;
  /** The dispatch the message stands for: only the task's current dispatch is acted on. */
  readonly dispatchId: string;
  /** The priority queue the task died on. */
  readonly origin: Priority;
}

/** The record changed between the caller's read and the write: decide again on `current`. */
export interface Changed {
  readonly kind: 'changed';
  readonly current: TaskRecord | undefined;
}

/** Whether the message a record owes went out now. If not, its outbox entry stays: the sweeper sends it. */
export type Sending = { readonly sent: true } | { readonly sent: false; readonly error: unknown };

/** Why a dead letter no longer stands for anything to redrive: delete it, touch nothing else. */
export type ObsoleteLetter =
  /** Same dispatch, but the task succeeded or was cancelled since. */
  | 'finished'
  /** The task died again: a newer dead letter stands for it. */
  | 'superseded'
  /** The task was redriven since (it has a newer dispatch). */
  | 'already_redriven';

/**
 * What a redrive does with one DLQ message, decided from the message and the task record.
 * - `reset`: the task died with this very message (status `failed`, same dispatch id): reset the
 *   record (→ `queued`, new dispatch id, outbox entry), send the new message, delete this one.
 * - `resend`: SQS moved the task's message after `maxReceiveCount` receives while the task was
 *   still waiting (queued/retrying, or running when its worker vanished): send the same message
 *   again (the claim accepts it), audited, and delete this one. No status change.
 * - `resume`: an earlier redrive reset the record but may have stopped before sending: send what
 *   the record's outbox says is owed, delete this one.
 * - `discard_letter`: the message is obsolete: delete it, touch nothing else.
 * - `leave`: there is no task record: nothing to redrive, the message stays.
 */
export type RedrivePlan =
  | { readonly action: 'reset' }
  | { readonly action: 'resend' }
  | { readonly action: 'resume' }
  | { readonly action: 'discard_letter'; readonly reason: ObsoleteLetter; readonly status: TaskStatus }
  | { readonly action: 'leave'; readonly reason: 'not_found' };

/** A redrive of a task named by its id (no dead letter at hand): only a dead task is reset. */
export type RecordRedrivePlan =
  | { readonly action: 'reset' }
  | { readonly action: 'skip'; readonly reason: 'not_dead' | 'already_redriven' | 'discarded' };

export type RedriveOutcome =
  /** Reset (failed → queued) and its new message sent — or, if the send failed, left to the sweeper. */
  | { readonly kind: 'reset'; readonly record: TaskRecord; readonly target: Priority; readonly sending: Sending }
  /** An interrupted redrive finished: the message the record owed was sent. */
  | { readonly kind: 'resumed'; readonly record: TaskRecord; readonly sending: Sending }
  /** A waiting task's message (moved to a DLQ by SQS) sent again, audited; status unchanged. */
  | { readonly kind: 'resent'; readonly record: TaskRecord; readonly target: Priority; readonly was: TaskStatus }
  | {
      readonly kind: 'skipped';
      readonly reason: ObsoleteLetter | 'not_found' | 'not_dead' | 'discarded';
      readonly status?: TaskStatus;
    }
  | Changed;

/**
 * What a purge does with one DLQ message.
 * - `mark`: the task died with this message: record `discarded_at` and an audit entry (status
 *   stays `failed`), then delete the message.
 * - `cancel`: SQS moved the only message of a task that is still waiting (queued/retrying):
 *   without it the task would wait forever, so it is cancelled (and marked), then deleted.
 * - `delete`: the message is obsolete, was marked before, or has no task: delete it only.
 * - `leave`: the task is running under a worker right now: try again later.
 */
export type PurgePlan =
  | { readonly action: 'mark' }
  | { readonly action: 'cancel' }
  | {
      readonly action: 'delete';
      readonly reason: 'not_found' | 'obsolete' | 'already_discarded' | 'finished';
      readonly status?: TaskStatus;
    }
  | { readonly action: 'leave'; readonly reason: 'running' };

/** A purge of a task named by its id (no dead letter at hand): only a dead task is discarded. */
export type RecordPurgePlan =
  | { readonly action: 'mark' }
  | { readonly action: 'skip'; readonly reason: 'not_dead' | 'already_discarded' };

export type PurgeOutcome =
  /** Marked discarded (status stays `failed`), audited; a dead letter it still owed is cancelled. */
  | { readonly kind: 'discarded'; readonly record: TaskRecord }
  /** A waiting task whose only message SQS moved to a DLQ: cancelled and marked discarded, audited. */
  | { readonly kind: 'cancelled'; readonly record: TaskRecord; readonly was: TaskStatus }
  | {
      readonly kind: 'skipped';
      readonly reason: 'not_found' | 'obsolete' | 'already_discarded' | 'finished' | 'running' | 'not_dead';
      readonly status?: TaskStatus;
    }
  | Changed;

/** The native move's reset: failed → queued with the same dispatch id, so the moved message is claimable. */
export type MoveResetOutcome = { readonly kind: 'reset'; readonly record: TaskRecord } | Changed;

/** A dead task's letter written again (through its outbox entry). */
export type LetterRewriteOutcome = { readonly kind: 'rewritten'; readonly record: TaskRecord } | Changed;

/** What the local runtime's start-up recovery did with one stored task. */
export type RecoveryOutcome =
  /** Unfinished: its message was sent again (same dispatch id), or left to the sweeper if that failed. */
  | { readonly kind: 'requeued'; readonly record: TaskRecord }
  /** Dead (failed, not discarded): its dead letter was written again. */
  | { readonly kind: 'dead_letter_sent' }
  /** Dead, but writing its dead letter failed (`kaj dlq … --task ID` works from the record alone). */
  | { readonly kind: 'dead_letter_unsent'; readonly error: unknown }
  | {
      readonly kind: 'skipped';
      /**
       * `finished`: succeeded or cancelled; `discarded`: purged; `letter_owed`: its dead letter is
       * still owed (the sweeper writes it); `letter_expired`: it died longer ago than a DLQ keeps
       * a letter; `changed`: the record moved while being recovered.
       */
      readonly reason: 'finished' | 'discarded' | 'letter_owed' | 'letter_expired' | 'changed';
    };

/** Statuses of a task that still waits for its message to run it. */
const WAITING: readonly TaskStatus[] = ['queued', 'retrying', 'running'];

/** The queue a redrive sends to. */
export function redriveTarget(to: RedriveRequest['to'], diedOn: Priority): Priority {
  return to === 'original' ? diedOn : to;
}

/** The earliest death (epoch ms) whose dead letter may still be in a DLQ (SQS keeps it `dlqRetentionSeconds`). */
export function dlqRetentionStart(now: number): number {
  return now - DEFAULTS.dlqRetentionSeconds * 1000;
}

/**
 * @param sendUnconfirmed whether the record still owes a message whose send nobody confirmed
 *   (`TaskOutbox.sendUnconfirmed`): then a crashed redrive left it to finish.
 */
export function planLetterRedrive(
  letter: Pick<DeadLetterRef, 'dispatchId'>,
  record: TaskRecord | undefined,
  sendUnconfirmed: (r: TaskRecord) => boolean = () => false,
): RedrivePlan {
  if (record === undefined) return { action: 'leave', reason: 'not_found' };
  if (record.dispatch_id === letter.dispatchId) {
    if (record.status === 'failed') return { action: 'reset' };
    if (WAITING.includes(record.status)) return { action: 'resend' };
    return { action: 'discard_letter', reason: 'finished', status: record.status };
  }
  if ((record.status === 'queued' || record.status === 'retrying') && sendUnconfirmed(record))
    return { action: 'resume' };
  if (record.status === 'failed') return { action: 'discard_letter', reason: 'superseded', status: record.status };
  return { action: 'discard_letter', reason: 'already_redriven', status: record.status };
}

export function planRecordRedrive(record: TaskRecord): RecordRedrivePlan {
  if (record.status !== 'failed') {
    return { action: 'skip', reason: (record.redrive_count ?? 0) > 0 ? 'already_redriven' : 'not_dead' };
  }
  if (record.discarded_at !== undefined) return { action: 'skip', reason: 'discarded' };
  return { action: 'reset' };
}

export function planLetterPurge(letter: Pick<DeadLetterRef, 'dispatchId'>, record: TaskRecord | undefined): PurgePlan {
  if (record === undefined) return { action: 'delete', reason: 'not_found' };
  if (record.dispatch_id !== letter.dispatchId) return { action: 'delete', reason: 'obsolete', status: record.status };
  switch (record.status) {
    case 'failed':
      return record.discarded_at === undefined ? { action: 'mark' } : { action: 'delete', reason: 'already_discarded' };
    case 'queued':
    case 'retrying':
      return { action: 'cancel' };
    case 'running':
      return { action: 'leave', reason: 'running' };
    default:
      return { action: 'delete', reason: 'finished', status: record.status };
  }
}

export function planRecordPurge(record: TaskRecord): RecordPurgePlan {
  if (record.status !== 'failed') return { action: 'skip', reason: 'not_dead' };
  if (record.discarded_at !== undefined) return { action: 'skip', reason: 'already_discarded' };
  return { action: 'mark' };
}

/** Operator actions on task records (`TaskLifecycle.operations`). */
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

/** The audit entry of an operator's write (its reason checked by {@link checkOperator} first). */
export function auditEntry(action: 'redrive' | 'purge' | 'cancel', who: Operator, now: number): AuditEntry {
  return { action, at: iso(now), by: who.actor, ...(who.reason === undefined ? {} : { reason: who.reason }) };
}
