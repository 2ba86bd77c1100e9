import type { Priority } from '../../shared/config/resources.js';
import type { TaskStore } from '../../shared/task/task-store.js';
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
  /**
   * Read task records: `true` for every message, `'moved'` for messages SQS moved (which carry
   * no details of their own). By default only where a filter needs one.
   */
  readonly loadRecords?: boolean | 'moved';
  /** Stop receiving (pages being handled are finished, held messages are released). */
  readonly signal?: AbortSignal;
  /**
   * Pages handed to the handler at once: receiving goes on while earlier pages are handled
   * (latency hiding). @default 1
   */
  readonly pipeline?: number;
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
    const inFlight = new Set<Promise<void>>();
    const errors: unknown[] = [];
    const handOver = (page: DeadEntry[]) => {
      const p: Promise<void> = onPage(page)
        .then((deleted) => {
          for (const d of deleted) held.delete(d.messageId);
        })
        .catch((err: unknown) => void errors.push(err))
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    };
    try {
      let empties = 0;
      while (!o.signal?.aborted && stats.selected < limit && errors.length === 0) {
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
          // Nothing new: done, unless pages still being handled may free up the queue's view.
          if (inFlight.size > 0) {
            await Promise.race(inFlight);
            continue;
          }
          empties += 1;
          if (empties >= emptyToStop) break;
          continue;
        }
        empties = 0;
        await Promise.all(
          fresh.map(async (e) => {
            const wanted =
              o.loadRecords === true ||
              (o.loadRecords === 'moved' && e.kind === 'moved_by_sqs') ||
              needsRecord(e, o.filter);
            if (e.taskId !== undefined && wanted) {
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
        handOver(page);
        while (inFlight.size >= Math.max(1, o.pipeline ?? 1)) await Promise.race(inFlight);
      }
    } finally {
      while (inFlight.size > 0) await Promise.race(inFlight);
      if (held.size > 0) {
        await deps.dlq.release(priority, [...held.values()]);
        stats.released += held.size;
      }
    }
    if (errors.length > 0) throw errors[0];
  }
  return stats;
}
