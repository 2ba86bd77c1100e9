import { KajError } from '../../shared/errors.js';

/** Root of the errors of the CLI's DLQ work (reading DLQs, message move tasks). */
export class AdminError extends KajError {}

/** SQS refused or could not serve a DLQ request (receive, delete, attributes). Retryable. */
export class DeadLetterQueueUnavailableError extends AdminError {
  readonly retryable = true;
}

/** The endpoint does not implement SQS's `StartMessageMoveTask` (moto, older LocalStack). */
export class NativeMoveUnsupportedError extends AdminError {}

/** A message move task is already running on the DLQ: SQS allows one per source queue. */
export class MoveTaskRunningError extends AdminError {}

/** A native move task ended FAILED or CANCELLED. */
export class MoveTaskFailedError extends AdminError {}
