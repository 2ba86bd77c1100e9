import { iso, nextDispatchId } from './changes.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { TaskRecord } from './model.js';
import type { TaskOutbox } from './outbox.js';
import { isFinished } from './state-machine.js';
import { ConditionFailedError } from './store-errors.js';

/**
 * What a wake did: sent the run's next message now, left a request its invocation acts on,
 * counted a child down (`counted`: others are still open), or nothing (`finished` run, or a
 * run that is not waiting for children: `ignored`).
 */
export type WakeResult = 'woken' | 'requested' | 'finished' | 'counted' | 'ignored';

/**
 * Where a waiting workflow run is woken before its timer: a signal arrived for it. A run that
 * waits for a time still to come gets its next message now (sent first, with a new dispatch, so
 * the delayed one is superseded), as a retry's is sent. A run being run or due now gets a wake
 * request (`wake_requested`) instead: its invocation may have read its history before the signal
 * was written, so if it suspends, the suspension is woken at once (`AttemptOutcomes.suspend`).
 * Either way no signal is left unseen until the run's next timer.
 */
export class RunWakes {
  constructor(
    private readonly d: LifecycleDeps,
    private readonly outbox: TaskOutbox,
  ) {}

  /** A signal for the run was recorded: wake it. */
  async signalled(taskId: string): Promise<WakeResult> {
    for (let round = 0; round < 5; round += 1) {
      const current = await this.d.store.get(taskId);
      try {
        return await this.wakeOrRequest(current, (w) =>
          Date.parse(w.run_at) > this.d.clock.now() ? 'wake' : 'request',
        );
      } catch (err) {
        if (!(err instanceof ConditionFailedError)) throw err;
        // The run moved (claimed, suspended, woken): look again.
      }
    }
    return 'requested';
  }

  /**
   * A child of the run finished and its end is recorded in the run's history: the run's count of
   * open children (`children_open`, written when it suspended) goes down by one, and the child
   * that takes it to zero wakes the run — one wake however many children finish at once (the
   * count is one atomic decrement per child; the last is the only one that finds 1). A run being
   * run gets a wake request instead (its invocation may have read the history before this
   * child's end): its suspension recounts — so does a waiting run that is due (woken, and perhaps
   * running under a lazy claim, which leaves it `waiting`). A run waiting for a time to come is
   * left alone: its code reads the child's end when it gets to it.
   */
  async childFinished(parentId: string): Promise<WakeResult> {
    for (let round = 0; round < 5; round += 1) {
      let current: TaskRecord | undefined;
      try {
        await this.d.store.update(
          parentId,
          { add: { children_open: -1 } },
          { status: ['waiting'], childrenOpenAbove: 1 },
        );
        return 'counted';
      } catch (err) {
        if (!(err instanceof ConditionFailedError)) throw err;
        current = err.current ?? (await this.d.store.get(parentId));
      }
      try {
        // Waiting with a count of 1: this was the last open child, the run goes on now. Waiting
        // with no count and due: it was woken and may be running now (a lazy claim leaves it
        // `waiting`), having read its history before this end — a request makes its suspension
        // wake it again. Waiting with no count for a time to come: its code reads the end then.
        return await this.wakeOrRequest(current, (w) =>
          (w.children_open ?? 0) >= 1 ? 'wake' : Date.parse(w.run_at) <= this.d.clock.now() ? 'request' : 'ignore',
        );
      } catch (err) {
        if (!(err instanceof ConditionFailedError)) throw err;
        // The run moved (woken by another child, claimed, suspended again): look again.
      }
    }
    return 'requested';
  }

  /**
   * One look at the run: a finished one is left; a waiting one is woken now or left as `decide`
   * says (`request`: it is due anyway, so a request serves); any other gets a wake request its
   * invocation's suspension honours. @throws ConditionFailedError when the run moved meanwhile
   */
  private async wakeOrRequest(
    current: TaskRecord | undefined,
    decide: (waiting: TaskRecord) => 'wake' | 'request' | 'ignore',
  ): Promise<WakeResult> {
    if (current === undefined || isFinished(current.status)) return 'finished';
    const choice = current.status === 'waiting' ? decide(current) : 'request';
    if (choice === 'ignore') return 'ignored';
    if (choice === 'wake') {
      await this.now(current);
      return 'woken';
    }
    await this.d.store.update(
      current.task_id,
      { set: { wake_requested: true } },
      { status: [current.status], dispatchId: current.dispatch_id },
    );
    return 'requested';
  }

  /**
   * Sends a waiting run's next message now and makes its dispatch the current one, the wake
   * request taken. @throws ConditionFailedError when the run is no longer waiting on `record`'s dispatch
   */
  async now(record: TaskRecord): Promise<TaskRecord> {
    const now = this.d.clock.now();
    const next: TaskRecord = {
      ...record,
      run_at: iso(now),
      dispatch_id: nextDispatchId(this.d.random, record.dispatch_id),
    };
    const owed = await this.outbox.sendAhead(next);
    return this.d.store.update(
      record.task_id,
      {
        set: { run_at: next.run_at, dispatch_id: next.dispatch_id, updated_at: iso(now), ...owed },
        remove: [
          'wake_requested',
          'children_open',
          ...(owed.outbox_pk === undefined ? (['outbox_pk', 'outbox_due'] as const) : []),
        ],
      },
      { status: ['waiting'], dispatchId: record.dispatch_id },
    );
  }
}
