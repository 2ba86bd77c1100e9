import type { Priority } from '../config/resources.js';
import { MessageGoneError, QueueUnavailableError } from './queue-errors.js';
import type { FailedVisibilityChange, TaskQueue, VisibilityChange } from './task-queue.js';

/**
 * Sets the visibility of many received messages of one queue: through the queue's
 * `changeVisibilityMany` (SQS: one request per 10), or, for a queue without it, one
 * `changeVisibility` each (concurrently). Resolves with the entries not changed; never rejects.
 */
export async function changeVisibilities(
  queue: TaskQueue,
  priority: Priority,
  entries: readonly VisibilityChange[],
  lane?: string,
): Promise<FailedVisibilityChange[]> {
  if (entries.length === 0) return [];
  if (queue.changeVisibilityMany !== undefined) return queue.changeVisibilityMany(priority, entries, lane);
  const failed = await Promise.all(
    entries.map(async (entry): Promise<FailedVisibilityChange | undefined> => {
      try {
        await queue.changeVisibility(priority, entry.receiptHandle, entry.seconds, lane);
        return undefined;
      } catch (err) {
        const error =
          err instanceof MessageGoneError || err instanceof QueueUnavailableError
            ? err
            : new QueueUnavailableError(`visibility change on ${priority} failed: ${String(err)}`, { cause: err });
        return { entry, error };
      }
    }),
  );
  return failed.filter((f): f is FailedVisibilityChange => f !== undefined);
}
