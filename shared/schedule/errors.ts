import { KajError } from '../errors.js';

/** Root of the scheduler's errors. */
export class ScheduleError extends KajError {
  constructor(
    message: string,
    readonly schedule: string | undefined,
    options: { taskId?: string; cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

/** A schedule spec field is invalid. `field` is a dotted path such as `cron` or `payload.to`. */
export class ScheduleValidationError extends ScheduleError {
  readonly retryable = false;
  constructor(
    readonly field: string,
    message: string,
    options: { schedule?: string; cause?: unknown } = {},
  ) {
    super(message, options.schedule, { cause: options.cause });
  }
}

/** No schedule of that name (or not one the caller owns). */
export class ScheduleNotFoundError extends ScheduleError {
  readonly retryable = false;
  constructor(name: string) {
    super(`schedule "${name}" not found`, name);
  }
}

/** The name is held by a schedule of another owner, or declared in code (which the API may not change). */
export class ScheduleConflictError extends ScheduleError {
  readonly retryable = false;
  constructor(
    name: string,
    readonly reason: 'name_taken' | 'declared_in_code' | 'concurrent_change',
    message: string,
  ) {
    super(message, name);
  }
}
