/**
 * What `kaj stats` shows of the limits: each limit's (and each key's) use right now, from the
 * items of the limits table and the declarations. Pure.
 *
 * @module
 */
import type { LimitItem } from './limit-store.js';
import type { LimitSpec } from './spec.js';

/** A refusal noted this recently counts as "tasks are waiting on this limit". */
export const RECENT_REFUSAL_MS = 60_000;

/** One row of the limits' status: one concurrency or rate item. */
export interface LimitStatusRow {
  readonly limit: string;
  readonly key?: string;
  readonly kind: 'concurrency' | 'rate';
  /** Concurrency: slots. Rate: the burst (the most starts at once). */
  readonly capacity: number;
  /** Concurrency: slots held with a live lease. Rate: 0. */
  readonly holders: number;
  /** Concurrency: slots whose lease ended (a dead worker's; freed at the next full acquire). Rate: 0. */
  readonly expired: number;
  /** Starts that could be granted now: free slots (0 … capacity), or rate starts (0 … burst). */
  readonly tokensAvailable: number;
  /** While a provider's Retry-After pauses the rate (epoch ms). */
  readonly pausedUntil?: number;
  /** Refusals noted so far, and when last (epoch ms). */
  readonly refused: number;
  readonly refusedAt?: number;
  /** A refusal was noted within {@link RECENT_REFUSAL_MS}: tasks are waiting on this limit. */
  readonly refusedRecently: boolean;
}

const PK = /^([cr])#([a-z][a-z0-9_]{0,63})(?:#([\s\S]*))?$/;

/**
 * The status of every declared limit at `now`: a row per item in the table, plus an empty row for
 * an unkeyed limit nothing has used yet. Items of limits no longer declared (or of a kind the
 * limit no longer has) are left out. Ordered by limit, kind, key.
 */
export function limitStatus(
  specs: ReadonlyMap<string, LimitSpec>,
  items: readonly LimitItem[],
  now: number,
): LimitStatusRow[] {
  const rows: LimitStatusRow[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    const m = PK.exec(item.pk);
    const spec = m === null ? undefined : specs.get(m[2] as string);
    if (m === null || spec === undefined) continue;
    const kind = m[1] === 'c' ? 'concurrency' : 'rate';
    const row = rowOf(spec, kind, m[3], item, now);
    if (row === undefined) continue;
    rows.push(row);
    seen.add(`${kind}#${spec.name}`);
  }
  for (const spec of specs.values()) {
    for (const kind of ['concurrency', 'rate'] as const) {
      if (seen.has(`${kind}#${spec.name}`)) continue;
      const row = rowOf(spec, kind, undefined, { pk: '' }, now);
      if (row !== undefined) rows.push(row);
    }
  }
  return rows.sort((a, b) => compare(a.limit, b.limit) || compare(a.kind, b.kind) || compare(a.key ?? '', b.key ?? ''));
}

function rowOf(
  spec: LimitSpec,
  kind: 'concurrency' | 'rate',
  key: string | undefined,
  item: LimitItem,
  now: number,
): LimitStatusRow | undefined {
  const refusedRecently = item.refused_at !== undefined && now - item.refused_at <= RECENT_REFUSAL_MS;
  const common = {
    limit: spec.name,
    ...(key === undefined ? {} : { key }),
    kind,
    refused: item.refused ?? 0,
    ...(item.refused_at === undefined ? {} : { refusedAt: item.refused_at }),
    refusedRecently,
  };
  if (kind === 'concurrency') {
    if (spec.concurrency === undefined) return undefined;
    const leases = Object.values(item.holders ?? {});
    const live = leases.filter((until) => until >= now).length;
    return {
      ...common,
      capacity: spec.concurrency,
      holders: live,
      expired: leases.length - live,
      tokensAvailable: Math.max(0, spec.concurrency - live),
    };
  }
  const rate = spec.rate;
  if (rate === undefined) return undefined;
  const paused = item.paused_until !== undefined && item.paused_until > now;
  return {
    ...common,
    capacity: rate.burst,
    holders: 0,
    expired: 0,
    tokensAvailable: paused ? 0 : startsAvailable(item.tat, now, rate.intervalMs, rate.burst),
    ...(paused ? { pausedUntil: item.paused_until } : {}),
  };
}

/**
 * GCRA: the k-th start from now (k = 0, 1, …) is due at `max(tat, now) + k·T − τ`; those due by
 * `now` could be granted at once. In whole microseconds, as the limiter counts.
 */
function startsAvailable(tat: number | undefined, now: number, intervalMs: number, burst: number): number {
  const nowUs = Math.round(now * 1000);
  const T = Math.round(intervalMs * 1000);
  const base = tat === undefined ? nowUs : Math.max(Math.round(tat * 1000), nowUs);
  const tau = (burst - 1) * T;
  return Math.min(burst, Math.max(0, Math.floor((nowUs - base + tau) / T) + 1));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
