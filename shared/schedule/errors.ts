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
  /** The API's error code (422). */
  readonly code: string = 'validation_error';
  constructor(
    readonly field: string,
    message: string,
    options: { schedule?: string; cause?: unknown } = {},
  ) {
    super(message, options.schedule, { cause: options.cause });
  }
}

/**
 * The caller owns as many schedules as the deployment allows (`maxPerOwner`,
 * `KAJ_SCHEDULE_MAX_PER_OWNER`): the new one is refused, naming `name` (422
 * `schedule_limit_reached`). Deleting one of its schedules frees a slot.
 */
export class ScheduleLimitReachedError extends ScheduleValidationError {
  override readonly code = 'schedule_limit_reached';
  constructor(
    name: string,
    readonly max: number,
    options: { cause?: unknown } = {},
  ) {
    super(
      'name',
      `name: you own ${max} schedules, the most this deployment allows; delete one before creating "${name}"`,
      { schedule: name, cause: options.cause },
    );
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
