import { METRICS } from '../config/metrics.js';
import type { Classification } from '../retry/classify.js';
import { afterFailure } from '../retry/decide.js';
import { ConditionFailedError } from './store-errors.js';
import type { TaskChanges } from './task-store.js';
import {
  attemptRecord,
  cancelChanges,
  failChanges,
  finishedExpiry,
  iso,
  nextDispatchId,
  withAttempt,
} from './changes.js';
import { claimWritten, isCancelled } from './lease.js';
import type { ResolvedPolicy } from './define.js';
import { LeaseLostError } from './errors.js';
import { fencedUpdate } from './fence.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { TaskRecord } from './model.js';
import type { TaskOutbox } from './outbox.js';
import type { RunWakes } from './wake.js';
import { transition } from './state-machine.js';

/**
 * How an attempt ends: success, retry, death or cancellation, each one write — fenced by the
 * lease when the claim was written, or by the dispatch and the waiting status for a lazy claim
 * (the outcome is then the claim too). Success, retry and death are also conditioned on "no
 * cancel request", so a cancel always wins (docs/reliability.md, guarantee 5). Retry decisions
 * are `shared/retry/decide.ts`.
 */
export class AttemptOutcomes {
  constructor(
    private readonly d: LifecycleDeps,
    private readonly outbox: TaskOutbox,
    private readonly wakes: RunWakes,
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
        ...lazyClaimFields(record),
        status: transition('running', 'succeed', record.task_id),
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
    const base = lazyClaimFields(record);
    const next = afterFailure(record.attempts, record.max_attempts, failure, policy.backoff, this.d.random);
    if (next.kind === 'fail') {
      const history = withAttempt(
        record.history,
        attemptRecord(record, 'failed', now, durationMs, failure.info),
        this.d.settings,
      );
      const changes = failChanges(running(record), failure.info, history, now, this.d.settings);
      const failed = await this.settle(record, durationMs, { ...changes, set: { ...base, ...changes.set } });
      if (failed.status !== 'failed') return failed;
      this.d.metrics.count(METRICS.failed, record.type);
      if (record.schedule !== undefined) {
        this.d.metrics.count(METRICS.scheduledRunsFailed, undefined);
        this.d.logger.warn('scheduled run failed', { task_id: record.task_id, schedule: record.schedule });
      }
      await this.outbox.dispatchQuietly(failed);
      return failed;
    }
    const runAt = now + next.delayMs;
    const retry: TaskRecord = {
      ...record,
      status: transition('running', 'retry', record.task_id),
      run_at: iso(runAt),
      dispatch_id: nextDispatchId(this.d.random, record.dispatch_id),
    };
    // Send first, then write (as a submit does): the new message carries the next dispatch, so
    // a crash between the two leaves a message that finds no such dispatch and is dropped, and
    // the old message comes back for this attempt. A failed send leaves an outbox entry.
    const owed = await this.outbox.sendAhead(retry);
    const retrying = await this.settle(record, durationMs, {
      set: {
        ...base,
        status: retry.status,
        run_at: retry.run_at,
        updated_at: iso(now),
        last_error: failure.info,
        history: withAttempt(
          record.history,
          attemptRecord(record, 'retrying', now, durationMs, failure.info),
          this.d.settings,
        ),
        dispatch_id: retry.dispatch_id,
        ...owed,
      },
      remove: ['lease_until', 'solo'],
    });
    if (retrying.status !== 'retrying') return retrying;
    this.d.metrics.count(METRICS.retried, record.type);
    return retrying;
  }

  /**
   * Suspends a workflow run until `wakeAtMs` (a durable sleep, a step's retry): status `waiting`,
   * its next message sent first with the delay (the outbox holds it beyond SQS's 15 minutes), as
   * a retry's is. Not a failure: no history entry, and `attempts` starts again from 0 — for a
   * workflow it counts the invocations since the run last made progress. `childrenOpen`: its
   * children not yet finished, each of which counts it down (`RunWakes.childFinished`; the last
   * wakes it). Returns the task as stored (ended `cancelled` instead when a cancel request came first).
   */
  async suspend(record: TaskRecord, wakeAtMs: number, durationMs: number, childrenOpen = 0): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const next: TaskRecord = {
      ...record,
      status: transition('running', 'suspend', record.task_id),
      run_at: iso(Math.max(now, wakeAtMs)),
      dispatch_id: nextDispatchId(this.d.random, record.dispatch_id),
    };
    const owed = await this.outbox.sendAhead(next);
    const waiting = await this.settle(record, durationMs, {
      set: {
        ...lazyClaimFields(record),
        status: next.status,
        run_at: next.run_at,
        updated_at: iso(now),
        dispatch_id: next.dispatch_id,
        attempts: 0,
        ...(childrenOpen > 0 ? { children_open: childrenOpen } : {}),
        ...owed,
      },
      remove: ['lease_until', 'solo', ...(childrenOpen > 0 ? [] : (['children_open'] as const))],
    });
    // A signal (or a child's end) arrived while this invocation ran (it may have read the history before it): wake now.
    if (waiting.status !== 'waiting' || waiting.wake_requested !== true) return waiting;
    try {
      return await this.wakes.now(waiting);
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      return (await this.d.store.get(record.task_id)) ?? waiting;
    }
  }

  /**
   * Ends a running attempt whose task was cancelled meanwhile; any result is discarded. For a
   * lazy claim DELETE has usually ended the task `cancelled` already: the write adds the attempt
   * it cut short to the history, so the record still shows that the handler ran.
   */
  async cancelledWhileRunning(record: TaskRecord, durationMs: number): Promise<TaskRecord> {
    // Handed the stored record of a task already ended `cancelled`: nothing to write.
    if (record.status === 'cancelled') return record;
    const now = this.d.clock.now();
    const history = withAttempt(record.history, attemptRecord(record, 'cancelled', now, durationMs), this.d.settings);
    if (!claimWritten(record)) {
      const cancel = cancelChanges(record, now, this.d.settings, history);
      try {
        return await this.d.store.update(
          record.task_id,
          { ...cancel, set: { ...lazyClaimFields(record), ...cancel.set } },
          { status: ['cancelled', record.status], dispatchId: record.dispatch_id },
        );
      } catch (err) {
        if (!(err instanceof ConditionFailedError)) throw err;
        return err.current ?? (await this.d.store.get(record.task_id)) ?? record;
      }
    }
    const done = await fencedUpdate(this.d, record, cancelChanges(record, now, this.d.settings, history));
    this.d.metrics.count(METRICS.cancelled, record.type);
    return done;
  }

  /**
   * Writes an attempt's outcome, conditioned on the attempt still owning the task (its lease, or
   * for a lazy claim its dispatch in a waiting status) and on no cancel request. If the condition
   * failed only because of a cancel, the attempt ends cancelled.
   * @throws LeaseLostError when another worker holds or finished the task
   */
  private async settle(record: TaskRecord, durationMs: number, changes: TaskChanges): Promise<TaskRecord> {
    const owner = claimWritten(record)
      ? { leaseToken: record.lease_token, status: ['running' as const] }
      : { dispatchId: record.dispatch_id, status: [record.status] };
    try {
      return await this.d.store.update(record.task_id, changes, { ...owner, noCancelRequest: true });
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      const current = err.current ?? (await this.d.store.get(record.task_id));
      if (current !== undefined && isCancelled(current, record)) {
        // A lazy claim cut short by DELETE adds its attempt to the history; a written one is
        // recorded cancelled now, unless another writer did so already.
        if (current.status === 'running' || !claimWritten(record))
          return this.cancelledWhileRunning(record, durationMs);
        return current;
      }
      this.d.metrics.count(METRICS.fencedWrites, record.type);
      throw new LeaseLostError(record.task_id, record.lease_token, err);
    }
  }
}

/**
 * What the outcome of a lazy claim writes besides the outcome: the attempt it was (the claim it
 * never wrote). Nothing for an attempt whose claim is in the table.
 */
function lazyClaimFields(record: TaskRecord): Partial<TaskRecord> {
  if (claimWritten(record)) return {};
  return { attempts: record.attempts, ...(record.started_at === undefined ? {} : { started_at: record.started_at }) };
}

/** The attempt as the state machine sees it: running, whatever the table says before a lazy claim. */
function running(record: TaskRecord): TaskRecord {
  return { ...record, status: 'running' };
}
