import type { TaskLifecycle } from '../../shared/task/lifecycle.js';
import type { TaskRecord } from '../../shared/task/model.js';
import {
  planLetterRedrive,
  planRecordRedrive,
  redriveTarget,
  type RedriveOutcome,
  type RedrivePlan,
  type RedriveRequest,
  type Sending,
} from '../../shared/task/operations.js';
import {
  checkNamedTask,
  letterOf,
  processSelection,
  withReplans,
  type BatchDeps,
  type BatchOptions,
  type BatchReport,
  type ItemAction,
  type ItemResult,
  type SelectedLetter,
} from './batch.js';
import type { DeadEntry } from './dead-letters.js';

/** A redrive plan for a DLQ message, or `leave` for one that is not Kaj's (see `RedrivePlan`). */
export type LetterPlan = RedrivePlan | { readonly action: 'leave'; readonly reason: 'not_kaj' };

const NOT_KAJ = 'not a Kaj task message (inspect it; `kaj dlq purge` removes it)';

/**
 * What a redrive would do with one DLQ message (see `RedrivePlan` in shared/task/operations.ts).
 * @param sendUnconfirmed `TaskLifecycle.sendUnconfirmed`
 */
export function planRedrive(
  entry: DeadEntry,
  record: TaskRecord | null | undefined,
  sendUnconfirmed: (r: TaskRecord) => boolean = () => false,
): LetterPlan {
  const letter = letterOf(entry);
  if (letter === undefined) return { action: 'leave', reason: 'not_kaj' };
  return planLetterRedrive(letter, record ?? undefined, sendUnconfirmed);
}

export interface RedriveDeps extends BatchDeps {
  /** The domain: `operations` makes every record write. */
  readonly lifecycle: Pick<TaskLifecycle, 'operations' | 'outboxes'>;
}

export interface RedriveOptions extends BatchOptions, RedriveRequest {}

export interface RedriveReport extends Omit<BatchReport, 'done'> {
  readonly redriven: number;
}

/**
 * Redrives dead tasks selected from the DLQs. Per message, in this order:
 * 1. one conditional write resets the record (`TaskLifecycle.operations.redriveLetter`): from
 *    here on the task will run even if this process dies (the sweeper sends what the outbox owes);
 * 2. the new message is sent to the target queue and the send confirmed in the outbox entry;
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
  const { done, ...rest } = await processSelection(deps, o, redriveOne, redriveFromRecord);
  return { ...rest, redriven: done };
}

async function redriveOne(
  deps: RedriveDeps,
  o: RedriveOptions,
  { entry, letter, first }: SelectedLetter,
): Promise<ItemResult> {
  if (letter === undefined || o.dryRun)
    return planResult(planRedrive(entry, first, (r) => deps.lifecycle.outboxes.sendUnconfirmed(r)));
  return withReplans(first, async (record) => {
    const out = await deps.lifecycle.operations.redriveLetter(letter, record, o);
    return out.kind === 'changed' ? out : letterResult(out);
  });
}

/** Redrives a named task that has no message in the DLQs, from its record alone. */
function redriveFromRecord(deps: RedriveDeps, o: RedriveOptions, first: TaskRecord | undefined): Promise<ItemResult> {
  return withReplans(first, async (record) => {
    const check = checkNamedTask(record, o, deps.clock.now());
    if (!check.ok) {
      // A re-run of a finished redrive: nothing left to do, as for an obsolete letter.
      const r = check.record;
      const plan = r === undefined ? undefined : planRecordRedrive(r);
      if (plan?.action === 'skip' && plan.reason === 'already_redriven') {
        return {
          outcome: 'skipped',
          action: 'none',
          detail: `already redriven (task is ${r?.status})`,
          deleteLetter: false,
        };
      }
      return { outcome: 'failed', action: 'none', detail: `${check.detail}: nothing to redrive`, deleteLetter: false };
    }
    const dead = check.record;
    if (planRecordRedrive(dead).action === 'skip') {
      return {
        outcome: 'failed',
        action: 'none',
        detail: `task was discarded (kaj dlq purge) at ${dead.discarded_at}: not redriven`,
        deleteLetter: false,
      };
    }
    if (o.dryRun) {
      const target = redriveTarget(o.to, dead.priority);
      return {
        outcome: 'done',
        action: 'reset_from_record',
        detail: `dry run: would redrive from the task record to ${target} (no dead letter in the DLQs)`,
        deleteLetter: false,
      };
    }
    const out = await deps.lifecycle.operations.redriveRecord(dead, o);
    switch (out.kind) {
      case 'changed':
        return out;
      case 'reset':
        return sendResult(
          'reset_from_record',
          out.sending,
          `queued on ${out.target} (from the task record: no dead letter in the DLQs)`,
        );
      default:
        return letterResult(out);
    }
  });
}

/** A plan as reported by a dry run (a message that is not Kaj's is left, dry run or not). */
function planResult(plan: LetterPlan): ItemResult {
  switch (plan.action) {
    case 'reset':
    case 'resend':
    case 'resume':
      return { outcome: 'done', action: plan.action, detail: 'dry run: would redrive', deleteLetter: false };
    case 'discard_letter':
      return {
        outcome: 'skipped',
        action: plan.action,
        detail: `dry run: would delete the message: ${skipText(plan.reason, plan.status)}`,
        deleteLetter: false,
      };
    case 'leave':
      return {
        outcome: 'failed',
        action: plan.action,
        detail: plan.reason === 'not_kaj' ? NOT_KAJ : skipText(plan.reason),
        deleteLetter: false,
      };
  }
}

function letterResult(out: Exclude<RedriveOutcome, { kind: 'changed' }>): ItemResult {
  switch (out.kind) {
    case 'reset':
      return sendResult('reset', out.sending, `queued on ${out.target}`);
    case 'resumed':
      return sendResult('resume', out.sending, 'finished an interrupted redrive');
    case 'resent':
      return {
        outcome: 'done',
        action: 'resend',
        detail: `message re-sent to ${out.target} (task was ${out.was})`,
        deleteLetter: true,
      };
    case 'skipped':
      if (out.reason === 'not_found' || out.reason === 'not_dead' || out.reason === 'discarded') {
        return { outcome: 'failed', action: 'leave', detail: skipText(out.reason, out.status), deleteLetter: false };
      }
      return {
        outcome: 'skipped',
        action: 'discard_letter',
        detail: skipText(out.reason, out.status),
        deleteLetter: true,
      };
  }
}

/** The reset is written; the letter is deleted only once its new message went out. */
function sendResult(action: ItemAction, sending: Sending, detail: string): ItemResult {
  if (sending.sent) return { outcome: 'done', action, detail, deleteLetter: true };
  // The record is reset and its outbox entry stays: the sweeper sends it. Keep the DLQ
  // message so a re-run can finish (and report) this one.
  const error = sending.error instanceof Error ? sending.error.name : String(sending.error);
  return {
    outcome: 'failed',
    action,
    detail: `record reset, but the send failed (${error}); the sweeper will send it — re-run to clean up the DLQ`,
    deleteLetter: false,
  };
}

function skipText(reason: Extract<RedriveOutcome, { kind: 'skipped' }>['reason'], status?: string): string {
  switch (reason) {
    case 'not_found':
      return 'task record not found (expired or deleted): nothing to redrive';
    case 'finished':
      return `task is already ${status}`;
    case 'superseded':
      return 'superseded by a newer dead letter of this task';
    case 'already_redriven':
      return `already redriven (task is ${status})`;
    case 'not_dead':
      return `task is ${status}, not dead: nothing to redrive`;
    case 'discarded':
      return 'task was discarded (kaj dlq purge): not redriven';
  }
}
