import { describe, expect, it } from 'vitest';
import {
  checkCron,
  formatDuration,
  isTimeZone,
  jitterOffsetMs,
  nextTimeAfter,
  parseDuration,
  type TimingSpec,
  timesBetween,
  upcoming,
  wallTimeToEpoch,
} from '../../../shared/schedule/timing.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

const ms = (iso: string): number => Date.parse(iso);
const isoOf = (times: readonly number[]): string[] => times.map((t) => new Date(t).toISOString());
const cron = (pattern: string, timezone = 'UTC', extra: Partial<TimingSpec> = {}): TimingSpec => ({
  cron: pattern,
  timezone,
  ...extra,
});
/** The next `n` times of `spec` after `from`, as ISO strings. */
const next = (spec: TimingSpec, from: string, n: number): string[] => isoOf(upcoming(spec, ms(from), n));

describe('Function: parseDuration', () => {
  it.each([
    ['0s', 0],
    ['90s', 90 * S],
    ['15m', 15 * M],
    ['1h30m', 90 * M],
    ['2d', 2 * D],
    ['1d2h3m4s', D + 2 * H + 3 * M + 4 * S],
    ['90m', 90 * M],
    ['01m', M],
  ])('reads %j as %d ms', (text, expected) => {
    expect(parseDuration(text)).toBe(expected);
  });

  it.each(['', '5', 'm', '1.5h', '-5m', '30m1h', '1h1h', ' 5m', '5m ', '5M', '5ms', '1w', `${'9'.repeat(30)}d`])(
    'refuses %j',
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );
});

describe('Function: formatDuration', () => {
  it.each([
    [0, '0s'],
    [90 * S, '1m30s'],
    [5_400_000, '1h30m'],
    [D, '1d'],
    [D + 4 * S, '1d4s'],
    [366 * D, '366d'],
  ])('writes %d ms as %j', (value, text) => {
    expect(formatDuration(value)).toBe(text);
    expect(parseDuration(text)).toBe(value);
  });

  it('is the inverse of parseDuration on its canonical forms', () => {
    for (const text of ['1s', '59s', '1m', '1h1s', '2d23h59m59s'])
      expect(formatDuration(parseDuration(text) ?? -1)).toBe(text);
  });

  it.each([-1000, 1500, Number.NaN, Number.POSITIVE_INFINITY])('refuses %d ms', (value) => {
    expect(() => formatDuration(value)).toThrow(RangeError);
  });
});

describe('Function: isTimeZone', () => {
  it.each(['UTC', 'Etc/UTC', 'Asia/Dhaka', 'America/New_York', 'Europe/London'])('accepts %j', (tz) => {
    expect(isTimeZone(tz)).toBe(true);
  });

  it.each(['', 'Mars/Base', 'Europe/Londn', 'not a zone'])('refuses %j', (tz) => {
    expect(isTimeZone(tz)).toBe(false);
  });
});

describe('Function: checkCron', () => {
  it.each([
    '30 2 * * *',
    '*/5 * * * *',
    '0 0 1 * *',
    '0 9 * * MON-FRI',
    '0 0 L * *',
    '0 0 * * MON#2',
    '*/15 * * * * *',
    '0 30 2 * * *',
    '@daily',
    '@hourly',
  ])('accepts %j', (pattern) => {
    expect(checkCron(pattern, 'Europe/London')).toBeUndefined();
  });

  it('refuses a 7th (year) field with a reason that says so', () => {
    expect(checkCron('0 0 0 1 1 * 2027', 'UTC')).toMatch(/year/);
  });

  it.each([
    ['', /cron pattern/],
    ['* * *', /5 fields/],
    ['* * * * * * * *', /5 fields/],
    ['foo', /5 fields/],
    ['61 * * * *', /minute/i],
    ['0 25 * * *', /hour/i],
    ['0 0 30 2 *', /never matches/],
    ['@reboot', /reboot/],
  ])('refuses %j', (pattern, reason) => {
    expect(checkCron(pattern, 'UTC')).toMatch(reason);
  });

  it('refuses an unknown zone', () => {
    expect(checkCron('* * * * *', 'Mars/Base')).toMatch(/time zone/);
  });
});

describe('Function: nextTimeAfter', () => {
  describe('cron', () => {
    it('returns the first time strictly after the reference', () => {
      const hourly = cron('0 * * * *');
      expect(nextTimeAfter(hourly, ms('2026-01-01T01:00:00Z'))).toBe(ms('2026-01-01T02:00:00Z'));
      expect(nextTimeAfter(hourly, ms('2026-01-01T00:59:59.999Z'))).toBe(ms('2026-01-01T01:00:00Z'));
      expect(nextTimeAfter(hourly, ms('2026-01-01T01:00:00.001Z'))).toBe(ms('2026-01-01T02:00:00Z'));
    });

    it('evaluates a 6-field pattern to the second', () => {
      expect(next(cron('*/15 * * * * *'), '2026-01-01T00:00:00Z', 3)).toEqual([
        '2026-01-01T00:00:15.000Z',
        '2026-01-01T00:00:30.000Z',
        '2026-01-01T00:00:45.000Z',
      ]);
      expect(nextTimeAfter(cron('*/15 * * * * *'), ms('2026-01-01T00:00:14.999Z'))).toBe(ms('2026-01-01T00:00:15Z'));
    });

    it('runs the monthly payroll (0 0 1 * *) on the first of each month, February and leap years included', () => {
      expect(next(cron('0 0 1 * *'), '2027-12-15T00:00:00Z', 4)).toEqual([
        '2028-01-01T00:00:00.000Z',
        '2028-02-01T00:00:00.000Z',
        '2028-03-01T00:00:00.000Z',
        '2028-04-01T00:00:00.000Z',
      ]);
      // In New York: midnight local, EST then EDT.
      expect(next(cron('0 0 1 * *', 'America/New_York'), '2026-02-15T00:00:00Z', 2)).toEqual([
        '2026-03-01T05:00:00.000Z',
        '2026-04-01T04:00:00.000Z',
      ]);
    });

    it('reads the pattern in the zone and reports UTC: 00:30 in Dhaka (UTC+6) is 18:30Z the day before', () => {
      expect(next(cron('30 0 * * *', 'Asia/Dhaka'), '2026-06-01T00:00:00Z', 2)).toEqual([
        '2026-06-01T18:30:00.000Z',
        '2026-06-02T18:30:00.000Z',
      ]);
    });

    it('accepts nicknames', () => {
      expect(next(cron('@daily', 'Asia/Dhaka'), '2026-06-01T00:00:00Z', 1)).toEqual(['2026-06-01T18:00:00.000Z']);
    });

    it('honours start_at (inclusive) and end_at (inclusive)', () => {
      const spec = cron('0 * * * *', 'UTC', {
        start_at: ms('2026-01-01T05:00:00Z'),
        end_at: ms('2026-01-01T07:00:00Z'),
      });
      expect(nextTimeAfter(spec, ms('2026-01-01T00:00:00Z'))).toBe(ms('2026-01-01T05:00:00Z'));
      expect(next(spec, '2026-01-01T00:00:00Z', 10)).toEqual([
        '2026-01-01T05:00:00.000Z',
        '2026-01-01T06:00:00.000Z',
        '2026-01-01T07:00:00.000Z',
      ]);
      expect(nextTimeAfter(spec, ms('2026-01-01T07:00:00Z'))).toBeUndefined();
      const startMidHour = cron('0 * * * *', 'UTC', { start_at: ms('2026-01-01T05:00:00.001Z') });
      expect(nextTimeAfter(startMidHour, 0)).toBe(ms('2026-01-01T06:00:00Z'));
    });

    it('gives the same times whatever the process time zone', () => {
      const before = process.env.TZ;
      const spec = cron('*/30 1 * * *', 'America/New_York');
      const expected = next(spec, '2026-10-31T12:00:00Z', 4);
      try {
        for (const tz of ['Asia/Kolkata', 'America/New_York', 'Pacific/Chatham']) {
          process.env.TZ = tz;
          expect(new Date(ms('2026-01-01T00:00:00Z')).getTimezoneOffset()).not.toBe(0);
          expect(next(spec, '2026-10-31T12:00:00Z', 4)).toEqual(expected);
          expect(next(cron('30 0 * * *', 'Asia/Dhaka'), '2026-06-01T00:00:00Z', 1)).toEqual([
            '2026-06-01T18:30:00.000Z',
          ]);
        }
      } finally {
        if (before === undefined) delete process.env.TZ;
        else process.env.TZ = before;
      }
    });
  });

  describe('every', () => {
    it('aligns to the Unix epoch without start_at (PUT twice, same times)', () => {
      const spec: TimingSpec = { every_ms: 15 * M, timezone: 'UTC' };
      expect(nextTimeAfter(spec, ms('2026-01-01T00:07:13Z'))).toBe(ms('2026-01-01T00:15:00Z'));
      expect(nextTimeAfter(spec, ms('2026-01-01T00:15:00Z'))).toBe(ms('2026-01-01T00:30:00Z'));
      const odd: TimingSpec = { every_ms: 7 * M, timezone: 'UTC' };
      const t = nextTimeAfter(odd, ms('2026-01-01T00:00:00Z')) ?? 0;
      expect(t % (7 * M)).toBe(0);
      expect(t - ms('2026-01-01T00:00:00Z')).toBeGreaterThan(0);
      expect(t - ms('2026-01-01T00:00:00Z')).toBeLessThanOrEqual(7 * M);
    });

    it('aligns to start_at when given, and starts at start_at itself', () => {
      const start = ms('2026-01-01T00:07:13Z');
      const spec: TimingSpec = { every_ms: 10 * M, timezone: 'UTC', start_at: start };
      expect(nextTimeAfter(spec, 0)).toBe(start);
      expect(nextTimeAfter(spec, start - 1)).toBe(start);
      expect(nextTimeAfter(spec, start)).toBe(start + 10 * M);
      expect(next(spec, '2026-01-01T01:00:00Z', 2)).toEqual(['2026-01-01T01:07:13.000Z', '2026-01-01T01:17:13.000Z']);
    });

    it('stops at end_at (inclusive)', () => {
      const spec: TimingSpec = { every_ms: H, timezone: 'UTC', end_at: ms('2026-01-01T03:00:00Z') };
      expect(next(spec, '2026-01-01T01:30:00Z', 5)).toEqual(['2026-01-01T02:00:00.000Z', '2026-01-01T03:00:00.000Z']);
    });

    it('ignores the zone (an interval is elapsed time, DST or not)', () => {
      const spec: TimingSpec = { every_ms: H, timezone: 'America/New_York' };
      expect(next(spec, '2026-11-01T04:30:00Z', 3)).toEqual([
        '2026-11-01T05:00:00.000Z',
        '2026-11-01T06:00:00.000Z',
        '2026-11-01T07:00:00.000Z',
      ]);
    });
  });

  describe('at', () => {
    const at = ms('2026-12-24T23:00:00Z');

    it('is the one time while it is ahead, then nothing', () => {
      expect(nextTimeAfter({ at, timezone: 'UTC' }, at - 1)).toBe(at);
      expect(nextTimeAfter({ at, timezone: 'UTC' }, at)).toBeUndefined();
      expect(upcoming({ at, timezone: 'UTC' }, 0, 5)).toEqual([at]);
    });

    it('is dropped outside start_at / end_at', () => {
      expect(nextTimeAfter({ at, timezone: 'UTC', start_at: at + 1 }, 0)).toBeUndefined();
      expect(nextTimeAfter({ at, timezone: 'UTC', end_at: at - 1 }, 0)).toBeUndefined();
      expect(nextTimeAfter({ at, timezone: 'UTC', start_at: at, end_at: at }, 0)).toBe(at);
    });
  });

  it('has no time for a spec without cron, every_ms or at', () => {
    expect(nextTimeAfter({ timezone: 'UTC' }, 0)).toBeUndefined();
  });
});

describe('DST', () => {
  describe('America/New_York', () => {
    it('spring-forward (2026-03-08): 02:30 does not exist and runs once at 03:00 EDT (07:00Z)', () => {
      expect(next(cron('30 2 * * *', 'America/New_York'), '2026-03-07T12:00:00Z', 3)).toEqual([
        '2026-03-08T07:00:00.000Z',
        '2026-03-09T06:30:00.000Z',
        '2026-03-10T06:30:00.000Z',
      ]);
    });

    it('spring-forward: a wildcard pattern in the skipped hour runs once at 07:00Z (croner alone skips it)', () => {
      expect(next(cron('*/30 2 * * *', 'America/New_York'), '2026-03-07T12:00:00Z', 3)).toEqual([
        '2026-03-08T07:00:00.000Z',
        '2026-03-09T06:00:00.000Z',
        '2026-03-09T06:30:00.000Z',
      ]);
      expect(next(cron('0,30 2 * * *', 'America/New_York'), '2026-03-07T12:00:00Z', 1)).toEqual([
        '2026-03-08T07:00:00.000Z',
      ]);
    });

    it('spring-forward: hourly runs once an hour, 03:00 EDT right after 01:00 EST', () => {
      expect(next(cron('0 * * * *', 'America/New_York'), '2026-03-08T05:30:00Z', 3)).toEqual([
        '2026-03-08T06:00:00.000Z', // 01:00 EST
        '2026-03-08T07:00:00.000Z', // 03:00 EDT (02:00 skipped)
        '2026-03-08T08:00:00.000Z', // 04:00 EDT
      ]);
    });

    it('fall-back (2026-11-01): 01:30 occurs twice and runs once, at the first (05:30Z, EDT)', () => {
      expect(next(cron('30 1 * * *', 'America/New_York'), '2026-10-31T12:00:00Z', 2)).toEqual([
        '2026-11-01T05:30:00.000Z',
        '2026-11-02T06:30:00.000Z',
      ]);
    });

    it('fall-back: */30 1 * * * runs 05:00Z and 05:30Z only, not again at 06:00Z, 06:30Z (EST)', () => {
      expect(next(cron('*/30 1 * * *', 'America/New_York'), '2026-10-31T12:00:00Z', 4)).toEqual([
        '2026-11-01T05:00:00.000Z',
        '2026-11-01T05:30:00.000Z',
        '2026-11-02T06:00:00.000Z',
        '2026-11-02T06:30:00.000Z',
      ]);
    });

    it('fall-back: hourly runs 05:00Z (01:00 EDT) then 07:00Z (02:00 EST); 06:00Z (01:00 EST) is dropped', () => {
      expect(next(cron('0 * * * *', 'America/New_York'), '2026-11-01T03:30:00Z', 4)).toEqual([
        '2026-11-01T04:00:00.000Z',
        '2026-11-01T05:00:00.000Z',
        '2026-11-01T07:00:00.000Z',
        '2026-11-01T08:00:00.000Z',
      ]);
    });

    it('fall-back: from inside the repeated hour, the next time is 02:00 EST', () => {
      // 06:10Z is 01:10 EST: 01:20 and 01:40 already ran at their first occurrence (EDT).
      expect(next(cron('*/20 * * * *', 'America/New_York'), '2026-11-01T06:10:00Z', 2)).toEqual([
        '2026-11-01T07:00:00.000Z',
        '2026-11-01T07:20:00.000Z',
      ]);
      expect(next(cron('*/20 * * * * *', 'America/New_York'), '2026-11-01T06:59:30Z', 2)).toEqual([
        '2026-11-01T07:00:00.000Z',
        '2026-11-01T07:00:20.000Z',
      ]);
    });
  });

  describe('Europe/London', () => {
    it('spring-forward (2026-03-29): 01:30 does not exist and runs once at 02:00 BST (01:00Z)', () => {
      expect(next(cron('30 1 * * *', 'Europe/London'), '2026-03-28T12:00:00Z', 2)).toEqual([
        '2026-03-29T01:00:00.000Z',
        '2026-03-30T00:30:00.000Z',
      ]);
    });

    it('spring-forward: hourly gives 01:00Z once (01:00 GMT skipped and 02:00 BST are the same instant)', () => {
      expect(next(cron('0 * * * *', 'Europe/London'), '2026-03-28T23:30:00Z', 4)).toEqual([
        '2026-03-29T00:00:00.000Z',
        '2026-03-29T01:00:00.000Z',
        '2026-03-29T02:00:00.000Z',
        '2026-03-29T03:00:00.000Z',
      ]);
    });

    it('spring-forward: every minute keeps going, one run a minute, none twice', () => {
      const times = timesBetween(
        cron('* * * * *', 'Europe/London'),
        ms('2026-03-29T00:57:00Z'),
        ms('2026-03-29T01:03:00Z'),
        100,
      );
      expect(isoOf(times)).toEqual([
        '2026-03-29T00:58:00.000Z',
        '2026-03-29T00:59:00.000Z',
        '2026-03-29T01:00:00.000Z',
        '2026-03-29T01:01:00.000Z',
        '2026-03-29T01:02:00.000Z',
        '2026-03-29T01:03:00.000Z',
      ]);
    });

    it('spring-forward: a pattern only in the skipped hour runs once that day', () => {
      expect(next(cron('*/30 1 * * *', 'Europe/London'), '2026-03-28T12:00:00Z', 2)).toEqual([
        '2026-03-29T01:00:00.000Z',
        '2026-03-30T00:00:00.000Z',
      ]);
    });

    it('fall-back (2026-10-25): hourly runs 00:00Z (01:00 BST) then 02:00Z (02:00 GMT); 01:00Z is dropped', () => {
      expect(next(cron('0 * * * *', 'Europe/London'), '2026-10-24T23:30:00Z', 3)).toEqual([
        '2026-10-25T00:00:00.000Z',
        '2026-10-25T02:00:00.000Z',
        '2026-10-25T03:00:00.000Z',
      ]);
      expect(nextTimeAfter(cron('0 * * * *', 'Europe/London'), ms('2026-10-25T01:30:00Z'))).toBe(
        ms('2026-10-25T02:00:00Z'),
      );
    });

    it('fall-back: 01:30 runs once, at 00:30Z (BST)', () => {
      expect(next(cron('30 1 * * *', 'Europe/London'), '2026-10-24T12:00:00Z', 2)).toEqual([
        '2026-10-25T00:30:00.000Z',
        '2026-10-26T01:30:00.000Z',
      ]);
    });
  });

  it('Asia/Dhaka has no DST: 30 0 * * * is 18:30Z the day before, all year', () => {
    for (const day of ['2026-01-15', '2026-03-29', '2026-07-01', '2026-11-01']) {
      const t = nextTimeAfter(cron('30 0 * * *', 'Asia/Dhaka'), ms(`${day}T00:00:00Z`));
      expect(new Date(t ?? 0).toISOString()).toBe(`${day}T18:30:00.000Z`);
    }
  });

  /**
   * Brute force: walk the instants minute by minute and apply the rules directly to the zone's
   * wall clock (read with Intl.formatToParts, not the code under test).
   */
  describe.each([
    ['America/New_York', '2026-03-08T03:00:00Z'],
    ['America/New_York', '2026-11-01T02:00:00Z'],
    ['Europe/London', '2026-03-28T22:00:00Z'],
    ['Europe/London', '2026-10-24T22:00:00Z'],
    ['Australia/Lord_Howe', '2026-10-03T12:00:00Z'],
    ['Australia/Lord_Howe', '2026-04-04T12:00:00Z'],
  ])('%s around %s', (zone, from) => {
    const parts = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
    });
    /** Wall clock as minutes since the epoch (a local date-time read as UTC). */
    const wallMinutes = (t: number): number => {
      const p = Object.fromEntries(parts.formatToParts(t).map((x) => [x.type, Number(x.value)]));
      return Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day, p.hour, p.minute) / M;
    };
    const oracle = (matches: (hour: number, minute: number) => boolean): number[] => {
      const start = ms(from);
      const out: number[] = [];
      let highest = wallMinutes(start);
      for (let t = start + M; t <= start + 8 * H; t += M) {
        const wall = wallMinutes(t);
        // Wall minutes reached at t for the first time: the skipped ones of a gap, then wall itself.
        const fresh: number[] = [];
        for (let w = highest + 1; w <= wall; w += 1) fresh.push(w);
        if (fresh.some((w) => matches(Math.floor((w % 1440) / 60), w % 60))) out.push(t);
        highest = Math.max(highest, wall);
      }
      return out;
    };

    it.each([
      ['*/15 * * * *', (_h: number, m: number) => m % 15 === 0],
      ['*/30 1,2 * * *', (h: number, m: number) => (h === 1 || h === 2) && m % 30 === 0],
      ['10 2 * * *', (h: number, m: number) => h === 2 && m === 10],
      ['0 * * * *', (_h: number, m: number) => m === 0],
    ])('%s follows the rules (gap: once at its end; repeat: first occurrence only)', (pattern, matches) => {
      const start = ms(from);
      expect(timesBetween(cron(pattern, zone), start, start + 8 * H, 1000)).toEqual(oracle(matches));
    });
  });
});

describe('Function: wallTimeToEpoch', () => {
  it('maps a plain local time, the first of a repeated one, and a skipped one to the end of its gap', () => {
    const ny = 'America/New_York';
    expect(wallTimeToEpoch(ms('2026-12-24T18:00:00Z'), ny)).toBe(ms('2026-12-24T23:00:00Z'));
    expect(wallTimeToEpoch(ms('2026-11-01T01:30:00Z'), ny)).toBe(ms('2026-11-01T05:30:00Z'));
    expect(wallTimeToEpoch(ms('2026-03-08T02:30:00Z'), ny)).toBe(ms('2026-03-08T07:00:00Z'));
    expect(wallTimeToEpoch(ms('2026-12-24T18:00:00.250Z'), ny)).toBe(ms('2026-12-24T23:00:00.250Z'));
    // Samoa skipped 30 December 2011 entirely (UTC−10 to UTC+14).
    expect(wallTimeToEpoch(ms('2011-12-30T12:00:00Z'), 'Pacific/Apia')).toBe(ms('2011-12-30T10:00:00Z'));
    expect(wallTimeToEpoch(ms('2026-12-24T18:00:00Z'), 'UTC')).toBe(ms('2026-12-24T18:00:00Z'));
  });
});

describe('Function: timesBetween', () => {
  const hourly = cron('0 * * * *');

  it('lists afterMs < t <= untilMs, ascending', () => {
    expect(isoOf(timesBetween(hourly, ms('2026-01-01T01:00:00Z'), ms('2026-01-01T04:00:00Z'), 10))).toEqual([
      '2026-01-01T02:00:00.000Z',
      '2026-01-01T03:00:00.000Z',
      '2026-01-01T04:00:00.000Z',
    ]);
  });

  it('stops at max', () => {
    expect(timesBetween(hourly, 0, ms('2026-01-01T00:00:00Z'), 3)).toHaveLength(3);
    expect(timesBetween(hourly, 0, ms('2026-01-01T00:00:00Z'), 0)).toEqual([]);
  });

  it('is empty when nothing falls in the range', () => {
    expect(timesBetween(hourly, ms('2026-01-01T01:00:00Z'), ms('2026-01-01T01:59:59Z'), 10)).toEqual([]);
  });
});

describe('Function: jitterOffsetMs', () => {
  it('is deterministic: the same name gives the same offset (a fixed value, so other processes agree)', () => {
    expect(jitterOffsetMs('nightly-report', 600 * S)).toBe(jitterOffsetMs('nightly-report', 600 * S));
    // sha256('nightly-report'), first 6 bytes, modulo 600 s: pinned so a change of derivation shows.
    expect(jitterOffsetMs('nightly-report', 600 * S)).toBe(562_000);
    expect(jitterOffsetMs('a', 600 * S)).not.toBe(jitterOffsetMs('b', 600 * S));
  });

  it('is 0 without a window', () => {
    expect(jitterOffsetMs('x', 0)).toBe(0);
  });

  it('lies in [0, window), in whole seconds from 1 s up', () => {
    for (const window of [1 * S, 1500, 60 * S, 600 * S, 3600 * S]) {
      for (let i = 0; i < 200; i += 1) {
        const offset = jitterOffsetMs(`s-${i}`, window);
        expect(offset).toBeGreaterThanOrEqual(0);
        expect(offset).toBeLessThan(window);
        expect(offset % S).toBe(0);
      }
    }
    const sub = new Set(Array.from({ length: 200 }, (_, i) => jitterOffsetMs(`s-${i}`, 250)));
    expect([...sub].every((o) => Number.isInteger(o) && o >= 0 && o < 250)).toBe(true);
    expect(sub.size).toBeGreaterThan(100);
  });

  it('spreads a herd: 10,000 schedules over 10 minutes, the busiest second holds at most twice the mean', () => {
    const window = 600 * S;
    const perSecond = new Map<number, number>();
    for (let i = 0; i < 10_000; i += 1) {
      const second = jitterOffsetMs(`tenant-${String(i).padStart(5, '0')}`, window) / S;
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
    }
    const mean = 10_000 / 600;
    expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(2 * mean);
    expect(perSecond.size).toBe(600);
  });
});
