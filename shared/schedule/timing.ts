/**
 * Pure time computation for schedules: durations, zones, cron evaluation, nominal times and the
 * herd-spreading offset. No clock is read here; every time is epoch milliseconds (UTC).
 *
 * Cron patterns are matched by croner, always at a fixed UTC offset of 0, against the *wall-clock
 * time* of the schedule's zone (a local date-time written as if it were UTC). The zone's
 * daylight-saving transitions are then applied here, with one rule for every pattern:
 * - a wall time skipped by spring-forward runs once, at the instant the clocks jumped over it
 *   (the first valid instant after it), and never a second time at the same instant;
 * - a wall time that occurs twice at fall-back runs once, at its first occurrence.
 *
 * croner applies these rules itself only to "fixed-time" patterns (`30 2 * * *`); a pattern with a
 * wildcard, step, list or range in its time fields (every 30 minutes of hour 1, `0,30 2 * * *`)
 * runs on both occurrences of a repeated hour, and not at all in a skipped one. Evaluating in wall time
 * and converting here treats every pattern alike (and is several times faster than croner's own
 * zone handling, which goes through `Intl` at each step: ~6 µs a time against ~75 µs, warm).
 */
import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import type { ScheduleSpec } from './model.js';

export { formatDuration, parseDuration } from '../runtime/duration.js';

/** The fields of a spec that decide its nominal times. */
export type TimingSpec = Pick<ScheduleSpec, 'cron' | 'every_ms' | 'at' | 'timezone' | 'start_at' | 'end_at'>;

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// ---------------------------------------------------------------------------------------------
// Zones
// ---------------------------------------------------------------------------------------------

/** True if `tz` is a time zone this runtime knows (an IANA name such as `Asia/Dhaka`, or `UTC`). */
export function isTimeZone(tz: string): boolean {
  if (typeof tz !== 'string' || tz === '') return false;
  try {
    new Intl.DateTimeFormat(undefined, { timeZone: tz });
    return true;
  } catch (err) {
    if (err instanceof RangeError) return false;
    throw err;
  }
}

/** Zones without offsets, handled without `Intl`. */
const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'Etc/UCT', 'Etc/Universal', 'Etc/Zulu', 'GMT', 'Etc/GMT']);

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** `12/31/1969, 19:00:00`: what the formatter writes (en-US, numeric fields, 24-hour clock). */
const FORMATTED = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+):(\d+)$/;

/**
 * The wall-clock time in `zone` at the instant `t`, as the epoch ms of that date-time read as UTC
 * (so wall times compare and subtract like instants). Milliseconds are kept.
 */
function wallTime(t: number, zone: string): number {
  if (UTC_ZONES.has(zone)) return t;
  const ms = ((t % SECOND) + SECOND) % SECOND;
  const f = formatter(zone);
  // format() and a regular expression: four times faster than formatToParts().
  const m = FORMATTED.exec(f.format(t - ms));
  const [month, day, year, hour, minute, second] =
    m === null ? fieldsOf(f.formatToParts(t - ms)) : m.slice(1).map(Number);
  const date = new Date(0);
  date.setUTCFullYear(year ?? 0, (month ?? 1) - 1, day ?? 1);
  date.setUTCHours(hour ?? 0, minute ?? 0, second ?? 0, ms);
  return date.getTime();
}

/** [month, day, year, hour, minute, second] from formatToParts(), should format() ever read otherwise. */
function fieldsOf(parts: Intl.DateTimeFormatPart[]): number[] {
  const order = ['month', 'day', 'year', 'hour', 'minute', 'second'];
  const fields = [1, 1, 0, 0, 0, 0];
  for (const part of parts) {
    const i = order.indexOf(part.type);
    if (i >= 0) fields[i] = Number(part.value);
  }
  return fields;
}

const OFFSET_CACHE_MAX = 50_000;
/** Per zone: hour (epoch ms / 1 h) → the zone's offset throughout that hour, when it has one offset. */
const hourOffsets = new Map<string, Map<number, number>>();

/** The zone's offset from UTC at the instant `t`, in ms (whole seconds). */
function offsetAt(t: number, zone: string): number {
  if (UTC_ZONES.has(zone)) return 0;
  let hours = hourOffsets.get(zone);
  if (hours === undefined) {
    hours = new Map();
    hourOffsets.set(zone, hours);
  }
  const hour = Math.floor(t / HOUR);
  const cached = hours.get(hour);
  if (cached !== undefined) return cached;
  const whole = t - (((t % SECOND) + SECOND) % SECOND);
  const offset = wallTime(whole, zone) - whole;
  // Offsets change at most once an hour: the same offset at both ends holds throughout.
  const start = hour * HOUR;
  const end = start + HOUR - SECOND;
  const atStart = whole === start ? offset : wallTime(start, zone) - start;
  const atEnd = whole === end ? offset : wallTime(end, zone) - end;
  if (atStart === atEnd) {
    if (hours.size >= OFFSET_CACHE_MAX) hours.clear();
    hours.set(hour, atStart);
  }
  return offset;
}

/**
 * The instant a wall-clock time (epoch ms of the local date-time read as UTC) stands for in
 * `zone`: the first occurrence of a time repeated at fall-back, and for a time skipped by
 * spring-forward the instant the clocks jumped over it (the first valid instant after it).
 */
export function wallTimeToEpoch(wall: number, zone: string): number {
  if (UTC_ZONES.has(zone)) return wall;
  const ms = ((wall % SECOND) + SECOND) % SECOND;
  const whole = wall - ms;
  const before = offsetAt(whole - DAY, zone);
  const after = offsetAt(whole + DAY, zone);
  // The larger offset gives the earlier instant: try it first.
  const offsets = before >= after ? [before, after] : [after, before];
  for (const offset of offsets) {
    const t = whole - offset;
    if (offsetAt(t, zone) === offset) return t + ms;
  }
  if (before === after) return whole - before + ms; // two transitions within two days: none known
  // A gap: the instant the wall clock first reaches or passes `wall`, to the second.
  let lo = Math.floor((whole - Math.max(before, after)) / SECOND); // wall clock before `wall`
  let hi = Math.ceil((whole - Math.min(before, after)) / SECOND); // wall clock past `wall`
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallTime(mid * SECOND, zone) >= whole) hi = mid;
    else lo = mid;
  }
  return hi * SECOND;
}

// ---------------------------------------------------------------------------------------------
// Cron
// ---------------------------------------------------------------------------------------------

const CRON_CACHE_MAX = 1000;
const crons = new Map<string, Cron>();

/** A croner instance matching `pattern` in wall time (a fixed offset of 0). @throws on a bad pattern */
function cronFor(pattern: string): Cron {
  let cron = crons.get(pattern);
  if (cron === undefined) {
    // `utcOffset: 0` rather than `timezone: 'UTC'`: the same matches, without croner's Intl round trips.
    cron = new Cron(pattern, { utcOffset: 0, mode: '5-or-6-parts', paused: true });
    if (crons.size >= CRON_CACHE_MAX) crons.clear();
    crons.set(pattern, cron);
  }
  return cron;
}

/**
 * Why croner would not evaluate `pattern` in `timezone`, or undefined if it would. Accepts
 * 5 fields (`minute hour day month weekday`), 6 (seconds first) and croner's nicknames
 * (`@daily`, `@hourly`, …); refuses the 7th (year) field and patterns that never match.
 */
export function checkCron(pattern: string, timezone: string): string | undefined {
  if (typeof pattern !== 'string' || pattern.trim() === '') return 'must be a cron pattern such as "30 2 * * *"';
  if (!isTimeZone(timezone)) return `unknown time zone "${timezone}"`;
  const fields = pattern.trim().split(/\s+/).length;
  const expected = 'give 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first)';
  if (fields === 7) return `a 7th (year) field is not supported: ${expected}`;
  if (!pattern.trim().startsWith('@') && fields !== 5 && fields !== 6) return `has ${fields} field(s): ${expected}`;
  let cron: Cron;
  try {
    cron = new Cron(pattern, { utcOffset: 0, mode: '5-or-6-parts', paused: true });
  } catch (err) {
    return (err instanceof Error ? err.message : String(err)).replace(/^CronPattern:\s*/, '');
  }
  // Without a year field a pattern that matches at all matches within a few years of any date.
  if (cron.nextRun(new Date(0)) === null) return 'never matches (no such date, e.g. 30 February)';
  return undefined;
}

/** The first instant strictly after `afterMs` at which `pattern` matches the wall clock of `zone`. */
function nextCronTime(pattern: string, zone: string, afterMs: number): number | undefined {
  const cron = cronFor(pattern);
  if (UTC_ZONES.has(zone)) return cron.nextRun(new Date(afterMs))?.getTime();
  // Wall times up to the wall time of `afterMs` map to instants up to `afterMs` (a repeated hour's
  // first occurrence is earlier still), so the search starts there.
  let from = afterMs + offsetAt(afterMs, zone);
  for (let guard = 0; guard < 10_000; guard += 1) {
    const next = cron.nextRun(new Date(from));
    if (next === null) return undefined;
    const wall = next.getTime();
    const t = wallTimeToEpoch(wall, zone);
    if (t > afterMs) return t;
    // `afterMs` lies in the second occurrence of wall times repeated at fall-back, and `wall` ran
    // at its first. So did every wall time up to the one the clocks were turned back from: go on
    // from there (that wall time is the turn-back instant read at the earlier, larger offset).
    const turnBack = offsetChange(t, afterMs, zone);
    from = turnBack === undefined ? wall : Math.max(wall, turnBack + (wall - t) - 1);
  }
  return undefined;
}

/** The first instant (whole second) in `(lo, hi]` at which the zone's offset differs from that at `lo`. */
function offsetChange(lo: number, hi: number, zone: string): number | undefined {
  const offset = offsetAt(lo, zone);
  if (offsetAt(hi, zone) === offset) return undefined;
  let a = Math.floor(lo / SECOND);
  let b = Math.ceil(hi / SECOND);
  while (b - a > 1) {
    const mid = Math.floor((a + b) / 2);
    if (offsetAt(mid * SECOND, zone) === offset) a = mid;
    else b = mid;
  }
  return b * SECOND;
}

// ---------------------------------------------------------------------------------------------
// Nominal times
// ---------------------------------------------------------------------------------------------

/**
 * The first nominal time of `spec` strictly after `afterMs`, within `start_at` (inclusive) and
 * `end_at` (inclusive); undefined when there is none. `every_ms` times are `anchor + k·every_ms`
 * with the anchor `start_at` when given, else the Unix epoch. Cron times are whole seconds.
 * @throws croner's error for a cron pattern {@link checkCron} would refuse
 */
export function nextTimeAfter(spec: TimingSpec, afterMs: number): number | undefined {
  const from = spec.start_at !== undefined ? Math.max(afterMs, spec.start_at - 1) : afterMs;
  let t: number | undefined;
  if (spec.cron !== undefined) {
    t = nextCronTime(spec.cron, spec.timezone, from);
  } else if (spec.every_ms !== undefined) {
    if (!(spec.every_ms > 0)) return undefined;
    const anchor = spec.start_at ?? 0;
    t = anchor + (Math.floor((from - anchor) / spec.every_ms) + 1) * spec.every_ms;
  } else if (spec.at !== undefined) {
    t = spec.at > from ? spec.at : undefined;
  }
  if (t === undefined || (spec.end_at !== undefined && t > spec.end_at)) return undefined;
  return t;
}

/** The nominal times `t` with `afterMs < t <= untilMs`, ascending, at most `max` of them. */
export function timesBetween(spec: TimingSpec, afterMs: number, untilMs: number, max: number): number[] {
  const times: number[] = [];
  let cursor = afterMs;
  while (times.length < max) {
    const t = nextTimeAfter(spec, cursor);
    if (t === undefined || t > untilMs) break;
    times.push(t);
    cursor = t;
  }
  return times;
}

/** The next `n` nominal times after `afterMs` (fewer when the schedule ends). */
export function upcoming(spec: TimingSpec, afterMs: number, n: number): number[] {
  return timesBetween(spec, afterMs, Number.POSITIVE_INFINITY, n);
}

// ---------------------------------------------------------------------------------------------
// Jitter
// ---------------------------------------------------------------------------------------------

/**
 * The fixed offset in `[0, jitterMs)` at which the schedule `name` fires after each nominal time,
 * spreading schedules that share a time across the window. Derived from a SHA-256 of the name,
 * so it is the same in every process and run. Whole seconds when `jitterMs >= 1000`; 0 when
 * `jitterMs` is 0.
 */
export function jitterOffsetMs(name: string, jitterMs: number): number {
  if (!(jitterMs >= 1)) return 0;
  const n = createHash('sha256').update(name).digest().readUIntBE(0, 6);
  if (jitterMs >= SECOND) return (n % Math.floor(jitterMs / SECOND)) * SECOND;
  return n % Math.floor(jitterMs);
}
