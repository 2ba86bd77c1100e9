import { KajError } from '../shared/errors.js';

/** Root of the client's errors. */
export class KajClientError extends KajError {}

/**
 * The API answered with an error (after the client's retries, for a retryable one): its HTTP
 * status, the server's `code` (`validation_error`, `idempotency_conflict`, `not_found`…) and the
 * offending `field` when there is one.
 */
export class KajApiError extends KajClientError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    options: { taskId?: string; cause?: unknown } = {},
  ) {
    super(message, options);
  }

  /** 429 and 5xx: worth another try later (with the same idempotency key). */
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

/** The API could not be reached (network, DNS, a reset connection) after the client's retries. */
export class KajUnreachableError extends KajClientError {
  readonly retryable = true;
}

/**
 * What this client cannot do in its mode: the schedules API in direct mode (`kaj/client/direct`),
 * which only submits, reads, waits for and cancels tasks. Use the API for it (`new KajClient({ url })`).
 */
export class KajNotSupportedError extends KajClientError {}

/** `waitFor` gave up: the task had not finished within the timeout. */
export class KajTimeoutError extends KajClientError {
  constructor(
    taskId: string,
    readonly lastStatus: string,
    readonly timeoutMs: number,
  ) {
    super(`task ${taskId} still ${lastStatus} after ${timeoutMs} ms`, { taskId });
  }
}
