import type { TaskLifecycle } from '../../shared/task/lifecycle.js';
import type { TaskRecord } from '../../shared/task/model.js';
import {
  planLetterPurge,
  planRecordPurge,
  type Operator,
  type PurgeOutcome,
  type PurgePlan,
} from '../../shared/task/operations.js';
import {
  checkNamedTask,
  letterOf,
  processSelection,
  withReplans,
  type BatchDeps,
  type BatchOptions,
  type BatchReport,
  type ItemResult,
  type SelectedLetter,
} from './batch.js';
import type { DeadEntry } from './dead-letters.js';

/** A purge plan for a DLQ message; a message that is not Kaj's is deleted (see `PurgePlan`). */
export type LetterPlan = PurgePlan | { readonly action: 'delete'; readonly reason: 'not_kaj' };

/** What a purge would do with one DLQ message (see `PurgePlan` in shared/task/operations.ts). */
export function planPurge(entry: DeadEntry, record: TaskRecord | null | undefined): LetterPlan {
  const letter = letterOf(entry);
  if (letter === undefined) return { action: 'delete', reason: 'not_kaj' };
  return planLetterPurge(letter, record ?? undefined);
}

export interface PurgeDeps extends BatchDeps {
  /** The domain: `operations` makes every record write. */
  readonly lifecycle: Pick<TaskLifecycle, 'operations'>;
}

export interface PurgeOptions extends BatchOptions, Operator {}

export interface PurgeReport extends Omit<BatchReport, 'done'> {
  readonly purged: number;
}

/**
 * Deletes selected dead messages, marking their tasks discarded in the table first (one
 * conditional write on `status` and the message's dispatch id:
 * `TaskLifecycle.operations.purgeLetter`), so a crash between the two steps leaves a marked
 * task whose message a re-run deletes.
 *
 * A task named in `filter.taskIds` with no message in the DLQs is discarded from its record
 * when that record says it is dead (`failed`); otherwise it is reported as failed, saying why.
 */
export async function purgeDeadLetters(deps: PurgeDeps, o: PurgeOptions): Promise<PurgeReport> {
  const { done, ...rest } = await processSelection(deps, o, purgeOne, purgeFromRecord);
  return { ...rest, purged: done };
}

async function purgeOne(
  deps: PurgeDeps,
  o: PurgeOptions,
  { entry, letter, first }: SelectedLetter,
): Promise<ItemResult> {
  if (letter === undefined || o.dryRun) {
    const plan = planPurge(entry, first);
    if (plan.action === 'mark' || plan.action === 'cancel') {
      return {
        outcome: 'done',
        action: plan.action,
        detail: `dry run: would ${plan.action === 'mark' ? 'discard' : 'cancel'}`,
        deleteLetter: false,
      };
    }
    return skipped(o, plan.reason, plan.action === 'delete' && plan.reason !== 'not_kaj' ? plan.status : undefined);
  }
  return withReplans(first, async (record) => {
    const out = await deps.lifecycle.operations.purgeLetter(letter, record, o);
    switch (out.kind) {
      case 'changed':
        return out;
      case 'discarded':
        return { outcome: 'done', action: 'mark', detail: 'discarded', deleteLetter: true };
      case 'cancelled':
        return {
          outcome: 'done',
          action: 'cancel',
          detail: `cancelled (was ${out.was}) and discarded`,
          deleteLetter: true,
        };
      case 'skipped':
        return skipped(o, out.reason, out.status);
    }
  });
}

/** Discards a named dead task that has no message in the DLQs, from its record alone. */
function purgeFromRecord(deps: PurgeDeps, o: PurgeOptions, first: TaskRecord | undefined): Promise<ItemResult> {
  return withReplans(first, async (record) => {
    const check = checkNamedTask(record, o, deps.clock.now());
    if (!check.ok) {
      const hint =
        check.record?.status === 'queued' || check.record?.status === 'retrying'
          ? ' (kaj task cancel stops a waiting task)'
          : '';
      return {
        outcome: 'failed',
        action: 'none',
        detail: `${check.detail}: nothing to purge${hint}`,
        deleteLetter: false,
      };
    }
    const dead = check.record;
    // Counted as done, like a letter whose task was discarded already: a re-run finds its work done.
    if (planRecordPurge(dead).action === 'skip')
      return { outcome: 'done', action: 'none', detail: 'task already discarded', deleteLetter: false };
    if (o.dryRun)
      return {
        outcome: 'done',
        action: 'mark',
        detail: 'dry run: would discard (no dead letter in the DLQs)',
        deleteLetter: false,
      };
    const out = await deps.lifecycle.operations.discardRecord(dead, o);
    switch (out.kind) {
      case 'changed':
        return out;
      case 'discarded':
        return {
          outcome: 'done',
          action: 'mark',
          detail: 'discarded (no dead letter in the DLQs)',
          deleteLetter: false,
        };
      default:
        return {
          outcome: 'failed',
          action: 'none',
          detail: `task is ${dead.status}: nothing to purge`,
          deleteLetter: false,
        };
    }
  });
}

type SkipReason = Extract<PurgeOutcome, { kind: 'skipped' }>['reason'] | 'not_kaj';

/** A letter the purge does not mark: deleted (a letter already marked counts as done), or left while its task runs. */
function skipped(o: PurgeOptions, reason: SkipReason, status: string | undefined): ItemResult {
  if (reason === 'running')
    return {
      outcome: 'failed',
      action: 'leave',
      detail: 'task is running right now; try again later',
      deleteLetter: false,
    };
  if (reason === 'not_dead')
    return {
      outcome: 'failed',
      action: 'none',
      detail: `task is ${status}, not dead: nothing to purge`,
      deleteLetter: false,
    };
  return deleteOnly(o, reason, status);
}

function deleteOnly(o: PurgeOptions, reason: Exclude<SkipReason, 'running' | 'not_dead'>, status?: string): ItemResult {
  const text = {
    not_kaj: 'not a Kaj task message',
    not_found: 'task record not found',
    obsolete: `obsolete message (task is ${status})`,
    already_discarded: 'task already discarded',
    finished: `task is already ${status}`,
  }[reason];
  return {
    outcome: reason === 'already_discarded' ? 'done' : 'skipped',
    action: 'delete',
    detail: o.dryRun ? `dry run: would delete the message: ${text}` : text,
    deleteLetter: !o.dryRun,
  };
}
