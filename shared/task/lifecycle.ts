import { TaskClaims } from './claim.js';
import { AttemptLeases } from './lease.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import { listedStore } from './listing.js';
import { followEnd, notifyingStore } from './finished.js';
import type { TaskRecord } from './model.js';
import { OperatorActions } from './operator-actions.js';
import { AttemptOutcomes } from './outcome.js';
import { TaskOutbox } from './outbox.js';
import { TaskRequests } from './requests.js';
import { RunWakes } from './wake.js';

export type { LifecycleDeps } from './lifecycle-deps.js';
export { deadLetterOf } from './outbox.js';

/**
 * Every status change of a task, as fenced single-item writes: this builds the seven parts on one
 * listed store and one outbox, and callers use the part they need (`lifecycle.claims.claim(…)`;
 * a narrow dependency is `Pick<TaskLifecycle, 'leases'>`). Each part lives in its own file, named
 * for the question a newcomer asks:
 * - where is a message sent, and the outbox kept? `outbox.ts`
 * - where is a task claimed, or reclaimed after a crash? `claim.ts`
 * - where is a running attempt's lease kept (heartbeat, cancel look, solo)? `lease.ts`
 * - where does an attempt end (success, retry, death, cancel, a workflow's suspension)? `outcome.ts`
 * - where is a waiting workflow run woken by a signal? `wake.ts`
 * - where are GET and DELETE answered for an owner? `requests.ts`
 * - what do the writes change? `changes.ts` (pure); the fence: `fence.ts`
 * - which tasks can be listed, and how is the listing read? `listing.ts`
 * - is it retried, and when? `shared/retry/decide.ts`
 * Operator actions (redrive, purge, local recovery) are `operator-actions.ts`, their plans `operations.ts`.
 */
export class TaskLifecycle {
  readonly outboxes: TaskOutbox;
  readonly claims: TaskClaims;
  readonly leases: AttemptLeases;
  readonly outcomes: AttemptOutcomes;
  readonly requests: TaskRequests;
  readonly operations: OperatorActions;
  readonly wakes: RunWakes;
  private readonly deps: LifecycleDeps;

  constructor(deps: LifecycleDeps) {
    this.deps = deps;
    // Every status change keeps the listing index right (listing.ts): applied here, once.
    // What follows a task's end (a workflow's fan-in) is started here too, once written.
    const listed = listedStore(deps.store, deps.clock);
    const store = deps.onFinished === undefined ? listed : notifyingStore(listed, deps.onFinished, deps.logger);
    const d: LifecycleDeps = { ...deps, store };
    this.outboxes = new TaskOutbox(d);
    this.claims = new TaskClaims(d, this.outboxes);
    this.leases = new AttemptLeases(d);
    this.wakes = new RunWakes({ ...d, store: listed }, this.outboxes);
    this.outcomes = new AttemptOutcomes(d, this.outboxes, this.wakes);
    this.requests = new TaskRequests(d);
    this.operations = new OperatorActions(d, this.outboxes);
  }

  /**
   * What follows a task's end, once more: for a finished task whose last message came back (its
   * worker may have died between the end's write and what follows it). Idempotent listeners only.
   */
  async followEndAgain(record: TaskRecord): Promise<void> {
    if (this.deps.onFinished !== undefined) await followEnd(this.deps.onFinished, this.deps.logger, record, true);
  }
}
