import type { ScheduleRecord } from './model.js';

export interface ScheduleReadOptions {
  /** Strongly consistent (the default) or eventually consistent (half the cost). */
  readonly consistent?: boolean;
}

/** A page of a listing and where the next one starts (`undefined`: the last page). */
export interface SchedulePage<T = ScheduleRecord> {
  readonly items: T[];
  readonly cursor?: string;
}

/** An entry of the `due` index: the keys it projects. */
export interface ScheduleDueEntry {
  readonly name: string;
  readonly due_pk: string;
  readonly due_at: number;
}

/**
 * A create that takes one of an owner's schedule slots: the store keeps a count per owner and
 * writes the record only if that count is below `max`, counting it in the same atomic step.
 */
export interface OwnerSlot {
  readonly owner: string;
  readonly max: number;
}

/**
 * The storage contract of schedules: conditional writes on the schedules table, plus a count of
 * schedules per owner that a counted create takes and a counted delete gives back.
 * Every rule lives in the domain (`shared/schedule/`); an implementation only turns these calls
 * into requests and maps errors (`ScheduleVersionConflictError`, `StoreUnavailableError`).
 */
export interface ScheduleStore {
  get(name: string, options?: ScheduleReadOptions): Promise<ScheduleRecord | undefined>;
  /**
   * Writes the whole record if the stored one is at `expectedVersion` (`'absent'`: no record
   * with this name exists). With `slot` (creates only): also adds one to the owner's count if it
   * is below `slot.max`, atomically with the write — both happen or neither does.
   * @throws ScheduleVersionConflictError (with the stored record when there is one; checked
   *   first), OwnerScheduleLimitError (the owner's count is at `slot.max`), StoreUnavailableError
   */
  put(record: ScheduleRecord, expectedVersion: number | 'absent', slot?: OwnerSlot): Promise<void>;
  /**
   * Deletes the record if it is at `expectedVersion`; with `releaseOwner`, takes one from that
   * owner's count atomically with the delete.
   * @throws ScheduleVersionConflictError
   */
  delete(name: string, expectedVersion: number, releaseOwner?: string): Promise<void>;
  /**
   * The entries of one due partition (`due#<shard>`) with `due_at <= dueBy`, earliest first:
   * their keys only (the index projects nothing else; the tick reads each schedule itself).
   * Eventually consistent, like every index.
   */
  listDue(partition: string, dueBy: number, limit: number, cursor?: string): Promise<SchedulePage<ScheduleDueEntry>>;
  /** Every schedule, in no particular order, a page at a time (a Scan of the schedules table). */
  list(limit: number, cursor?: string): Promise<SchedulePage>;
}
