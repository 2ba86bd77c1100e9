import { DEFAULTS } from '../config/resources.js';
import { ConditionFailedError } from '../store/errors.js';
import type { TaskStore } from '../store/task-store.js';
import type { TaskRecord } from '../task/model.js';
import { transition } from '../task/state-machine.js';
import type { DeadEntry } from './dead-letters.js';
import { processDeadLetters, type BatchDeps, type BatchOptions, type BatchReport, type ItemResult } from './process.js';
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
 */
export async function purgeDeadLetters(deps: PurgeDeps, o: PurgeOptions): Promise<PurgeReport> {
  const report = await processDeadLetters(deps, o, (entry) => purgeOne(deps, o, entry));
  const { done, ...rest } = report;
  return { ...rest, purged: done };
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
    const retention = (o.retentionDays ?? DEFAULTS.retentionDays) * 86_400;
    const common = {
      discarded_at: iso(now),
      updated_at: iso(now),
      expires_at: Math.floor(now / 1000) + retention,
    };
    try {
      if (plan.action === 'mark') {
        await deps.store.update(
          current.task_id,
          { set: common, remove: ['outbox_pk', 'outbox_due'], append: { audit: [auditEntry(o, now, 'purge')] } },
          { status: ['failed'], dispatchId: current.dispatch_id },
        );
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
