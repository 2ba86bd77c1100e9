import { METRICS } from '../config/metrics.js';
import { iso } from './changes.js';
import { LeaseLostError } from './errors.js';
import { fencedUpdate } from './fence.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import { runningListing } from './listing.js';
import type { TaskRecord } from './model.js';
import { transition } from './state-machine.js';
import { ConditionFailedError } from './store-errors.js';

/** True when the attempt's claim is in the table (`running` with its lease), false for a lazy claim. */
export function claimWritten(record: TaskRecord): boolean {
  return record.status === 'running';
}

/**
 * Crashes of workers that ran this task among others before its attempts run alone. A task that
 * really kills its worker takes one more shared run (and the tasks beside it one more re-run)
 * before it is found out; a healthy task must be on two dying workers to lose its share.
 */
export const SHARED_CRASHES_BEFORE_SOLO = 2;

/** {@link AttemptLeases.isSuspect}, as a pure function (the claim decides with it too). */
export function isSuspect(record: TaskRecord): boolean {
  return (record.crashes ?? 0) > 0 || (record.unattributed_crashes ?? 0) >= SHARED_CRASHES_BEFORE_SOLO;
}

/**
 * The lease of a running attempt, once claimed (`claim.ts` decides who may run): the heartbeat
 * that extends it — or, for a lazy claim, writes the claim at the first heartbeat — the look for
 * a cancel request, and the `solo` mark of a task that crashed its workers before.
 */
export class AttemptLeases {
  constructor(private readonly d: LifecycleDeps) {}

  /**
   * Extends the lease of a running attempt — or, at the first heartbeat of a lazy claim, writes
   * the claim. Returns the task as stored, so the caller sees a cancel request (or, for a lazy
   * claim, that DELETE cancelled the task). @throws LeaseLostError when another worker took the task over.
   */
  async heartbeat(record: TaskRecord): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const leaseUntil = now + this.d.settings.leaseSeconds * 1000;
    // A task still running at a heartbeat enters the listing (`running`) with the write the
    // heartbeat makes anyway; later heartbeats leave its entry alone (listing.ts).
    if (claimWritten(record)) {
      return fencedUpdate(this.d, record, { set: { lease_until: leaseUntil, ...runningListing(record, now) } });
    }
    try {
      return await this.d.store.update(
        record.task_id,
        {
          set: {
            status: transition(record.status, 'claim'),
            lease_until: leaseUntil,
            attempts: record.attempts,
            ...(record.started_at === undefined ? {} : { started_at: record.started_at }),
            updated_at: iso(now),
            ...runningListing(record, now),
          },
          add: { lease_token: 1 },
          remove: ['solo'],
        },
        { status: [record.status], dispatchId: record.dispatch_id, noCancelRequest: true },
      );
    } catch (err) {
      if (!(err instanceof ConditionFailedError)) throw err;
      const current = err.current ?? (await this.d.store.get(record.task_id));
      if (current?.status === 'cancelled') return current;
      this.d.metrics.count(METRICS.fencedWrites, record.type);
      throw new LeaseLostError(record.task_id, record.lease_token, err);
    }
  }

  /**
   * Looks for a cancel of a running attempt: an eventually consistent read (half a read unit),
   * so it may see a cancel a second late. The outcome write is what guarantees that a cancel
   * wins; this only makes the handler's signal fire sooner than the next heartbeat.
   */
  async cancelRequested(record: TaskRecord): Promise<boolean> {
    const current = await this.d.store.get(record.task_id, { consistent: false });
    if (current === undefined) return false;
    return isCancelled(current, record);
  }

  /**
   * True when the task's next attempts run alone on their worker: it crashed a worker while
   * alone before, or was on {@link SHARED_CRASHES_BEFORE_SOLO} workers that died under several
   * tasks. One shared crash is no evidence: a worker killed under forty tasks (a deploy, a host
   * failure) would otherwise make forty suspects that each run alone, serialising their workers.
   */
  isSuspect(record: TaskRecord): boolean {
    return isSuspect(record);
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
}

/**
 * True when the stored task says the attempt `attempt` must stop: DELETE cancelled it before its
 * claim was written, or requested a cancel of this very lease.
 */
export function isCancelled(stored: TaskRecord, attempt: TaskRecord): boolean {
  if (stored.status === 'cancelled') return true;
  return stored.cancel_requested === true && stored.lease_token === attempt.lease_token;
}
