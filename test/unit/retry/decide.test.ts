import { describe, expect, it } from 'vitest';
import { classifyError } from '../../../shared/retry/classify.js';
import { afterCrash, afterFailure, redeliveryDelaySeconds } from '../../../shared/retry/decide.js';
import { PermanentError, RetryableError } from '../../../shared/retry/errors.js';
import { sequenceRandom } from '../../../testing/doubles.js';

const backoff = { baseSeconds: 2, capSeconds: 300 };

describe('Function: afterFailure', () => {
  it('fails a permanent error at once, whatever attempts remain', () => {
    expect(afterFailure(1, 5, classifyError(new PermanentError('no')), backoff, sequenceRandom([0.5]))).toEqual({
      kind: 'fail',
    });
  });

  it('fails a retryable error on the last attempt', () => {
    expect(afterFailure(5, 5, classifyError(new Error('flaky')), backoff, sequenceRandom([0.5]))).toEqual({
      kind: 'fail',
    });
  });

  it('retries after exactly retryAfterSeconds when the error asks for it', () => {
    const f = classifyError(new RetryableError('busy', { retryAfterSeconds: 30 }));
    expect(afterFailure(1, 5, f, backoff, sequenceRandom([0.99]))).toEqual({ kind: 'retry', delayMs: 30_000 });
  });

  it('otherwise retries after full-jitter backoff: random(0, min(cap, base·2^attempt))', () => {
    const f = classifyError(new Error('flaky'));
    expect(afterFailure(2, 5, f, backoff, sequenceRandom([0.5]))).toEqual({
      kind: 'retry',
      delayMs: Math.floor(0.5 * 8001),
    });
    expect(afterFailure(20, 25, f, backoff, sequenceRandom([0.999999]))).toEqual({ kind: 'retry', delayMs: 300_000 });
  });
});

describe('Function: afterCrash', () => {
  it('reclaims below the crash limit with attempts left', () => {
    expect(afterCrash(2, 3, 4, 5)).toBe('reclaim');
  });
  it('is a crash loop at the limit, before looking at attempts', () => {
    expect(afterCrash(3, 3, 5, 5)).toBe('crash_loop');
  });
  it('fails when the crashed attempt was the last', () => {
    expect(afterCrash(0, 3, 5, 5)).toBe('attempts_exhausted');
  });
});

describe('Function: redeliveryDelaySeconds', () => {
  it('is 1 + random(0, min(300, 5·2^(receives−1))) seconds', () => {
    expect(redeliveryDelaySeconds(1, sequenceRandom([0.5]))).toBe(1 + Math.floor(0.5 * 5));
    expect(redeliveryDelaySeconds(4, sequenceRandom([0.5]))).toBe(1 + Math.floor(0.5 * 40));
    expect(redeliveryDelaySeconds(20, sequenceRandom([0.999]))).toBe(1 + Math.floor(0.999 * 300));
    expect(redeliveryDelaySeconds(0, sequenceRandom([0]))).toBe(1);
  });
});
