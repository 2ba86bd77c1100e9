import type { Priority } from '../../shared/config/resources.js';
import type { Clock } from '../../shared/runtime/clock.js';
import type { TaskLifecycle } from '../../shared/task/lifecycle.js';
import type { TaskRecord } from '../../shared/task/model.js';
import { dlqRetentionStart, redriveTarget, type RedriveRequest } from '../../shared/task/operations.js';
import { describe } from './batch.js';
import { MoveTaskFailedError } from './errors.js';
import { Pacer, type Sleep } from './pacer.js';

/** Failed tasks as found in the table (a Scan: it reads the whole table). */
export interface FailedTaskSource {
  /** Tasks with status `failed`, no `discarded_at`, this priority, that died at or after `diedSince` (epoch ms). */
  failedTasks(priority: Priority, diedSince: number): Promise<TaskRecord[]>;
}

export type MoveTaskStatus = 'RUNNING' | 'COMPLETED' | 'CANCELLING' | 'CANCELLED' | 'FAILED';

export interface MoveProgress {
  readonly status: MoveTaskStatus;
  readonly moved: number;
  readonly toMove: number;
  readonly failureReason?: string;
}

/** SQS's message move tasks (`StartMessageMoveTask`), on the DLQ of a priority. */
export interface MessageMover {
  /** @throws NativeMoveUnsupportedError, MoveTaskRunningError */
  check(source: Priority): Promise<void>;
  /** Moves every message of the DLQ of `source` to the main queue of `destination`. */
  start(source: Priority, destination: Priority, maxPerSecond?: number): Promise<void>;
  /** The latest move task of that DLQ. */
  progress(source: Priority): Promise<MoveProgress | undefined>;
}

export interface NativeRedriveDeps {
  readonly failed: FailedTaskSource;
  readonly mover: MessageMover;
  /** The domain: `operations` makes every record write. */
  readonly lifecycle: Pick<TaskLifecycle, 'operations'>;
  readonly clock: Clock;
  readonly sleep: Sleep;
}

export interface NativeRedriveOptions extends RedriveRequest {
  readonly queues: readonly Priority[];
  readonly dryRun: boolean;
  /** SQS's MaxNumberOfMessagesPerSecond (≤ 500); the record resets are paced the same. */
  readonly ratePerSecond?: number;
  readonly pollIntervalMs?: number;
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: NativeQueueReport) => void;
}

export interface NativeQueueReport {
  readonly dlq: Priority;
  readonly destination: Priority;
  /** Failed tasks found in the table for this DLQ. */
  selected: number;
  /** Records reset (failed → queued, same dispatch id, outbox entry). */
  reset: number;
  /** Records that changed meanwhile (another redrive, a purge): left alone. */
  skipped: number;
  failed: number;
  move?: MoveProgress;
  /** Tasks that died since the scan, whose dead letter was written again in case the move took it. */
  repaired: number;
  errors: string[];
}

/**
 * The fast path: SQS moves the messages, Kaj resets the records.
 *
 * A moved message still carries the dispatch id it died with, and the consumer's claim only
 * accepts a `queued` task with that dispatch id — so every failed task's record is reset first
 * (same dispatch id, plus an outbox entry so that the sweeper sends it even if the move fails),
 * then `StartMessageMoveTask` runs. Tasks that died while the move ran may have had their dead
 * letter moved while their record still says `failed` (the claim drops such a message): their
 * dead letter is written again afterwards (a duplicate at worst, which a redrive or purge
 * recognises). Caveat: it resets every failed, not discarded task of the priority that died
 * within the DLQ retention, whether or not its message is still in the DLQ.
 */
export async function nativeRedrive(deps: NativeRedriveDeps, o: NativeRedriveOptions): Promise<NativeQueueReport[]> {
  for (const p of o.queues) await deps.mover.check(p);
  const reports: NativeQueueReport[] = [];
  for (const p of o.queues) {
    if (o.signal?.aborted) break;
    const destination = redriveTarget(o.to, p);
    const report: NativeQueueReport = {
      dlq: p,
      destination,
      selected: 0,
      reset: 0,
      skipped: 0,
      failed: 0,
      repaired: 0,
      errors: [],
    };
    reports.push(report);
    const t0 = deps.clock.now();
    const candidates = await deps.failed.failedTasks(p, dlqRetentionStart(t0));
    report.selected = candidates.length;
    if (o.dryRun) continue;

    const pacer = new Pacer(o.ratePerSecond, deps.clock, deps.sleep);
    let next = 0;
    const worker = async () => {
      while (next < candidates.length && !o.signal?.aborted) {
        const r = candidates[next++] as TaskRecord;
        await pacer.take(o.signal);
        try {
          const out = await deps.lifecycle.operations.resetForMove(r, o);
          // `changed`: another redrive or a purge got there first; left alone.
          if (out.kind === 'reset') report.reset += 1;
          else report.skipped += 1;
        } catch (err) {
          report.failed += 1;
          report.errors.push(`${r.task_id}: ${describe(err)}`);
        }
        o.onProgress?.(report);
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
    if (o.signal?.aborted) break;

    // Every reset task is owed its message by the outbox now; the move only makes it faster.
    await deps.mover.start(
      p,
      destination,
      o.ratePerSecond === undefined ? undefined : Math.min(500, Math.ceil(o.ratePerSecond)),
    );
    for (;;) {
      const progress = await deps.mover.progress(p);
      if (progress !== undefined) report.move = progress;
      o.onProgress?.(report);
      if (progress === undefined || (progress.status !== 'RUNNING' && progress.status !== 'CANCELLING')) break;
      await deps.sleep(o.pollIntervalMs ?? 500, o.signal);
      if (o.signal?.aborted) break;
    }

    // Dead letters written since the scan (new deaths, or reset tasks that died again at once)
    // may have been moved while their record said failed: the claim dropped those. Write them again.
    const diedMeanwhile = await deps.failed.failedTasks(p, t0);
    for (const r of diedMeanwhile) {
      try {
        const out = await deps.lifecycle.operations.rewriteDeadLetter(r);
        if (out.kind === 'rewritten') report.repaired += 1;
      } catch (err) {
        report.errors.push(`${r.task_id}: ${describe(err)}`);
      }
    }
    if (report.move !== undefined && report.move.status !== 'COMPLETED') {
      report.errors.push(
        new MoveTaskFailedError(
          `move task ${report.move.status}${report.move.failureReason ? `: ${report.move.failureReason}` : ''}; the reset tasks are sent by the sweeper instead`,
        ).message,
      );
    }
  }
  return reports;
}
