import { storableText } from '../task/json-value.js';
import type { ErrorInfo } from '../task/model.js';
import { PermanentError, RetryableError } from './errors.js';

export interface Classification {
  readonly retryable: boolean;
  readonly retryAfterSeconds?: number;
  readonly info: ErrorInfo;
}

const MAX_MESSAGE = 1000;
const MAX_NAME = 128;
/**
 * The longest wait a `RetryableError` may ask for (12 hours, the largest backoff cap). A larger
 * or infinite `retryAfterSeconds` is clamped to it: the task still retries, and its record can
 * always be written (an infinite delay has no date).
 */
export const MAX_RETRY_AFTER_SECONDS = 12 * 3600;

/**
 * Decides whether a handler's error is worth another attempt.
 *
 * - `PermanentError` → permanent; `RetryableError` (and timeouts) → retryable, honouring `retryAfterSeconds`.
 * - Errors carrying an HTTP-like status (`status`, `statusCode`, `$metadata.httpStatusCode`):
 *   4xx is permanent except 408 and 429; everything else retryable.
 * - Anything else is treated as transient: retried until attempts run out.
 */
export function classifyError(err: unknown): Classification {
  if (err instanceof PermanentError) return { retryable: false, info: info(err, false, err.code) };
  if (err instanceof RetryableError) {
    const after = err.retryAfterSeconds;
    return typeof after === 'number' && after >= 0
      ? {
          retryable: true,
          retryAfterSeconds: Math.min(after, MAX_RETRY_AFTER_SECONDS),
          info: info(err, true, err.code),
        }
      : { retryable: true, info: info(err, true, err.code) };
  }
  const status = httpStatusOf(err);
  if (status !== undefined) {
    const retryable = !(status >= 400 && status < 500) || status === 408 || status === 429;
    return { retryable, info: info(err, retryable, `HTTP_${status}`) };
  }
  return { retryable: true, info: info(err, true) };
}

function httpStatusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { status?: unknown; statusCode?: unknown; $metadata?: { httpStatusCode?: unknown } };
  for (const v of [e.status, e.statusCode, e.$metadata?.httpStatusCode]) {
    if (typeof v === 'number' && Number.isInteger(v) && v >= 100 && v <= 599) return v;
  }
  return undefined;
}

/**
 * What is stored of an error: short, well-formed strings only, whatever the handler threw
 * (a non-string name or code, a message that throws when read, lone surrogates).
 */
function info(err: unknown, retryable: boolean, code?: unknown): ErrorInfo {
  const name = storableText(err instanceof Error && typeof err.name === 'string' ? err.name : typeof err, MAX_NAME);
  const message = storableText(
    safeString(() => (err instanceof Error ? err.message : String(err))),
    MAX_MESSAGE,
  );
  const c = typeof code === 'string' && code !== '' ? storableText(code, MAX_NAME) : undefined;
  return c === undefined ? { name, message, retryable } : { name, message, retryable, code: c };
}

function safeString(read: () => unknown): string {
  try {
    const v = read();
    return typeof v === 'string' ? v : String(v);
  } catch {
    return '(the error could not be turned into text)';
  }
}
