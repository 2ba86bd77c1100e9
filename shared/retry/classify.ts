import type { ErrorInfo } from '../task/model.js';
import { PermanentError, RetryableError } from './errors.js';

export interface Classification {
  readonly retryable: boolean;
  readonly retryAfterSeconds?: number;
  readonly info: ErrorInfo;
}

const MAX_MESSAGE = 1000;

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
    return err.retryAfterSeconds === undefined
      ? { retryable: true, info: info(err, true, err.code) }
      : { retryable: true, retryAfterSeconds: err.retryAfterSeconds, info: info(err, true, err.code) };
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

function info(err: unknown, retryable: boolean, code?: string): ErrorInfo {
  const name = err instanceof Error ? err.name : typeof err;
  const raw = err instanceof Error ? err.message : String(err);
  const message = raw.length > MAX_MESSAGE ? `${raw.slice(0, MAX_MESSAGE)}…` : raw;
  return code === undefined ? { name, message, retryable } : { name, message, retryable, code };
}
