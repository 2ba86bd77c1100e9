import { KajError } from '../errors.js';
import type { TaskRecord } from './model.js';

/** Root of the storage module's errors. */
export class StoreError extends KajError {}

/** `create` found a task with that id already (an idempotent replay, or a conflict). */
export class TaskAlreadyExistsError extends StoreError {
  constructor(
    taskId: string,
    readonly existing: TaskRecord | undefined,
    cause?: unknown,
  ) {
    super(`task ${taskId} already exists`, { taskId, cause });
  }
}

/** An update's condition did not hold: the task is not in the state the writer expected (or is gone). */
export class ConditionFailedError extends StoreError {
  constructor(
    taskId: string,
    readonly current: TaskRecord | undefined,
    cause?: unknown,
  ) {
    super(`condition failed for task ${taskId}`, { taskId, cause });
  }
}

/** The store could not be reached or refused the request (throttling, 5xx, network). Retryable. */
export class StoreUnavailableError extends StoreError {
  readonly retryable = true;
}

/**
 * The store refused the request itself (DynamoDB ValidationException, a value the client cannot
 * marshal, an item over 400 KB): sending it again can never succeed. Permanent.
 */
export class StoreRejectedError extends StoreError {
  readonly retryable = false;
}
