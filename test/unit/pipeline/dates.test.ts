import { describe, expect, it } from 'vitest';
import {
  atMostDaily,
  intervalEndingAt,
  intervalOfKey,
  keysBetween,
  logicalKeyOf,
  timingOf,
} from '../../../shared/pipeline/dates.js';
import { PipelineDefinitionError, PipelineRequestError } from '../../../shared/pipeline/errors.js';

const DHAKA = timingOf('p', '30 0 * * *', 'Asia/Dhaka');
const iso = (ms: number) => new Date(ms).toISOString();

describe('logical dates', () => {
  it('a daily schedule: runs named by the local date; the run of the 28th processes the 28th and is created on the 29th', () => {
    expect(DHAKA.daily).toBe(true);
    const i = intervalOfKey(DHAKA, '2026-11-28');
    expect([iso(i.start), iso(i.end)]).toEqual(['2026-11-27T18:30:00.000Z', '2026-11-28T18:30:00.000Z']);
    // The schedule fires at the interval's end: that time names the same run.
    expect(intervalEndingAt(DHAKA, i.end)).toEqual(i);
    expect(logicalKeyOf(DHAKA, i.start)).toBe('2026-11-28');
  });

  it('a schedule more often than daily: runs named by ISO time, which must be one of its times', () => {
    const hourly = timingOf('p', '0 * * * *', 'UTC');
    expect(hourly.daily).toBe(false);
    const i = intervalOfKey(hourly, '2026-11-28T05:00:00.000Z');
    expect(iso(i.end)).toBe('2026-11-28T06:00:00.000Z');
    expect(logicalKeyOf(hourly, i.start)).toBe('2026-11-28T05:00:00.000Z');
    expect(() => intervalOfKey(hourly, '2026-11-28T05:30:00Z')).toThrow('is not a time of the schedule');
    expect(() => intervalOfKey(hourly, '2026-11-28')).toThrow(PipelineRequestError);
  });

  it('a weekly schedule: a date it does not run on is refused, naming the field', () => {
    const mondays = timingOf('p', '0 6 * * 1', 'Europe/London');
    expect(mondays.daily).toBe(true);
    expect(logicalKeyOf(mondays, intervalOfKey(mondays, '2026-11-30').start)).toBe('2026-11-30');
    try {
      intervalOfKey(mondays, '2026-12-01');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(PipelineRequestError);
      expect((err as PipelineRequestError).field).toBe('logical_date');
    }
  });

  it('across a DST change the interval follows the wall clock (23 hours in spring)', () => {
    // 03:00 in London: 03:00Z on the 28th of March, 02:00Z on the 29th (the clocks went forward at 01:00).
    const london = timingOf('p', '0 3 * * *', 'Europe/London');
    const i = intervalOfKey(london, '2026-03-28');
    expect((i.end - i.start) / 3_600_000).toBe(23);
  });

  it('an unscheduled pipeline: daily intervals from local midnight', () => {
    const manual = timingOf('p', undefined, 'Asia/Dhaka');
    const i = intervalOfKey(manual, '2026-11-28');
    expect([iso(i.start), iso(i.end)]).toEqual(['2026-11-27T18:00:00.000Z', '2026-11-28T18:00:00.000Z']);
    expect(intervalEndingAt(manual, i.end)).toEqual(i);
  });

  it('bad dates name the field; an unknown zone is refused at definition', () => {
    for (const bad of ['2026-13-01', '2026-02-30', 'yesterday', '']) {
      expect(() => intervalOfKey(DHAKA, bad)).toThrow(PipelineRequestError);
    }
    expect(() => timingOf('p', '30 0 * * *', 'Mars/Olympus')).toThrow(PipelineDefinitionError);
  });
});

describe('atMostDaily: how runs are named, from the cron fields', () => {
  it.each([
    ['30 0 * * *', true],
    ['0 6 * * 1', true],
    ['0 3 1 * *', true],
    ['0 30 2 * * *', true],
    ['@daily', true],
    ['@weekly', true],
    ['@hourly', false],
    ['0 * * * *', false],
    ['0 0,12 * * *', false],
    ['*/30 2 * * *', false],
    ['0 9-17 * * *', false],
    ['*/10 30 2 * * *', false],
  ])('%s → %s', (cron, daily) => {
    expect(atMostDaily(cron)).toBe(daily);
    expect(timingOf('p', cron, 'UTC').daily).toBe(daily);
  });

  it('agrees with a year of the schedule: a cron named by date never runs twice on a local date', () => {
    for (const cron of ['30 0 * * *', '0 2 * * *', '0 0 * * 0', '15 1 * * *']) {
      const t = timingOf('p', cron, 'Europe/London');
      const days = keysBetween(t, '2026-01-01', '2026-12-31', 400);
      expect(new Set(days).size, cron).toBe(days.length);
      expect(days.length, cron).toBeGreaterThan(50);
    }
  });
});

describe('keysBetween', () => {
  it('the dates of a range, inclusive, oldest first', () => {
    expect(keysBetween(DHAKA, '2026-11-27', '2026-11-30', 366)).toEqual([
      '2026-11-27',
      '2026-11-28',
      '2026-11-29',
      '2026-11-30',
    ]);
  });

  it('refuses a range over the maximum (naming to) and a reversed one', () => {
    expect(() => keysBetween(DHAKA, '2025-01-01', '2026-11-30', 366)).toThrow(/more than 366 runs/);
    try {
      keysBetween(DHAKA, '2026-11-30', '2026-11-01', 366);
      expect.unreachable();
    } catch (err) {
      expect((err as PipelineRequestError).field).toBe('to');
    }
    expect(() => keysBetween(DHAKA, 'soon', '2026-11-01', 366)).toThrow(/from must be/);
  });
});
