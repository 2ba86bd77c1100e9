import type { Priority } from '../config/resources.js';
import type { TaskStore } from '../store/task-store.js';
import {
  matches,
  needsRecord,
  parseDeadEntry,
  type DeadEntry,
  type DeadLetterFilter,
  type DeadLetterQueues,
} from './dead-letters.js';

/** SQS's largest receive batch. */
export const MAX_RECEIVE = 10;

export interface ScanDeps {
  readonly dlq: DeadLetterQueues;
  readonly store: Pick<TaskStore, 'get'>;
}

export interface ScanOptions {
  /** DLQs to read, in order. */
  readonly queues: readonly Priority[];
  readonly filter: DeadLetterFilter;
  /** Stop after selecting this many messages. */
  readonly limit?: number;
  /**
   * How long each received message stays hidden from other readers. Every message this scan
   * receives and does not delete is made visible again (visibility 0) when the scan of its
   * queue ends; this timeout only matters if the process dies first.
   */
  readonly visibilitySeconds: number;
  /** Long-poll wait of each receive (0 on an exact emulator; 1+ on AWS, whose short polls sample). */
  readonly waitSeconds: number;
  /** A queue is done after this many receives in a row bring nothing new. @default 2 */
  readonly emptyReceivesToStop?: number;
  /** Read the task record of every selected message (not only where a filter needs it). */
  readonly loadRecords?: boolean;
  /** Stop receiving (the current page is finished, held messages are released). */
  readonly signal?: AbortSignal;
}

export interface ScanStats {
  /** Distinct messages received. */
  received: number;
  selected: number;
  /** Messages made visible again at the end. */
  released: number;
}

/**
 * Called with each page of selected messages (≤ 10). Returns the entries it deleted; every
 * other message stays hidden until the queue's scan ends, then is released.
 */
export type PageHandler = (page: DeadEntry[]) => Promise<readonly DeadEntry[]>;

/**
 * Reads the DLQs page by page, selecting messages by filter. Messages are hidden while held so
 * one pass sees each message once (a message seen again after its visibility ran out is
 * recognised by id and not handed out twice); all not deleted are released at the end.
 */
export async function scanDeadLetters(deps: ScanDeps, o: ScanOptions, onPage: PageHandler): Promise<ScanStats> {
  const stats: ScanStats = { received: 0, selected: 0, released: 0 };
  const limit = o.limit ?? Number.POSITIVE_INFINITY;
  const emptyToStop = o.emptyReceivesToStop ?? 2;
  for (const priority of o.queues) {
    if (o.signal?.aborted || stats.selected >= limit) break;
    /** messageId → latest receipt handle, for everything received and not deleted. */
    const held = new Map<string, string>();
    const seen = new Set<string>();
    try {
      let empties = 0;
      while (!o.signal?.aborted && stats.selected < limit) {
        const messages = await deps.dlq.receive(priority, {
          max: MAX_RECEIVE,
          visibilitySeconds: o.visibilitySeconds,
          waitSeconds: o.waitSeconds,
        });
        const fresh: DeadEntry[] = [];
        for (const m of messages) {
          held.set(m.messageId, m.receiptHandle);
          if (seen.has(m.messageId)) continue;
          seen.add(m.messageId);
          fresh.push(parseDeadEntry(priority, m));
        }
        stats.received += fresh.length;
        if (fresh.length === 0) {
          empties += 1;
          if (empties >= emptyToStop) break;
          continue;
        }
        empties = 0;
        await Promise.all(
          fresh.map(async (e) => {
            if (e.taskId !== undefined && (o.loadRecords === true || needsRecord(e, o.filter))) {
              e.record = (await deps.store.get(e.taskId)) ?? null;
            }
          }),
        );
        const page: DeadEntry[] = [];
        for (const e of fresh) {
          if (stats.selected >= limit) break;
          if (!matches(e, o.filter)) continue;
          page.push(e);
          stats.selected += 1;
        }
        if (page.length === 0) continue;
        const deleted = await onPage(page);
        for (const d of deleted) held.delete(d.messageId);
      }
    } finally {
      if (held.size > 0) {
        await deps.dlq.release(priority, [...held.values()]);
        stats.released += held.size;
      }
    }
  }
  return stats;
}
