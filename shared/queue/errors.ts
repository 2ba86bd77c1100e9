/** Root of the queue module's errors. */
export class QueueError extends Error {
  readonly taskId: string | undefined;
  constructor(message: string, options: { taskId?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.taskId = options.taskId;
  }
}

/** SQS could not be reached or refused the request (throttling, 5xx, network). Retryable. */
export class QueueUnavailableError extends QueueError {
  readonly retryable = true;
}

/** The receipt handle no longer refers to a message we hold (deleted, or received again by someone else). */
export class MessageGoneError extends QueueError {}
