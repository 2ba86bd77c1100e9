/**
 * The limiter's items and the small pure helpers its parts share: which store items a set of
 * uses touches, in which order, and the microsecond grid every time is computed on.
 *
 * @module
 */
import type { Refusal } from '../task/admission.js';
import { LimitDefinitionError } from './errors.js';
import type { LimitSpec, LimitUse } from './spec.js';

/** Items whose local state (pooled starts, tat hints, refusal counts) one process keeps at most. */
const MAX_LOCAL_ITEMS = 10_000;

/** One item a call touches (a use of a limit with both concurrency and rate touches two). */
export interface PlannedUse {
  readonly pk: string;
  readonly spec: LimitSpec;
  readonly key: string | undefined;
}

/** A concurrency slot: one holder entry in a concurrency item. */
export interface Slot {
  readonly pk: string;
  readonly id: string;
  readonly use: PlannedUse;
  leaseUntil: number;
}

export type Take<T> =
  | { readonly kind: 'granted'; readonly value: T }
  | { readonly kind: 'refused'; readonly refusal: Refusal };

/**
 * The items a set of uses touches: rate items and concurrency items, each once, each in key
 * order (a fixed order for every process, so none waits for a slot another holds while that
 * one waits for its slot).
 *
 * @throws LimitDefinitionError for a key that is not 1-128 characters
 */
export function planItems(uses: readonly LimitUse[]): { rates: PlannedUse[]; slots: PlannedUse[] } {
  const rates = new Map<string, PlannedUse>();
  const slots = new Map<string, PlannedUse>();
  for (const { spec, key } of uses) {
    if (key !== undefined && (typeof key !== 'string' || key.length === 0 || key.length > 128)) {
      throw new LimitDefinitionError(`limits.${spec.name}.key`, 'a key must be a string of 1-128 characters', {
        limit: spec.name,
      });
    }
    const suffix = key === undefined ? '' : `#${key}`;
    if (spec.rate !== undefined) rates.set(`r#${spec.name}${suffix}`, { pk: `r#${spec.name}${suffix}`, spec, key });
    if (spec.concurrency !== undefined) {
      slots.set(`c#${spec.name}${suffix}`, { pk: `c#${spec.name}${suffix}`, spec, key });
    }
  }
  const byPk = (a: PlannedUse, b: PlannedUse) => (a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0);
  return { rates: [...rates.values()].sort(byPk), slots: [...slots.values()].sort(byPk) };
}

export function refusalOf(use: PlannedUse, reason: Refusal['reason'], retryAt: number): Refusal {
  return { limit: use.spec.name, ...optional('key', use.key), reason, retryAt };
}

/** When the item of a keyed use expires if nothing uses it again (epoch s); unkeyed items never do. */
export function expiresAt(use: PlannedUse, now: number, keyTtlSeconds: number): number | undefined {
  return use.key === undefined ? undefined : Math.ceil(now / 1000) + keyTtlSeconds;
}

/** Epoch ms → whole microseconds: the grid every time is computed on. */
export function micros(ms: number): number {
  return Math.round(ms * 1000);
}

export function optional<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}

/** Sets `key` in a map of per-item local state, forgetting the oldest items past the bound. */
export function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_LOCAL_ITEMS) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}
