import { StoreError } from '../task/store-errors.js';
import type { ScheduleRecord } from './model.js';

/** A schedule write found the stored schedule at another version than expected (or present / absent). */
export class ScheduleVersionConflictError extends StoreError {
  constructor(
    readonly scheduleName: string,
    readonly current: ScheduleRecord | undefined,
    cause?: unknown,
  ) {
    super(`schedule "${scheduleName}" was changed by another writer`, { cause });
  }
}

/** A counted schedule create found its owner's count at the maximum: nothing was written. */
export class OwnerScheduleLimitError extends StoreError {
  constructor(
    readonly scheduleName: string,
    readonly owner: string,
    readonly max: number,
    cause?: unknown,
  ) {
    super(`owner "${owner}" has ${max} counted schedules, the maximum`, { cause });
  }
}
