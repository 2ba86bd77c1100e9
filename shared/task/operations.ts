import { DEFAULTS, type Priority } from '../config/resources.js';
import { iso } from './changes.js';
import { ValidationError } from './errors.js';
import type { AuditEntry, TaskRecord, TaskStatus } from './model.js';
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
export const WAITING: readonly TaskStatus[] = ['queued', 'retrying', 'waiting', 'running'];

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
  if (
    (record.status === 'queued' || record.status === 'retrying' || record.status === 'waiting') &&
    sendUnconfirmed(record)
  )
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
    case 'waiting':
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

/** The audit entry of an operator's write (its reason checked by {@link checkOperator} first). */
export function auditEntry(action: 'redrive' | 'purge' | 'cancel' | 'reopen', who: Operator, now: number): AuditEntry {
  return { action, at: iso(now), by: who.actor, ...(who.reason === undefined ? {} : { reason: who.reason }) };
}
