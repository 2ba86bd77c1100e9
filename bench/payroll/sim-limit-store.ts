/**
 * The limits table as the payroll simulation's limiters see it: the contract-tested
 * `MemoryLimitStore` (testing/memory-limit-store.ts) decides every call, and this decorator makes
 * each call take the requests `DynamoLimitStore` makes of DynamoDB: conditional UpdateItems, each
 * taking `latencyMs` of virtual time and decided at its midpoint, one at a time in the order they
 * reach the table, so that two limiters' requests interleave as on the network. A call makes a
 * second request where DynamoLimitStore does: `addHolder` on an item without its `holders` map
 * (the add into the map fails, the map is made), `takeRate` with a stale `tat` hint (the idle
 * write fails on a busy item, or the busy one on an idle item). Each request is billed as AWS
 * bills it (bench/lib/dynamo-accounting.ts: a failed condition consumes units too).
 *
 * @module
 */
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
} from '../../shared/limit/limit-store.js';
import { type Item, itemSize, writeUnits } from '../lib/dynamo-accounting.js';
import { MemoryLimitStore } from '../../testing/memory-limit-store.js';
import type { VirtualClock } from '../../testing/virtual-clock.js';

/** Calls, requests and units, as one caller made them (see {@link SimLimitStoreOptions.attribute}). */
export interface CallTally {
  calls: number;
  updateItems: number;
  writeUnits: number;
}

export function newTally(): CallTally {
  return { calls: 0, updateItems: 0, writeUnits: 0 };
}

export function addTally(into: CallTally, t: CallTally): void {
  into.calls += t.calls;
  into.updateItems += t.updateItems;
  into.writeUnits += t.writeUnits;
}

export interface SimLimitStoreOptions {
  /** The clock requests take their time on; without it (or with latency 0) a request only waits for its decision. */
  readonly clock?: VirtualClock;
  /** Round trip of one UpdateItem, ms. @default 0 */
  readonly latencyMs?: number;
  /**
   * The tally of whoever is calling now (e.g. an AsyncLocalStorage store set around one acquire):
   * each call, request and unit is added to it too.
   */
  readonly attribute?: () => CallTally | undefined;
}

/** What a request decided at the table: the call's answer, or that its condition failed and the other write is sent. */
const SEND_THE_OTHER = Symbol('send the other write');
type Decided<T> = T | typeof SEND_THE_OTHER;

/** A request's decision, filled in at the table (before its answer is back). */
interface AtTable<T> {
  done: boolean;
  value?: Decided<T>;
  error?: unknown;
}

export class SimLimitStore implements LimitStore {
  private readonly halfMs: number;
  /** The decisions at the table, one after the other. */
  private table: Promise<void> = Promise.resolve();
  /** Each item's size as last written (a large map's size takes long to count). */
  private readonly bytes = new Map<string, number>();
  /**
   * What the store did, as DynamoDB would bill it: calls by operation, UpdateItem requests (a call
   * makes one or two), those whose condition failed (billed all the same), write units, and the
   * most holders each concurrency item ever had at once.
   */
  readonly tally = {
    calls: Object.fromEntries(LIMIT_OPERATIONS.map((op) => [op, 0])) as Record<LimitOperation, number>,
    updateItems: 0,
    failedConditions: 0,
    writeUnits: 0,
    peakHolders: new Map<string, number>(),
  };

  constructor(
    private readonly o: SimLimitStoreOptions = {},
    readonly inner = new MemoryLimitStore(),
  ) {
    this.halfMs = (o.latencyMs ?? 0) / 2;
    if (!(this.halfMs >= 0)) throw new RangeError('latencyMs must be >= 0');
    if (this.halfMs > 0 && o.clock === undefined) throw new RangeError('a latency needs a clock');
  }

  /** Every call made so far. */
  get totalCalls(): number {
    return LIMIT_OPERATIONS.reduce((sum, op) => sum + this.tally.calls[op], 0);
  }

  addHolder(
    pk: string,
    holderId: string,
    leaseUntil: number,
    capacity: number,
    expiresAt?: number,
  ): Promise<AddHolderResult> {
    const mine = this.enter('addHolder');
    const attempted = (item: LimitItem | undefined) => {
      const holders = { ...item?.holders, [holderId]: leaseUntil };
      return { ...item, holders, ...(expiresAt === undefined ? {} : { expires_at: expiresAt }) };
    };
    // SET holders.#h = :until IF attribute_exists(holders) AND size(holders) < :cap; on an item
    // without the map, SET holders = :map IF attribute_not_exists(holders) (the map, once made, stays).
    let intoMap = true;
    return this.requests(async () => {
      const item = this.itemOf(pk);
      if ((item?.holders !== undefined) !== intoMap) {
        this.refused(mine, pk, () => attempted(item));
        intoMap = !intoMap;
        return SEND_THE_OTHER;
      }
      const add = () => granted(this.inner.addHolder(pk, holderId, leaseUntil, capacity, expiresAt));
      const answer = await this.update(mine, pk, add, () => attempted(item));
      const n = Object.keys(this.itemOf(pk)?.holders ?? {}).length;
      if (answer.kind === 'granted' && n > (this.tally.peakHolders.get(pk) ?? 0)) this.tally.peakHolders.set(pk, n);
      return answer;
    });
  }

  renewHolder(pk: string, holderId: string, leaseUntil: number, expiresAt?: number): Promise<boolean> {
    // SET holders.#h = :until IF attribute_exists(holders.#h)
    return this.single('renewHolder', pk, () => made(this.inner.renewHolder(pk, holderId, leaseUntil, expiresAt)));
  }

  removeHolder(pk: string, holderId: string): Promise<void> {
    // REMOVE holders.#h IF attribute_exists(holders.#h)
    return this.single('removeHolder', pk, async () => {
      const held = this.itemOf(pk)?.holders?.[holderId] !== undefined;
      return [await this.inner.removeHolder(pk, holderId), held];
    });
  }

  evictHolders(pk: string, expired: SlotHolders): Promise<boolean> {
    const n = Object.keys(expired).length;
    // Nothing to send, or refused before sending.
    if (n === 0 || n > MAX_EVICT_PER_CALL) {
      this.enter('evictHolders');
      return this.inner.evictHolders(pk, expired);
    }
    // REMOVE holders.#h0, ... IF holders.#h0 = :u0 AND ...
    return this.single('evictHolders', pk, () => made(this.inner.evictHolders(pk, expired)));
  }

  takeRate(pk: string, req: RateRequest): Promise<TakeRateResult> {
    const mine = this.enter('takeRate');
    const now = us(req.now);
    const nT = us(req.intervalMs) * req.count;
    const limit = now + us(req.horizonMs) + us(req.toleranceMs);
    // busy: SET tat = tat + :nT IF tat BETWEEN :now AND :limit; idle: SET tat = :now + :nT IF
    // attribute_not_exists(tat) OR tat < :now; both IF not paused. The hint picks the first.
    let busy = req.lastTat !== undefined && us(req.lastTat) >= now;
    return this.requests(() => {
      const item = this.itemOf(pk);
      const tat = item?.tat === undefined ? undefined : us(item.tat);
      const isBusy = tat !== undefined && tat >= now;
      const next = ((busy ? (tat ?? 0) : now) + nT) / 1000;
      const attempted = () => ({ ...item, tat: next });
      // The wrong write is refused; the other is sent unless the answer is to wait anyway.
      const wait = (item?.paused_until !== undefined && us(item.paused_until) > now) || (tat ?? 0) > limit;
      if (isBusy !== busy && !wait) {
        this.refused(mine, pk, attempted);
        busy = isBusy;
        return Promise.resolve(SEND_THE_OTHER);
      }
      return this.update(mine, pk, () => granted(this.inner.takeRate(pk, req)), attempted);
    });
  }

  pauseRate(pk: string, untilMs: number, expiresAt?: number): Promise<void> {
    // SET paused_until = :until IF attribute_not_exists(paused_until) OR paused_until < :until
    return this.single('pauseRate', pk, async () => {
      const paused = this.itemOf(pk)?.paused_until;
      return [await this.inner.pauseRate(pk, untilMs, expiresAt), paused === undefined || paused < untilMs];
    });
  }

  list(): Promise<LimitItem[]> {
    this.enter('list');
    // Scan (read units, not billed here)
    return this.requests(() => this.inner.list());
  }

  noteRefusals(pk: string, count: number, at: number, expiresAt?: number): Promise<void> {
    // SET refused_at = :at ADD refused :n (unconditional)
    return this.single('noteRefusals', pk, async () => {
      return [await this.inner.noteRefusals(pk, count, at, expiresAt), true];
    });
  }

  /** A call of one UpdateItem, which `write` makes on the fake: its answer, and whether its condition held. */
  private single<R>(op: LimitOperation, pk: string, write: () => Promise<Written<R>>): Promise<R> {
    const mine = this.enter(op);
    return this.requests(() => this.update(mine, pk, write));
  }

  /** The fake's item, as DynamoDB would store it (its attributes are the table's). */
  private itemOf(pk: string): (LimitItem & Item) | undefined {
    return this.inner.items.get(pk) as (LimitItem & Item) | undefined;
  }

  private enter(op: LimitOperation): CallTally | undefined {
    this.tally.calls[op] += 1;
    const mine = this.o.attribute?.();
    if (mine !== undefined) mine.calls += 1;
    return mine;
  }

  /**
   * A call's requests, until one decides its answer: each takes half its round trip to reach
   * the table, is decided there by `decide` after every request that reached it before, and takes
   * the other half back. Not one `await` more than the requests themselves take: a simulated
   * process's other work interleaves with the answers as it did with a store deciding in place.
   */
  private async requests<T>(decide: () => Promise<Decided<T>>): Promise<T> {
    for (;;) {
      await this.leg();
      const decided: AtTable<T> = { done: false };
      this.table = this.table.then(decide).then(
        (value) => {
          Object.assign(decided, { done: true, value });
        },
        (error: unknown) => {
          Object.assign(decided, { done: true, error });
        },
      );
      await this.leg();
      if (!decided.done) throw new Error('a request came back before it was decided');
      if ('error' in decided) throw decided.error;
      if (decided.value !== SEND_THE_OTHER) return decided.value as T;
    }
  }

  /**
   * Half a request's round trip; with no latency, the table's decisions so far (the fake's own
   * yields), so that a request's answer is decided when it comes back.
   */
  private leg(): Promise<void> {
    return this.halfMs > 0 && this.o.clock !== undefined ? this.o.clock.sleep(this.halfMs) : this.table;
  }

  /** One UpdateItem the fake decides: billed by the larger image if it wrote, as a failed condition if not. */
  private async update<R>(
    mine: CallTally | undefined,
    pk: string,
    write: () => Promise<Written<R>>,
    attempted?: () => Item,
  ): Promise<R> {
    const before = this.bytes.get(pk) ?? 0;
    const [answer, wrote] = await write();
    if (wrote) {
      const after = itemSize(this.itemOf(pk));
      this.bytes.set(pk, after);
      this.bill(mine, true, writeUnits(Math.max(before, after)));
    } else {
      this.refused(mine, pk, attempted);
    }
    return answer;
  }

  /**
   * An UpdateItem whose condition failed, billed as `failedWriteCost` bills it: 1 unit on no item,
   * else by the larger of the item (its size as last written) and the one attempted.
   */
  private refused(mine: CallTally | undefined, pk: string, attempted?: () => Item): void {
    const bytes = this.bytes.get(pk);
    this.bill(mine, false, bytes === undefined ? 1 : writeUnits(Math.max(bytes, itemSize(attempted?.()))));
  }

  private bill(mine: CallTally | undefined, ok: boolean, units: number): void {
    this.tally.updateItems += 1;
    if (!ok) this.tally.failedConditions += 1;
    this.tally.writeUnits += units;
    if (mine !== undefined) {
      mine.updateItems += 1;
      mine.writeUnits += units;
    }
  }
}

/** A fake's answer, and whether the write was made (its condition held). */
type Written<R> = readonly [answer: R, wrote: boolean];

async function made(ok: Promise<boolean>): Promise<Written<boolean>> {
  const answer = await ok;
  return [answer, answer];
}

async function granted<R extends { readonly kind: string }>(answer: Promise<R>): Promise<Written<R>> {
  const r = await answer;
  return [r, r.kind === 'granted'];
}

/** Epoch ms → whole microseconds (the grid the limiter computes on and DynamoDB keeps exactly). */
function us(ms: number): number {
  return Math.round(ms * 1000);
}
