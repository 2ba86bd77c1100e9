import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { DEFAULTS } from '../../../shared/config/resources.js';
import type { ScheduleDeclaration } from '../../../shared/schedule/declaration.js';
import { ScheduleError, ScheduleValidationError } from '../../../shared/schedule/errors.js';
import type { ScheduleSpec } from '../../../shared/schedule/model.js';
import {
  checkScheduleName,
  parseDeclaration,
  parseScheduleSpec,
  renderSpec,
  SCHEDULE_NAME,
  scheduleRequestSchema,
} from '../../../shared/schedule/spec.js';
import type { IntervalRules } from '../../../shared/schedule/spec.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';

const registry = new TaskRegistry([
  defineTask({
    type: 'send_email',
    schema: z.object({ to: z.email(), subject: z.string().optional(), meta: z.object({ n: z.number() }).optional() }),
    handler: async () => ({}),
  }),
  defineTask({ type: 'sales_report', schema: z.object({}).loose(), handler: async () => ({}) }),
  defineTask({ type: 'when', schema: z.object({ day: z.coerce.date() }), handler: async () => ({}) }),
]);

const email = { type: 'send_email', payload: { to: 'ops@example.com' } };

/** The validation error parseScheduleSpec throws for `body` (fails the test if none). */
function failure(body: unknown, options?: Parameters<typeof parseScheduleSpec>[2]): ScheduleValidationError {
  try {
    parseScheduleSpec(body, registry, options);
  } catch (err) {
    expect(err).toBeInstanceOf(ScheduleValidationError);
    expect(err).toBeInstanceOf(ScheduleError);
    return err as ScheduleValidationError;
  }
  return expect.fail(`accepted ${JSON.stringify(body)}`);
}

describe('Function: parseScheduleSpec', () => {
  describe('rejects with the field named (422)', () => {
    it.each<[string, Record<string, unknown>, string, RegExp?]>([
      ['a bad cron', { ...email, cron: '61 * * * *' }, 'cron', /minute/i],
      ['a cron of 3 fields', { ...email, cron: '* * *' }, 'cron', /5 fields/],
      ['a 7-field cron (year)', { ...email, cron: '0 0 0 1 1 * 2027' }, 'cron', /year/],
      ['a cron that never matches', { ...email, cron: '0 0 30 2 *' }, 'cron', /never/],
      ['a cron that is not a string', { ...email, cron: 5 }, 'cron'],
      ['an unknown zone', { ...email, cron: '* * * * *', timezone: 'Mars/Olympus_Mons' }, 'timezone', /IANA/],
      ['every 30s (below 1 minute)', { ...email, every: '30s' }, 'every', /1m/],
      ['every 0s', { ...email, every: '0s' }, 'every'],
      ['an unparseable every', { ...email, every: 'hourly' }, 'every', /duration/],
      ['every 1.5h', { ...email, every: '1.5h' }, 'every', /duration/],
      ['every beyond 366 days', { ...email, every: '400d' }, 'every'],
      [
        'end_at before start_at',
        { ...email, every: '1h', start_at: '2026-02-01T00:00:00Z', end_at: '2026-01-01T00:00:00Z' },
        'end_at',
        /after start_at/,
      ],
      [
        'end_at equal to start_at (another spelling)',
        { ...email, every: '1h', start_at: '2026-01-01T01:00:00Z', end_at: '2026-01-01T02:00:00+01:00' },
        'end_at',
      ],
      ['start_at without offset', { ...email, every: '1h', start_at: '2026-01-01T00:00:00' }, 'start_at', /offset/],
      ['end_at as a date only', { ...email, every: '1h', end_at: '2026-01-01' }, 'end_at'],
      ['an unknown field', { ...email, every: '1h', evry: '2h' }, 'evry', /unknown field/],
      [
        'an unknown field next to another error',
        { ...email, every: '30s', cronn: '* * * * *' },
        'cronn',
        /unknown field/,
      ],
      [
        'two of cron/every/at',
        { ...email, cron: '* * * * *', every: '1h' },
        'cron',
        /exactly one of cron, every or at/,
      ],
      ['all of cron/every/at', { ...email, cron: '* * * * *', every: '1h', at: '2026-01-01T00:00:00Z' }, 'cron'],
      ['none of cron/every/at', { ...email }, 'cron', /exactly one/],
      ['at in a bad format', { ...email, at: 'next tuesday' }, 'at', /ISO-8601/],
      ['at on a day that does not exist', { ...email, at: '2026-02-30T10:00:00Z' }, 'at'],
      ['a payload failing the type schema', { type: 'send_email', every: '1h', payload: { to: 'nope' } }, 'payload.to'],
      [
        'a nested payload failure',
        { type: 'send_email', every: '1h', payload: { to: 'a@b.co', meta: { n: 'x' } } },
        'payload.meta.n',
      ],
      ['a missing payload the type requires', { type: 'send_email', every: '1h' }, 'payload.to'],
      [
        'a payload that cannot be stored',
        { type: 'sales_report', every: '1h', payload: { big: 2 ** 60 } },
        'payload.big',
        /2\^53/,
      ],
      [
        'a payload too large',
        { type: 'sales_report', every: '1h', payload: { s: 'x'.repeat(DEFAULTS.maxPayloadBytes) } },
        'payload',
        /exceeds the limit/,
      ],
      [
        'an unknown task type',
        { type: 'send_emial', every: '1h' },
        'type',
        /unknown task type "send_emial".*send_email/,
      ],
      ['no task type', { every: '1h' }, 'type', /required/],
      ['a limit of 0', { ...email, every: '1h', limit: 0 }, 'limit'],
      ['a limit above 1,000,000', { ...email, every: '1h', limit: 1_000_001 }, 'limit'],
      ['a fractional limit', { ...email, every: '1h', limit: 1.5 }, 'limit'],
      ['a jitter above the maximum', { ...email, every: '1h', jitter: '2h' }, 'jitter', /1h/],
      ['a bad jitter', { ...email, every: '1h', jitter: '5 minutes' }, 'jitter'],
      ['a catchup_window of 0s', { ...email, every: '1h', catchup_window: '0s' }, 'catchup_window'],
      ['a catchup_window beyond 366d', { ...email, every: '1h', catchup_window: '367d' }, 'catchup_window'],
      ['an unknown overlap policy', { ...email, every: '1h', overlap: 'queue' }, 'overlap'],
      ['an unknown misfire policy', { ...email, every: '1h', misfire: 'fire_all' }, 'misfire'],
      ['an unknown priority', { ...email, every: '1h', priority: 'urgent' }, 'priority'],
      ['max_attempts of 0', { ...email, every: '1h', max_attempts: 0 }, 'max_attempts'],
      [
        'max_attempts above the limit',
        { ...email, every: '1h', max_attempts: DEFAULTS.maxAttemptsLimit + 1 },
        'max_attempts',
      ],
      [
        'timeout_seconds above the limit',
        { ...email, every: '1h', timeout_seconds: DEFAULTS.maxTaskTimeoutSeconds + 1 },
        'timeout_seconds',
      ],
      ['a description over 500 characters', { ...email, every: '1h', description: 'x'.repeat(501) }, 'description'],
      ['a description with a lone surrogate', { ...email, every: '1h', description: 'a\uD800b' }, 'description'],
    ])('%s → %s', (_what, body, field, message) => {
      const err = failure(body);
      expect(err.field).toBe(field);
      expect(err.message.startsWith(`${field}: `)).toBe(true);
      if (message !== undefined) expect(err.message).toMatch(message);
    });

    it.each([null, 'cron', 42, [], undefined])('a body that is not an object (%j) → body', (body) => {
      expect(failure(body).field).toBe('body');
    });
  });

  describe('normalises', () => {
    it('fills every default in', () => {
      const { spec } = parseScheduleSpec({ ...email, cron: '30 2 * * *' }, registry);
      expect(spec).toStrictEqual({
        cron: '30 2 * * *',
        timezone: 'UTC',
        jitter_ms: 0,
        overlap: 'forbid',
        misfire: 'skip',
        catchup_window_ms: DEFAULTS.scheduleCatchupWindowSeconds * 1000,
        task: { type: 'send_email', payload: { to: 'ops@example.com' }, priority: 'normal' },
      } satisfies ScheduleSpec);
    });

    it('converts every field given', () => {
      const { spec } = parseScheduleSpec(
        {
          every: '1h30m',
          timezone: 'Asia/Dhaka',
          start_at: '2026-01-01T06:00:00+06:00',
          end_at: '2026-12-31T23:59:59Z',
          limit: 10,
          jitter: '5m',
          overlap: 'buffer_one',
          misfire: 'catch_up',
          catchup_window: '2d',
          type: 'send_email',
          payload: { to: 'ops@example.com', subject: 'hi' },
          priority: 'high',
          max_attempts: 3,
          timeout_seconds: 120,
          description: 'the nightly mail',
        },
        registry,
      );
      expect(spec).toStrictEqual({
        every_ms: 90 * 60_000,
        timezone: 'Asia/Dhaka',
        start_at: Date.parse('2026-01-01T00:00:00Z'),
        end_at: Date.parse('2026-12-31T23:59:59Z'),
        limit: 10,
        jitter_ms: 300_000,
        overlap: 'buffer_one',
        misfire: 'catch_up',
        catchup_window_ms: 2 * 86_400_000,
        task: {
          type: 'send_email',
          payload: { to: 'ops@example.com', subject: 'hi' },
          priority: 'high',
          max_attempts: 3,
          timeout_seconds: 120,
        },
        description: 'the nightly mail',
      } satisfies ScheduleSpec);
    });

    it('defaults the payload to {} and accepts cron nicknames, and seconds where the deployment allows them', () => {
      expect(parseScheduleSpec({ type: 'sales_report', cron: '@daily' }, registry).spec.task.payload).toEqual({});
      const rules = { allowSecondsField: true, minIntervalSeconds: 10 };
      expect(parseScheduleSpec({ type: 'sales_report', cron: '*/10 * * * * *' }, registry, { rules }).spec.cron).toBe(
        '*/10 * * * * *',
      );
    });

    it('tidies the whitespace of a cron pattern', () => {
      expect(parseScheduleSpec({ type: 'sales_report', cron: ' 30  2 * *\t* ' }, registry).spec.cron).toBe(
        '30 2 * * *',
      );
    });

    it('stores the payload as sent, not as the schema made it', () => {
      const { spec } = parseScheduleSpec({ type: 'when', every: '1d', payload: { day: '2026-01-01' } }, registry);
      expect(spec.task.payload).toEqual({ day: '2026-01-01' });
    });

    it('reads at with an offset as it says, and a local at in the timezone', () => {
      const utc = parseScheduleSpec({ type: 'sales_report', at: '2026-12-24T18:00:00+01:00' }, registry).spec;
      expect(utc.at).toBe(Date.parse('2026-12-24T17:00:00Z'));
      const local = (at: string, timezone: string): number | undefined =>
        parseScheduleSpec({ type: 'sales_report', at, timezone }, registry).spec.at;
      expect(local('2026-12-24T18:00:00', 'America/New_York')).toBe(Date.parse('2026-12-24T23:00:00Z'));
      expect(local('2026-12-24T18:00', 'Asia/Dhaka')).toBe(Date.parse('2026-12-24T12:00:00Z'));
      expect(local('2026-12-24T18:00:00', 'UTC')).toBe(Date.parse('2026-12-24T18:00:00Z'));
      // A local time that does not exist runs at the end of the gap; a repeated one at its first occurrence.
      expect(local('2026-03-08T02:30:00', 'America/New_York')).toBe(Date.parse('2026-03-08T07:00:00Z'));
      expect(local('2026-11-01T01:30:00', 'America/New_York')).toBe(Date.parse('2026-11-01T05:30:00Z'));
    });
  });

  describe('hash', () => {
    const hashOf = (body: unknown): string => parseScheduleSpec(body, registry).hash;
    const base = {
      type: 'send_email',
      payload: { to: 'ops@example.com', subject: 's' },
      cron: '0 9 * * MON-FRI',
      timezone: 'Europe/London',
    };

    it('is a SHA-256 hex digest', () => {
      expect(hashOf(base)).toMatch(/^[0-9a-f]{64}$/);
    });

    it('does not depend on key order (body or payload) or on defaults being spelled out', () => {
      const reordered = {
        timezone: 'Europe/London',
        cron: '0 9 * * MON-FRI',
        payload: { subject: 's', to: 'ops@example.com' },
        type: 'send_email',
      };
      const spelledOut = {
        ...base,
        jitter: '0s',
        overlap: 'forbid',
        misfire: 'skip',
        catchup_window: '1h',
        priority: 'normal',
      };
      expect(hashOf(reordered)).toBe(hashOf(base));
      expect(hashOf(spelledOut)).toBe(hashOf(base));
      expect(hashOf({ ...base, catchup_window: '60m' })).toBe(hashOf(base));
      expect(hashOf({ type: 'sales_report', every: '90m' })).toBe(hashOf({ type: 'sales_report', every: '1h30m' }));
      expect(hashOf({ type: 'sales_report', every: '1h', start_at: '2026-01-01T06:00:00+06:00' })).toBe(
        hashOf({ type: 'sales_report', every: '1h', start_at: '2026-01-01T00:00:00.000Z' }),
      );
    });

    it('changes with anything that changes the schedule', () => {
      const h = hashOf(base);
      expect(hashOf({ ...base, cron: '0 10 * * MON-FRI' })).not.toBe(h);
      expect(hashOf({ ...base, timezone: 'Europe/Paris' })).not.toBe(h);
      expect(hashOf({ ...base, payload: { to: 'ops@example.com', subject: 't' } })).not.toBe(h);
      expect(hashOf({ ...base, overlap: 'allow' })).not.toBe(h);
      expect(hashOf({ ...base, jitter: '1s' })).not.toBe(h);
      expect(hashOf({ ...base, description: 'x' })).not.toBe(h);
    });
  });

  describe('options.type (schedules declared in code)', () => {
    it('takes the type from the option', () => {
      const { spec } = parseScheduleSpec({ every: '1h' }, registry, { type: 'sales_report' });
      expect(spec.task.type).toBe('sales_report');
    });

    it('refuses a type in the body', () => {
      const err = failure({ every: '1h', type: 'sales_report' }, { type: 'sales_report' });
      expect(err.field).toBe('type');
      expect(err.message).toMatch(/^type: /);
    });

    it('refuses an unregistered type', () => {
      expect(failure({ every: '1h' }, { type: 'gone' }).field).toBe('type');
    });
  });
});

describe('Function: renderSpec', () => {
  const bodies: Record<string, unknown>[] = [
    { ...email, cron: '30 2 * * *' },
    { type: 'sales_report', cron: '*/10 * * * * *', timezone: 'Asia/Dhaka', jitter: '1m30s', limit: 5 },
    {
      type: 'send_email',
      payload: { to: 'a@b.co', meta: { n: 1 } },
      every: '90m',
      start_at: '2026-01-01T06:00:00+06:00',
      end_at: '2027-01-01T00:00:00.250Z',
      overlap: 'replace',
      misfire: 'run_once',
      catchup_window: '36h',
      priority: 'low',
      max_attempts: 2,
      timeout_seconds: 30,
      description: 'every ninety minutes',
    },
    { type: 'sales_report', at: '2026-12-24T18:00:00', timezone: 'America/New_York' },
  ];

  it.each(bodies)('gives back the same spec and hash when parsed again (%#)', (body) => {
    const rules = { allowSecondsField: true, minIntervalSeconds: 1 };
    const first = parseScheduleSpec(body, registry, { rules });
    const wire = renderSpec(first.spec);
    const again = parseScheduleSpec(wire, registry, { rules });
    expect(again.spec).toStrictEqual(first.spec);
    expect(again.hash).toBe(first.hash);
    // Valid for the schema as it stands, and JSON all the way.
    expect(scheduleRequestSchema.safeParse(wire).success).toBe(true);
    expect(JSON.parse(JSON.stringify(wire))).toEqual(wire);
  });

  it('writes durations as text, times as ISO UTC, the task at the top level, defaults included', () => {
    const { spec } = parseScheduleSpec(
      { type: 'send_email', payload: { to: 'a@b.co' }, every: '90m', start_at: '2026-01-01T06:00:00+06:00' },
      registry,
    );
    expect(renderSpec(spec)).toStrictEqual({
      every: '1h30m',
      timezone: 'UTC',
      start_at: '2026-01-01T00:00:00.000Z',
      jitter: '0s',
      overlap: 'forbid',
      misfire: 'skip',
      catchup_window: '1h',
      type: 'send_email',
      payload: { to: 'a@b.co' },
      priority: 'normal',
    });
  });
});

describe('Function: checkScheduleName', () => {
  it.each(['nightly-report', 'a', 'Tenant_42.sync:daily', '0', `a${'b'.repeat(127)}`])('accepts %j', (name) => {
    expect(() => checkScheduleName(name)).not.toThrow();
    expect(SCHEDULE_NAME.test(name)).toBe(true);
  });

  it.each(['', '-x', '_x', 'a b', 'a/b', 'é', `a${'b'.repeat(128)}`])('refuses %j with field name', (name) => {
    try {
      checkScheduleName(name);
      expect.fail(`accepted ${JSON.stringify(name)}`);
    } catch (err) {
      expect(err).toBeInstanceOf(ScheduleValidationError);
      expect((err as ScheduleValidationError).field).toBe('name');
      expect((err as Error).message).toMatch(/^name: /);
    }
  });
});

describe('Function: parseDeclaration', () => {
  it('checks the name and parses the rest with the task type', () => {
    const decl: ScheduleDeclaration = { name: 'nightly-report', cron: '30 0 * * *', timezone: 'Asia/Dhaka' };
    const parsed = parseDeclaration(decl, 'sales_report', registry);
    expect(parsed.name).toBe('nightly-report');
    expect(parsed.spec.task.type).toBe('sales_report');
    expect(parsed.spec.cron).toBe('30 0 * * *');
    const { name: _name, ...rest } = decl;
    expect(parsed).toEqual({ name: 'nightly-report', ...parseScheduleSpec(rest, registry, { type: 'sales_report' }) });
  });

  it('gives the same spec and hash as the same schedule through the API', () => {
    const fromCode = parseDeclaration({ name: 'n', every: '15m', payload: { to: 'a@b.co' } }, 'send_email', registry);
    const fromApi = parseScheduleSpec({ type: 'send_email', every: '15m', payload: { to: 'a@b.co' } }, registry);
    expect(fromCode.spec).toStrictEqual(fromApi.spec);
    expect(fromCode.hash).toBe(fromApi.hash);
  });

  it('reports a bad name as name, and other errors with the schedule named', () => {
    const bad = (decl: ScheduleDeclaration): ScheduleValidationError => {
      try {
        parseDeclaration(decl, 'sales_report', registry);
      } catch (err) {
        expect(err).toBeInstanceOf(ScheduleValidationError);
        return err as ScheduleValidationError;
      }
      return expect.fail('accepted');
    };
    expect(bad({ name: 'no spaces', every: '1h' }).field).toBe('name');
    const err = bad({ name: 'fast', every: '10s' });
    expect(err.field).toBe('every');
    expect(err.schedule).toBe('fast');
    expect(err.message).toMatch(/^every: /);
    expect(bad({ name: 'typo', every: '1h', ...({ evry: '1h' } as object) }).field).toBe('evry');
  });
});

describe('Function: checkInterval (the smallest interval, one rule for every and cron)', () => {
  const defaults: IntervalRules = { minIntervalSeconds: DEFAULTS.scheduleMinIntervalSeconds, allowSecondsField: false };
  const refusal = (body: Record<string, unknown>, rules = defaults) =>
    failure({ type: 'sales_report', ...body }, { rules });

  it('by default: a seconds field is refused (cron), every below a minute is refused (every)', () => {
    expect(refusal({ cron: '* * * * * *' })).toMatchObject({ field: 'cron' });
    expect(refusal({ cron: '0 * * * * *' }).message).toMatch(/^cron: a seconds field is not allowed/);
    expect(refusal({ every: '59s' })).toMatchObject({ field: 'every', message: expect.stringMatching(/at least 1m/) });
    expect(parseScheduleSpec({ type: 'sales_report', every: '1m' }, registry).spec.every_ms).toBe(60_000);
    expect(parseScheduleSpec({ type: 'sales_report', cron: '* * * * *' }, registry).spec.cron).toBe('* * * * *');
  });

  it('with seconds allowed, a 6-field cron is held to the smallest interval like every', () => {
    const rules = { minIntervalSeconds: 10, allowSecondsField: true };
    expect(refusal({ cron: '* * * * * *' }, rules)).toMatchObject({ field: 'cron' });
    expect(refusal({ cron: '0,5 * * * * *' }, rules).message).toMatch(/5s apart/);
    expect(refusal({ every: '9s' }, rules)).toMatchObject({ field: 'every' });
    expect(parseScheduleSpec({ type: 'sales_report', cron: '*/10 * * * * *' }, registry, { rules }).spec.cron).toBe(
      '*/10 * * * * *',
    );
  });

  it('a larger minimum holds 5-field crons to it, across the day boundary too', () => {
    const rules = { minIntervalSeconds: 7200, allowSecondsField: false };
    expect(refusal({ cron: '*/30 * * * *' }, rules)).toMatchObject({ field: 'cron' });
    // 23:00 to 00:00 the next day.
    expect(refusal({ cron: '0 0,23 * * *' }, rules).message).toMatch(/1h apart/);
    expect(refusal({ every: '1h59m' }, rules)).toMatchObject({ field: 'every' });
    expect(parseScheduleSpec({ type: 'sales_report', cron: '0 */2 * * *' }, registry, { rules }).spec.cron).toBe(
      '0 */2 * * *',
    );
    expect(parseScheduleSpec({ type: 'sales_report', cron: '@daily' }, registry, { rules }).spec.cron).toBe('@daily');
  });
});
