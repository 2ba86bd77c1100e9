import { METRICS } from '../config/metrics.js';
import { afterCrash } from '../retry/decide.js';
import { ConditionFailedError } from '../store/errors.js';
import { attemptRecord, cancelChanges, CLAIMABLE_FRESH, failChanges, iso, withAttempt } from './changes.js';
import { fencedUpdate } from './fence.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { AttemptRecord, ErrorInfo, TaskRecord } from './model.js';
import type { TaskOutbox } from './outbox.js';
import { isFinished, transition } from './state-machine.js';

/** What the consumer should do with a message after trying to claim its task. */
export type ClaimOutcome =
  | { readonly kind: 'claimed'; readonly record: TaskRecord }
  /** Acknowledge and drop: the message is a duplicate, stale, or its task is finished or cancelled. */
  | { readonly kind: 'drop'; readonly reason: string }
  /** Another worker holds a live lease on this very dispatch: look again when it ends. */
  | { readonly kind: 'defer'; readonly seconds: number }
  /** The task crashed its workers too often and was failed here; acknowledge the message. */
  | { readonly kind: 'crash_loop'; readonly record: TaskRecord };

/**
 * Claims and leases: who may run a task now. A claim is one conditional write that moves the
 * task to `running`, bumps the fencing token (`lease_token`) and sets the lease; heartbeats
 * extend the lease; a worker that vanished is detected at the next claim and its crash recorded
 * (held against the task only if it ran alone — docs/reliability.md, "Crash loops").
 */
export class TaskClaims {
  constructor(
    private readonly d: LifecycleDeps,
    private readonly outbox: TaskOutbox,
  ) {}

  /**
   * Claims the task a message stands for. A task with a cancel request is never claimed: it
   * ends `cancelled` here, without running.
   */
  async claim(taskId: string, dispatchId: string): Promise<ClaimOutcome> {
    const now = this.d.clock.now();
    try {
      const record = await this.d.store.update(
        taskId,
        {
          set: {
            status: transition('queued', 'claim'),
            lease_until: now + this.d.settings.leaseSeconds * 1000,
            started_at: iso(now),
            updated_at: iso(now),
            // The outbox entry stays as it is (due run_at + watchdog): if this worker dies and its
            // message is lost too, the sweeper finds the task then. Not moving it saves GSI writes.
          },
          add: { attempts: 1, lease_token: 1 },
          remove: ['solo'],
        },
        { status: CLAIMABLE_FRESH, dispatchId, noCancelRequest: true },
      );
      return { kind: 'claimed', record };
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      const current = err.current ?? (await this.d.store.get(taskId));
      return this.afterRejectedClaim(dispatchId, current, now);
    }
  }

  /**
   * Extends the lease of a running attempt. Returns the task as stored, so the caller sees a
   * cancel request. @throws LeaseLostError when another worker took the task over.
   */
  heartbeat(record: TaskRecord): Promise<TaskRecord> {
    const now = this.d.clock.now();
    return fencedUpdate(this.d, record, { set: { lease_until: now + this.d.settings.leaseSeconds * 1000 } });
  }

  /**
   * Looks for a cancel request on a running attempt: an eventually consistent read (half a read
   * unit), so it may see a request a second late. The outcome write is what guarantees that a
   * cancel wins; this only makes the handler's signal fire sooner than the next heartbeat.
   */
  async cancelRequested(record: TaskRecord): Promise<boolean> {
    const current = await this.d.store.get(record.task_id, { consistent: false });
    return current?.cancel_requested === true && current.lease_token === record.lease_token;
  }

  /** True when the task crashed a worker before: its next attempts run alone on their worker. */
  isSuspect(record: TaskRecord): boolean {
    return (record.crashes ?? 0) + (record.unattributed_crashes ?? 0) > 0;
  }

  /**
   * Marks the attempt as running alone on its worker (and extends the lease), so that a crash
   * now is evidence against the task. One extra write, only for tasks that crashed before.
   * @throws LeaseLostError
   */
  markSolo(record: TaskRecord): Promise<TaskRecord> {
    const now = this.d.clock.now();
    return fencedUpdate(this.d, record, {
      set: { solo: true, lease_until: now + this.d.settings.leaseSeconds * 1000 },
    });
  }

  private async afterRejectedClaim(
    dispatchId: string,
    current: TaskRecord | undefined,
    now: number,
  ): Promise<ClaimOutcome> {
    if (current === undefined) return { kind: 'drop', reason: 'task not found' };
    if (current.dispatch_id !== dispatchId) return { kind: 'drop', reason: 'superseded by a newer dispatch' };
    if (isFinished(current.status)) return { kind: 'drop', reason: `task is ${current.status}` };
    const leaseUntil = current.lease_until ?? 0;
    const leaseLive = current.status === 'running' && leaseUntil > now;
    if (current.cancel_requested === true && !leaseLive) return this.endCancelledUnclaimed(current, now);
    if (current.status !== 'running') {
      // queued/retrying with our dispatch id: the condition raced a concurrent write. Try again shortly.
      return { kind: 'defer', seconds: 1 };
    }
    if (leaseLive) return { kind: 'defer', seconds: Math.ceil((leaseUntil - now) / 1000) + 1 };
    return this.reclaimAfterCrash(current, now);
  }

  /**
   * A task with a cancel request that nobody runs (not started, or its worker vanished): it
   * ends `cancelled` instead of being claimed, so its handler never runs again.
   */
  private async endCancelledUnclaimed(current: TaskRecord, now: number): Promise<ClaimOutcome> {
    const wasRunning = current.status === 'running';
    const history = wasRunning
      ? withAttempt(current.history, attemptRecord(current, 'cancelled', now, undefined), this.d.settings)
      : undefined;
    const condition = wasRunning
      ? { leaseToken: current.lease_token, orLeaseExpiredBefore: now }
      : { status: [current.status], dispatchId: current.dispatch_id };
    try {
      await this.d.store.update(current.task_id, cancelChanges(current, now, this.d.settings, history), condition);
    } catch (err) {
      if (err instanceof ConditionFailedError) return { kind: 'drop', reason: 'task changed while being cancelled' };
      throw err;
    }
    this.d.metrics.count(METRICS.cancelled, current.type);
    return { kind: 'drop', reason: 'cancel requested; ended cancelled without running' };
  }

  /**
   * The previous worker's lease ran out without an outcome: it crashed, was killed, or timed out.
   * The crash counts against the task only if it ran alone on that worker (`solo`): a worker
   * killed under ten tasks is no evidence against any one of them. Any crash makes the next
   * attempt run alone, so a task that really kills its worker is found out within its limit.
   */
  private async reclaimAfterCrash(current: TaskRecord, now: number): Promise<ClaimOutcome> {
    const attributed = current.solo === true;
    const crashes = (current.crashes ?? 0) + (attributed ? 1 : 0);
    const limit = current.crash_limit ?? this.d.settings.crashLoopReceives;
    const error: ErrorInfo = {
      name: 'WorkerCrashError',
      message: attributed
        ? `the worker stopped during attempt ${current.attempts}, which ran alone (crash, kill, OOM or timeout); crashed the worker ${crashes} time(s)`
        : `the worker stopped during attempt ${current.attempts} while running other tasks too (crash, kill, OOM or timeout); the next attempt runs alone`,
      retryable: true,
      code: 'CRASH',
    };
    const crashed: AttemptRecord = {
      attempt: current.attempts,
      outcome: 'crashed',
      ...(current.started_at === undefined ? {} : { started_at: current.started_at }),
      finished_at: iso(now),
      error,
    };
    const history = withAttempt(current.history, crashed, this.d.settings);
    const fence = { leaseToken: current.lease_token, orLeaseExpiredBefore: now };
    const counter = attributed ? { crashes: 1 } : { unattributed_crashes: 1 };
    const decision = afterCrash(crashes, limit, current.attempts, current.max_attempts);
    try {
      if (decision !== 'reclaim') {
        const reason =
          decision === 'crash_loop'
            ? `crashed the worker ${crashes} times`
            : `the worker stopped during the last attempt (${current.attempts} of ${current.max_attempts})`;
        const failed = await this.d.store.update(
          current.task_id,
          failChanges(current, { ...error, retryable: false, message: reason }, history, now, this.d.settings, counter),
          fence,
        );
        this.d.metrics.count(METRICS.failed, current.type);
        this.d.logger.error('task failed: crash loop', { task_id: current.task_id, type: current.type, crashes });
        await this.outbox.dispatchQuietly(failed);
        return { kind: 'crash_loop', record: failed };
      }
      const record = await this.d.store.update(
        current.task_id,
        {
          set: {
            status: transition('running', 'claim'),
            lease_until: now + this.d.settings.leaseSeconds * 1000,
            started_at: iso(now),
            updated_at: iso(now),
            last_error: error,
            history,
          },
          add: { attempts: 1, lease_token: 1, ...counter },
          remove: ['solo'],
        },
        fence,
      );
      this.d.logger.warn('reclaimed a task whose worker vanished', { task_id: current.task_id, crashes, attributed });
      return { kind: 'claimed', record };
    } catch (err) {
      if (err instanceof ConditionFailedError) return { kind: 'drop', reason: 'another worker reclaimed it first' };
      throw err;
    }
  }
}
