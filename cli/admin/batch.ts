import type { Priority } from '../../shared/config/resources.js';
import type { Clock } from '../../shared/runtime/clock.js';
import type { TaskStore } from '../../shared/task/task-store.js';
import { deadLetterOf } from '../../shared/task/lifecycle.js';
import type { TaskRecord } from '../../shared/task/model.js';
import type { Changed, DeadLetterRef } from '../../shared/task/operations.js';
import { matches, type DeadEntry } from './dead-letters.js';
import { Pacer, type Sleep } from './pacer.js';
import { scanDeadLetters, type ScanDeps, type ScanOptions, type ScanStats } from './scan.js';

/** What became of one selected DLQ message. */
export type ItemOutcome = 'done' | 'skipped' | 'failed';

/**
 * The plan that was (or, in a dry run, would be) carried out for an item: a redrive's `reset`,
 * `resend`, `resume`, `discard_letter`, `leave` or `reset_from_record`; a purge's `mark`,
 * `cancel`, `delete` or `leave`; `none` (a named task that could not be handled); `error`.
 */
export type ItemAction =
  | 'reset'
  | 'resend'
  | 'resume'
  | 'discard_letter'
  | 'leave'
  | 'reset_from_record'
  | 'mark'
  | 'cancel'
  | 'delete'
  | 'none'
  | 'error';

export interface ItemResult {
  readonly outcome: ItemOutcome;
  readonly action: ItemAction;
  readonly detail?: string;
  /** Delete the DLQ message once every other step of this item succeeded. */
  readonly deleteLetter: boolean;
}

export interface ReportItem {
  /** `null` for a task named with --task that had no message in the DLQs (handled from its record). */
  readonly message_id: string | null;
  readonly task_id: string | null;
  /** `null` when there was no DLQ message and no task record to tell the priority. */
  readonly dlq: Priority | null;
  readonly outcome: ItemOutcome;
  readonly action: ItemAction;
  readonly detail?: string;
}

export interface BatchCounts {
  selected: number;
  done: number;
  skipped: number;
  failed: number;
}

export interface BatchReport extends BatchCounts {
  readonly dryRun: boolean;
  /** Stopped early by the signal (Ctrl-C): items not started are released and not counted. */
  readonly interrupted: boolean;
  readonly items: ReportItem[];
  readonly scan: ScanStats;
}

export interface BatchDeps extends ScanDeps {
  readonly clock: Clock;
  readonly sleep: Sleep;
}

export interface BatchOptions extends Omit<ScanOptions, 'loadRecords'> {
  readonly dryRun: boolean;
  /** At most this many items started per second. */
  readonly ratePerSecond?: number;
  /** Items of a page handled at once. @default 10 */
  readonly concurrency?: number;
  readonly onProgress?: (counts: Readonly<BatchCounts>) => void;
}

/**
 * Runs `handle` on every selected DLQ message, then deletes (in one batch per page) exactly
 * the messages whose item succeeded and asked for it. The delete is always the last step,
 * so a crash anywhere leaves the message in the DLQ for a re-run to finish.
 */
export async function processDeadLetters(
  deps: BatchDeps,
  o: BatchOptions,
  handle: (entry: DeadEntry) => Promise<ItemResult>,
): Promise<BatchReport> {
  const counts: BatchCounts = { selected: 0, done: 0, skipped: 0, failed: 0 };
  const items: ReportItem[] = [];
  const pacer = new Pacer(o.dryRun ? undefined : o.ratePerSecond, deps.clock, deps.sleep);
  const concurrency = Math.max(1, o.concurrency ?? 10);

  const record = (e: DeadEntry, r: Pick<ItemResult, 'outcome' | 'action' | 'detail'>) => {
    counts[r.outcome] += 1;
    items.push({
      message_id: e.messageId,
      task_id: e.taskId ?? null,
      dlq: e.dlq,
      outcome: r.outcome,
      action: r.action,
      ...(r.detail === undefined ? {} : { detail: r.detail }),
    });
    o.onProgress?.(counts);
  };

  const scan = await scanDeadLetters(deps, { ...o, loadRecords: true }, async (page) => {
    counts.selected += page.length;
    const results = new Map<DeadEntry, ItemResult>();
    // Letters of one task (duplicates) are handled one after the other, so the second sees the first's write.
    const groups = [...groupBy(page, (e) => e.taskId ?? e.messageId).values()];
    let next = 0;
    const worker = async () => {
      while (next < groups.length) {
        for (const e of groups[next++] as DeadEntry[]) {
          if (!o.signal?.aborted) await pacer.take(o.signal);
          // Interrupted before this one started: it is released untouched and not counted.
          if (o.signal?.aborted) continue;
          try {
            results.set(e, await handle(e));
          } catch (err) {
            results.set(e, { outcome: 'failed', action: 'error', detail: describe(err), deleteLetter: false });
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, groups.length) }, worker));

    const toDelete = page.filter((e) => results.get(e)?.deleteLetter === true && !o.dryRun);
    const failedHandles = new Set<string>();
    let deleteError: string | undefined;
    if (toDelete.length > 0) {
      const byQueue = groupBy(toDelete, (e) => e.dlq);
      for (const [priority, entries] of byQueue) {
        try {
          for (const h of await deps.dlq.delete(
            priority,
            entries.map((e) => e.receiptHandle),
          ))
            failedHandles.add(h);
        } catch (err) {
          deleteError = describe(err);
          for (const e of entries) failedHandles.add(e.receiptHandle);
        }
      }
    }
    const deleted: DeadEntry[] = [];
    for (const e of page) {
      const r = results.get(e);
      if (r === undefined) {
        counts.selected -= 1;
        continue;
      }
      if (r.deleteLetter && !o.dryRun && failedHandles.has(e.receiptHandle)) {
        record(e, {
          outcome: 'failed',
          action: r.action,
          detail: `${r.detail ?? r.action}; but the DLQ message could not be deleted${deleteError ? ` (${deleteError})` : ''}: re-run to finish`,
        });
        continue;
      }
      if (r.deleteLetter && !o.dryRun) deleted.push(e);
      record(e, r);
    }
    return deleted;
  });
  return { ...counts, dryRun: o.dryRun, interrupted: o.signal?.aborted === true, items, scan };
}

function groupBy<T, K>(xs: readonly T[], key: (x: T) => K): Map<K, T[]> {
  const m = new Map<K, T[]>();
  for (const x of xs) {
    const k = key(x);
    const list = m.get(k);
    if (list === undefined) m.set(k, [x]);
    else list.push(x);
  }
  return m;
}

export function describe(err: unknown): string {
  if (err instanceof Error) return err.message === '' ? err.name : `${err.name}: ${err.message}`;
  return String(err);
}

/**
 * Whether a task named explicitly (`--task ID`) can be handled from its record alone (it is
 * `failed` and its record matches the rest of the selection), and if not, why.
 */
export type NamedTaskCheck =
  | { readonly ok: true; readonly record: TaskRecord }
  | { readonly ok: false; readonly record: TaskRecord | undefined; readonly detail: string };

/**
 * Checks a task named with --task that no DLQ message stood for against the rest of the
 * selection (`--queue`, `--type`, `--error-contains`, `--since`), judged on the dead letter
 * its record would have (`deadLetterOf`), so that both paths select alike.
 */
export function checkNamedTask(
  record: TaskRecord | undefined,
  o: Pick<BatchOptions, 'queues' | 'filter'>,
  now: number,
): NamedTaskCheck {
  if (record === undefined) {
    return { ok: false, record, detail: 'no dead letter, no task record (never existed, or expired)' };
  }
  if (record.status !== 'failed')
    return { ok: false, record, detail: `no dead letter; task is ${record.status}, not dead` };
  if (!o.queues.includes(record.priority)) {
    return {
      ok: false,
      record,
      detail: `no dead letter; task died on ${record.priority}, outside --queue ${o.queues.join(', ')}`,
    };
  }
  const asLetter: DeadEntry = {
    messageId: '',
    receiptHandle: '',
    dlq: record.priority,
    kind: 'dead_letter',
    taskId: record.task_id,
    dispatchId: record.dispatch_id,
    originPriority: record.priority,
    letter: deadLetterOf(record, now),
    record,
  };
  if (!matches(asLetter, o.filter)) {
    return { ok: false, record, detail: 'no dead letter; task record does not match the other filters' };
  }
  return { ok: true, record };
}

/**
 * After the DLQ pass: every task named in `filter.taskIds` that no selected message stood for
 * is handed to `handle` with its record (read here), and counted and reported like an item.
 * A named task is therefore never silently left out: it is handled from its record (e.g. its
 * dead letter was lost with the in-memory SQS of `npm start`), or reported as failed with why.
 * Skipped when interrupted, and only as many as `limit` still allows.
 */
export async function processNamedTasks(
  deps: BatchDeps & { readonly store: Pick<TaskStore, 'get'> },
  o: BatchOptions,
  report: BatchReport,
  handle: (taskId: string, record: TaskRecord | undefined) => Promise<ItemResult>,
): Promise<BatchReport> {
  const named = o.filter.taskIds ?? [];
  if (named.length === 0 || report.interrupted) return report;
  const seen = new Set(report.items.map((i) => i.task_id));
  const counts: BatchCounts = {
    selected: report.selected,
    done: report.done,
    skipped: report.skipped,
    failed: report.failed,
  };
  const items = [...report.items];
  const pacer = new Pacer(o.dryRun ? undefined : o.ratePerSecond, deps.clock, deps.sleep);
  for (const taskId of new Set(named)) {
    if (seen.has(taskId)) continue;
    if (counts.selected >= (o.limit ?? Number.POSITIVE_INFINITY)) break;
    await pacer.take(o.signal);
    if (o.signal?.aborted) return { ...report, ...counts, items, interrupted: true };
    let record: TaskRecord | undefined;
    let r: ItemResult;
    try {
      record = await deps.store.get(taskId);
      r = await handle(taskId, record);
    } catch (err) {
      r = { outcome: 'failed', action: 'error', detail: describe(err), deleteLetter: false };
    }
    counts.selected += 1;
    counts[r.outcome] += 1;
    items.push({
      message_id: null,
      task_id: taskId,
      dlq: record?.priority ?? null,
      outcome: r.outcome,
      action: r.action,
      ...(r.detail === undefined ? {} : { detail: r.detail }),
    });
    o.onProgress?.(counts);
  }
  return { ...report, ...counts, items };
}

/** A selected DLQ message: the letter it carries (none for a message that is not Kaj's) and its task's record as first read. */
export interface SelectedLetter {
  readonly entry: DeadEntry;
  readonly letter: DeadLetterRef | undefined;
  readonly first: TaskRecord | undefined;
}

/**
 * A DLQ operation over its whole selection: `onLetter` for every selected DLQ message; then `onRecord` for every task named in `filter.taskIds` that no message stood for,
 * given its record (see `processNamedTasks`).
 */
export async function processSelection<
  D extends BatchDeps & { readonly store: Pick<TaskStore, 'get'> },
  O extends BatchOptions,
>(
  deps: D,
  o: O,
  onLetter: (deps: D, o: O, selected: SelectedLetter) => Promise<ItemResult>,
  onRecord: (deps: D, o: O, record: TaskRecord | undefined) => Promise<ItemResult>,
): Promise<BatchReport> {
  const fromLetters = await processDeadLetters(deps, o, async (entry) => {
    const letter = letterOf(entry);
    return onLetter(deps, o, { entry, letter, first: letter === undefined ? undefined : await recordOf(deps, entry) });
  });
  return processNamedTasks(deps, o, fromLetters, (_taskId, record) => onRecord(deps, o, record));
}

/** The task and dispatch a DLQ message stands for, as the domain takes it; none for a message that is not Kaj's. */
export function letterOf(entry: DeadEntry): DeadLetterRef | undefined {
  if (entry.kind === 'unreadable' || entry.taskId === undefined || entry.dispatchId === undefined) return undefined;
  return { taskId: entry.taskId, dispatchId: entry.dispatchId, origin: entry.originPriority };
}

/** The task record of a DLQ message: as read while selecting, else read now. */
export async function recordOf(
  deps: { readonly store: Pick<TaskStore, 'get'> },
  entry: DeadEntry,
): Promise<TaskRecord | undefined> {
  if (entry.record !== undefined) return entry.record ?? undefined;
  return entry.taskId === undefined ? undefined : deps.store.get(entry.taskId);
}

/**
 * Runs one item on the record as read; when the record changed between that read and the
 * write (another operator, the consumer), decides again on the record as it is now. Gives up
 * after three rounds.
 */
export async function withReplans(
  first: TaskRecord | undefined,
  attempt: (record: TaskRecord | undefined) => Promise<ItemResult | Changed>,
): Promise<ItemResult> {
  let record = first;
  for (let round = 0; round < 3; round += 1) {
    const result = await attempt(record);
    if (!('kind' in result)) return result;
    record = result.current;
  }
  return { outcome: 'failed', action: 'none', detail: 'the task record kept changing; try again', deleteLetter: false };
}
