import { METRICS } from '../config/metrics.js';
import type { Admissions, Permit, Refusal } from './admission.js';
import { afterCrash } from '../retry/decide.js';
import { ConditionFailedError } from './store-errors.js';
import {
  attemptRecord,
  CLAIMABLE_FRESH,
  cancelChanges,
  dispatchSequence,
  failChanges,
  iso,
  withAttempt,
} from './changes.js';
import { isSuspect } from './lease.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { AttemptRecord, ErrorInfo, TaskRecord } from './model.js';
import type { TaskOutbox } from './outbox.js';
import { isFinished, transition } from './state-machine.js';

/** What the consumer should do with a message after trying to claim its task. */
export type ClaimOutcome =
  /**
   * Run it. Nothing is written yet: `record` is the attempt's view as it will be. A claim is
   * written only once its handler is about to run, so a worker that dies while the task waits
   * (for its turn, for a slot) charges it no attempt and no crash:
   * - `commit` (a redelivery, a task that crashed a worker before, a reclaim): the conditional
   *   claim write, to call right before the handler starts; it answers `claimed` with the written
   *   record (`running`, with a lease), or what to do instead (drop, defer) when the task changed;
   * - no `commit` (a lazy claim): the first heartbeat after the start writes it
   *   (docs/reliability.md).
   */
  | {
      readonly kind: 'claimed';
      readonly record: TaskRecord;
      readonly permit?: Permit;
      readonly commit?: () => Promise<ClaimOutcome>;
    }
  /**
   * Acknowledge and drop: a duplicate, stale, or its task finished (`finished`: the task, when the
   * message ran it — its worker may have died between the end's write and what follows it).
   */
  | { readonly kind: 'drop'; readonly reason: string; readonly finished?: TaskRecord }
  /** Look again in `seconds`: another worker holds a live lease, or the record's write is still landing. */
  | { readonly kind: 'defer'; readonly seconds: number; readonly reason: string }
  /** The task crashed its workers too often and was failed here; acknowledge the message. */
  | { readonly kind: 'crash_loop'; readonly record: TaskRecord }
  /**
   * Its limits refused it: nothing was written (no attempt, no claim); the consumer defers the
   * message (docs/flow-control.md). `record` is the task as read.
   */
  | { readonly kind: 'limited'; readonly record: TaskRecord; readonly refusal: Refusal };

/** Pauses before looking again for a record whose write follows its message (send first, then put). */
const WRITE_LANDING_PAUSES_MS = [25, 100, 250] as const;
/** Only a message sent this recently is worth waiting for in-process. */
const FRESH_MESSAGE_MS = 5_000;
/** Past a lapsing lease's end, before looking again: the owner's renewal, had it come, has landed. */
const LAPSE_MARGIN_MS = 100;

/**
 * How long the lease of a running task has left, when it is in its last heartbeat period: its
 * owner renews it every `heartbeatSeconds` to a full lease, so a lease this short has missed
 * renewals and its owner is most likely gone (its message came back as its lease ran out).
 * Undefined for any other record.
 */
function lapsingLeaseMs(current: TaskRecord | undefined, heartbeatSeconds: number, now: number): number | undefined {
  if (current?.status !== 'running' || current.lease_until === undefined) return undefined;
  const left = current.lease_until - now;
  return left > 0 && left <= heartbeatSeconds * 1000 ? left : undefined;
}

/**
 * The `orLeaseExpiredBefore` of a lease that ended at or before `now`: the claim treats a lease
 * with `lease_until <= now` as ended, and the store's condition is strict (`lease_until < t`).
 * With `now` itself, a message that came back in the very millisecond its lease ended was judged
 * reclaimable and then refused by its own condition.
 */
function endedBy(now: number): number {
  return now + 1;
}

/** True when the record the message was sent ahead of is not there yet (not written, or at an earlier dispatch). */
function writeStillLanding(current: TaskRecord | undefined, dispatchId: string): boolean {
  if (current === undefined) return true;
  if (current.dispatch_id === dispatchId || isFinished(current.status)) return false;
  return dispatchSequence(dispatchId) > dispatchSequence(current.dispatch_id);
}

/** What a consumer knows about the delivery of a message. */
export interface Delivery {
  /** SQS's ApproximateReceiveCount: 1 on the first delivery. */
  readonly receiveCount: number;
  /** When the message was sent (epoch ms, from its body), when it says. */
  readonly sentAt?: number;
}

/**
 * Claims and leases: who may run a task now. A first delivery of a healthy task is claimed
 * lazily: one consistent read, the handler runs, and the outcome write is the claim too; only a
 * task still running at its first heartbeat writes `running` with a lease. A redelivery, or a
 * task that crashed a worker before, is claimed by a conditional write that bumps the fencing
 * token (`lease_token`) — made only when its handler is about to start (`commit`), so a worker
 * that dies while the task waits for its turn charges it no attempt and no crash. A worker that vanished after its claim was written is detected
 * at the next claim and its crash recorded (held against the task only if it ran alone —
 * docs/reliability.md, "Crash loops"); one that vanished before leaves no trace, and the task
 * runs again. What this guarantees (at least once, one recorded outcome per attempt):
 * docs/reliability.md, "Guarantees".
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
  async claim(
    taskId: string,
    dispatchId: string,
    delivery: Delivery = { receiveCount: 1 },
    admissions?: Admissions,
  ): Promise<ClaimOutcome> {
    let current = await this.d.store.get(taskId);
    // A message often arrives before the write its sender made right after sending it (send
    // first, then put): on a fresh first delivery, look again up to three times within ~375 ms
    // before deferring it by a second. Costs a read or a few, only in that race (on AWS the put
    // lands within milliseconds; a busy emulator takes longer).
    if (delivery.receiveCount <= 1 && delivery.sentAt !== undefined) {
      for (const pauseMs of WRITE_LANDING_PAUSES_MS) {
        if (!writeStillLanding(current, dispatchId)) break;
        if (this.d.clock.now() - delivery.sentAt > FRESH_MESSAGE_MS) break;
        await this.d.clock.sleep?.(pauseMs);
        current = await this.d.store.get(taskId);
      }
    }
    // A redelivery that finds the lease in its last heartbeat period waits it out here (at most one
    // heartbeat period) and looks again, rather than deferring: a deferral is one more receive, SQS
    // counts every receive towards maxReceiveCount, and a message that comes back just before its
    // dead owner's lease ends would otherwise spend two receives per crash — enough for SQS to
    // dead-letter a crash loop before Kaj's own verdict. An owner that is alive renews meanwhile.
    const lapse = lapsingLeaseMs(current, this.d.settings.heartbeatSeconds, this.d.clock.now());
    if (lapse !== undefined && this.d.clock.sleep !== undefined) {
      await this.d.clock.sleep(lapse + LAPSE_MARGIN_MS);
      current = await this.d.store.get(taskId);
    }
    return this.decide(current, dispatchId, delivery, this.d.clock.now(), true, admissions);
  }

  /** What to do with a message, given the task as stored. `mayClaim` is false after a claim write raced. */
  private async decide(
    current: TaskRecord | undefined,
    dispatchId: string,
    delivery: Delivery,
    now: number,
    mayClaim: boolean,
    admissions?: Admissions,
  ): Promise<ClaimOutcome> {
    if (current === undefined) return this.awaitWrite(delivery, now, 'task not found');
    if (current.dispatch_id !== dispatchId) {
      if (!isFinished(current.status) && dispatchSequence(dispatchId) > dispatchSequence(current.dispatch_id)) {
        return this.awaitWrite(delivery, now, 'the record is still at an earlier dispatch');
      }
      return { kind: 'drop', reason: 'superseded by a newer dispatch' };
    }
    if (isFinished(current.status)) return { kind: 'drop', reason: `task is ${current.status}`, finished: current };
    const leaseUntil = current.lease_until ?? 0;
    const leaseLive = current.status === 'running' && leaseUntil > now;
    if (current.cancel_requested === true && !leaseLive) return this.endCancelledUnclaimed(current, now);
    if (current.status === 'running') {
      if (leaseLive) {
        return { kind: 'defer', seconds: Math.ceil((leaseUntil - now) / 1000) + 1, reason: 'held by another worker' };
      }
      return this.reclaimAfterCrash(current, now, admissions);
    }
    // queued/retrying with this dispatch.
    if (!mayClaim) return { kind: 'defer', seconds: 1, reason: 'the claim raced another write' };
    return this.admitted(current, admissions, async () => {
      const record = { ...current, attempts: current.attempts + 1, started_at: iso(now) };
      if (delivery.receiveCount > 1 || isSuspect(current)) {
        return { kind: 'claimed', record, commit: () => this.claimNow(current, delivery, this.d.clock.now()) };
      }
      return { kind: 'claimed', record };
    });
  }

  /**
   * Runs `claimIt` once the task's limits admit it, and hands their permit on with the claim. A
   * refusal writes nothing; a claim that does not happen after all gives the permit back.
   */
  private async admitted(
    current: TaskRecord,
    admissions: Admissions | undefined,
    claimIt: () => Promise<ClaimOutcome>,
  ): Promise<ClaimOutcome> {
    if (admissions === undefined) return claimIt();
    const admission = await admissions.admit(current);
    if (admission.kind === 'refused') return { kind: 'limited', record: current, refusal: admission.refusal };
    let outcome: ClaimOutcome;
    try {
      outcome = await claimIt();
    } catch (err) {
      await admissions.release(admission.permit);
      throw err;
    }
    if (outcome.kind !== 'claimed') {
      await admissions.release(admission.permit);
      return outcome;
    }
    return { ...outcome, permit: admission.permit };
  }

  /**
   * The claim as one conditional write, for a message delivered before (its previous receiver
   * may have crashed) or a task that crashed a worker: from here a crash is on the record.
   */
  private async claimNow(current: TaskRecord, delivery: Delivery, now: number): Promise<ClaimOutcome> {
    try {
      const record = await this.d.store.update(
        current.task_id,
        {
          set: {
            status: transition(current.status, 'claim'),
            lease_until: now + this.d.settings.leaseSeconds * 1000,
            started_at: iso(now),
            updated_at: iso(now),
          },
          add: { attempts: 1, lease_token: 1 },
          remove: ['solo'],
        },
        { status: CLAIMABLE_FRESH, dispatchId: current.dispatch_id, noCancelRequest: true },
      );
      return { kind: 'claimed', record };
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      const latest = err.current ?? (await this.d.store.get(current.task_id));
      return this.decide(latest, current.dispatch_id, delivery, now, false);
    }
  }

  /**
   * The message was sent before its record's write (send first, then put): wait for the write
   * while the message is young enough for it to land, then drop the message — its writer failed,
   * and nobody was told the task was accepted.
   */
  private awaitWrite(delivery: Delivery, now: number, reason: string): ClaimOutcome {
    const windowMs = this.d.settings.sendFirstWindowSeconds * 1000;
    const age = delivery.sentAt === undefined ? Number.POSITIVE_INFINITY : now - delivery.sentAt;
    if (age >= windowMs) return { kind: 'drop', reason };
    const backoff = 2 ** Math.min(8, Math.max(0, delivery.receiveCount - 1));
    return { kind: 'defer', seconds: Math.max(1, Math.min(backoff, Math.ceil((windowMs - age) / 1000))), reason };
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
      ? { leaseToken: current.lease_token, orLeaseExpiredBefore: endedBy(now) }
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
   * killed under ten tasks is no evidence against any one of them. A second shared crash (or any
   * crash while alone) makes the next attempts run alone, so a task that really kills its worker
   * is found out within its limit.
   */
  private async reclaimAfterCrash(current: TaskRecord, now: number, admissions?: Admissions): Promise<ClaimOutcome> {
    const attributed = current.solo === true;
    const crashes = (current.crashes ?? 0) + (attributed ? 1 : 0);
    const limit = current.crash_limit ?? this.d.settings.crashLoopReceives;
    const error: ErrorInfo = {
      name: 'WorkerCrashError',
      message: attributed
        ? `the worker stopped during attempt ${current.attempts}, which ran alone (crash, kill, OOM or timeout); crashed the worker ${crashes} time(s)`
        : `the worker stopped during attempt ${current.attempts} while running other tasks too (crash, kill, OOM or timeout); not held against the task`,
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
    const fence = { leaseToken: current.lease_token, orLeaseExpiredBefore: endedBy(now) };
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
        if (current.schedule !== undefined) this.d.metrics.count(METRICS.scheduledRunsFailed, undefined);
        this.d.logger.error('task failed: crash loop', { task_id: current.task_id, type: current.type, crashes });
        await this.outbox.dispatchQuietly(failed);
        return { kind: 'crash_loop', record: failed };
      }
      return await this.admitted(current, admissions, async () => ({
        kind: 'claimed',
        // The next attempt as the reclaim will write it (the crash counted), so that it runs alone
        // if this crash makes it a suspect.
        record: {
          ...current,
          attempts: current.attempts + 1,
          crashes: (current.crashes ?? 0) + ('crashes' in counter ? 1 : 0),
          unattributed_crashes: (current.unattributed_crashes ?? 0) + ('unattributed_crashes' in counter ? 1 : 0),
          started_at: iso(now),
        },
        commit: () => this.reclaimNow(current, { history, error, counter, fence, crashes, attributed }),
      }));
    } catch (err) {
      if (err instanceof ConditionFailedError) return reclaimRefused(current, err);
      throw err;
    }
  }

  /** The reclaim write, right before the handler starts; a reclaim lost to another worker is a drop. */
  private async reclaimNow(current: TaskRecord, w: Parameters<TaskClaims['reclaim']>[2]): Promise<ClaimOutcome> {
    try {
      return await this.reclaim(current, this.d.clock.now(), w);
    } catch (err) {
      if (err instanceof ConditionFailedError) return reclaimRefused(current, err);
      throw err;
    }
  }

  /** The reclaim write of `reclaimAfterCrash`: the next attempt, with the crash on the record. */
  private async reclaim(
    current: TaskRecord,
    now: number,
    w: {
      history: AttemptRecord[];
      error: ErrorInfo;
      counter: { crashes: number } | { unattributed_crashes: number };
      fence: { leaseToken: number; orLeaseExpiredBefore: number };
      crashes: number;
      attributed: boolean;
    },
  ): Promise<ClaimOutcome> {
    const { history, error, counter, fence, crashes, attributed } = w;
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
  }
}

/**
 * A reclaim (or a crash loop's failure) whose conditional write was refused. Dropping the message
 * is right only when the task moved on without it: another worker reclaimed it (a newer lease
 * token), or it finished. Otherwise — its owner renewed the lease after all (alive, only late) —
 * the message is the task's only one: look again later rather than delete it.
 */
function reclaimRefused(current: TaskRecord, err: ConditionFailedError): ClaimOutcome {
  const stored = err.current;
  if (stored === undefined || isFinished(stored.status) || stored.lease_token !== current.lease_token) {
    return { kind: 'drop', reason: 'another worker reclaimed it first' };
  }
  return { kind: 'defer', seconds: 1, reason: 'the reclaim raced its owner’s renewal' };
}
