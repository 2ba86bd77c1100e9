import { StoreRejectedError } from '../shared/task/store-errors.js';
import {
  type AddHolderResult,
  LIMIT_OPERATIONS,
  type LimitItem,
  type LimitOperation,
  type LimitStore,
  MAX_EVICT_PER_CALL,
  type RateRequest,
  type SlotHolders,
  type TakeRateResult,
} from '../shared/limit/limit-store.js';

interface Item {
  pk: string;
  holders?: Record<string, number>;
  tat?: number;
  paused_until?: number;
  refused?: number;
  refused_at?: number;
  expires_at?: number;
}

/**
 * The LimitStore contract in memory, for unit tests of the limiter. It behaves as
 * `DynamoLimitStore` on DynamoDB does, and `test/contract/` proves it on the same suite:
 * - every call yields once (as a request would), then decides and applies atomically;
 * - a failed condition is an answer (`'full'`, `'wait'`, `false`), nothing is written;
 * - `removeHolder`, `renewHolder` and `evictHolders` never create an item; `addHolder`,
 *   `takeRate`, `pauseRate` and `noteRefusals` do;
 * - `tat + n·T` is added on the microsecond grid, as DynamoDB adds decimals exactly (an input
 *   off that grid is rounded to it; the limiter never sends one).
 * Everything handed in or out is a copy.
 */
export class MemoryLimitStore implements LimitStore {
  readonly items = new Map<string, Item>();
  /** Make the next call of an operation throw (once). */
  failNext: Partial<Record<LimitOperation, Error>> = {};
  /** Make every call throw while it returns an error (an outage). */
  failWhen: ((op: LimitOperation, pk: string | undefined) => Error | undefined) | undefined;
  /** Runs before each call is decided (to interleave a concurrent change). */
  beforeCall: ((op: LimitOperation, pk: string | undefined) => void | Promise<void>) | undefined;
  /** Calls made so far, by operation (failed ones included). */
  readonly calls = Object.fromEntries(LIMIT_OPERATIONS.map((op) => [op, 0])) as Record<LimitOperation, number>;

  /** Every call made so far. */
  get totalCalls(): number {
    return LIMIT_OPERATIONS.reduce((sum, op) => sum + this.calls[op], 0);
  }

  async addHolder(
    pk: string,
    holderId: string,
    leaseUntil: number,
    capacity: number,
    expiresAt?: number,
  ): Promise<AddHolderResult> {
    await this.enter('addHolder', pk);
    const item = this.items.get(pk);
    const holders = item?.holders;
    if (holders !== undefined && Object.keys(holders).length >= capacity) {
      return { kind: 'full', holders: { ...holders } };
    }
    const next = item ?? { pk };
    next.holders = { ...(holders ?? {}), [holderId]: leaseUntil };
    if (expiresAt !== undefined) next.expires_at = expiresAt;
    this.items.set(pk, next);
    return { kind: 'granted' };
  }

  async renewHolder(pk: string, holderId: string, leaseUntil: number, expiresAt?: number): Promise<boolean> {
    await this.enter('renewHolder', pk);
    const item = this.items.get(pk);
    if (item?.holders?.[holderId] === undefined) return false;
    item.holders[holderId] = leaseUntil;
    if (expiresAt !== undefined) item.expires_at = expiresAt;
    return true;
  }

  async removeHolder(pk: string, holderId: string): Promise<void> {
    await this.enter('removeHolder', pk);
    delete this.items.get(pk)?.holders?.[holderId];
  }

  async evictHolders(pk: string, expired: SlotHolders): Promise<boolean> {
    await this.enter('evictHolders', pk);
    const entries = Object.entries(expired);
    if (entries.length > MAX_EVICT_PER_CALL) {
      throw new StoreRejectedError(
        `memory store UpdateItem rejected: more than ${MAX_EVICT_PER_CALL} holders to evict`,
      );
    }
    if (entries.length === 0) return true;
    const holders = this.items.get(pk)?.holders;
    if (holders === undefined || entries.some(([id, until]) => holders[id] !== until)) return false;
    for (const [id] of entries) delete holders[id];
    return true;
  }

  async takeRate(pk: string, req: RateRequest): Promise<TakeRateResult> {
    await this.enter('takeRate', pk);
    const item = this.items.get(pk);
    const now = us(req.now);
    const tat = item?.tat === undefined ? undefined : us(item.tat);
    if (item?.paused_until !== undefined && us(item.paused_until) > now) {
      return { kind: 'wait', ...(item.tat === undefined ? {} : { tat: item.tat }), pausedUntil: item.paused_until };
    }
    const nT = us(req.intervalMs) * req.count;
    let next: number;
    if (tat === undefined || tat < now) next = now + nT;
    else if (tat <= now + us(req.horizonMs) + us(req.toleranceMs)) next = tat + nT;
    else return { kind: 'wait', tat: tat / 1000 };
    const stored = item ?? { pk };
    stored.tat = next / 1000;
    if (req.expiresAt !== undefined) stored.expires_at = req.expiresAt;
    this.items.set(pk, stored);
    return { kind: 'granted', tat: stored.tat };
  }

  async pauseRate(pk: string, untilMs: number, expiresAt?: number): Promise<void> {
    await this.enter('pauseRate', pk);
    const item = this.items.get(pk) ?? { pk };
    if (item.paused_until !== undefined && item.paused_until >= untilMs) return;
    item.paused_until = untilMs;
    if (expiresAt !== undefined) item.expires_at = expiresAt;
    this.items.set(pk, item);
  }

  async list(): Promise<LimitItem[]> {
    await this.enter('list', undefined);
    return [...this.items.values()].map((item) => structuredClone(item)).sort((a, b) => (a.pk < b.pk ? -1 : 1));
  }

  async noteRefusals(pk: string, count: number, at: number, expiresAt?: number): Promise<void> {
    await this.enter('noteRefusals', pk);
    const item = this.items.get(pk) ?? { pk };
    item.refused = (item.refused ?? 0) + count;
    item.refused_at = at;
    if (expiresAt !== undefined) item.expires_at = expiresAt;
    this.items.set(pk, item);
  }

  /** Counts the call, yields once (as a request would), and throws an injected failure. */
  private async enter(op: LimitOperation, pk: string | undefined): Promise<void> {
    this.calls[op] += 1;
    await this.beforeCall?.(op, pk);
    const once = this.failNext[op];
    if (once !== undefined) {
      delete this.failNext[op];
      throw once;
    }
    const outage = this.failWhen?.(op, pk);
    if (outage !== undefined) throw outage;
  }
}

/** Epoch ms → whole microseconds (the grid DynamoDB's exact decimals keep). */
function us(ms: number): number {
  return Math.round(ms * 1000);
}
