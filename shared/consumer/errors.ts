import { KajError } from '../errors.js';

/** Root of the consumer module's errors. */
export class ConsumerError extends KajError {
  readonly messageId: string | undefined;
  constructor(message: string, options: { taskId?: string; messageId?: string; cause?: unknown } = {}) {
    super(message, options);
    this.messageId = options.messageId;
  }
}

/** A record that is not a Kaj task message (or comes from a queue this consumer does not know). */
export class UnprocessableMessageError extends ConsumerError {
  constructor(message: string, messageId: string, cause?: unknown) {
    super(`${message} (message ${messageId})`, { messageId, cause });
  }
}
