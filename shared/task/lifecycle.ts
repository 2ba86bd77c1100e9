import { DEFAULTS, type Priority } from '../config/resources.js';
import type { RuntimeSettings } from '../config/settings.js';
import type { DeadLetter } from '../queue/message.js';
import type { TaskQueue } from '../queue/task-queue.js';
import { fullJitterDelayMs } from '../retry/backoff.js';
import type { Classification } from '../retry/classify.js';
import type { Clock } from '../runtime/clock.js';
import type { Logger, Metrics } from '../runtime/logger.js';
import type { RandomSource } from '../runtime/random.js';
import { ConditionFailedError } from '../store/errors.js';
import type { TaskChanges, TaskStore } from '../store/task-store.js';
import { METRICS } from '../config/metrics.js';
import { LeaseLostError, TaskNotCancellableError, TaskNotFoundError } from './errors.js';
import { outboxKey, type AttemptRecord, type ErrorInfo, type OutboxTarget, type TaskRecord, type TaskStatus } from './model.js';
import { isFinished, statusesAllowing, transition } from './state-machine.js';
import type { ResolvedPolicy } from './define.js';

export interface LifecycleDeps {
  readonly store: TaskStore;
  readonly queue: TaskQueue;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly settings: RuntimeSettings;
}

/** What the consumer should do with a message after trying to claim its task. */
export type ClaimOutcome =
  | { readonly kind: 'claimed'; readonly record: TaskRecord }
  /** Acknowledge and drop: the message is a duplicate, stale, or its task is finished or cancelled. */
  | { readonly kind: 'drop'; readonly reason: string }
  /** Another worker holds a live lease on this very dispatch: look again when it ends. */
  | { readonly kind: 'defer'; readonly seconds: number }
  /** The task crashed its workers too often and was failed here; acknowledge the message. */
  | { readonly kind: 'crash_loop'; readonly record: TaskRecord };

const iso = (ms: number) => new Date(ms).toISOString();
const SQS_DELAY_MS = DEFAULTS.maxSqsDelaySeconds * 1000;
const CLAIMABLE_FRESH: TaskStatus[] = statusesAllowing('claim').filter((s) => s !== 'running');

/**
 * Every status change of a task, as fenced single-item writes. The state machine decides
 * what is legal; this class decides the conditions under which a write may land.
 */
export class TaskLifecycle {
  constructor(private readonly d: LifecycleDeps) {}

  /** Outbox fields for a message owed to `target`, to be sent at `runAtMs`. */
  outbox(target: OutboxTarget, priority: Priority, runAtMs: number): Pick<TaskRecord, 'outbox_pk' | 'outbox_due'> {
    const now = this.d.clock.now();
    const grace = this.d.settings.outboxGraceSeconds * 1000;
    // Beyond SQS's 15-minute delay, the sweeper sends it when the rest fits in DelaySeconds.
    const due = target === 'queue' && runAtMs - now > SQS_DELAY_MS ? runAtMs - SQS_DELAY_MS : now + grace;
    return { outbox_pk: outboxKey(target, priority), outbox_due: due };
  }

  /**
   * Sends the message a task is owed (its outbox entry). After a queue send the entry stays as
   * a watchdog, due `watchdogSeconds` after run_at (claims and heartbeats leave it there);
   * after a dead letter it is removed.
   * Returns 'deferred' for a delay SQS cannot hold yet (the sweeper sends it later).
   * @throws QueueUnavailableError when the send fails; the entry stays for the sweeper.
   */
  async dispatch(record: TaskRecord): Promise<'sent' | 'deferred' | 'none'> {
    if (record.outbox_pk === undefined) return 'none';
    const now = this.d.clock.now();
    if (record.outbox_pk.startsWith('queue#')) {
      const runAt = Date.parse(record.run_at);
      const delayMs = runAt - now;
      if (delayMs > SQS_DELAY_MS) return 'deferred';
      await this.sendMessage(record, Math.max(0, delayMs) / 1000);
      // The watchdog backs off exponentially: the next look is as far away as the task has
      // already waited (at least watchdogSeconds), so a long backlog or a consumer outage costs
      // a few extra messages per task (1 h, 2 h, 4 h, …), not one per watchdog period.
      const waited = Math.max(0, now - runAt);
      await this.confirmSent(
        record,
        { set: { outbox_due: Math.max(runAt, now) + Math.max(this.d.settings.watchdogSeconds * 1000, waited) } },
        CLAIMABLE_FRESH,
      );
    } else {
      await this.d.queue.sendDead(deadLetterOf(record, now));
      await this.confirmSent(record, { remove: ['outbox_pk', 'outbox_due'] }, ['failed']);
    }
    return 'sent';
  }

  /**
   * True while a queued task's message has not been confirmed sent: a confirmed send moves the
   * entry's due time to the watchdog (run_at + watchdogSeconds or later).
   */
  sendUnconfirmed(record: TaskRecord): boolean {
    if (record.outbox_pk === undefined || record.outbox_due === undefined) return false;
    if (!CLAIMABLE_FRESH.includes(record.status)) return false;
    return record.outbox_due < Date.parse(record.run_at) + this.d.settings.watchdogSeconds * 1000;
  }

  /** The task's message (its current dispatch) to its priority queue. */
  private sendMessage(record: TaskRecord, delaySeconds: number): Promise<void> {
    return this.d.queue.send(
      record.priority,
      { task_id: record.task_id, dispatch_id: record.dispatch_id, timeout_seconds: record.timeout_seconds },
      { delaySeconds, type: record.type },
    );
  }

  /** Records that the owed message went out, unless the task moved on meanwhile. */
  private async confirmSent(record: TaskRecord, changes: TaskChanges, statuses: TaskRecord['status'][]): Promise<void> {
    try {
      await this.d.store.update(record.task_id, changes, {
        dispatchId: record.dispatch_id,
        status: statuses,
        outboxPending: true,
      });
    } catch (err) {
      // Claimed or superseded already: its entry belongs to the new state now.
      if (err instanceof ConditionFailedError) return;
      // The message is out; the sweeper may send a duplicate, which the claim absorbs.
      this.d.logger.warn('outbox entry not updated after send', { task_id: record.task_id, error: String(err) });
    }
  }

  /**
   * The sweeper found this task's outbox entry due. Sends what is owed; for a running task,
   * extends the watchdog while its lease is live, and re-sends its message once the lease has
   * long expired (its worker died and its message is gone): the claim then reclaims it as a crash.
   */
  async sweepEntry(record: TaskRecord): Promise<'sent' | 'deferred' | 'extended' | 'none'> {
    const now = this.d.clock.now();
    if (record.status === 'running') {
      const leaseUntil = record.lease_until ?? 0;
      const fence = { leaseToken: record.lease_token, status: ['running'] as TaskRecord['status'][] };
      if (leaseUntil > now) {
        await this.d.store.update(record.task_id, { set: { outbox_due: this.leaseWatchdog(leaseUntil) } }, fence).catch(ignoreConflict);
        return 'extended';
      }
      await this.sendMessage(record, 0);
      this.d.logger.warn('running task lost its worker and its message; message re-sent', {
        task_id: record.task_id,
        lease_expired_ms_ago: now - leaseUntil,
      });
      await this.d.store
        .update(record.task_id, { set: { outbox_due: now + this.d.settings.watchdogSeconds * 1000 } }, fence)
        .catch(ignoreConflict);
      return 'sent';
    }
    if (isFinished(record.status) && !record.outbox_pk?.startsWith('dlq#')) {
      await this.d.store
        .update(record.task_id, { remove: ['outbox_pk', 'outbox_due'] }, { status: [record.status], outboxPending: true })
        .catch(ignoreConflict);
      return 'none';
    }
    if (CLAIMABLE_FRESH.includes(record.status) && Date.parse(record.run_at) < now) {
      this.d.logger.info('sending (or re-sending) a queued task’s message', { task_id: record.task_id, status: record.status });
    }
    return this.dispatch(record);
  }

  /** When to look again at a running task whose lease is live: shortly after it would run out. */
  private leaseWatchdog(leaseUntil: number): number {
    return leaseUntil + this.d.settings.outboxGraceSeconds * 1000;
  }

  /**
   * Claims the task a message stands for: one conditional write moves it to `running`,
   * bumps the fencing token and sets the lease. A worker that vanished mid-attempt is
   * detected here (running, lease expired) and counted as a crash. A task with a cancel
   * request is never claimed: it ends `cancelled` here, without running.
   */
  async claim(taskId: string, dispatchId: string): Promise<ClaimOutcome> {
    const now = this.d.clock.now();
    const leaseUntil = now + this.d.settings.leaseSeconds * 1000;
    try {
      const record = await this.d.store.update(
        taskId,
        {
          set: {
            status: transition('queued', 'claim'),
            lease_until: leaseUntil,
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
    const changes: TaskChanges = {
      set: {
        status: transition(current.status, 'cancel', current.task_id),
        finished_at: iso(now),
        updated_at: iso(now),
        expires_at: this.expiresAt(now, this.d.settings.retentionDays * 86_400),
        ...(wasRunning
          ? { history: this.trim([...current.history, this.attemptRecord(current, 'cancelled', now, undefined)]) }
          : {}),
      },
      remove: ['lease_until', 'outbox_pk', 'outbox_due', 'solo'],
    };
    const condition = wasRunning
      ? { leaseToken: current.lease_token, orLeaseExpiredBefore: now }
      : { status: [current.status], dispatchId: current.dispatch_id };
    try {
      await this.d.store.update(current.task_id, changes, condition);
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
    const history = this.trim([...current.history, crashed]);
    const fence = { leaseToken: current.lease_token, orLeaseExpiredBefore: now };
    const counter = attributed ? { crashes: 1 } : { unattributed_crashes: 1 };
    try {
      if (crashes >= limit || current.attempts >= current.max_attempts) {
        const reason =
          crashes >= limit
            ? `crashed the worker ${crashes} times`
            : `the worker stopped during the last attempt (${current.attempts} of ${current.max_attempts})`;
        const failed = await this.d.store.update(
          current.task_id,
          this.failChanges(current, { ...error, retryable: false, message: reason }, history, now, counter),
          fence,
        );
        this.d.metrics.count(METRICS.failed, current.type);
        this.d.logger.error('task failed: crash loop', { task_id: current.task_id, type: current.type, crashes });
        await this.dispatchQuietly(failed);
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

  /** True when the task crashed a worker before: its next attempts run alone on their worker. */
  isSuspect(record: TaskRecord): boolean {
    return (record.crashes ?? 0) + (record.unattributed_crashes ?? 0) > 0;
  }

  /**
   * Marks the attempt as running alone on its worker (and extends the lease), so that a crash
   * now is evidence against the task. One extra write, only for tasks that crashed before.
   * @throws LeaseLostError
   */
  async markSolo(record: TaskRecord): Promise<TaskRecord> {
    const now = this.d.clock.now();
    return this.fenced(record, () =>
      this.d.store.update(
        record.task_id,
        { set: { solo: true, lease_until: now + this.d.settings.leaseSeconds * 1000 } },
        { leaseToken: record.lease_token, status: ['running'] },
      ),
    );
  }

  /**
   * Extends the lease of a running attempt. Returns the task as stored, so the caller sees a
   * cancel request. @throws LeaseLostError when another worker took the task over.
   */
  async heartbeat(record: TaskRecord): Promise<TaskRecord> {
    const now = this.d.clock.now();
    return this.fenced(record, () =>
      this.d.store.update(
        record.task_id,
        { set: { lease_until: now + this.d.settings.leaseSeconds * 1000 } },
        { leaseToken: record.lease_token, status: ['running'] },
      ),
    );
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

  /**
   * Records a successful attempt — unless a cancel request arrived meanwhile: then the task ends
   * `cancelled` and the result is discarded (a cancel always wins). Returns the task as stored.
   * @param result the handler's result, already checked by `checkJsonValue`
   */
  async succeed(record: TaskRecord, result: unknown, durationMs: number): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const attempt: AttemptRecord = this.attemptRecord(record, 'succeeded', now, durationMs);
    const done = await this.settle(record, durationMs, {
      set: {
        status: transition(record.status, 'succeed', record.task_id),
        result: result === undefined ? null : result,
        finished_at: iso(now),
        updated_at: iso(now),
        history: this.trim([...record.history, attempt]),
        expires_at: this.expiresAt(now, this.d.settings.retentionDays * 86_400),
      },
      remove: ['lease_until', 'outbox_pk', 'outbox_due', 'solo'],
    });
    if (done.status === 'succeeded') this.d.metrics.count(METRICS.succeeded, record.type);
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
      if (current?.status === 'running' && current.lease_token === record.lease_token && current.cancel_requested === true) {
        return this.cancelledWhileRunning(record, durationMs);
      }
      this.d.metrics.count(METRICS.fencedWrites, record.type);
      throw new LeaseLostError(record.task_id, record.lease_token, err);
    }
  }

  /**
   * Records a failed attempt and decides what follows: a retry (new message, full-jitter
   * delay or the error's retryAfter) or death (status failed, dead letter).
   */
  async attemptFailed(
    record: TaskRecord,
    failure: Classification,
    policy: ResolvedPolicy,
    durationMs: number,
  ): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const exhausted = record.attempts >= record.max_attempts;
    if (!failure.retryable || exhausted) {
      const attempt = this.attemptRecord(record, 'failed', now, durationMs, failure.info);
      const failed = await this.settle(
        record,
        durationMs,
        this.failChanges(record, failure.info, this.trim([...record.history, attempt]), now),
      );
      if (failed.status !== 'failed') return failed;
      this.d.metrics.count(METRICS.failed, record.type);
      await this.dispatchQuietly(failed);
      return failed;
    }
    const delayMs =
      failure.retryAfterSeconds !== undefined
        ? Math.round(failure.retryAfterSeconds * 1000)
        : fullJitterDelayMs(record.attempts, policy.backoff, this.d.random);
    const runAt = now + delayMs;
    const attempt = this.attemptRecord(record, 'retrying', now, durationMs, failure.info);
    const retrying = await this.settle(record, durationMs, {
      set: {
        status: transition(record.status, 'retry', record.task_id),
        run_at: iso(runAt),
        updated_at: iso(now),
        last_error: failure.info,
        history: this.trim([...record.history, attempt]),
        dispatch_id: this.d.random.id(),
        ...this.outbox('queue', record.priority, runAt),
      },
      remove: ['lease_until', 'solo'],
    });
    if (retrying.status !== 'retrying') return retrying;
    this.d.metrics.count(METRICS.retried, record.type);
    // Send before the caller acknowledges the old message. If the send fails the outbox entry
    // stays and the sweeper sends it: the task is never lost between the two.
    await this.dispatchQuietly(retrying);
    return retrying;
  }

  /** Ends a running attempt whose task was cancelled meanwhile; any result is discarded. */
  async cancelledWhileRunning(record: TaskRecord, durationMs: number): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const attempt = this.attemptRecord(record, 'cancelled', now, durationMs);
    const done = await this.fenced(record, () =>
      this.d.store.update(
        record.task_id,
        {
          set: {
            status: transition(record.status, 'cancel', record.task_id),
            finished_at: iso(now),
            updated_at: iso(now),
            history: this.trim([...record.history, attempt]),
            expires_at: this.expiresAt(now, this.d.settings.retentionDays * 86_400),
          },
          remove: ['lease_until', 'outbox_pk', 'outbox_due', 'solo'],
        },
        { leaseToken: record.lease_token, status: ['running'] },
      ),
    );
    this.d.metrics.count(METRICS.cancelled, record.type);
    return done;
  }

  /**
   * `GET /tasks/{id}`: the task, if `owner` submitted it. Another owner's task is not found
   * (404, not 403: its existence is not revealed). No owner: an operator, who sees all.
   * @throws TaskNotFoundError
   */
  async find(taskId: string, owner?: string): Promise<TaskRecord> {
    const r = await this.d.store.get(taskId);
    if (r === undefined || (owner !== undefined && r.owner !== owner)) throw new TaskNotFoundError(taskId);
    return r;
  }

  /**
   * `DELETE /tasks/{id}`: a task that has not started is cancelled at once (its message will
   * be dropped at claim); a running one gets a cancel request its worker acts on within
   * `cancelPollSeconds`, and whatever its handler does, it ends `cancelled`.
   * @param owner the caller; omitted for an operator
   * @throws TaskNotFoundError, TaskNotCancellableError
   */
  async cancel(taskId: string, owner?: string): Promise<TaskRecord> {
    for (let round = 0; round < 3; round += 1) {
      const current = await this.d.store.get(taskId);
      if (current === undefined || (owner !== undefined && current.owner !== owner)) throw new TaskNotFoundError(taskId);
      if (current.status === 'cancelled') return current;
      if (isFinished(current.status)) throw new TaskNotCancellableError(taskId, current.status);
      const now = this.d.clock.now();
      try {
        if (current.status === 'running') {
          return await this.d.store.update(
            taskId,
            { set: { cancel_requested: true, updated_at: iso(now) } },
            { status: ['running'], leaseToken: current.lease_token },
          );
        }
        const done = await this.d.store.update(
          taskId,
          {
            set: {
              status: transition(current.status, 'cancel', taskId),
              finished_at: iso(now),
              updated_at: iso(now),
              expires_at: this.expiresAt(now, this.d.settings.retentionDays * 86_400),
            },
            remove: ['outbox_pk', 'outbox_due'],
          },
          { status: [current.status], dispatchId: current.dispatch_id },
        );
        this.d.metrics.count(METRICS.cancelled, current.type);
        return done;
      } catch (err) {
        if (!(err instanceof ConditionFailedError)) throw err;
        // The task moved under us (claimed, finished): look again.
      }
    }
    throw new TaskNotCancellableError(taskId, 'running');
  }

  /** Sends what is owed, leaving it to the sweeper if SQS is unavailable right now. */
  async dispatchQuietly(record: TaskRecord): Promise<void> {
    try {
      await this.dispatch(record);
    } catch (err) {
      this.d.logger.warn('send failed; the sweeper will send it', {
        task_id: record.task_id,
        outbox: record.outbox_pk,
        error: err instanceof Error ? err.name : String(err),
      });
    }
  }

  private failChanges(
    record: TaskRecord,
    error: ErrorInfo,
    history: AttemptRecord[],
    now: number,
    add?: TaskChanges['add'],
  ): TaskChanges {
    return {
      set: {
        status: transition(record.status, 'fail', record.task_id),
        finished_at: iso(now),
        updated_at: iso(now),
        last_error: error,
        history,
        ...this.outbox('dlq', record.priority, now),
        // Keep a dead task's record as long as its dead letter can be redriven, and then some.
        expires_at: this.expiresAt(now, DEFAULTS.dlqRetentionSeconds + this.d.settings.retentionDays * 86_400),
      },
      remove: ['lease_until', 'solo'],
      ...(add === undefined ? {} : { add }),
    };
  }

  private attemptRecord(
    record: TaskRecord,
    outcome: AttemptRecord['outcome'],
    now: number,
    durationMs: number | undefined,
    error?: ErrorInfo,
  ): AttemptRecord {
    return {
      attempt: record.attempts,
      outcome,
      ...(record.started_at === undefined ? {} : { started_at: record.started_at }),
      finished_at: iso(now),
      ...(durationMs === undefined ? {} : { duration_ms: Math.round(durationMs) }),
      ...(error === undefined ? {} : { error }),
    };
  }

  private trim(history: AttemptRecord[]): AttemptRecord[] {
    return history.slice(-this.d.settings.historyLength);
  }

  private expiresAt(now: number, seconds: number): number {
    return Math.floor(now / 1000) + seconds;
  }

  private async fenced(record: TaskRecord, write: () => Promise<TaskRecord>): Promise<TaskRecord> {
    try {
      return await write();
    } catch (err) {
      if (err instanceof ConditionFailedError) {
        this.d.metrics.count(METRICS.fencedWrites, record.type);
        throw new LeaseLostError(record.task_id, record.lease_token, err);
      }
      throw err;
    }
  }
}

function ignoreConflict(err: unknown): void {
  if (!(err instanceof ConditionFailedError)) throw err;
}

export function deadLetterOf(record: TaskRecord, now: number): DeadLetter {
  return {
    task_id: record.task_id,
    dispatch_id: record.dispatch_id,
    type: record.type,
    priority: record.priority,
    attempts: record.attempts,
    reason: record.last_error?.message ?? 'failed',
    ...(record.last_error === undefined ? {} : { last_error: record.last_error }),
    failed_at: record.finished_at ?? new Date(now).toISOString(),
  };
}
