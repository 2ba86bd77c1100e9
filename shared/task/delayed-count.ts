/**
 * How many tasks wait in the task table for their message: the count of the outbox's queue
 * partitions, read cheaply and bounded.
 *
 * A delay beyond SQS's 15 minutes cannot be held by the queue, so the task waits in the table as
 * an outbox entry until the rest of its delay fits (`shared/task/changes.ts`, `outboxFields`);
 * SQS's own "delayed" depth does not see it. The entries are in the outbox index (keys only,
 * sharded: 9 partitions per priority, `queue#normal#3`), so counting them needs no Scan and no
 * row read: one Query per partition, at most {@link DELAYED_COUNT_BOUND} entries each. A
 * partition that holds more is counted as "at least" (`capped`), so the cost stays bounded
 * however many tasks wait: 27 Queries, 13.5 RRU when the outbox is empty, about 27 × 1.5 RRU at
 * the bound (docs/operations.md, "Delayed counts").
 *
 * What is counted is every message owed to a queue: delayed tasks (the `delayed` listing), and
 * also retries whose backoff is beyond 15 minutes and sends that failed and wait for the sweeper
 * (rare). The index holds keys only, so telling them apart would cost a row read each.
 *
 * @module
 */
import { PRIORITIES, type Priority } from '../config/resources.js';
import type { TaskListingReader } from './task-store.js';
import { outboxPartitions } from './model.js';

/** Entries read per outbox partition at most (one Query each; DynamoDB's page limit is far above). */
export const DELAYED_COUNT_BOUND = 100;

/** A count read up to a bound. */
export interface BoundedCount {
  readonly count: number;
  /** True when some partition held more than was read: the count is a floor ("100+"). */
  readonly capped: boolean;
}

/** Tasks waiting in the table for their send, per priority (every lane's together) and in all. */
export interface TableDelayedCount {
  readonly byPriority: Readonly<Record<Priority, BoundedCount>>;
  readonly total: BoundedCount;
}

/** The queue partitions of the outbox, by priority (sharded ones and the unsharded one each). */
const QUEUE_PARTITIONS: readonly { readonly priority: Priority; readonly partition: string }[] = outboxPartitions()
  .filter((p) => p.startsWith('queue#'))
  .map((partition) => ({ priority: partition.split('#')[1] as Priority, partition }));

/**
 * Counts the outbox's queue entries: one Query of up to `bound` keys per partition, all at once.
 * @throws StoreUnavailableError (what the reader throws)
 */
export async function countTableDelayed(
  reader: Pick<TaskListingReader, 'readOutbox'>,
  bound: number = DELAYED_COUNT_BOUND,
): Promise<TableDelayedCount> {
  const reads = await Promise.all(
    QUEUE_PARTITIONS.map(async ({ priority, partition }) => {
      const range = await reader.readOutbox({ partition, limit: bound });
      // DynamoDB says "more" whenever the limit was reached: a full page counts as capped.
      return { priority, count: range.entries.length, capped: range.more && range.entries.length >= bound };
    }),
  );
  const sum = (rows: readonly BoundedCount[]): BoundedCount => ({
    count: rows.reduce((n, r) => n + r.count, 0),
    capped: rows.some((r) => r.capped),
  });
  const byPriority = Object.fromEntries(
    PRIORITIES.map((p) => [p, sum(reads.filter((r) => r.priority === p))]),
  ) as Record<Priority, BoundedCount>;
  return { byPriority, total: sum(reads) };
}

/** A bounded count as people read it: `42`, or `100+` when it stopped at the bound. */
export function boundedText(c: BoundedCount, format: (n: number) => string = String): string {
  return `${format(c.count)}${c.capped ? '+' : ''}`;
}
