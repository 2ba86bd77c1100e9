/**
 * Every retry decision in one place: after a failed attempt (retry with which delay, or fail),
 * after a worker crash (reclaim, or fail), and how soon an infrastructure failure brings a
 * message back. Pure functions over an injected random source.
 */
import type { RandomSource } from '../runtime/random.js';
import { fullJitterDelayMs, type BackoffPolicy } from './backoff.js';
import type { Classification } from './classify.js';

export type AfterFailure = { readonly kind: 'retry'; readonly delayMs: number } | { readonly kind: 'fail' };

/**
 * A failed attempt is retried if the error is retryable and attempts remain: after exactly the
 * error's `retryAfterSeconds`, else after full-jitter backoff. Otherwise the task fails.
 * @param attempts attempts started so far, this one included
 */
export function afterFailure(
  attempts: number,
  maxAttempts: number,
  failure: Classification,
  backoff: BackoffPolicy,
  random: RandomSource,
): AfterFailure {
  if (!failure.retryable || attempts >= maxAttempts) return { kind: 'fail' };
  const delayMs =
    failure.retryAfterSeconds !== undefined
      ? Math.round(failure.retryAfterSeconds * 1000)
      : fullJitterDelayMs(attempts, backoff, random);
  return { kind: 'retry', delayMs };
}

export type AfterCrash = 'reclaim' | 'crash_loop' | 'attempts_exhausted';

/**
 * A worker vanished during an attempt. The task is failed once the crashes held against it
 * (see `TaskClaims.reclaimAfterCrash`) reach its limit, or when that was its last attempt.
 */
export function afterCrash(crashes: number, crashLimit: number, attempts: number, maxAttempts: number): AfterCrash {
  if (crashes >= crashLimit) return 'crash_loop';
  if (attempts >= maxAttempts) return 'attempts_exhausted';
  return 'reclaim';
}

/**
 * Visibility (seconds) for a message left on the queue by an infrastructure failure: back soon
 * rather than after the queue's long visibility timeout, full jitter on the receive count,
 * at most 5 minutes: `1 + random(0, min(300, 5·2^(receives−1)))`.
 */
export function redeliveryDelaySeconds(receives: number, random: RandomSource): number {
  return 1 + Math.floor(random.next() * Math.min(300, 5 * 2 ** (Math.max(1, receives) - 1)));
}
