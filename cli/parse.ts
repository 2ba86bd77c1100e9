import { InvalidArgumentError } from 'commander';
import { PRIORITIES, isPriority, type Priority } from '../shared/config/resources.js';

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30m`, `2h`, `7d`, `45s`, `1w`, `1h30m` → milliseconds. */
export function parseDuration(value: string): number {
  const re = /(\d+(?:\.\d+)?)([smhdw])/gy;
  let total = 0;
  let matched = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(value)) !== null) {
    total += Number(m[1]) * (UNITS[m[2] as string] as number);
    matched = re.lastIndex;
  }
  if (value === '' || matched !== value.length || !(total > 0)) {
    throw new InvalidArgumentError('expected a duration such as 30m, 2h, 7d or 1h30m.');
  }
  return total;
}

/** `5`, `5/s`, `300/m` → per second. */
export function parseRate(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(?:\/(s|m|min))?$/.exec(value.trim());
  const n = m === null ? Number.NaN : Number(m[1]) / (m[2] === undefined || m[2] === 's' ? 1 : 60);
  if (!(n > 0) || n > 10_000)
    throw new InvalidArgumentError('expected a rate such as 10/s or 300/m (at most 10000/s).');
  return n;
}

export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('expected a whole number ≥ 1.');
  return n;
}

export function parseNonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('expected a whole number ≥ 0.');
  return n;
}

export function parseTarget(value: string): 'original' | Priority {
  if (value === 'original' || isPriority(value)) return value;
  throw new InvalidArgumentError(`expected original, ${PRIORITIES.join(', ')}.`);
}

export function parseJson(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch (err) {
    throw new InvalidArgumentError(`not valid JSON (${err instanceof Error ? err.message : String(err)}).`);
  }
}

export function parseWatch(value: string): number {
  const n = Number(value);
  if (!(n >= 1) || n > 3600) throw new InvalidArgumentError('expected seconds between refreshes, 1-3600.');
  return n;
}

/**
 * Kaj makes task ids as `t_` + 32 hex digits. Accepted here: `t_` then letters, digits, `_`
 * or `-` (a little wider, so ids made by hand in tests and fixtures pass), at most 256 characters.
 * Anything else cannot name a task, and sent to DynamoDB an empty or oversized key is a
 * ValidationException that reads like an outage: a usage error says what is wrong instead.
 */
const TASK_ID = /^t_[A-Za-z0-9_-]{1,254}$/;

export function parseTaskId(value: string): string {
  if (value === '')
    throw new InvalidArgumentError('a task id cannot be empty (task ids look like t_5c0f…, see `kaj dlq list`).');
  if (!TASK_ID.test(value)) {
    throw new InvalidArgumentError(
      `"${printable(value)}" is not a task id (t_ followed by letters, digits, _ or -, such as t_5c0f…).`,
    );
  }
  return value;
}

/** For a variadic `--task <id...>`: checks each id and collects them. */
export function collectTaskIds(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), parseTaskId(value)];
}

/** Shows control characters and overlong input without disturbing the terminal. */
function printable(value: string): string {
  const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  return shown.slice(1, -1);
}
