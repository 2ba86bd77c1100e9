import { KajError } from '../../errors.js';

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

/** A task type uses a limit, but the consumer was built without a limiter (no limits table configured). */
export class MissingLimiterError extends ConsumerError {
  constructor(types: readonly string[]) {
    super(
      `task types ${types.join(', ')} use limits, but this consumer has no limiter: set KAJ_LIMITS_TABLE_NAME (the stack does)`,
    );
  }
}

/** A task type is a workflow, but the consumer was built without a history store (no history table configured). */
export class MissingHistoryStoreError extends ConsumerError {
  constructor(workflows: readonly string[]) {
    super(
      `task types ${workflows.join(', ')} are workflows, but this consumer has no history store: set KAJ_HISTORY_TABLE_NAME (the stack does)`,
    );
  }
}
