/**
 * The storage contract of the flow-control limits: single-item conditional writes on the limits
 * table (`LIMIT_TABLE_SCHEMA`). Every rule lives in the limiter (`shared/limit/limiter.ts`); an
 * implementation only turns these calls into requests and maps errors (`StoreUnavailableError`,
 * `StoreRejectedError`). A failed condition is an answer (`'full'`, `'wait'`, `false`), not an
 * error.
 *
 * Two kinds of item, by key (the limiter makes the keys):
 * - a concurrency item `c#<limit>[#<key>]`: `holders`, a map of holder id → lease end (epoch ms);
 * - a rate item `r#<limit>[#<key>]`: `tat`, the GCRA theoretical arrival time (epoch ms), and
 *   `paused_until` (epoch ms) while a provider asked every worker to slow down.
 * Either may carry `refused` / `refused_at` (stats) and `expires_at` (TTL, epoch seconds: items
 * of keyed limits only, refreshed by every write that takes something).
 *
 * Times are epoch milliseconds on a microsecond grid (at most three decimals): DynamoDB adds
 * decimals exactly, and the limiter keeps every time it sends on that grid, so `tat` never drifts.
 *
 * @module
 */

/**
 * Most holders one {@link LimitStore.evictHolders} call may name: its condition names each one,
 * and DynamoDB refuses expressions over 4 KB.
 */
export const MAX_EVICT_PER_CALL = 50;

/** The holders of a concurrency item: holder id → lease end (epoch ms). */
export interface SlotHolders {
  readonly [holderId: string]: number;
}

/** A limits-table item as `list` reads it (only the attributes the item has). */
export interface LimitItem {
  readonly pk: string;
  readonly holders?: SlotHolders;
  readonly tat?: number;
  readonly paused_until?: number;
  /** Refusals noted so far (the limiter batches them), and when last (epoch ms). */
  readonly refused?: number;
  readonly refused_at?: number;
  /** TTL, epoch seconds. */
  readonly expires_at?: number;
}

/** What {@link LimitStore.addHolder} answers. */
export type AddHolderResult = { readonly kind: 'granted' } | { readonly kind: 'full'; readonly holders: SlotHolders };

/** A GCRA reservation of `count` starts (see {@link LimitStore.takeRate}). */
export interface RateRequest {
  /** The earliest start the caller wants (epoch ms): its clock's now, or later. */
  readonly now: number;
  /** Starts reserved by this call (n). */
  readonly count: number;
  /** The emission interval T (ms). */
  readonly intervalMs: number;
  /** GCRA's tolerance τ = (burst − 1)·T (ms): how far `tat` may run ahead of a start. */
  readonly toleranceMs: number;
  /** The first start of the reservation must lie within this long of `now` (ms). */
  readonly horizonMs: number;
  /**
   * The last `tat` the caller saw, if any: picks which of the two conditional writes to try first
   * (busy when it is at or after `now`, else idle). Only a hint: a wrong one costs a second write.
   */
  readonly lastTat?: number;
  /** TTL of the item (keyed limits), epoch seconds. */
  readonly expiresAt?: number;
}

/** What {@link LimitStore.takeRate} answers. */
export type TakeRateResult =
  /** Reserved: the item's `tat` after this reservation. */
  | { readonly kind: 'granted'; readonly tat: number }
  /**
   * Nothing reserved: the first start would lie beyond the horizon (`tat` as stored), or the
   * limit is paused until `pausedUntil`.
   */
  | { readonly kind: 'wait'; readonly tat?: number; readonly pausedUntil?: number };

/** The limits' shared state. Every call is atomic on its one item. */
export interface LimitStore {
  /**
   * Adds `holderId` with lease end `leaseUntil` if fewer than `capacity` holders are present,
   * creating the item (or its `holders` map) if missing. Otherwise answers `'full'` with the
   * holders seen, so the caller can tell dead workers' leases (ended) from live ones.
   */
  addHolder(
    pk: string,
    holderId: string,
    leaseUntil: number,
    capacity: number,
    expiresAt?: number,
  ): Promise<AddHolderResult>;
  /** Sets a present holder's lease end; `false` if the holder is gone (evicted), creating nothing. */
  renewHolder(pk: string, holderId: string, leaseUntil: number, expiresAt?: number): Promise<boolean>;
  /** Removes a holder. Idempotent; creates nothing. */
  removeHolder(pk: string, holderId: string): Promise<void>;
  /**
   * Removes the given holders, but only if each is still present with the lease end given (a
   * holder renewed or removed meanwhile keeps the whole call from doing anything). `true` if it
   * removed them (and for an empty map). At most {@link MAX_EVICT_PER_CALL} holders, else
   * `StoreRejectedError`.
   */
  evictHolders(pk: string, expired: SlotHolders): Promise<boolean>;
  /**
   * GCRA without a read. Let `base = max(tat, now)` (`tat` missing counts as before `now`). The
   * reservation is granted if the item is not paused at `now` (`paused_until` missing or
   * `<= now`) and its first start, `max(now, base − τ)`, lies within `now + horizonMs`, i.e.
   * `tat <= now + horizonMs + τ`; then `tat` becomes `base + count·T` and is returned. The
   * reserved starts are `max(now, base + i·T − τ)` for `i = 0 … count − 1` (the limiter
   * computes them). Otherwise nothing changes and the answer is `'wait'` with the stored `tat`
   * (and `pausedUntil` when paused).
   */
  takeRate(pk: string, req: RateRequest): Promise<TakeRateResult>;
  /** Pauses the rate item until `untilMs`, unless it is already paused at least that long. Creates the item if missing. */
  pauseRate(pk: string, untilMs: number, expiresAt?: number): Promise<void>;
  /** Every item (a Scan, paged internally: the table is small), for `kaj stats`. */
  list(): Promise<LimitItem[]>;
  /**
   * Adds `count` to the item's `refused` counter and sets `refused_at` (stats only). Creates the
   * item if missing.
   */
  noteRefusals(pk: string, count: number, at: number, expiresAt?: number): Promise<void>;
}

/** Every operation of the port, by name: what the in-memory stores count calls of. */
export type LimitOperation = keyof LimitStore;
export const LIMIT_OPERATIONS: readonly LimitOperation[] = [
  'addHolder',
  'renewHolder',
  'removeHolder',
  'evictHolders',
  'takeRate',
  'pauseRate',
  'list',
  'noteRefusals',
];
