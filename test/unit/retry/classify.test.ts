import { describe, expect, it } from 'vitest';
import { classifyError } from '../../../shared/retry/classify.js';
import { PermanentError, RetryableError, TaskTimeoutError } from '../../../shared/retry/errors.js';

function withStatus(status: number, shape: 'status' | 'statusCode' | 'sdk' = 'status'): Error {
  const e = new Error(`HTTP ${status}`) as Error & Record<string, unknown>;
  if (shape === 'sdk') e.$metadata = { httpStatusCode: status };
  else e[shape] = status;
  return e;
}

describe('Function: classifyError', () => {
  it('treats PermanentError as permanent and keeps its code', () => {
    expect(classifyError(new PermanentError('no such user', { code: 'E_USER' }))).toEqual({
      retryable: false,
      info: { name: 'PermanentError', message: 'no such user', retryable: false, code: 'E_USER' },
    });
  });

  it('honours RetryableError.retryAfterSeconds', () => {
    const c = classifyError(new RetryableError('slow down', { retryAfterSeconds: 30 }));
    expect(c.retryable).toBe(true);
    expect(c.retryAfterSeconds).toBe(30);
  });

  it('treats a timeout as retryable', () => {
    const c = classifyError(new TaskTimeoutError('t_1', 5));
    expect(c).toMatchObject({ retryable: true, info: { code: 'TIMEOUT', message: 'task t_1 timed out after 5s' } });
  });

  it.each([
    [400, false],
    [401, false],
    [404, false],
    [422, false],
    [408, true],
    [429, true],
    [500, true],
    [503, true],
  ])('HTTP %i → retryable %s', (status, retryable) => {
    for (const shape of ['status', 'statusCode', 'sdk'] as const) {
      const c = classifyError(withStatus(status, shape));
      expect(c.retryable).toBe(retryable);
      expect(c.info.code).toBe(`HTTP_${status}`);
    }
  });

  it('retries unknown errors and non-errors', () => {
    expect(classifyError(new TypeError('boom')).retryable).toBe(true);
    expect(classifyError('a string').info).toEqual({ name: 'string', message: 'a string', retryable: true });
  });

  it('cuts very long messages', () => {
    const c = classifyError(new Error('x'.repeat(5000)));
    expect(c.info.message.length).toBeLessThanOrEqual(1001);
  });

  it('rejects a negative retryAfterSeconds when the error is made', () => {
    expect(() => new RetryableError('x', { retryAfterSeconds: -1 })).toThrow(/retryAfterSeconds/);
  });
});
