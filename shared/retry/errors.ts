import { KajError } from '../errors.js';

/**
 * Signals a task handler throws to steer its retries. Exported for task authors.
 *
 * @example
 * if (res.status === 404) throw new PermanentError('recipient does not exist');
 * if (res.status === 429) throw new RetryableError('rate limited', { retryAfterSeconds: 30 });
 */
export class PermanentError extends KajError {
  readonly retryable = false;
  readonly code: string | undefined;
  constructor(message: string, options: { cause?: unknown; code?: string; taskId?: string } = {}) {
    super(message, options);
    this.code = options.code;
  }
}

export class RetryableError extends KajError {
  readonly retryable = true;
  readonly code: string | undefined;
  /** When set, the next attempt waits exactly this long instead of the backoff. */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    message: string,
    options: { cause?: unknown; code?: string; retryAfterSeconds?: number; taskId?: string } = {},
  ) {
    super(message, options);
    this.code = options.code;
    if (options.retryAfterSeconds !== undefined && !(options.retryAfterSeconds >= 0)) {
      throw new RangeError('retryAfterSeconds must be a number >= 0');
    }
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** The handler ran past its timeout. Retryable. */
export class TaskTimeoutError extends RetryableError {
  constructor(taskId: string, timeoutSeconds: number) {
    super(`task ${taskId} timed out after ${timeoutSeconds}s`, { code: 'TIMEOUT', taskId });
  }
}
