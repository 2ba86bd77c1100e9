/**
 * How the DynamoDB stores report a failed request: a `StoreRejectedError` for a request that can
 * never succeed, a `StoreUnavailableError` (retryable) for everything else.
 *
 * @module
 */
import { StoreRejectedError, StoreUnavailableError } from '../task/store-errors.js';

/**
 * Errors DynamoDB (or the client, before sending) gives for a request that can never succeed.
 * Everything else — throttling, 5xx, network, timeouts — is an outage worth retrying.
 */
const REJECTED = new Set(['ValidationException', 'SerializationException', 'ItemCollectionSizeLimitExceededException']);

/**
 * The store error for `err`, thrown by the DynamoDB request `operation`.
 *
 * @param o.about what the request was about, put after the verb (` (schedule "x")`); none by default
 * @param o.taskId the task the request was about, carried by the error
 * @param o.marshallErrors whether a `marshall` failure (a value DynamoDB cannot hold) is a rejection
 *   (default true; a store that never marshals a caller's value passes false)
 */
export function dynamoStoreError(
  err: unknown,
  operation: string,
  o: { readonly about?: string; readonly taskId?: string | undefined; readonly marshallErrors?: boolean } = {},
): StoreUnavailableError | StoreRejectedError {
  const name = err instanceof Error ? err.name : 'Error';
  const message = err instanceof Error ? err.message : String(err);
  const about = o.about ?? '';
  if (REJECTED.has(name) || ((o.marshallErrors ?? true) && isMarshallError(err))) {
    return new StoreRejectedError(`DynamoDB ${operation} rejected${about}: ${name}: ${message}`, {
      taskId: o.taskId,
      cause: err,
    });
  }
  return new StoreUnavailableError(`DynamoDB ${operation} failed${about}: ${name}`, { taskId: o.taskId, cause: err });
}

/**
 * `marshall` throws plain Errors for values DynamoDB cannot hold (unsafe integers, NaN, class
 * instances), before anything is sent. They have no HTTP metadata.
 */
function isMarshallError(err: unknown): boolean {
  if (!(err instanceof Error) || '$metadata' in err) return false;
  return /MAX_SAFE_INTEGER|Unsupported type passed|Special numeric value|Number .* is|cannot be converted|marshall/i.test(
    err.message,
  );
}
