import { KajError } from '../errors.js';
import type { TaskStatus } from './model.js';

/** Root of the task module's errors. */
export class TaskError extends KajError {}

export class IllegalTransitionError extends TaskError {
  constructor(
    readonly from: TaskStatus,
    readonly event: string,
    taskId?: string,
  ) {
    super(`a ${from} task cannot ${event}`, { taskId });
  }
}

/** A request field failed validation. `field` is a dotted path such as `payload.to`. */
export class ValidationError extends TaskError {
  constructor(
    readonly field: string,
    message: string,
    options: { taskId?: string; cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

/**
 * A page cursor this listing did not give for this query: tampered with, of another listing or
 * filters, or holding a position no page ends at. Field `cursor`.
 */
export class InvalidCursorError extends ValidationError {
  constructor(
    message = 'cursor: not a cursor of this listing (pass back the one a page returned, with the same filters)',
    options: { cause?: unknown } = {},
  ) {
    super('cursor', message, options);
  }
}

export class UnknownTaskTypeError extends TaskError {
  constructor(
    readonly type: string,
    readonly known: readonly string[],
  ) {
    super(`unknown task type "${type}"; known types: ${known.join(', ') || '(none)'}`);
  }
}

/** The same idempotency key was used with a different request. */
export class IdempotencyConflictError extends TaskError {
  constructor(taskId: string) {
    super('idempotency_key was already used with a different request', { taskId });
  }
}

export class TaskNotFoundError extends TaskError {
  constructor(taskId: string) {
    super(`task ${taskId} not found`, { taskId });
  }
}

export class TaskNotCancellableError extends TaskError {
  constructor(
    taskId: string,
    readonly status: TaskStatus,
  ) {
    super(`task ${taskId} is ${status} and can no longer be cancelled`, { taskId });
  }
}

/** A definition in `tasks/` is malformed. Thrown at start-up, never at run time. */
export class TaskDefinitionError extends TaskError {}

/** The task's handler was asked to stop because of a cancel request. */
export class TaskCancelledError extends TaskError {
  constructor(taskId: string) {
    super(`task ${taskId} was cancelled`, { taskId });
  }
}

/**
 * A fenced write was rejected: the writer's lease token is no longer the task's, because
 * another worker claimed it after this one's lease ran out. The write is discarded.
 */
export class LeaseLostError extends TaskError {
  constructor(
    taskId: string,
    readonly leaseToken: number,
    cause?: unknown,
  ) {
    super(`lease ${leaseToken} on task ${taskId} was lost to another worker; write rejected`, { taskId, cause });
  }
}

/** The payload (or the whole request body) is over its size limit. */
export class PayloadTooLargeError extends ValidationError {}
