/** Root of the consumer module's errors. */
export class ConsumerError extends Error {
  readonly taskId: string | undefined;
  readonly messageId: string | undefined;
  constructor(message: string, options: { taskId?: string; messageId?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.taskId = options.taskId;
    this.messageId = options.messageId;
  }
}

/** A record that is not a Kaj task message (or comes from a queue this consumer does not know). */
export class UnprocessableMessageError extends ConsumerError {
  constructor(message: string, messageId: string, cause?: unknown) {
    super(`${message} (message ${messageId})`, { messageId, cause });
  }
}
