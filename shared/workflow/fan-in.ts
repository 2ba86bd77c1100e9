/**
 * Fan-in: what follows a task's end for workflows (`shared/task/finished.ts` calls it once the
 * end is written, whoever wrote it — the consumer, the API, the CLI):
 * - a child's end is recorded in its run's history (`child#<name>`: the first write wins, so a
 *   redelivered end or the run's own lookup never records a second one), and the child that wrote
 *   it counts the run's open children down — the last one wakes the run (`RunWakes.childFinished`);
 * - a cancelled or failed run's open children are cancelled (running ones get their abort signal); if that
 *   is cut off, the run's pending message (a waiting run always has its timer's) comes back,
 *   finds the run cancelled, and cancels the rest.
 *
 * Exactly once without a transaction: the end is one conditional put, the count one atomic
 * decrement made by the child whose put wrote the end. A worker that dies between the child's
 * final write and these leaves the child's message on the queue: it comes back (within the
 * queue's visibility timeout), finds the child finished, and does both again
 * (`TaskLifecycle.followEndAgain`: the put is idempotent; a second count only wakes the run to
 * recount). Beyond that, the waiting run's check timer looks its open children up and records
 * their ends itself (`child-calls.ts`): never a parent waiting forever.
 *
 * @module
 */
import { forEachBounded } from '../runtime/bounded.js';
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { TaskRegistry } from '../task/define.js';
import { TaskNotCancellableError, TaskNotFoundError } from '../task/errors.js';
import type { FinishedListener } from '../task/finished.js';
import type { LifecycleDeps } from '../task/lifecycle-deps.js';
import { TaskLifecycle } from '../task/lifecycle.js';
import type { TaskRecord } from '../task/model.js';
import { childEndEntry } from './children.js';
import { isWorkflowType } from './define.js';
import { childNameOf, type HistoryStore } from './history-store.js';

/** Children cancelled at once when their run is cancelled. */
const CANCEL_CONCURRENCY = 16;

export interface FanInDeps {
  readonly history: HistoryStore;
  readonly registry: TaskRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly historyRetentionDays: number;
}

/** The listener of task ends for workflows, acting through `lifecycle()` (the lifecycle it listens to). */
export function fanInListener(d: FanInDeps, lifecycle: () => TaskLifecycle): FinishedListener {
  return async (record: TaskRecord, again = false) => {
    if (record.parent_id !== undefined) await childEnded(d, lifecycle(), record, again);
    // A run that ended without its children (cancelled, expired, failed while others ran) stops them.
    if ((record.status === 'cancelled' || record.status === 'failed') && isWorkflowType(d.registry, record.type)) {
      await cancelChildren(d, lifecycle(), record.task_id);
    }
  };
}

/**
 * A task lifecycle whose task ends reach the workflows' fan-in: what every composition root that
 * can end a task uses when the deployment has a history table.
 */
export function lifecycleWithFanIn(deps: LifecycleDeps, fanIn: FanInDeps | undefined): TaskLifecycle {
  if (fanIn === undefined) return new TaskLifecycle(deps);
  let lifecycle: TaskLifecycle | undefined;
  const listener = fanInListener(fanIn, () => lifecycle as TaskLifecycle);
  lifecycle = new TaskLifecycle({ ...deps, onFinished: listener });
  return lifecycle;
}

/**
 * Records a child's end in its run's history; the writer of that record counts the run down.
 * `again` (the child's message came back after its end: its worker may have died between the
 * record and the count): counts down even when the record was there — at worst one count too
 * many, which wakes the run early to recount (a replay counts its open children from its history).
 */
export async function childEnded(
  d: FanInDeps,
  lifecycle: TaskLifecycle,
  child: TaskRecord,
  again = false,
): Promise<void> {
  const entry = childEndEntry(child, d.clock.now(), d.historyRetentionDays);
  if (entry === undefined) return;
  const { written } = await d.history.append(entry);
  if (!written && !again) return;
  const woke = await lifecycle.wakes.childFinished(entry.run_id);
  d.logger.debug('child ended', { task_id: child.task_id, parent_id: entry.run_id, parent: woke });
}

/** Cancels the children of `runId` whose end is not recorded. Returns how many were asked to stop. */
export async function cancelChildren(d: FanInDeps, lifecycle: TaskLifecycle, runId: string): Promise<number> {
  const entries = await d.history.read(runId);
  const ended = new Set(entries.filter((e) => e.kind === 'child').map((e) => childNameOf(e.key)));
  const open = entries.filter((e) => e.kind === 'child_start' && !ended.has(childNameOf(e.key)));
  let asked = 0;
  await forEachBounded(open, CANCEL_CONCURRENCY, async (e) => {
    if (e.child_id === undefined) return;
    try {
      await lifecycle.requests.cancel(e.child_id);
      asked += 1;
    } catch (err) {
      // Ended meanwhile, or gone: nothing to stop.
      if (!(err instanceof TaskNotCancellableError || err instanceof TaskNotFoundError)) throw err;
    }
  });
  if (asked > 0) d.logger.info('cancelled the children of a cancelled run', { task_id: runId, children: asked });
  return asked;
}
