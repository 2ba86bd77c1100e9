/**
 * The limiter's concurrency slots: holder entries in the limits store, leased and renewed by the
 * task's heartbeat, handed from one task of this process to the next that waits for the same
 * limit (no store write), and freed by their lease when a worker dies.
 *
 * @module
 */
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { RandomSource } from '../runtime/random.js';
import { expiresAt, optional, type PlannedUse, refusalOf, type Slot, type Take } from './items.js';
import { type LimitStore, MAX_EVICT_PER_CALL } from './limit-store.js';
import { LimitError } from './errors.js';
import type { HeldPermit } from './permit.js';

/** A concurrency refusal's guess at when a slot may be free. */
const CONCURRENCY_RETRY_MS = 1_000;

interface Waiter {
  settled: boolean;
  resolve(slot: Slot | undefined): void;
}

export interface SlotLeasesDeps {
  readonly store: LimitStore;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly logger: Logger;
  readonly leaseMs: number;
  readonly localWaitMs: number;
  readonly keyTtlSeconds: number;
}

export class SlotLeases {
  private readonly store: LimitStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly leaseMs: number;
  private readonly localWaitMs: number;
  private readonly keyTtlSeconds: number;
  private readonly processId: string;
  private holderCount = 0;
  private waits = 0;
  /** Slots held by this process's tasks, by concurrency item: a waiter here can get one. */
  private readonly held = new Map<string, number>();
  private readonly waiters = new Map<string, Waiter[]>();

  constructor(d: SlotLeasesDeps) {
    this.store = d.store;
    this.clock = d.clock;
    this.logger = d.logger;
    this.leaseMs = d.leaseMs;
    this.localWaitMs = d.localWaitMs;
    this.keyTtlSeconds = d.keyTtlSeconds;
    // Short holder ids keep a concurrency item of 60 holders under 2 KB (two write units). The
    // end of the id: a counting source (tests) differs there, a random one anywhere.
    this.processId = d.random
      .id()
      .replace(/[^A-Za-z0-9]/g, '')
      .slice(-12);
  }

  /** Acquires that waited in-process for a slot another task of this process released. */
  get localWaits(): number {
    return this.waits;
  }

  /** Counts an acquire granted with a slot handed over by a task of this process. */
  countLocalWait(): void {
    this.waits += 1;
  }

  /**
   * A slot of one concurrency item: from the store; else, after evicting dead workers' ended
   * leases, from the store again; else from a task of this process that releases one within
   * `localWaitMs` (only waited for when this process holds one).
   */
  async take(use: PlannedUse): Promise<Take<{ slot: Slot; waited: boolean }>> {
    const capacity = use.spec.concurrency;
    if (capacity === undefined) throw new LimitError(`limit "${use.spec.name}" has no concurrency`);
    const now = this.clock.now();
    // As many tasks of this process wait already as it holds slots: the item is full (they found
    // it so) and every slot it will hand over has a taker. Refuse without asking the store, so a
    // backlog behind a saturated limit (a noisy tenant) costs no DynamoDB request per message.
    if (this.localQueueFull(use.pk)) {
      return { kind: 'refused', refusal: refusalOf(use, 'concurrency', now + CONCURRENCY_RETRY_MS) };
    }
    const slot: Slot = { pk: use.pk, id: this.nextHolderId(), use, leaseUntil: now + this.leaseMs };
    const expires = expiresAt(use, now, this.keyTtlSeconds);
    let added = await this.store.addHolder(use.pk, slot.id, slot.leaseUntil, capacity, expires);
    if (added.kind === 'full') {
      const ended = Object.entries(added.holders).filter(([, until]) => until < now);
      if (ended.length > 0) {
        const evicted = await this.store.evictHolders(use.pk, Object.fromEntries(ended.slice(0, MAX_EVICT_PER_CALL)));
        this.logger.info('limit slots of a dead worker freed (their leases ended)', {
          limit: use.spec.name,
          slots: ended.length,
          evicted,
        });
        added = await this.store.addHolder(use.pk, slot.id, slot.leaseUntil, capacity, expires);
      }
    }
    if (added.kind === 'granted') {
      this.held.set(use.pk, (this.held.get(use.pk) ?? 0) + 1);
      return { kind: 'granted', value: { slot, waited: false } };
    }
    if (
      (this.held.get(use.pk) ?? 0) > 0 &&
      !this.localQueueFull(use.pk) &&
      this.clock.sleep !== undefined &&
      this.localWaitMs > 0
    ) {
      const handed = await this.waitForSlot(use.pk);
      if (handed !== undefined) return { kind: 'granted', value: { slot: handed, waited: true } };
    }
    const after = this.clock.now();
    const leaseEnds = Object.values(added.holders).filter((until) => until >= after);
    return {
      kind: 'refused',
      refusal: refusalOf(use, 'concurrency', Math.min(after + CONCURRENCY_RETRY_MS, ...leaseEnds)),
    };
  }

  /** True when this process holds slots of `pk` and has a waiter for each of them already. */
  private localQueueFull(pk: string): boolean {
    const held = this.held.get(pk) ?? 0;
    return held > 0 && (this.waiters.get(pk)?.length ?? 0) >= held;
  }

  /** Waits (at most `localWaitMs`) for a slot a task of this process releases; FIFO per item. */
  private waitForSlot(pk: string): Promise<Slot | undefined> {
    return new Promise((resolve) => {
      const waiter: Waiter = { settled: false, resolve };
      const queue = this.waiters.get(pk) ?? [];
      queue.push(waiter);
      this.waiters.set(pk, queue);
      void this.clock.sleep?.(this.localWaitMs).then(() => {
        if (waiter.settled) return;
        waiter.settled = true;
        this.dropWaiter(pk, waiter);
        resolve(undefined);
      });
    });
  }

  private dropWaiter(pk: string, waiter: Waiter): void {
    const queue = (this.waiters.get(pk) ?? []).filter((w) => w !== waiter);
    if (queue.length === 0) this.waiters.delete(pk);
    else this.waiters.set(pk, queue);
  }

  async letGoAll(slots: readonly Slot[]): Promise<void> {
    for (const slot of slots) await this.letGo(slot);
  }

  /** Hands a slot to the first local waiter (same holder entry, no write), or removes it. Never throws. */
  private async letGo(slot: Slot): Promise<void> {
    const waiter = this.waiters.get(slot.pk)?.[0];
    if (waiter !== undefined) {
      waiter.settled = true;
      this.dropWaiter(slot.pk, waiter);
      waiter.resolve(await this.handOver(slot));
      return;
    }
    this.held.set(slot.pk, (this.held.get(slot.pk) ?? 1) - 1);
    if (this.held.get(slot.pk) === 0) this.held.delete(slot.pk);
    try {
      await this.store.removeHolder(slot.pk, slot.id);
    } catch (err) {
      this.logger.warn('could not release a limit slot; its lease will free it', {
        limit: slot.use.spec.name,
        error: String(err),
      });
    }
  }

  /**
   * The slot as the next task gets it: its lease renewed first only when less than half of it is
   * left (the new task's heartbeat takes over from there). `undefined` if it turned out evicted
   * and the limit has no room to take it again.
   */
  private async handOver(slot: Slot): Promise<Slot | undefined> {
    const now = this.clock.now();
    if (slot.leaseUntil - now >= this.leaseMs / 2) return slot;
    const kept = await this.extend(slot, now);
    if (kept) return slot;
    this.held.set(slot.pk, (this.held.get(slot.pk) ?? 1) - 1);
    if (this.held.get(slot.pk) === 0) this.held.delete(slot.pk);
    return undefined;
  }

  /** See `Limiter.release`. */
  async release(permit: HeldPermit): Promise<void> {
    if (permit.released) return;
    permit.released = true;
    // A renewal in flight could otherwise re-add a slot after it is removed.
    await permit.renewing;
    const slots = permit.slots;
    permit.slots = [];
    await this.letGoAll(slots);
  }

  /** Extends the lease of each slot of a permit not released yet; renewals of one permit run one after the other. */
  async renew(permit: HeldPermit): Promise<void> {
    if (permit.released) return;
    const previous = permit.renewing ?? Promise.resolve();
    const run = previous.then(async () => {
      for (const slot of permit.slots) await this.renewSlot(permit, slot);
    });
    permit.renewing = run;
    await run;
    if (permit.renewing === run) permit.renewing = undefined;
  }

  private async renewSlot(permit: HeldPermit, slot: Slot): Promise<void> {
    if (permit.released) return;
    await this.extend(slot, this.clock.now());
  }

  /**
   * Extends a slot's lease; re-adds it if it was evicted (and the limit has room). Whether the
   * slot is held now. Never throws: a store failure leaves the lease as it was (still held).
   */
  private async extend(slot: Slot, now: number): Promise<boolean> {
    const until = now + this.leaseMs;
    const expires = expiresAt(slot.use, now, this.keyTtlSeconds);
    const fields = { limit: slot.use.spec.name, ...optional('key', slot.use.key) };
    try {
      if (await this.store.renewHolder(slot.pk, slot.id, until, expires)) {
        slot.leaseUntil = until;
        return true;
      }
      const again = await this.store.addHolder(slot.pk, slot.id, until, slot.use.spec.concurrency ?? 1, expires);
      if (again.kind === 'granted') {
        slot.leaseUntil = until;
        this.logger.warn('a limit slot was evicted (its lease ended before a heartbeat); taken again', fields);
        return true;
      }
      this.logger.warn('a limit slot was evicted and the limit is full: the task runs on without it', fields);
      return false;
    } catch (err) {
      this.logger.warn('could not renew a limit slot', { ...fields, error: String(err) });
      return true;
    }
  }

  private nextHolderId(): string {
    this.holderCount += 1;
    return `${this.processId}.${this.holderCount.toString(36)}`;
  }
}
