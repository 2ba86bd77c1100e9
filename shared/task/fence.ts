import { METRICS } from '../config/metrics.js';
import type { Metrics } from '../runtime/logger.js';
import { ConditionFailedError } from './store-errors.js';
import type { TaskChanges, TaskCondition, TaskStore } from './task-store.js';
import { LeaseLostError } from './errors.js';
import type { TaskRecord } from './model.js';

/**
 * The one fenced write: applies `changes` only while the writer still holds the lease it
 * claimed (`lease_token`) on a running task, plus any `extra` condition.
 * @throws LeaseLostError when another worker took the task over (or the extra condition failed)
 */
export async function fencedUpdate(
  d: { readonly store: TaskStore; readonly metrics: Metrics },
  record: TaskRecord,
  changes: TaskChanges,
  extra: Omit<TaskCondition, 'leaseToken' | 'status'> = {},
): Promise<TaskRecord> {
  try {
    return await d.store.update(record.task_id, changes, {
      ...extra,
      leaseToken: record.lease_token,
      status: ['running'],
    });
  } catch (err) {
    if (err instanceof ConditionFailedError) {
      d.metrics.count(METRICS.fencedWrites, record.type);
      throw new LeaseLostError(record.task_id, record.lease_token, err);
    }
    throw err;
  }
}

/** For best-effort bookkeeping writes: a failed condition means the task moved on; fine. */
export function ignoreConflict(err: unknown): void {
  if (!(err instanceof ConditionFailedError)) throw err;
}
