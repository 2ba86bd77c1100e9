import type { TaskRecord } from '../../shared/task/model.js';
import { summarize, type DeadEntry, type DeadTaskSummary } from './dead-letters.js';
import { scanDeadLetters, type ScanDeps, type ScanOptions, type ScanStats } from './scan.js';

export interface ListedDeadTask extends DeadTaskSummary {
  readonly messageId: string;
  readonly dlq: DeadEntry['dlq'];
  readonly receiveCount: number | undefined;
  /** The task's status now, when its record was read. */
  readonly status: TaskRecord['status'] | 'missing' | undefined;
}

export interface DeadLetterListing {
  readonly tasks: ListedDeadTask[];
  readonly entries: DeadEntry[];
  readonly scan: ScanStats;
}

/**
 * Lists dead tasks. Reading a DLQ means receiving its messages: each one received is hidden
 * for `visibilitySeconds` and its receive count goes up by one; every message is made visible
 * again (visibility 0) as soon as its queue has been read. Nothing is deleted or changed.
 */
export async function listDeadLetters(
  deps: ScanDeps,
  o: Omit<ScanOptions, 'loadRecords'> & { loadRecords?: ScanOptions['loadRecords'] },
): Promise<DeadLetterListing> {
  const entries: DeadEntry[] = [];
  const scan = await scanDeadLetters(deps, o, async (page) => {
    entries.push(...page);
    return [];
  });
  const tasks = entries.map((e) => ({
    ...summarize(e),
    messageId: e.messageId,
    dlq: e.dlq,
    receiveCount: e.receiveCount,
    status: e.record === null ? ('missing' as const) : e.record?.status,
  }));
  return { tasks, entries, scan };
}
