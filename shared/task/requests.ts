import { METRICS } from '../config/metrics.js';
import { ConditionFailedError } from './store-errors.js';
import { cancelChanges, iso } from './changes.js';
import { TaskNotCancellableError, TaskNotFoundError } from './errors.js';
import type { LifecycleDeps } from './lifecycle-deps.js';
import type { TaskRecord } from './model.js';
import { auditEntry, checkOperator, type Operator } from './operations.js';
import { isFinished } from './state-machine.js';

/**
 * What a caller asks of one task through the API: read it, cancel it — within its owner's
 * tasks (docs/security.md). Without an owner, an operator asks, who sees all.
 */
export class TaskRequests {
  constructor(private readonly d: LifecycleDeps) {}

  /**
   * `GET /tasks/{id}`: the task, if `owner` submitted it. Another owner's task is not found
   * (404, not 403: its existence is not revealed).
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
   * @param operator who cancels, for the task's audit trail (the CLI's bulk cancel); API cancels are not audited
   * @throws TaskNotFoundError, TaskNotCancellableError, ValidationError (a reason over `MAX_REASON_LENGTH`)
   */
  async cancel(taskId: string, owner?: string, operator?: Operator): Promise<TaskRecord> {
    if (operator !== undefined) checkOperator(operator, taskId);
    for (let round = 0; round < 3; round += 1) {
      const current = await this.find(taskId, owner);
      if (current.status === 'cancelled') return current;
      if (isFinished(current.status)) throw new TaskNotCancellableError(taskId, current.status);
      const now = this.d.clock.now();
      const audit = operator === undefined ? {} : { append: { audit: [auditEntry('cancel', operator, now)] } };
      try {
        if (current.status === 'running') {
          return await this.d.store.update(
            taskId,
            { set: { cancel_requested: true, updated_at: iso(now) }, ...audit },
            { status: ['running'], leaseToken: current.lease_token },
          );
        }
        const done = await this.d.store.update(
          taskId,
          { ...cancelChanges(current, now, this.d.settings), ...audit },
          {
            status: [current.status],
            dispatchId: current.dispatch_id,
          },
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
}
