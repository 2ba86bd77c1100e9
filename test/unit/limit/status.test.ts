import { describe, expect, it } from 'vitest';
import { resolveLimits } from '../../../shared/limit/spec.js';
import { limitStatus, RECENT_REFUSAL_MS } from '../../../shared/limit/status.js';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const specs = resolveLimits({
  email_provider: { rate: '40/s', concurrency: 50, learnRetryAfter: true },
  database: { concurrency: 60 },
  per_tenant: { concurrency: 5 },
  bursty: { rate: '10/s', burst: 5 },
});

/** Every declared limit and kind, in the order of the rows. */
const DECLARED_ROWS = [
  'bursty/rate',
  'database/concurrency',
  'email_provider/concurrency',
  'email_provider/rate',
  'per_tenant/concurrency',
];

describe('Function: limitStatus', () => {
  it('gives an empty row per declared limit and kind nothing has used yet', () => {
    const rows = limitStatus(specs, [], NOW);
    expect(rows.map((r) => `${r.limit}/${r.kind}`)).toEqual(DECLARED_ROWS);
    expect(rows.find((r) => r.limit === 'database')).toStrictEqual({
      limit: 'database',
      kind: 'concurrency',
      capacity: 60,
      holders: 0,
      expired: 0,
      tokensAvailable: 60,
      refused: 0,
      refusedRecently: false,
    });
    expect(rows.find((r) => r.limit === 'bursty')?.tokensAvailable).toBe(5);
  });

  it('counts live and ended leases of a concurrency item', () => {
    const [row] = limitStatus(
      specs,
      [{ pk: 'c#database', holders: { 'a.1': NOW + 30_000, 'a.2': NOW, 'dead.1': NOW - 1, 'dead.2': NOW - 99 } }],
      NOW,
    ).filter((r) => r.limit === 'database');
    expect(row).toMatchObject({ capacity: 60, holders: 2, expired: 2, tokensAvailable: 58 });
  });

  it('counts the rate starts available now (GCRA), to the microsecond', () => {
    const rate = (tat: number | undefined, limit = 'bursty') =>
      limitStatus(specs, [{ pk: `r#${limit}`, ...(tat === undefined ? {} : { tat }) }], NOW).find(
        (r) => r.limit === limit && r.kind === 'rate',
      )?.tokensAvailable;
    expect(rate(undefined)).toBe(5);
    expect(rate(NOW - 10_000)).toBe(5); // idle: the whole burst
    expect(rate(NOW)).toBe(5);
    expect(rate(NOW + 100)).toBe(4);
    expect(rate(NOW + 399.999)).toBe(1);
    expect(rate(NOW + 400)).toBe(1);
    expect(rate(NOW + 400.001)).toBe(0);
    expect(rate(NOW + 5000)).toBe(0);
    expect(rate(NOW + 0.001, 'email_provider')).toBe(0); // burst 1: any tat ahead of now
    expect(rate(NOW, 'email_provider')).toBe(1);
  });

  it('shows a pause (no starts available) until it ends', () => {
    const row = (now: number) =>
      limitStatus(specs, [{ pk: 'r#email_provider', tat: NOW - 5, paused_until: NOW + 30_000 }], now).find(
        (r) => r.limit === 'email_provider' && r.kind === 'rate',
      );
    expect(row(NOW)).toMatchObject({ tokensAvailable: 0, pausedUntil: NOW + 30_000 });
    expect(row(NOW + 30_000)).toMatchObject({ tokensAvailable: 1 });
    expect(row(NOW + 30_000)).not.toHaveProperty('pausedUntil');
  });

  it('gives a row per key of a keyed limit (and no empty unkeyed one), ordered by key', () => {
    const rows = limitStatus(
      specs,
      [
        { pk: 'c#per_tenant#t2', holders: { 'a.1': NOW + 1 } },
        { pk: 'c#per_tenant#t1', holders: { 'a.2': NOW + 1, 'a.3': NOW + 1 } },
        { pk: 'c#per_tenant#with#hash', holders: {} },
      ],
      NOW,
    ).filter((r) => r.limit === 'per_tenant');
    expect(rows.map((r) => [r.key, r.holders, r.tokensAvailable])).toEqual([
      ['t1', 2, 3],
      ['t2', 1, 4],
      ['with#hash', 0, 5],
    ]);
  });

  it('shows refusals, recent within a minute', () => {
    const row = (refusedAt: number) =>
      limitStatus(specs, [{ pk: 'c#database', refused: 12, refused_at: refusedAt }], NOW).find(
        (r) => r.limit === 'database',
      );
    expect(row(NOW - RECENT_REFUSAL_MS)).toMatchObject({
      refused: 12,
      refusedAt: NOW - RECENT_REFUSAL_MS,
      refusedRecently: true,
    });
    expect(row(NOW - RECENT_REFUSAL_MS - 1)).toMatchObject({ refused: 12, refusedRecently: false });
  });

  it('leaves out items of limits no longer declared, of a kind a limit no longer has, or not of Kaj', () => {
    const rows = limitStatus(
      specs,
      [
        { pk: 'c#gone', holders: { 'a.1': NOW + 1 } },
        { pk: 'r#database', tat: NOW },
        { pk: 'c#bursty', holders: {} },
        { pk: 'something-else' },
      ],
      NOW,
    );
    expect(rows.map((r) => `${r.limit}/${r.kind}`)).toEqual(DECLARED_ROWS);
  });
});
