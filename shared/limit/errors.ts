import { KajError } from '../errors.js';

/** Root of the flow-control limits' errors (`shared/limit/`). */
export class LimitError extends KajError {
  /** The limit concerned, when one is. */
  readonly limit: string | undefined;
  constructor(message: string, options: { limit?: string; taskId?: string; cause?: unknown } = {}) {
    super(message, options);
    this.limit = options.limit;
  }
}

/**
 * A limit declaration (`tasks/limits.ts`) or a use of one is invalid. Raised at start-up (or when
 * a task's key is computed), never retried. `field` is the dotted path of what is wrong, such as
 * `limits.email_provider.rate`.
 */
export class LimitDefinitionError extends LimitError {
  readonly retryable = false;
  constructor(
    readonly field: string,
    message: string,
    options: { limit?: string; taskId?: string; cause?: unknown } = {},
  ) {
    super(`${field}: ${message}`, options);
  }
}

/**
 * The limits store failed while a task asked for its limits (throttling, 5xx, network), so the
 * limiter cannot tell whether the task may start. Whatever the call had taken was given back.
 * Retryable: the consumer treats it as an infrastructure failure and lets the message come back.
 */
export class LimitUnavailableError extends LimitError {
  readonly retryable = true;
}
