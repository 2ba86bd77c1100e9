import { METRICS } from '../config/metrics.js';
import type { Classification } from '../retry/classify.js';
import { afterFailure } from '../retry/decide.js';
import { ConditionFailedError } from '../store/errors.js';
import type { TaskChanges } from '../store/task-store.js';
import {
  attemptRecord,
  cancelChanges,
  failChanges,
  finishedExpiry,
  iso,
  outboxFields,
  withAttempt,
} from './changes.js';
import type { ResolvedPolicy } from './define.js';
import { LeaseLostError } from './errors.js';
import { fencedUpdate } from './fence.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { TaskRecord } from './model.js';
import type { TaskOutbox } from './outbox.js';
import { transition } from './state-machine.js';

/**
 * How an attempt ends: success, retry, death or cancellation, each one write fenced by the
 * lease. Success, retry and death are also conditioned on "no cancel request", so a cancel
 * always wins (docs/reliability.md, guarantee 5). Retry decisions are `shared/retry/decide.ts`.
 */
export class AttemptOutcomes {
  constructor(
    private readonly d: LifecycleDeps,
    private readonly outbox: TaskOutbox,
  ) {}

  /**
   * Records a successful attempt — unless a cancel request arrived meanwhile: then the task ends
   * `cancelled` and the result is discarded. Returns the task as stored.
   * @param result the handler's result, already checked by `checkJsonValue`
   */
  async succeed(record: TaskRecord, result: unknown, durationMs: number): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const done = await this.settle(record, durationMs, {
      set: {
        status: transition(record.status, 'succeed', record.task_id),
        result: result === undefined ? null : result,
        finished_at: iso(now),
        updated_at: iso(now),
        history: withAttempt(record.history, attemptRecord(record, 'succeeded', now, durationMs), this.d.settings),
        expires_at: finishedExpiry(now, this.d.settings),
      },
      remove: ['lease_until', 'outbox_pk', 'outbox_due', 'solo'],
    });
    if (done.status === 'succeeded') this.d.metrics.count(METRICS.succeeded, record.type);
    return done;
  }

  /**
   * Records a failed attempt and what follows (`afterFailure`): a retry (new message, full-jitter
   * delay or the error's retryAfter) or death (status failed, dead letter).
   */
  async attemptFailed(
    record: TaskRecord,
    failure: Classification,
    policy: ResolvedPolicy,
    durationMs: number,
  ): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const next = afterFailure(record.attempts, record.max_attempts, failure, policy.backoff, this.d.random);
    if (next.kind === 'fail') {
      const history = withAttempt(
        record.history,
        attemptRecord(record, 'failed', now, durationMs, failure.info),
        this.d.settings,
      );
      const failed = await this.settle(
        record,
        durationMs,
        failChanges(record, failure.info, history, now, this.d.settings),
      );
      if (failed.status !== 'failed') return failed;
      this.d.metrics.count(METRICS.failed, record.type);
      await this.outbox.dispatchQuietly(failed);
      return failed;
    }
    const runAt = now + next.delayMs;
    const retrying = await this.settle(record, durationMs, {
      set: {
        status: transition(record.status, 'retry', record.task_id),
        run_at: iso(runAt),
        updated_at: iso(now),
        last_error: failure.info,
        history: withAttempt(
          record.history,
          attemptRecord(record, 'retrying', now, durationMs, failure.info),
          this.d.settings,
        ),
        dispatch_id: this.d.random.id(),
        ...outboxFields('queue', record.priority, runAt, now, this.d.settings),
      },
      remove: ['lease_until', 'solo'],
    });
    if (retrying.status !== 'retrying') return retrying;
    this.d.metrics.count(METRICS.retried, record.type);
    // Send before the caller acknowledges the old message. If the send fails the outbox entry
    // stays and the sweeper sends it: the task is never lost between the two.
    await this.outbox.dispatchQuietly(retrying);
    return retrying;
  }

  /** Ends a running attempt whose task was cancelled meanwhile; any result is discarded. */
  async cancelledWhileRunning(record: TaskRecord, durationMs: number): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const history = withAttempt(record.history, attemptRecord(record, 'cancelled', now, durationMs), this.d.settings);
    const done = await fencedUpdate(this.d, record, cancelChanges(record, now, this.d.settings, history));
    this.d.metrics.count(METRICS.cancelled, record.type);
    return done;
  }

  /**
   * Writes an attempt's outcome, fenced by the lease and conditioned on no cancel request.
   * If the condition failed only because a cancel was requested, the attempt ends cancelled.
   * @throws LeaseLostError when another worker holds the task now
   */
  private async settle(record: TaskRecord, durationMs: number, changes: TaskChanges): Promise<TaskRecord> {
    try {
      return await this.d.store.update(record.task_id, changes, {
        leaseToken: record.lease_token,
        status: ['running'],
        noCancelRequest: true,
      });
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      const current = err.current ?? (await this.d.store.get(record.task_id));
      if (
        current?.status === 'running' &&
        current.lease_token === record.lease_token &&
        current.cancel_requested === true
      ) {
        return this.cancelledWhileRunning(record, durationMs);
      }
      this.d.metrics.count(METRICS.fencedWrites, record.type);
      throw new LeaseLostError(record.task_id, record.lease_token, err);
    }
  }
}
