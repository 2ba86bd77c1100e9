/**
 * What the workflow context checks of its arguments: step and sleep names, signal names,
 * durations. Each bad argument is a permanent error naming it (replaying the same code would fail
 * the same way).
 *
 * @module
 */
import { DEFAULTS } from '../config/resources.js';
import { PermanentError } from '../retry/errors.js';
import { parseDuration } from '../runtime/duration.js';
import { type Duration, SIGNAL_NAME } from './define.js';
import { InvalidStepNameError } from './errors.js';

const MAX_NAME_LENGTH = 200;

/** A step's or sleep's name: a string of 1-200 characters. */
export function checkName(name: unknown, runId: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH) {
    throw new InvalidStepNameError(name, { taskId: runId });
  }
  return name;
}

/** A signal's name, as the signal route accepts it (`SIGNAL_NAME`). */
export function checkSignalName(name: unknown, runId: string): void {
  if (typeof name !== 'string' || !SIGNAL_NAME.test(name)) {
    throw new PermanentError(
      `a signal name must be lower snake case, 1-64 characters (${SIGNAL_NAME}), got ${JSON.stringify(String(name).slice(0, 40))}`,
      { code: 'INVALID_SIGNAL_NAME', taskId: runId },
    );
  }
}

/** A duration in ms (a number, or text such as `2d`): 0 to 365 days. */
export function durationMs(duration: Duration, name: string, runId: string): number {
  const ms = typeof duration === 'number' ? duration : parseDuration(duration);
  if (ms === undefined || !Number.isFinite(ms) || ms < 0 || ms > DEFAULTS.maxSleepMs) {
    throw new PermanentError(
      `sleep "${name}": the duration must be 0 to 365 days, in ms or as text such as 90s, 15m, 2d; got ${JSON.stringify(duration)}`,
      { code: 'INVALID_SLEEP', taskId: runId },
    );
  }
  return ms;
}

/** `sleepUntil`'s time: a valid Date. */
export function checkedDate(at: unknown, name: string): Date {
  if (!(at instanceof Date) || Number.isNaN(at.getTime())) {
    throw new PermanentError(`sleepUntil "${String(name)}": not a valid Date`, { code: 'INVALID_SLEEP' });
  }
  return at;
}
