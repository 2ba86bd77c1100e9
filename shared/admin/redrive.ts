import type { Priority } from '../config/resources.js';
import type { RandomSource } from '../runtime/random.js';
import { ConditionFailedError } from '../store/errors.js';
import type { TaskChanges, TaskStore } from '../store/task-store.js';
import type { TaskLifecycle } from '../task/lifecycle.js';
import type { AuditEntry, TaskRecord, TaskStatus } from '../task/model.js';
import { transition } from '../task/state-machine.js';
import type { DeadEntry } from './dead-letters.js';
import {
  checkNamedTask,
  processDeadLetters,
  processNamedTasks,
  type BatchDeps,
  type BatchOptions,
  type BatchReport,
  type ItemResult,
} from './process.js';

/**
 * What a redrive does with one DLQ message, decided from the message and the task record.
 *
 * - `reset`: the task died with this very message (status `failed`, same dispatch id): reset the
 *   record (→ `queued`, new dispatch id, outbox entry), send the new message, delete this one.
 * - `resend`: SQS moved the task's message after `maxReceiveCount` receives while the task was
 *   still waiting (queued/retrying, or running when its worker vanished): send the same message
 *   again (the claim accepts it) and delete this one. No status change.
 * - `resume`: an earlier redrive reset the record but may have stopped before sending: send what
 *   the record's outbox says is owed, delete this one.
 * - `discard_letter`: the message is obsolete (the task was redriven already, died again with a
 *   newer dead letter, or finished): delete it, touch nothing else.
 * - `leave`: nothing can be done (no task record, not a Kaj message): the message stays.
 */
export type RedrivePlan =
  | { readonly action: 'reset' }
  | { readonly action: 'resend' }
  | { readonly action: 'resume' }
  | { readonly action: 'discard_letter'; readonly reason: string }
  | { readonly action: 'leave'; readonly reason: string };

const WAITING: readonly TaskStatus[] = ['queued', 'retrying', 'running'];

/**
 * @param sendUnconfirmed whether the record still owes a message whose send nobody confirmed
 *   (`TaskLifecycle.sendUnconfirmed`): then a crashed redrive left it to finish.
 */
export function planRedrive(
  entry: DeadEntry,
  record: TaskRecord | null | undefined,
  sendUnconfirmed: (r: TaskRecord) => boolean = () => false,
): RedrivePlan {
  if (entry.kind === 'unreadable' || entry.taskId === undefined) {
    return { action: 'leave', reason: 'not a Kaj task message (inspect it; `kaj dlq purge` removes it)' };
  }
  if (record === null || record === undefined) {
    return { action: 'leave', reason: 'task record not found (expired or deleted): nothing to redrive' };
  }
  if (record.dispatch_id === entry.dispatchId) {
    if (record.status === 'failed') return { action: 'reset' };
    if (WAITING.includes(record.status)) return { action: 'resend' };
    return { action: 'discard_letter', reason: `task is already ${record.status}` };
  }
  if ((record.status === 'queued' || record.status === 'retrying') && sendUnconfirmed(record)) {
    return { action: 'resume' };
  }
  if (record.status === 'failed') return { action: 'discard_letter', reason: 'superseded by a newer dead letter of this task' };
  return { action: 'discard_letter', reason: `already redriven (task is ${record.status})` };
}

export interface RedriveDeps extends BatchDeps {
  readonly store: TaskStore;
  readonly lifecycle: Pick<TaskLifecycle, 'outbox' | 'dispatch' | 'sendUnconfirmed'>;
  /** New dispatch ids. */
  readonly random: RandomSource;
}

export interface RedriveOptions extends BatchOptions {
  /** `original`: the queue the task died on. */
  readonly to: 'original' | Priority;
  /** Keep `attempts` (and `crashes`) instead of resetting them to 0. */
  readonly keepAttempts: boolean;
  /** Who asks (OS user), for the audit entry. */
  readonly actor: string;
  readonly reason?: string;
}

export interface RedriveReport extends Omit<BatchReport, 'done'> {
  readonly redriven: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Redrives dead tasks selected from the DLQs. Per message, in this order:
 * 1. one conditional write resets the record (`status = failed` AND the message's dispatch id),
 *    giving it a new dispatch id and an outbox entry: from here on the task will run even if
 *    this process dies (the sweeper sends what the outbox says is owed);
 * 2. the new message is sent to the target queue and the send confirmed in the outbox entry
 *    (`dispatch`; the entry stays as the task's watchdog);
 * 3. only then the DLQ message is deleted.
 * A re-run after a crash finds the record reset (dispatch id differs) and finishes the job
 * (`resume` or `discard_letter`); the claim's dispatch-id check absorbs any duplicate send.
 *
 * A task named in `filter.taskIds` with no message in the DLQs is redriven from its record
 * when that record says it is dead (`failed`, not discarded): its dead letter can be gone
 * (the in-memory SQS of `npm start` restarted, or someone deleted it by hand) while the task
 * still is. Otherwise it is reported as failed, saying why — never silently left out.
 */
export async function redriveDeadLetters(deps: RedriveDeps, o: RedriveOptions): Promise<RedriveReport> {
  const fromLetters = await processDeadLetters(deps, o, (entry) => redriveOne(deps, o, entry));
  const report = await processNamedTasks(deps, o, fromLetters, (taskId, record) => redriveFromRecord(deps, o, taskId, record));
  const { done, ...rest } = report;
  return { ...rest, redriven: done };
}

/** Redrives a named task that has no message in the DLQs, from its record alone. */
async function redriveFromRecord(deps: RedriveDeps, o: RedriveOptions, taskId: string, first: TaskRecord | undefined): Promise<ItemResult> {
  let record = first;
  for (let round = 0; round < 3; round += 1) {
    const check = checkNamedTask(record, o, deps.clock.now());
    if (!check.ok) {
      // A re-run of a finished redrive: nothing left to do, as for an obsolete letter.
      if (check.record !== undefined && check.record.status !== 'failed' && (check.record.redrive_count ?? 0) > 0) {
        return { outcome: 'skipped', action: 'none', detail: `already redriven (task is ${check.record.status})`, deleteLetter: false };
      }
      return { outcome: 'failed', action: 'none', detail: `${check.detail}: nothing to redrive`, deleteLetter: false };
    }
    const dead = check.record;
    if (dead.discarded_at !== undefined) {
      return { outcome: 'failed', action: 'none', detail: `task was discarded (kaj dlq purge) at ${dead.discarded_at}: not redriven`, deleteLetter: false };
    }
    const target = o.to === 'original' ? dead.priority : o.to;
    if (o.dryRun) {
      return { outcome: 'done', action: 'reset_from_record', detail: `dry run: would redrive from the task record to ${target} (no dead letter in the DLQs)`, deleteLetter: false };
    }
    try {
      const reset = await deps.store.update(taskId, resetChanges(deps, o, dead, target), { status: ['failed'], dispatchId: dead.dispatch_id });
      return await sendOwed(deps, reset, 'reset_from_record', `queued on ${target} (from the task record: no dead letter in the DLQs)`);
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      record = err.current ?? (await deps.store.get(taskId));
    }
  }
  return { outcome: 'failed', action: 'none', detail: 'the task record kept changing; try again', deleteLetter: false };
}

async function redriveOne(deps: RedriveDeps, o: RedriveOptions, entry: DeadEntry): Promise<ItemResult> {
  let record =
    entry.record !== undefined ? entry.record : entry.taskId === undefined ? null : ((await deps.store.get(entry.taskId)) ?? null);
  for (let round = 0; round < 3; round += 1) {
    const plan = planRedrive(entry, record, (r) => deps.lifecycle.sendUnconfirmed(r));
    if (o.dryRun) return dryRunResult(plan);
    try {
      return await carryOut(deps, o, entry, record as TaskRecord, plan);
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      // The record changed between the read and the write (another operator, the consumer): look again.
      record = err.current ?? (await deps.store.get(record?.task_id ?? '')) ?? null;
    }
  }
  return { outcome: 'failed', action: 'none', detail: 'the task record kept changing; try again', deleteLetter: false };
}

function dryRunResult(plan: RedrivePlan): ItemResult {
  switch (plan.action) {
    case 'reset':
    case 'resend':
    case 'resume':
      return { outcome: 'done', action: plan.action, detail: 'dry run: would redrive', deleteLetter: false };
    case 'discard_letter':
      return { outcome: 'skipped', action: plan.action, detail: `dry run: would delete the message: ${plan.reason}`, deleteLetter: false };
    case 'leave':
      return { outcome: 'failed', action: plan.action, detail: plan.reason, deleteLetter: false };
  }
}

async function carryOut(
  deps: RedriveDeps,
  o: RedriveOptions,
  entry: DeadEntry,
  record: TaskRecord,
  plan: RedrivePlan,
): Promise<ItemResult> {
  switch (plan.action) {
    case 'leave':
      return { outcome: 'failed', action: plan.action, detail: plan.reason, deleteLetter: false };
    case 'discard_letter':
      return { outcome: 'skipped', action: plan.action, detail: plan.reason, deleteLetter: true };
    case 'reset': {
      const target = o.to === 'original' ? entry.originPriority : o.to;
      const reset = await deps.store.update(record.task_id, resetChanges(deps, o, record, target), {
        status: ['failed'],
        dispatchId: record.dispatch_id,
      });
      return sendOwed(deps, reset, plan.action, `queued on ${target}`);
    }
    case 'resume':
      return sendOwed(deps, record, plan.action, 'finished an interrupted redrive');
    case 'resend': {
      const target = o.to === 'original' ? record.priority : o.to;
      const now = deps.clock.now();
      // An audit entry (and the count) first, fenced on the same dispatch: the message itself is unchanged.
      const audited = await deps.store.update(
        record.task_id,
        { set: { updated_at: iso(now) }, add: { redrive_count: 1 }, append: { audit: [auditEntry(o, now, 'redrive')] } },
        { status: WAITING, dispatchId: record.dispatch_id },
      );
      // dispatch() sends what an outbox entry says; this one is synthetic (nothing to clear in the table).
      await deps.lifecycle.dispatch({ ...audited, priority: target, outbox_pk: `queue#${target}` });
      return { outcome: 'done', action: plan.action, detail: `message re-sent to ${target} (task was ${record.status})`, deleteLetter: true };
    }
  }
}

async function sendOwed(deps: RedriveDeps, record: TaskRecord, action: string, detail: string): Promise<ItemResult> {
  try {
    await deps.lifecycle.dispatch(record);
  } catch (err) {
    // The record is reset and its outbox entry stays: the sweeper sends it. Keep the DLQ
    // message so a re-run can finish (and report) this one.
    return {
      outcome: 'failed',
      action,
      detail: `record reset, but the send failed (${err instanceof Error ? err.name : String(err)}); the sweeper will send it — re-run to clean up the DLQ`,
      deleteLetter: false,
    };
  }
  return { outcome: 'done', action, detail, deleteLetter: true };
}

export function auditEntry(o: { actor: string; reason?: string }, now: number, action: string): AuditEntry {
  return { action, at: iso(now), by: o.actor, ...(o.reason === undefined ? {} : { reason: o.reason }) };
}

/** The record write of a redrive: failed → queued via the state machine, ready to be sent. */
export function resetChanges(
  deps: { readonly clock: RedriveDeps['clock']; readonly random: RandomSource; readonly lifecycle: Pick<TaskLifecycle, 'outbox'> },
  o: Pick<RedriveOptions, 'keepAttempts' | 'actor' | 'reason'>,
  record: TaskRecord,
  target: Priority,
  options: { keepDispatchId?: boolean } = {},
): TaskChanges {
  const now = deps.clock.now();
  return {
    set: {
      status: transition(record.status, 'redrive', record.task_id),
      priority: target,
      run_at: iso(now),
      updated_at: iso(now),
      dispatch_id: options.keepDispatchId === true ? record.dispatch_id : deps.random.id(),
      ...(o.keepAttempts ? {} : { attempts: 0, crashes: 0 }),
      ...deps.lifecycle.outbox('queue', target, now),
    },
    remove: ['finished_at', 'expires_at', 'discarded_at', 'lease_until', 'cancel_requested'],
    add: { redrive_count: 1 },
    append: { audit: [auditEntry(o, now, 'redrive')] },
  };
}
