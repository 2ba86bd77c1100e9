import type { RandomSource } from '../runtime/random.js';

export interface BackoffPolicy {
  readonly baseSeconds: number;
  readonly capSeconds: number;
}

/**
 * Full-jitter exponential backoff (AWS Architecture Blog, "Exponential Backoff and Jitter"):
 * `random(0, min(cap, base · 2^attempt))`, in milliseconds.
 *
 * @param attempt attempts made so far (1 after the first failure)
 */
export function fullJitterDelayMs(attempt: number, policy: BackoffPolicy, random: RandomSource): number {
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new RangeError(`attempt must be an integer >= 1, got ${attempt}`);
  const ceilingMs = backoffCeilingMs(attempt, policy);
  return Math.floor(random.next() * (ceilingMs + 1));
}

/** The upper bound of the jittered delay for an attempt, in milliseconds. */
export function backoffCeilingMs(attempt: number, policy: BackoffPolicy): number {
  // 2^attempt overflows to Infinity for large attempts; min() with the cap keeps it finite.
  return Math.round(Math.min(policy.capSeconds, policy.baseSeconds * 2 ** attempt) * 1000);
}
