/**
 * Durations as text: `90s`, `15m`, `1h30m`, `2d` (schedules' `every`, workflows' sleeps).
 *
 * @module
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const DURATION = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;
const UNITS = [
  ['d', DAY],
  ['h', HOUR],
  ['m', MINUTE],
  ['s', SECOND],
] as const;

/**
 * Parses a duration such as `90s`, `15m`, `1h30m`, `2d` or `0s` into milliseconds: one or more
 * `<integer><unit>` groups, units `d h m s` each at most once and in that order.
 * @returns the duration in ms, or undefined for anything else (empty, `1.5h`, `30m1h`, `5`, ` 5m`)
 */
export function parseDuration(text: string): number | undefined {
  if (typeof text !== 'string' || text === '') return undefined;
  const match = DURATION.exec(text);
  if (match === null) return undefined;
  let ms = 0;
  UNITS.forEach(([, unitMs], i) => {
    const digits = match[i + 1];
    if (digits !== undefined) ms += Number(digits) * unitMs;
  });
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/**
 * The shortest canonical text of a duration, the inverse of {@link parseDuration}:
 * `5_400_000` → `1h30m`, `90_000` → `1m30s`, `0` → `0s`.
 * @throws RangeError unless `ms` is a non-negative whole number of seconds
 */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0 || ms % SECOND !== 0) {
    throw new RangeError(`a duration must be a non-negative whole number of seconds, got ${ms} ms`);
  }
  if (ms === 0) return '0s';
  let rest = ms;
  let text = '';
  for (const [unit, unitMs] of UNITS) {
    const n = Math.floor(rest / unitMs);
    if (n > 0) text += `${n}${unit}`;
    rest -= n * unitMs;
  }
  return text;
}
