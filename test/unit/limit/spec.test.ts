import { describe, expect, it } from 'vitest';
import { KajError } from '../../../shared/errors.js';
import type { LimitDeclarations } from '../../../shared/limit/declaration.js';
import { LimitDefinitionError, LimitError } from '../../../shared/limit/errors.js';
import { defineLimits, LIMIT_NAME, parseRate, resolveLimits } from '../../../shared/limit/spec.js';

/** The definition error `fn` throws (fails the test if none, or another). */
function failure(fn: () => unknown): LimitDefinitionError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(LimitDefinitionError);
    expect(err).toBeInstanceOf(LimitError);
    expect(err).toBeInstanceOf(KajError);
    expect((err as LimitDefinitionError).retryable).toBe(false);
    return err as LimitDefinitionError;
  }
  return expect.fail('accepted');
}

describe('Function: parseRate', () => {
  it.each([
    ['40/s', 40, 1000],
    ['600/m', 600, 60_000],
    ['10/5s', 10, 5000],
    ['1000/h', 1000, 3_600_000],
    ['5/250ms', 5, 250],
    ['1/1ms', 1, 1],
    ['100000/24h', 100_000, 86_400_000],
    ['1/1440m', 1, 86_400_000],
  ])('parses %s', (text, count, perMs) => {
    expect(parseRate(text)).toEqual({ count, perMs });
  });

  it.each([
    ['', /must be a rate such as 40\/s/],
    ['40', /must be a rate/],
    ['40/sec', /must be a rate/],
    ['40/d', /must be a rate/],
    ['40 /s', /must be a rate/],
    ['-1/s', /must be a rate/],
    ['1.5/s', /must be a rate/],
    ['40/1.5s', /must be a rate/],
    ['0/s', /count must be 1 to 100000/],
    ['100001/s', /count must be 1 to 100000/],
    ['1/0s', /interval must be 1ms to 24h/],
    ['1/25h', /interval must be 1ms to 24h/],
    ['1/0ms', /interval must be 1ms to 24h/],
  ])('rejects %j, naming the field', (text, message) => {
    const err = failure(() => parseRate(text, 'limits.email_provider.rate'));
    expect(err.field).toBe('limits.email_provider.rate');
    expect(err.message).toMatch(/^limits\.email_provider\.rate: /);
    expect(err.message).toMatch(message);
  });

  it('rejects a value that is not a string', () => {
    expect(failure(() => parseRate(40 as unknown as string)).field).toBe('rate');
  });
});

describe('Function: resolveLimits', () => {
  it('resolves the reference workload', () => {
    const specs = resolveLimits({
      email_provider: { rate: '40/s', concurrency: 50 },
      database: { concurrency: 60 },
      per_tenant: { concurrency: 5 },
    });
    expect([...specs.keys()]).toEqual(['email_provider', 'database', 'per_tenant']);
    expect(specs.get('email_provider')).toStrictEqual({
      name: 'email_provider',
      concurrency: 50,
      rate: { count: 40, perMs: 1000, burst: 1, intervalMs: 25 },
      learnRetryAfter: false,
    });
    expect(specs.get('database')).toStrictEqual({ name: 'database', concurrency: 60, learnRetryAfter: false });
  });

  it('spaces starts over the interval plus arrivalJitterMs, so N + 1 calls delayed by up to it never meet in one interval', () => {
    const t = (decl: { rate: string; arrivalJitterMs?: number }) =>
      resolveLimits({ x: decl }).get('x')?.rate?.intervalMs;
    expect(t({ rate: '40/s', arrivalJitterMs: 25 })).toBe(25.625);
    expect(t({ rate: '40/s', arrivalJitterMs: 0 })).toBe(25);
    // 41 starts span 40·T = 1025 ms: the first, delayed by 25 ms, and the last, on time, are 1000 ms apart.
    expect(40 * (t({ rate: '40/s', arrivalJitterMs: 25 }) as number) - 25).toBe(1000);
  });

  it.each([
    [{ rate: '40/s', arrivalJitterMs: -1 }, 'x.arrivalJitterMs'],
    [{ rate: '40/s', arrivalJitterMs: 501 }, 'x.arrivalJitterMs'],
    [{ rate: '40/s', arrivalJitterMs: 2.5 }, 'x.arrivalJitterMs'],
    [{ concurrency: 3, arrivalJitterMs: 10 }, 'x.arrivalJitterMs'],
  ])('refuses arrivalJitterMs %j, naming %s', (decl, field) => {
    expect(() => resolveLimits({ x: decl })).toThrow(expect.objectContaining({ field: `limits.${field}` }));
  });

  it('derives T to the microsecond, rounded up so count·T is never below the interval', () => {
    const t = (rate: string) => resolveLimits({ x: { rate } }).get('x')?.rate?.intervalMs;
    expect(t('400/s')).toBe(2.5); // neither 2 nor 3
    expect(t('40/s')).toBe(25);
    expect(t('3/s')).toBe(333.334);
    expect(t('7/s')).toBe(142.858);
    expect(t('100000/1ms')).toBe(0.001); // below a microsecond: one microsecond
    expect(t('1/24h')).toBe(86_400_000);
    for (const rate of ['3/s', '7/s', '9/250ms', '600/m', '100000/h', '99999/24h']) {
      const spec = resolveLimits({ x: { rate } }).get('x')?.rate;
      if (spec === undefined) return expect.fail('no rate');
      expect(Math.round(spec.intervalMs * 1000) * spec.count).toBeGreaterThanOrEqual(spec.perMs * 1000);
      expect(Math.round(spec.intervalMs * 1000) * 1000).toBe(Math.round(spec.intervalMs * 1e6)); // on the µs grid
    }
  });

  it('takes burst and learnRetryAfter', () => {
    expect(resolveLimits({ x: { rate: '10/s', burst: 10, learnRetryAfter: true } }).get('x')).toStrictEqual({
      name: 'x',
      rate: { count: 10, perMs: 1000, burst: 10, intervalMs: 100 },
      learnRetryAfter: true,
    });
  });

  it('resolves no limits to an empty map', () => {
    expect(resolveLimits({}).size).toBe(0);
  });

  it.each<[string, unknown, string, RegExp]>([
    ['a name with a capital', { Email: { concurrency: 1 } }, 'limits.Email', /lower-case letter/],
    ['a name starting with a digit', { '1x': { concurrency: 1 } }, 'limits.1x', /lower-case/],
    ['a name of 65 characters', { [`a${'b'.repeat(64)}`]: { concurrency: 1 } }, `limits.a${'b'.repeat(64)}`, /63/],
    ['a name with a dash', { 'a-b': { concurrency: 1 } }, 'limits.a-b', /lower-case/],
    ['neither concurrency nor rate', { x: {} }, 'limits.x', /needs concurrency, rate or both/],
    ['a declaration that is not an object', { x: 5 }, 'limits.x', /must be an object/],
    ['an unknown field', { x: { concurency: 5 } }, 'limits.x.concurency', /unknown field/],
    ['concurrency 0', { x: { concurrency: 0 } }, 'limits.x.concurrency', /integer 1 to 1000/],
    ['concurrency 1001', { x: { concurrency: 1001 } }, 'limits.x.concurrency', /integer 1 to 1000/],
    ['concurrency 2.5', { x: { concurrency: 2.5 } }, 'limits.x.concurrency', /integer/],
    ['concurrency as a string', { x: { concurrency: '5' } }, 'limits.x.concurrency', /integer/],
    ['a bad rate', { x: { rate: '40/day' } }, 'limits.x.rate', /must be a rate/],
    ['burst 0', { x: { rate: '10/s', burst: 0 } }, 'limits.x.burst', /integer 1 to the rate's count \(10\)/],
    ['burst above count', { x: { rate: '10/s', burst: 11 } }, 'limits.x.burst', /\(10\)/],
    ['burst 1.5', { x: { rate: '10/s', burst: 1.5 } }, 'limits.x.burst', /integer/],
    ['burst without rate', { x: { concurrency: 2, burst: 2 } }, 'limits.x.burst', /needs a rate/],
    [
      'learnRetryAfter without rate',
      { x: { concurrency: 2, learnRetryAfter: true } },
      'limits.x.learnRetryAfter',
      /needs a rate/,
    ],
    [
      'learnRetryAfter not boolean',
      { x: { rate: '1/s', learnRetryAfter: 'yes' } },
      'limits.x.learnRetryAfter',
      /true or false/,
    ],
  ])('rejects %s, naming the field', (_what, decls, field, message) => {
    const err = failure(() => resolveLimits(decls as LimitDeclarations));
    expect(err.field).toBe(field);
    expect(err.message).toMatch(message);
  });

  it('rejects limits that are not an object', () => {
    expect(failure(() => resolveLimits(null as unknown as LimitDeclarations)).field).toBe('limits');
    expect(failure(() => resolveLimits([] as unknown as LimitDeclarations)).field).toBe('limits');
  });

  it('names the limit on the error', () => {
    expect(failure(() => resolveLimits({ db: { concurrency: 0 } })).limit).toBe('db');
  });

  it('accepts learnRetryAfter: false without a rate', () => {
    expect(resolveLimits({ x: { concurrency: 2, learnRetryAfter: false } }).get('x')?.learnRetryAfter).toBe(false);
  });
});

describe('Function: defineLimits', () => {
  it('returns the declarations as given', () => {
    const decls = { email_provider: { rate: '40/s', concurrency: 50, learnRetryAfter: true } } as const;
    expect(defineLimits(decls)).toBe(decls);
  });

  it('throws for a bad declaration where it is written', () => {
    expect(failure(() => defineLimits({ email_provider: { rate: '40/x' } })).field).toBe('limits.email_provider.rate');
  });
});

describe('Constant: LIMIT_NAME', () => {
  it('takes lower snake case up to 64 characters', () => {
    expect(LIMIT_NAME.test('email_provider')).toBe(true);
    expect(LIMIT_NAME.test(`a${'1'.repeat(63)}`)).toBe(true);
    expect(LIMIT_NAME.test('_x')).toBe(false);
  });
});
