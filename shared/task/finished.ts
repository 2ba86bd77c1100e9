/**
 * Where what follows a task's end is started: every update that takes a task from an unfinished
 * status to a finished one (success, failure, dead letter, cancel — by the consumer, the API or
 * the CLI) is handed to the deployment's listener once written. Workflows listen:
 * a child's end is recorded in its run's history and wakes the run, a cancelled run's children
 * are cancelled (`shared/workflow/fan-in.ts`). The listener is best effort by contract — its
 * failure is logged, never the update's — because the run recovers what it missed on its own
 * (a waiting run looks its open children up on its check timer).
 *
 * @module
 */
import type { Logger } from '../runtime/logger.js';
import type { TaskRecord } from './model.js';
import { isFinished } from './state-machine.js';
import type { TaskStore } from './task-store.js';

/**
 * Called with a task as stored right after an update ended it; `again` when it is called once
 * more for a task found finished (the message that ran it came back: its worker may have died
 * before what follows the end was done), so the listener must be idempotent.
 */
export type FinishedListener = (record: TaskRecord, again?: boolean) => Promise<void>;

/** `store`, with `listener` told of each update that ended a task. */
export function notifyingStore(store: TaskStore, listener: FinishedListener, logger: Logger): TaskStore {
  return {
    create: (record) => store.create(record),
    get: (taskId, options) => store.get(taskId, options),
    listOutboxDue: (partition, dueBy, limit) => store.listOutboxDue(partition, dueBy, limit),
    update: async (taskId, changes, condition) => {
      const stored = await store.update(taskId, changes, condition);
      const from = condition.status ?? (condition.orLeaseExpiredBefore === undefined ? [] : ['running' as const]);
      if (isFinished(stored.status) && from.some((s) => !isFinished(s)))
        await followEnd(listener, logger, stored, false);
      return stored;
    },
  };
}

/** Runs the listener on a task's end; its failure is logged, never thrown. */
export async function followEnd(
  listener: FinishedListener,
  logger: Logger,
  record: TaskRecord,
  again: boolean,
): Promise<void> {
  try {
    await listener(record, again);
  } catch (err) {
    logger.warn('what follows a task end failed; the run recovers it on its check timer', {
      task_id: record.task_id,
      error: err instanceof Error ? err.name : String(err),
    });
  }
}
