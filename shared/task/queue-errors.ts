import { KajError } from '../errors.js';

/** Root of the queue module's errors. */
export class QueueError extends KajError {}

/** SQS could not be reached or refused the request (throttling, 5xx, network). Retryable. */
export class QueueUnavailableError extends QueueError {
  readonly retryable = true;
}

/**
 * SQS refused a message itself (a batch entry it reports as the sender's fault): sending it again
 * as it is can never succeed. Permanent.
 */
export class QueueRejectedError extends QueueError {
  readonly retryable = false;
}

/** The receipt handle no longer refers to a message we hold (deleted, or received again by someone else). */
export class MessageGoneError extends QueueError {}
