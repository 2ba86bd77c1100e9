/**
 * The TaskStore port in memory, lean enough to carry millions of tasks, with the request and
 * capacity-unit counts DynamoDB would bill. Conditions are evaluated as `DynamoTaskStore`'s
 * ConditionExpression is (the contract the test suite's memory store is proven against); value
 * marshalling checks are left out (the simulation stores only well-formed records).
 *
 * Finished tasks are dropped `retainFinishedMs` after they finish (DynamoDB would keep them for
 * the retention period; the simulation only needs them while a late duplicate might still ask).
 *
 * @module
 */
import { ConditionFailedError, TaskAlreadyExistsError } from '../../shared/task/store-errors.js';
import type { ReadOptions, TaskChanges, TaskCondition, TaskStore } from '../../shared/task/task-store.js';
import type { TaskRecord } from '../../shared/task/model.js';
import type { PeakMeter } from './meter.js';

const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

/** DynamoDB's write unit is 1 KB, its read unit 4 KB (strongly consistent; half that eventually). */
const units = (bytes: number, per: number) => Math.max(1, Math.ceil(bytes / per));

/** Approximate item size: its JSON (close to DynamoDB's attribute-name-plus-value sizing), once per item version. */
const sizes = new WeakMap<TaskRecord, number>();
function sizeOf(r: TaskRecord): number {
  let n = sizes.get(r);
  if (n === undefined) {
    n = JSON.stringify(r).length;
    sizes.set(r, n);
  }
  return n;
}

/** Outbox index entries of one partition, by due time; stale ones are skipped when read. */
class DueHeap {
  private readonly a: [number, string][] = [];
  get size(): number {
    return this.a.length;
  }
  push(due: number, id: string): void {
    const a = this.a;
    a.push([due, id]);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as [number, string])[0] <= due) break;
      a[i] = a[p] as [number, string];
      i = p;
    }
    a[i] = [due, id];
  }
  peek(): [number, string] | undefined {
    return this.a[0];
  }
  pop(): [number, string] | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (top === undefined || last === undefined || a.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const r = l + 1;
      const c = r < a.length && (a[r] as [number, string])[0] < (a[l] as [number, string])[0] ? r : l;
      if ((a[c] as [number, string])[0] >= last[0]) break;
      a[i] = a[c] as [number, string];
      i = c;
    }
    a[i] = last;
    return top;
  }
}

export class SimTaskStore implements TaskStore {
  private readonly items = new Map<string, TaskRecord>();
  private readonly outbox = new Map<string, DueHeap>();
  /** Finished task ids, oldest first, with when they may be dropped. */
  private readonly expiring: [number, string][] = [];
  private expiringHead = 0;

  constructor(
    private readonly now: () => number,
    private readonly meter: PeakMeter,
    private readonly retainFinishedMs = 60_000,
  ) {}

  /** Tasks held (unfinished, and finished ones not yet dropped). */
  get size(): number {
    return this.items.size;
  }

  /** Every task held, as stored (read-only: for the end-of-run report). */
  records(): IterableIterator<TaskRecord> {
    return this.items.values();
  }

  async create(record: TaskRecord): Promise<void> {
    const existing = this.items.get(record.task_id);
    if (existing) throw new TaskAlreadyExistsError(record.task_id, { ...existing });
    const item = { ...record };
    this.items.set(record.task_id, item);
    this.countWrite(undefined, item);
    this.index(item);
    this.expire();
  }

  async get(taskId: string, options: ReadOptions = {}): Promise<TaskRecord | undefined> {
    const r = this.items.get(taskId);
    const consistent = options.consistent !== false;
    this.meter.add(consistent ? 'ddb.reads' : 'ddb.reads.eventual');
    this.meter.add('ddb.rcu', r === undefined ? 0.5 : units(sizeOf(r), 4096) / (consistent ? 1 : 2));
    return r && { ...r };
  }

  async update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord> {
    const current = this.items.get(taskId);
    if (!current || !holds(current, condition)) {
      // A failed condition still costs a write unit on DynamoDB.
      this.meter.add('ddb.writes');
      this.meter.add('ddb.wcu', current ? units(sizeOf(current), 1024) : 1);
      this.meter.add('ddb.conditionFailed');
      throw new ConditionFailedError(taskId, current && { ...current });
    }
    const next: Record<string, unknown> = { ...current };
    for (const [k, v] of Object.entries(changes.set ?? {})) if (v !== undefined && k !== 'task_id') next[k] = v;
    for (const [k, v] of Object.entries(changes.add ?? {})) {
      if (v !== undefined) next[k] = ((next[k] as number | undefined) ?? 0) + v;
    }
    for (const [k, v] of Object.entries(changes.append ?? {})) {
      if (v !== undefined) next[k] = [...((next[k] as unknown[] | undefined) ?? []), ...v];
    }
    for (const k of changes.remove ?? []) delete next[k];
    const item = next as unknown as TaskRecord;
    this.items.set(taskId, item);
    this.countWrite(current, item);
    if (item.outbox_pk !== current.outbox_pk || item.outbox_due !== current.outbox_due) this.index(item);
    if (FINISHED.has(item.status) && !FINISHED.has(current.status)) {
      this.expiring.push([this.now() + this.retainFinishedMs, taskId]);
    }
    this.expire();
    return { ...item };
  }

  async listOutboxDue(partition: string, dueBy: number, limit: number): Promise<TaskRecord[]> {
    this.meter.add('ddb.queries');
    const heap = this.outbox.get(partition);
    if (heap === undefined) return [];
    const out: TaskRecord[] = [];
    const seen = new Set<string>();
    const keep: [number, string][] = [];
    while (out.length < limit) {
      const top = heap.peek();
      if (top === undefined || top[0] > dueBy) break;
      heap.pop();
      const [due, id] = top;
      const r = this.items.get(id);
      // Stale entry: the item left the partition or its due time moved (a newer entry exists).
      if (r === undefined || r.outbox_pk !== partition || r.outbox_due !== due || seen.has(id)) continue;
      seen.add(id);
      keep.push(top);
      out.push({ ...r });
    }
    // Reading an index does not remove entries: the sweeper's writes move them.
    for (const [due, id] of keep) heap.push(due, id);
    return out;
  }

  private index(r: TaskRecord): void {
    if (r.outbox_pk === undefined || typeof r.outbox_due !== 'number') return;
    let heap = this.outbox.get(r.outbox_pk);
    if (heap === undefined) {
      heap = new DueHeap();
      this.outbox.set(r.outbox_pk, heap);
    }
    heap.push(r.outbox_due, r.task_id);
  }

  /**
   * Write units as DynamoDB bills them: the larger of the item before and after, per KB; and the
   * outbox index's own writes (a GSI projecting ALL is written whenever an indexed item changes,
   * twice when its key changes: a delete and a put).
   */
  private countWrite(before: TaskRecord | undefined, after: TaskRecord): void {
    const size = Math.max(before ? sizeOf(before) : 0, sizeOf(after));
    this.meter.add('ddb.writes');
    this.meter.add('ddb.wcu', units(size, 1024));
    const was = before?.outbox_pk !== undefined;
    const is = after.outbox_pk !== undefined;
    if (!was && !is) return;
    const keyChanged = was && is && (before?.outbox_pk !== after.outbox_pk || before?.outbox_due !== after.outbox_due);
    const n = keyChanged ? 2 : 1;
    this.meter.add('gsi.writes', n);
    this.meter.add('gsi.wcu', n * units(is ? sizeOf(after) : size, 1024));
  }

  private expire(): void {
    const now = this.now();
    while (this.expiringHead < this.expiring.length) {
      const e = this.expiring[this.expiringHead] as [number, string];
      if (e[0] > now) break;
      const r = this.items.get(e[1]);
      if (r !== undefined && FINISHED.has(r.status) && r.outbox_pk === undefined) this.items.delete(e[1]);
      this.expiringHead += 1;
    }
    if (this.expiringHead > 100_000) {
      this.expiring.splice(0, this.expiringHead);
      this.expiringHead = 0;
    }
  }
}

/** The store as one caller sees it: its requests are counted under `who` too. */
export function attributed(store: TaskStore, meter: PeakMeter, who: string): TaskStore {
  return {
    create: (r) => {
      meter.who = who;
      return store.create(r);
    },
    get: (id, o) => {
      meter.who = who;
      return store.get(id, o);
    },
    update: (id, changes, condition) => {
      meter.who = who;
      return store.update(id, changes, condition);
    },
    listOutboxDue: (partition, dueBy, limit) => {
      meter.who = who;
      return store.listOutboxDue(partition, dueBy, limit);
    },
  };
}

/** The condition as `DynamoTaskStore` writes it: status OR expired lease, AND the rest. */
function holds(r: TaskRecord, c: TaskCondition): boolean {
  const alternatives: boolean[] = [];
  if (c.status !== undefined && c.status.length > 0) alternatives.push(c.status.includes(r.status));
  if (c.orLeaseExpiredBefore !== undefined) {
    alternatives.push(
      r.status === 'running' && typeof r.lease_until === 'number' && r.lease_until < c.orLeaseExpiredBefore,
    );
  }
  if (alternatives.length > 0 && !alternatives.some(Boolean)) return false;
  if (c.dispatchId !== undefined && r.dispatch_id !== c.dispatchId) return false;
  if (c.leaseToken !== undefined && r.lease_token !== c.leaseToken) return false;
  if (c.outboxPending === true && r.outbox_pk === undefined) return false;
  if (c.outboxPending === false && r.outbox_pk !== undefined) return false;
  if (c.noCancelRequest === true && r.cancel_requested !== undefined) return false;
  return true;
}
