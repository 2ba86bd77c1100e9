import { DEFAULTS } from '../config/resources.js';
import { ConditionFailedError } from '../store/errors.js';
import type { TaskStore } from '../store/task-store.js';
import type { TaskRecord } from '../task/model.js';
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
import { auditEntry } from './redrive.js';

/**
 * What a purge does with one DLQ message.
 *
 * - `mark`: the task died with this message: record `discarded_at` and an audit entry (status
 *   stays `failed`), then delete the message.
 * - `cancel`: SQS moved the only message of a task that is still waiting (queued/retrying):
 *   without it the task would wait forever, so it is cancelled (and marked), then deleted.
 * - `delete`: the message is obsolete, was marked before, or is not Kaj's: delete it only.
 * - `leave`: the task is running under a worker right now: try again later.
 */
export type PurgePlan =
  | { readonly action: 'mark' }
  | { readonly action: 'cancel' }
  | { readonly action: 'delete'; readonly reason: string }
  | { readonly action: 'leave'; readonly reason: string };

export function planPurge(entry: DeadEntry, record: TaskRecord | null | undefined): PurgePlan {
  if (entry.kind === 'unreadable' || entry.taskId === undefined) return { action: 'delete', reason: 'not a Kaj task message' };
  if (record === null || record === undefined) return { action: 'delete', reason: 'task record not found' };
  if (record.dispatch_id !== entry.dispatchId) return { action: 'delete', reason: `obsolete message (task is ${record.status})` };
  switch (record.status) {
    case 'failed':
      return record.discarded_at === undefined ? { action: 'mark' } : { action: 'delete', reason: 'task already discarded' };
    case 'queued':
    case 'retrying':
      return { action: 'cancel' };
    case 'running':
      return { action: 'leave', reason: 'task is running right now; try again later' };
    default:
      return { action: 'delete', reason: `task is already ${record.status}` };
  }
}

export interface PurgeDeps extends BatchDeps {
  readonly store: TaskStore;
}

export interface PurgeOptions extends BatchOptions {
  readonly actor: string;
  readonly reason?: string;
  /** Days a discarded task stays readable. @default DEFAULTS.retentionDays */
  readonly retentionDays?: number;
}

export interface PurgeReport extends Omit<BatchReport, 'done'> {
  readonly purged: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Deletes selected dead messages, marking their tasks discarded in the table first (one
 * conditional write on `status` and the message's dispatch id), so a crash between the two
 * steps leaves a marked task whose message a re-run deletes.
 *
 * A task named in `filter.taskIds` with no message in the DLQs is discarded from its record
 * when that record says it is dead (`failed`); otherwise it is reported as failed, saying why.
 */
export async function purgeDeadLetters(deps: PurgeDeps, o: PurgeOptions): Promise<PurgeReport> {
  const fromLetters = await processDeadLetters(deps, o, (entry) => purgeOne(deps, o, entry));
  const report = await processNamedTasks(deps, o, fromLetters, (taskId, record) => purgeFromRecord(deps, o, taskId, record));
  const { done, ...rest } = report;
  return { ...rest, purged: done };
}

/** Discards a named dead task that has no message in the DLQs, from its record alone. */
async function purgeFromRecord(deps: PurgeDeps, o: PurgeOptions, taskId: string, first: TaskRecord | undefined): Promise<ItemResult> {
  let record = first;
  for (let round = 0; round < 3; round += 1) {
    const check = checkNamedTask(record, o, deps.clock.now());
    if (!check.ok) {
      const hint = check.record?.status === 'queued' || check.record?.status === 'retrying' ? ' (kaj task cancel stops a waiting task)' : '';
      return { outcome: 'failed', action: 'none', detail: `${check.detail}: nothing to purge${hint}`, deleteLetter: false };
    }
    const dead = check.record;
    // Counted as done, like a letter whose task was discarded already: a re-run finds its work done.
    if (dead.discarded_at !== undefined) return { outcome: 'done', action: 'none', detail: 'task already discarded', deleteLetter: false };
    if (o.dryRun) return { outcome: 'done', action: 'mark', detail: 'dry run: would discard (no dead letter in the DLQs)', deleteLetter: false };
    try {
      await markDiscarded(deps, o, dead);
      return { outcome: 'done', action: 'mark', detail: 'discarded (no dead letter in the DLQs)', deleteLetter: false };
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      record = err.current ?? (await deps.store.get(taskId));
    }
  }
  return { outcome: 'failed', action: 'none', detail: 'the task record kept changing; try again', deleteLetter: false };
}

/** Marks a failed task discarded (status stays failed), audited, fenced on its dispatch id. */
async function markDiscarded(deps: PurgeDeps, o: PurgeOptions, current: TaskRecord): Promise<void> {
  const now = deps.clock.now();
  await deps.store.update(
    current.task_id,
    {
      set: discardFields(o, now),
      // Also cancels a dead letter still owed (outbox dlq#…): the task is discarded, not to be listed again.
      remove: ['outbox_pk', 'outbox_due'],
      append: { audit: [auditEntry(o, now, 'purge')] },
    },
    { status: ['failed'], dispatchId: current.dispatch_id },
  );
}

function discardFields(o: PurgeOptions, now: number): { discarded_at: string; updated_at: string; expires_at: number } {
  const retention = (o.retentionDays ?? DEFAULTS.retentionDays) * 86_400;
  return { discarded_at: iso(now), updated_at: iso(now), expires_at: Math.floor(now / 1000) + retention };
}

async function purgeOne(deps: PurgeDeps, o: PurgeOptions, entry: DeadEntry): Promise<ItemResult> {
  let record =
    entry.record !== undefined ? entry.record : entry.taskId === undefined ? null : ((await deps.store.get(entry.taskId)) ?? null);
  for (let round = 0; round < 3; round += 1) {
    const plan = planPurge(entry, record);
    if (plan.action === 'leave') return { outcome: 'failed', action: plan.action, detail: plan.reason, deleteLetter: false };
    if (plan.action === 'delete') {
      const already = plan.reason === 'task already discarded';
      return {
        outcome: already ? 'done' : 'skipped',
        action: plan.action,
        detail: o.dryRun ? `dry run: would delete the message: ${plan.reason}` : plan.reason,
        deleteLetter: !o.dryRun,
      };
    }
    if (o.dryRun) {
      return { outcome: 'done', action: plan.action, detail: `dry run: would ${plan.action === 'mark' ? 'discard' : 'cancel'}`, deleteLetter: false };
    }
    const current = record as TaskRecord;
    const now = deps.clock.now();
    const common = discardFields(o, now);
    try {
      if (plan.action === 'mark') {
        await markDiscarded(deps, o, current);
        return { outcome: 'done', action: plan.action, detail: 'discarded', deleteLetter: true };
      }
      await deps.store.update(
        current.task_id,
        {
          set: { ...common, status: transition(current.status, 'cancel', current.task_id), finished_at: iso(now) },
          remove: ['outbox_pk', 'outbox_due', 'lease_until'],
          append: { audit: [auditEntry(o, now, 'purge')] },
        },
        { status: [current.status], dispatchId: current.dispatch_id },
      );
      return { outcome: 'done', action: plan.action, detail: `cancelled (was ${current.status}) and discarded`, deleteLetter: true };
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      record = err.current ?? (await deps.store.get(current.task_id)) ?? null;
    }
  }
  return { outcome: 'failed', action: 'none', detail: 'the task record kept changing; try again', deleteLetter: false };
}
