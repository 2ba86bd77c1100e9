/**
 * The limits table as the payroll simulation's limiters see it: the `LimitStore` port in memory,
 * answering as `testing/memory-limit-store.ts` does (the contract suite runs on it:
 * test/unit/bench/payroll-sim.test.ts), but request by request as `DynamoLimitStore` talks to
 * DynamoDB: each call makes the same conditional UpdateItems (up to 4), each atomic at the table,
 * taking `latencyMs` of virtual time and decided at its midpoint, so that two limiters' requests
 * interleave as on the network; each billed as AWS bills it (bench/lib/dynamo-accounting.ts's
 * rules: a failed condition consumes units too).
 *
 * @module
 */
import { StoreRejectedError } from '../../shared/task/store-errors.js';
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
import { numberSize, writeUnits } from '../lib/dynamo-accounting.js';
import type { VirtualClock } from '../../testing/virtual-clock.js';

export type { LimitOperation };

/** Conditional writes one call may make before it settles for the state it saw (as DynamoLimitStore). */
const MAX_WRITES_PER_CALL = 4;

interface Item {
  readonly pk: string;
  holders?: Map<string, number>;
  /** DynamoDB size of the `holders` map value (3 bytes + per entry 1 + id + number). */
  holdersBytes: number;
  /** `tat` in whole microseconds (DynamoDB keeps the exact decimal). */
  tatUs?: number;
  pausedUntil?: number;
  refused?: number;
  refusedAt?: number;
  expiresAt?: number;
}

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
  /** The clock requests take their time on; without it (or with latency 0) a request only yields. */
  readonly clock?: VirtualClock;
  /** Round trip of one UpdateItem, ms. @default 0 */
  readonly latencyMs?: number;
  /**
   * The tally of whoever is calling now (e.g. an AsyncLocalStorage store set around one acquire):
   * each call, request and unit is added to it too.
   */
  readonly attribute?: () => CallTally | undefined;
}

export class SimLimitStore implements LimitStore {
  private readonly items = new Map<string, Item>();
  private readonly halfMs: number;
  /**
   * What the store did, as DynamoDB would bill it: calls by operation (as `MemoryLimitStore.calls`),
   * UpdateItem requests (a call makes one or more), those whose condition failed (billed all the
   * same), write units, scans, and the most holders each concurrency item ever had at once.
   */
  readonly tally = {
    calls: Object.fromEntries(LIMIT_OPERATIONS.map((op) => [op, 0])) as Record<LimitOperation, number>,
    updateItems: 0,
    failedConditions: 0,
    writeUnits: 0,
    scans: 0,
    peakHolders: new Map<string, number>(),
  };

  constructor(private readonly o: SimLimitStoreOptions = {}) {
    this.halfMs = (o.latencyMs ?? 0) / 2;
    if (!(this.halfMs >= 0)) throw new RangeError('latencyMs must be >= 0');
    if (this.halfMs > 0 && o.clock === undefined) throw new RangeError('a latency needs a clock');
  }

  /** Every call made so far. */
  get totalCalls(): number {
    return LIMIT_OPERATIONS.reduce((sum, op) => sum + this.tally.calls[op], 0);
  }

  async addHolder(
    pk: string,
    holderId: string,
    leaseUntil: number,
    capacity: number,
    expiresAt?: number,
  ): Promise<AddHolderResult> {
    this.enter('addHolder');
    let holders: SlotHolders = {};
    for (let i = 0; i < MAX_WRITES_PER_CALL; i += 1) {
      // SET holders.#h = :until IF attribute_exists(holders) AND size(holders) < :cap
      await this.leg();
      const item = this.items.get(pk);
      const map = item?.holders;
      const before = sizeOf(item);
      const entry = map?.has(holderId) ? 0 : entryBytes(holderId, leaseUntil);
      const ok = map !== undefined && map.size < capacity;
      let seen: SlotHolders | undefined;
      if (ok && item !== undefined) {
        setHolder(item, holderId, leaseUntil);
        if (expiresAt !== undefined) item.expiresAt = expiresAt;
        this.notePeak(item);
      } else if (map !== undefined) {
        seen = Object.fromEntries(map);
      }
      this.bill(ok, item !== undefined, before, before + entry + ttlBytes(item, expiresAt));
      await this.leg();
      if (ok) return { kind: 'granted' };
      if (seen === undefined) {
        // SET holders = :map IF attribute_not_exists(holders)
        await this.leg();
        const again = this.items.get(pk);
        const before2 = sizeOf(again);
        const created = again?.holders === undefined;
        if (created) {
          const next = again ?? newItem(pk);
          next.holders = new Map();
          next.holdersBytes = 3;
          setHolder(next, holderId, leaseUntil);
          if (expiresAt !== undefined) next.expiresAt = expiresAt;
          this.items.set(pk, next);
          this.notePeak(next);
          this.bill(true, again !== undefined, before2, sizeOf(next));
        } else {
          this.bill(false, true, before2, before2 + entryBytes(holderId, leaseUntil));
        }
        await this.leg();
        if (created) return { kind: 'granted' };
        continue;
      }
      holders = seen;
      if (Object.keys(seen).length >= capacity) return { kind: 'full', holders };
    }
    return { kind: 'full', holders };
  }

  async renewHolder(pk: string, holderId: string, leaseUntil: number, expiresAt?: number): Promise<boolean> {
    this.enter('renewHolder');
    // SET holders.#h = :until IF attribute_exists(holders.#h)
    await this.leg();
    const item = this.items.get(pk);
    const before = sizeOf(item);
    const ok = item?.holders?.has(holderId) === true;
    if (ok && item !== undefined) {
      setHolder(item, holderId, leaseUntil);
      if (expiresAt !== undefined) item.expiresAt = expiresAt;
    }
    this.bill(ok, item !== undefined, before, sizeOf(item));
    await this.leg();
    return ok;
  }

  async removeHolder(pk: string, holderId: string): Promise<void> {
    this.enter('removeHolder');
    // REMOVE holders.#h IF attribute_exists(holders.#h)
    await this.leg();
    const item = this.items.get(pk);
    const before = sizeOf(item);
    const lease = item?.holders?.get(holderId);
    if (item !== undefined && lease !== undefined) {
      item.holders?.delete(holderId);
      item.holdersBytes -= entryBytes(holderId, lease);
    }
    this.bill(lease !== undefined, item !== undefined, before, before);
    await this.leg();
  }

  async evictHolders(pk: string, expired: SlotHolders): Promise<boolean> {
    this.enter('evictHolders');
    const entries = Object.entries(expired);
    if (entries.length > MAX_EVICT_PER_CALL) {
      throw new StoreRejectedError(
        `simulated UpdateItem refused before sending: more than ${MAX_EVICT_PER_CALL} holders`,
      );
    }
    if (entries.length === 0) return true;
    // REMOVE holders.#h0, ... IF holders.#h0 = :u0 AND ...
    await this.leg();
    const item = this.items.get(pk);
    const before = sizeOf(item);
    const map = item?.holders;
    const ok = map !== undefined && entries.every(([id, until]) => map.get(id) === until);
    if (ok && item !== undefined) {
      for (const [id, until] of entries) {
        map.delete(id);
        item.holdersBytes -= entryBytes(id, until);
      }
    }
    this.bill(ok, item !== undefined, before, before);
    await this.leg();
    return ok;
  }

  async takeRate(pk: string, req: RateRequest): Promise<TakeRateResult> {
    this.enter('takeRate');
    const now = us(req.now);
    const nT = us(req.intervalMs) * req.count;
    // The first start, max(now, tat − τ), must be within now + horizon.
    const limit = now + us(req.horizonMs) + us(req.toleranceMs);
    let busy = req.lastTat !== undefined && us(req.lastTat) >= now;
    let seenTat: number | undefined;
    let seenPause: number | undefined;
    for (let i = 0; i < MAX_WRITES_PER_CALL; i += 1) {
      await this.leg();
      const item = this.items.get(pk);
      const before = sizeOf(item);
      const tat = item?.tatUs;
      const notPaused = item?.pausedUntil === undefined || us(item.pausedUntil) <= now;
      // busy: SET tat = tat + :nT IF tat BETWEEN :now AND :limit AND not paused
      // idle: SET tat = :next IF (attribute_not_exists(tat) OR tat < :now) AND not paused
      const next = busy ? (tat ?? 0) + nT : now + nT;
      const ok = notPaused && (busy ? tat !== undefined && tat >= now && tat <= limit : tat === undefined || tat < now);
      seenTat = tat;
      seenPause = item?.pausedUntil;
      let after = before;
      if (ok) {
        const stored = item ?? newItem(pk);
        stored.tatUs = next;
        if (req.expiresAt !== undefined) stored.expiresAt = req.expiresAt;
        this.items.set(pk, stored);
        after = sizeOf(stored);
      } else {
        after = before - (tat === undefined ? 0 : 3 + numberSize(tat / 1000)) + 3 + numberSize(next / 1000);
      }
      this.bill(ok, item !== undefined, before, after);
      await this.leg();
      if (ok) return { kind: 'granted', tat: next / 1000 };
      if (seenPause !== undefined && us(seenPause) > now) break;
      if (seenTat !== undefined && seenTat > limit) break;
      busy = seenTat !== undefined && seenTat >= now;
    }
    return {
      kind: 'wait',
      ...(seenTat === undefined ? {} : { tat: seenTat / 1000 }),
      ...(seenPause === undefined ? {} : { pausedUntil: seenPause }),
    };
  }

  async pauseRate(pk: string, untilMs: number, expiresAt?: number): Promise<void> {
    this.enter('pauseRate');
    // SET paused_until = :until IF attribute_not_exists(paused_until) OR paused_until < :until
    await this.leg();
    const item = this.items.get(pk);
    const before = sizeOf(item);
    const ok = item?.pausedUntil === undefined || item.pausedUntil < untilMs;
    if (ok) {
      const stored = item ?? newItem(pk);
      stored.pausedUntil = untilMs;
      if (expiresAt !== undefined) stored.expiresAt = expiresAt;
      this.items.set(pk, stored);
      this.bill(true, item !== undefined, before, sizeOf(stored));
    } else {
      this.bill(false, true, before, before);
    }
    await this.leg();
  }

  async list(): Promise<LimitItem[]> {
    this.enter('list');
    await this.leg();
    this.tally.scans += 1;
    const items = [...this.items.values()].map(limitItemOf).sort((a, b) => (a.pk < b.pk ? -1 : 1));
    await this.leg();
    return items;
  }

  async noteRefusals(pk: string, count: number, at: number, expiresAt?: number): Promise<void> {
    this.enter('noteRefusals');
    // SET refused_at = :at ADD refused :n (unconditional)
    await this.leg();
    const item = this.items.get(pk);
    const before = sizeOf(item);
    const stored = item ?? newItem(pk);
    stored.refused = (stored.refused ?? 0) + count;
    stored.refusedAt = at;
    if (expiresAt !== undefined) stored.expiresAt = expiresAt;
    this.items.set(pk, stored);
    this.bill(true, item !== undefined, before, sizeOf(stored));
    await this.leg();
  }

  /** Holders of a concurrency item now. */
  holderCount(pk: string): number {
    return this.items.get(pk)?.holders?.size ?? 0;
  }

  private enter(op: LimitOperation): void {
    this.tally.calls[op] += 1;
    const mine = this.o.attribute?.();
    if (mine !== undefined) mine.calls += 1;
  }

  /** Half a request's round trip (or a bare yield, as a request would yield). */
  private leg(): Promise<void> {
    return this.halfMs > 0 && this.o.clock !== undefined ? this.o.clock.sleep(this.halfMs) : Promise.resolve();
  }

  /** One UpdateItem, billed: success by the larger image; a failed condition all the same (1 unit on no item). */
  private bill(ok: boolean, existed: boolean, beforeBytes: number, afterBytes: number): void {
    const units = !ok && !existed ? 1 : writeUnits(Math.max(beforeBytes, afterBytes));
    this.tally.updateItems += 1;
    if (!ok) this.tally.failedConditions += 1;
    this.tally.writeUnits += units;
    const mine = this.o.attribute?.();
    if (mine !== undefined) {
      mine.updateItems += 1;
      mine.writeUnits += units;
    }
  }

  private notePeak(item: Item): void {
    const n = item.holders?.size ?? 0;
    if (n > (this.tally.peakHolders.get(item.pk) ?? 0)) this.tally.peakHolders.set(item.pk, n);
  }
}

function newItem(pk: string): Item {
  return { pk, holdersBytes: 0 };
}

function setHolder(item: Item, id: string, until: number): void {
  const map = item.holders as Map<string, number>;
  const old = map.get(id);
  if (old !== undefined) item.holdersBytes -= entryBytes(id, old);
  map.set(id, until);
  item.holdersBytes += entryBytes(id, until);
}

/** A map entry: 1 byte, its name, its value. */
function entryBytes(id: string, until: number): number {
  return 1 + Buffer.byteLength(id, 'utf8') + numberSize(until);
}

/** The bytes `expires_at` adds when a write sets it on an item without one. */
function ttlBytes(item: Item | undefined, expiresAt: number | undefined): number {
  return expiresAt === undefined || item?.expiresAt !== undefined ? 0 : 'expires_at'.length + numberSize(expiresAt);
}

/** DynamoDB's size of the item: each attribute's name plus its value (0: no item). */
function sizeOf(item: Item | undefined): number {
  if (item === undefined) return 0;
  let bytes = 'pk'.length + Buffer.byteLength(item.pk, 'utf8');
  if (item.holders !== undefined) bytes += 'holders'.length + item.holdersBytes;
  if (item.tatUs !== undefined) bytes += 'tat'.length + numberSize(item.tatUs / 1000);
  if (item.pausedUntil !== undefined) bytes += 'paused_until'.length + numberSize(item.pausedUntil);
  if (item.refused !== undefined) bytes += 'refused'.length + numberSize(item.refused);
  if (item.refusedAt !== undefined) bytes += 'refused_at'.length + numberSize(item.refusedAt);
  if (item.expiresAt !== undefined) bytes += 'expires_at'.length + numberSize(item.expiresAt);
  return bytes;
}

function limitItemOf(item: Item): LimitItem {
  return {
    pk: item.pk,
    ...(item.holders === undefined ? {} : { holders: Object.fromEntries(item.holders) }),
    ...(item.tatUs === undefined ? {} : { tat: item.tatUs / 1000 }),
    ...(item.pausedUntil === undefined ? {} : { paused_until: item.pausedUntil }),
    ...(item.refused === undefined ? {} : { refused: item.refused }),
    ...(item.refusedAt === undefined ? {} : { refused_at: item.refusedAt }),
    ...(item.expiresAt === undefined ? {} : { expires_at: item.expiresAt }),
  };
}

/** Epoch ms → whole microseconds (the grid the limiter computes on and DynamoDB keeps exactly). */
function us(ms: number): number {
  return Math.round(ms * 1000);
}
