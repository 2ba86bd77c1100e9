/**
 * A pipeline's logical dates, pure. A run processes one **data interval** `[start, end)`: for a
 * scheduled pipeline, from one time of its schedule to the next; the run is created (by the
 * schedule) at `end`, and its **logical date** is `start` — as in Airflow: the run of
 * `nightly_sales@2026-11-28` processes 28 November and starts at the schedule's time on the 29th.
 * A pipeline without a schedule has daily intervals (midnight to midnight in its time zone).
 *
 * A run is named by its logical date: `YYYY-MM-DD` in the pipeline's zone when its schedule runs
 * at most once a day (or it has none), else the ISO time (UTC).
 *
 * @module
 */
import { isTimeZone, nextTimeAfter, type TimingSpec, timesBetween, wallTimeToEpoch } from '../schedule/timing.js';
import { PipelineDefinitionError, PipelineRequestError } from './errors.js';

const DAY = 86_400_000;

/** When a pipeline's runs fall. */
export interface PipelineTiming {
  /** The schedule's cron, or none (daily intervals, runs made by hand or by backfill). */
  readonly cron?: string;
  readonly timezone: string;
  /** Whether runs are named by calendar date (at most one run a day). */
  readonly daily: boolean;
}

/** A run's interval, epoch ms. */
export interface Interval {
  readonly start: number;
  readonly end: number;
}

/** The timing of a pipeline; checks the zone and tells whether its schedule runs at most once a day. */
export function timingOf(pipeline: string, cron: string | undefined, timezone: string): PipelineTiming {
  if (!isTimeZone(timezone)) {
    throw new PipelineDefinitionError(`pipeline "${pipeline}": timezone "${timezone}" is not a known time zone`);
  }
  if (cron === undefined) return { timezone, daily: true };
  return { cron, timezone, daily: atMostDaily(cron) };
}

/**
 * Whether a cron runs at most once a local day: a nickname other than `@hourly`, or fixed
 * second (6 fields), minute and hour fields (`30 0 * * *`, `0 6 * * 1`, `0 3 1 * *`). A time
 * repeated at a fall-back runs once (shared/schedule/timing.ts), so such a cron never runs twice
 * in a day. Decided from the fields: start-up stays fast with many pipelines.
 */
export function atMostDaily(cron: string): boolean {
  const fields = cron.trim().split(/\s+/);
  if (fields.length === 1) return /^@(yearly|annually|monthly|weekly|daily|midnight)$/i.test(fields[0] ?? '');
  const fixed = fields.length === 6 ? fields.slice(0, 3) : fields.slice(0, 2);
  return fields.length >= 5 && fixed.every((f) => /^\d+$/.test(f));
}

/** The interval of the run the schedule creates at `fireTime` (one of its times): from the time before. */
export function intervalEndingAt(t: PipelineTiming, fireTime: number): Interval {
  if (t.cron === undefined) return { start: fireTime - DAY, end: fireTime };
  return { start: previousTime(t, fireTime), end: fireTime };
}

/** The logical date's name (`2026-11-28`, or an ISO time for a pipeline that runs more than daily). */
export function logicalKeyOf(t: PipelineTiming, start: number): string {
  return t.daily ? localDate(start, t.timezone) : new Date(start).toISOString();
}

/**
 * The interval of the run named `key` (`logical_date` of a request: `YYYY-MM-DD` for a daily
 * pipeline, else an ISO time that is one of the schedule's times).
 * @throws PipelineRequestError naming `field`
 */
export function intervalOfKey(t: PipelineTiming, key: string, field = 'logical_date'): Interval {
  if (typeof key !== 'string') throw new PipelineRequestError(field, `${field} is required`);
  if (t.daily) {
    const midnight = localMidnight(key, t.timezone, field);
    if (t.cron === undefined) return { start: midnight, end: localMidnight(nextDate(key), t.timezone, field) };
    const start = nextTimeAfter(specOf(t), midnight - 1);
    if (start === undefined || localDate(start, t.timezone) !== key) {
      throw new PipelineRequestError(field, `${field}: the schedule (${t.cron}, ${t.timezone}) does not run on ${key}`);
    }
    return { start, end: nextTimeAfter(specOf(t), start) ?? start + DAY };
  }
  const start = Date.parse(key);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(key) || Number.isNaN(start)) {
    throw new PipelineRequestError(field, `${field} must be an ISO time (this pipeline runs more than once a day)`);
  }
  if (nextTimeAfter(specOf(t), start - 1) !== start) {
    throw new PipelineRequestError(field, `${field}: ${key} is not a time of the schedule (${t.cron}, ${t.timezone})`);
  }
  return { start, end: nextTimeAfter(specOf(t), start) ?? start + DAY };
}

/** A date as its run is named (`2026-11-28`, or the ISO time). @throws PipelineRequestError naming `field` */
export function canonicalKey(t: PipelineTiming, key: string, field = 'logical_date'): string {
  return logicalKeyOf(t, intervalOfKey(t, key, field).start);
}

/** The logical date after `key`. */
export function nextKey(t: PipelineTiming, key: string): string {
  return logicalKeyOf(t, intervalOfKey(t, key).end);
}

/** The logical date before `key`. */
export function previousKey(t: PipelineTiming, key: string): string {
  const { start } = intervalOfKey(t, key);
  // Unscheduled: daily dates; half a day before a local midnight is the day before, whatever its length.
  return logicalKeyOf(t, t.cron === undefined ? start - DAY / 2 : intervalEndingAt(t, start).start);
}

/**
 * The latest logical date whose run is due at `now`: for a scheduled pipeline, the date of the
 * run its latest time created (the interval that ended then); else today, in its zone.
 */
export function latestKey(t: PipelineTiming, now: number): string {
  if (t.cron === undefined) return logicalKeyOf(t, now);
  const fired = intervalEndingAt(t, now + 1).start;
  return logicalKeyOf(t, intervalEndingAt(t, fired).start);
}

/**
 * The logical dates (interval starts) from `fromKey` to `toKey` inclusive, oldest first, at most
 * `max` of them.
 * @throws PipelineRequestError naming `from` / `to`, or `to` when the range holds more than `max`
 */
export function keysBetween(t: PipelineTiming, fromKey: string, toKey: string, max: number): string[] {
  const from = rangeStart(t, fromKey, 'from');
  const to = rangeStart(t, toKey, 'to');
  if (to < from) throw new PipelineRequestError('to', 'to must not be before from');
  let starts: number[];
  if (t.cron === undefined) {
    starts = [];
    for (let key = fromKey; localMidnight(key, t.timezone, 'from') <= to; key = nextDate(key)) {
      starts.push(localMidnight(key, t.timezone, 'from'));
      if (starts.length > max) break;
    }
  } else {
    starts = timesBetween(specOf(t), from - 1, to, max + 1);
  }
  if (starts.length > max) {
    throw new PipelineRequestError('to', `the range holds more than ${max} runs (the deployment's maximum); split it`);
  }
  return starts.map((s) => logicalKeyOf(t, s));
}

/** The first time at or after a range bound (a date: its local midnight; else the ISO time). */
function rangeStart(t: PipelineTiming, key: string, field: string): number {
  if (typeof key !== 'string') throw new PipelineRequestError(field, `${field} is required`);
  if (/^\d{4}-\d{2}-\d{2}$/.test(key)) {
    const midnight = localMidnight(key, t.timezone, field);
    return field === 'to' ? localMidnight(nextDate(key), t.timezone, field) - 1 : midnight;
  }
  const at = Date.parse(key);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(key) || Number.isNaN(at)) {
    throw new PipelineRequestError(field, `${field} must be a date (YYYY-MM-DD) or an ISO time`);
  }
  return at;
}

/** The latest time of the schedule strictly before `at`. */
function previousTime(t: PipelineTiming, at: number): number {
  const spec = specOf(t);
  for (const window of [2 * 3_600_000, 2 * DAY, 9 * DAY, 35 * DAY, 400 * DAY]) {
    let found = nextTimeAfter(spec, at - window - 1);
    if (found === undefined || found >= at) continue;
    for (let next = nextTimeAfter(spec, found); next !== undefined && next < at; next = nextTimeAfter(spec, next)) {
      found = next;
    }
    return found;
  }
  return at - DAY;
}

function specOf(t: { readonly cron?: string; readonly timezone: string }): TimingSpec {
  return { cron: t.cron, timezone: t.timezone } as TimingSpec;
}

/** `YYYY-MM-DD` of an instant in a zone. */
export function localDate(at: number, zone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    at,
  );
}

/** The instant a local date begins in a zone. @throws PipelineRequestError naming `field` for a malformed date */
function localMidnight(date: string, zone: string, field: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  const wall = m === null ? Number.NaN : Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (Number.isNaN(wall) || new Date(wall).toISOString().slice(0, 10) !== date) {
    throw new PipelineRequestError(field, `${field} must be a date (YYYY-MM-DD), got ${JSON.stringify(date)}`);
  }
  return wallTimeToEpoch(wall, zone);
}

function nextDate(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + DAY).toISOString().slice(0, 10);
}
