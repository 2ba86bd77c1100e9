import type { Priority } from '../config/resources.js';
import type { Classification } from '../retry/classify.js';
import type { Admissions } from './admission.js';
import { TaskClaims, type ClaimOutcome, type Delivery } from './claim.js';
import { AttemptLeases } from './lease.js';
import type { ResolvedPolicy } from './define.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import { listedStore } from './listing.js';
import type { OutboxTarget, TaskRecord } from './model.js';
import type { Operator } from './operations.js';
import { OperatorActions } from './operator-actions.js';
import { AttemptOutcomes } from './outcome.js';
import { TaskOutbox } from './outbox.js';
import { TaskRequests } from './requests.js';

export type { Admission, Admissions } from './admission.js';
export type { ClaimOutcome, Delivery } from './claim.js';
export { claimWritten } from './lease.js';
export type { LifecycleDeps } from './lifecycle-deps.js';
export { deadLetterOf } from './outbox.js';

/**
 * Every status change of a task, as fenced single-item writes, behind one object. Each role
 * lives in its own file, named for the question a newcomer asks:
 * - where is a message sent, and the outbox kept? `outbox.ts`
 * - where is a task claimed, or reclaimed after a crash? `claim.ts`
 * - where is a running attempt's lease kept (heartbeat, cancel look, solo)? `lease.ts`
 * - where does an attempt end (success, retry, death, cancel)? `outcome.ts`
 * - where are GET and DELETE answered for an owner? `requests.ts`
 * - what do the writes change? `changes.ts` (pure); the fence: `fence.ts`
 * - which tasks can be listed, and how is the listing read? `listing.ts`
 * - is it retried, and when? `shared/retry/decide.ts`
 * Operator actions (redrive, purge, local recovery) are `operations.ts`.
 */
export class TaskLifecycle {
  readonly outboxes: TaskOutbox;
  readonly claims: TaskClaims;
  readonly leases: AttemptLeases;
  readonly outcomes: AttemptOutcomes;
  readonly requests: TaskRequests;
  readonly operations: OperatorActions;

  constructor(deps: LifecycleDeps) {
    // Every status change keeps the listing index right (listing.ts): applied here, once.
    const d: LifecycleDeps = { ...deps, store: listedStore(deps.store, deps.clock) };
    this.outboxes = new TaskOutbox(d);
    this.claims = new TaskClaims(d, this.outboxes);
    this.leases = new AttemptLeases(d);
    this.outcomes = new AttemptOutcomes(d, this.outboxes);
    this.requests = new TaskRequests(d);
    this.operations = new OperatorActions(d, this.outboxes);
  }

  // --- outbox.ts
  outbox(
    taskId: string,
    target: OutboxTarget,
    priority: Priority,
    runAtMs: number,
  ): Pick<TaskRecord, 'outbox_pk' | 'outbox_due'> {
    return this.outboxes.fields(taskId, target, priority, runAtMs);
  }
  sendAhead(record: TaskRecord): Promise<Pick<TaskRecord, 'outbox_pk' | 'outbox_due'>> {
    return this.outboxes.sendAhead(record);
  }
  /** {@link TaskOutbox.sendAheadMany}. */
  sendAheadMany(records: readonly TaskRecord[]): Promise<Pick<TaskRecord, 'outbox_pk' | 'outbox_due'>[]> {
    return this.outboxes.sendAheadMany(records);
  }
  dispatch(record: TaskRecord): Promise<'sent' | 'deferred' | 'none'> {
    return this.outboxes.dispatch(record);
  }
  dispatchQuietly(record: TaskRecord): Promise<void> {
    return this.outboxes.dispatchQuietly(record);
  }
  sendUnconfirmed(record: TaskRecord): boolean {
    return this.outboxes.sendUnconfirmed(record);
  }
  sweepEntry(record: TaskRecord): Promise<'sent' | 'deferred' | 'extended' | 'none'> {
    return this.outboxes.sweepEntry(record);
  }

  // --- claim.ts
  claim(taskId: string, dispatchId: string, delivery?: Delivery, admissions?: Admissions): Promise<ClaimOutcome> {
    return this.claims.claim(taskId, dispatchId, delivery, admissions);
  }
  heartbeat(record: TaskRecord): Promise<TaskRecord> {
    return this.leases.heartbeat(record);
  }
  cancelRequested(record: TaskRecord): Promise<boolean> {
    return this.leases.cancelRequested(record);
  }
  isSuspect(record: TaskRecord): boolean {
    return this.leases.isSuspect(record);
  }
  markSolo(record: TaskRecord): Promise<TaskRecord> {
    return this.leases.markSolo(record);
  }

  // --- outcome.ts
  succeed(record: TaskRecord, result: unknown, durationMs: number): Promise<TaskRecord> {
    return this.outcomes.succeed(record, result, durationMs);
  }
  attemptFailed(
    record: TaskRecord,
    failure: Classification,
    policy: ResolvedPolicy,
    durationMs: number,
  ): Promise<TaskRecord> {
    return this.outcomes.attemptFailed(record, failure, policy, durationMs);
  }
  cancelledWhileRunning(record: TaskRecord, durationMs: number): Promise<TaskRecord> {
    return this.outcomes.cancelledWhileRunning(record, durationMs);
  }

  // --- requests.ts
  find(taskId: string, owner?: string): Promise<TaskRecord> {
    return this.requests.find(taskId, owner);
  }
  cancel(taskId: string, owner?: string, operator?: Operator): Promise<TaskRecord> {
    return this.requests.cancel(taskId, owner, operator);
  }
}
