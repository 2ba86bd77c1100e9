/**
 * The console's query parameters and form fields, checked: a bad value is a
 * {@link BadParameterError} naming the field (a 400 page), never a 500.
 *
 * @module
 */
import { isPriority, type Priority } from '../shared/config/resources.js';
import { LISTING_VIEWS, type ListingView } from '../shared/task/model.js';
import { BadParameterError } from './errors.js';

export type Params = Readonly<Record<string, string>>;

/** A present, non-empty parameter (trimmed), else undefined. */
export function optional(p: Params, field: string, max = 256): string | undefined {
  const v = p[field]?.trim();
  if (v === undefined || v === '') return undefined;
  if (v.length > max) throw new BadParameterError(field, `at most ${max} characters`);
  return v;
}

export function required(p: Params, field: string, max = 256): string {
  const v = optional(p, field, max);
  if (v === undefined) throw new BadParameterError(field, 'required');
  return v;
}

export function status(p: Params, field = 'status', fallback: ListingView = 'failed'): ListingView {
  const v = optional(p, field);
  if (v === undefined) return fallback;
  if (!(LISTING_VIEWS as readonly string[]).includes(v)) {
    throw new BadParameterError(field, `one of ${LISTING_VIEWS.join(', ')} (got "${v}")`);
  }
  return v as ListingView;
}

export function priority(p: Params, field = 'priority'): Priority | undefined {
  const v = optional(p, field);
  if (v === undefined) return undefined;
  if (!isPriority(v)) throw new BadParameterError(field, `high, normal or low (got "${v}")`);
  return v;
}

/** Task types: what `defineTask` accepts, roughly (letters, digits, `_ . : -`). */
export function taskType(p: Params, field = 'type'): string | undefined {
  const v = optional(p, field, 128);
  if (v !== undefined && !/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/.test(v)) {
    throw new BadParameterError(field, `not a task type (letters, digits, _ . : -; got "${v}")`);
  }
  return v;
}

export const SINCE_CHOICES = { '15m': 15 * 60_000, '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 } as const;
export type SinceChoice = keyof typeof SINCE_CHOICES;

export function since(p: Params, field = 'since'): SinceChoice | undefined {
  const v = optional(p, field);
  if (v === undefined) return undefined;
  if (!(v in SINCE_CHOICES))
    throw new BadParameterError(field, `one of ${Object.keys(SINCE_CHOICES).join(', ')} (got "${v}")`);
  return v as SinceChoice;
}

export function intInRange(p: Params, field: string, min: number, max: number, fallback: number): number {
  const v = optional(p, field);
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new BadParameterError(field, `an integer from ${min} to ${max} (got "${v}")`);
  }
  return Number(v);
}

/** Task ids as Kaj makes them (`t_` and URL-safe characters, as `kaj` accepts them). */
export function taskId(v: string, field = 'task'): string {
  if (!/^t_[A-Za-z0-9_-]{1,254}$/.test(v))
    throw new BadParameterError(field, `not a task id (got "${v.slice(0, 60)}")`);
  return v;
}

/** Task ids, one per line or separated by commas or spaces (a confirmed selection). */
export function taskIds(p: Params, field = 'ids', max = 1_000): string[] {
  const ids = (p[field] ?? '').split(/[\s,]+/).filter((s) => s !== '');
  if (ids.length === 0) throw new BadParameterError(field, 'no task selected');
  if (ids.length > max) throw new BadParameterError(field, `at most ${max} tasks at once`);
  return [...new Set(ids.map((id) => taskId(id, field)))];
}

export function scheduleName(v: string, field = 'name'): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(v)) {
    throw new BadParameterError(field, `not a schedule name (got "${v.slice(0, 60)}")`);
  }
  return v;
}
