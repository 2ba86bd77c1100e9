/**
 * The TaskStore port in memory, lean enough to carry millions of tasks, with the request and
 * capacity-unit counts DynamoDB would bill. Conditions and updates are evaluated and validated
 * by the code of the test suite's memory store (testing/memory-task-store.ts), and the model runs
 * the `TaskStore` contract (test/unit/bench/capacity-contract.test.ts) but for two parts it leaves
 * out: value marshalling (the simulation stores only well-formed records) and the listing reads.
 * The outbox index is a heap per partition, read in due order (equal due times in no set order).
 *
 * Finished tasks are dropped `retainFinishedMs` after they finish (DynamoDB would keep them for
 * the retention period; the simulation only needs them while a late duplicate might still ask).
 *
 * @module
 */
import { ConditionFailedError, StoreRejectedError, TaskAlreadyExistsError } from '../../shared/task/store-errors.js';
import type { OutboxEntry, ReadOptions, TaskChanges, TaskCondition, TaskStore } from '../../shared/task/task-store.js';
import type { TaskRecord } from '../../shared/task/model.js';
import { applyUpdate, holds, planUpdate } from '../../testing/memory-task-store.js';
import { MinHeap } from '../../testing/min-heap.js';
import type { PeakMeter } from './meter.js';

const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

/** Records and values go in and out as copies, as they do through DynamoDB. */
const copy = <T>(v: T): T => (typeof v === 'object' && v !== null ? structuredClone(v) : v);

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

/** A time (epoch ms) and a task id: an outbox index entry (its due time), or when a finished task may go. */
type TimedId = [number, string];
/** Outbox index entries of one partition, by due time; stale ones are skipped when read. */
const dueHeap = () => new MinHeap<TimedId>((x, y) => x[0] < y[0]);

export class SimTaskStore implements TaskStore {
  private readonly items = new Map<string, TaskRecord>();
  private readonly outbox = new Map<string, MinHeap<TimedId>>();
  /** Finished task ids, oldest first, with when they may be dropped. */
  private readonly expiring: TimedId[] = [];
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
    if (existing) throw new TaskAlreadyExistsError(record.task_id, copy(existing));
    const item = copy(record);
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
    return r && copy(r);
  }

  async update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord> {
    // Validated as DynamoDB validates an update (before its condition); values are not marshalled.
    const actions = planUpdate(taskId, changes, copy);
    const current = this.items.get(taskId);
    if (!current || !holds(current, condition)) {
      // A failed condition still costs a write unit on DynamoDB.
      this.meter.add('ddb.writes');
      this.meter.add('ddb.wcu', current ? units(sizeOf(current), 1024) : 1);
      this.meter.add('ddb.conditionFailed');
      throw new ConditionFailedError(taskId, current && copy(current));
    }
    const item = applyUpdate(current, actions);
    this.items.set(taskId, item);
    this.countWrite(current, item);
    if (item.outbox_pk !== current.outbox_pk || item.outbox_due !== current.outbox_due) this.index(item);
    if (FINISHED.has(item.status) && !FINISHED.has(current.status)) {
      this.expiring.push([this.now() + this.retainFinishedMs, taskId]);
    }
    this.expire();
    return copy(item);
  }

  async listOutboxDue(partition: string, dueBy: number, limit: number): Promise<OutboxEntry[]> {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new StoreRejectedError(
        `sim store Query rejected: ValidationException: limit must be an integer >= 1, got ${limit}`,
      );
    }
    this.meter.add('ddb.queries');
    const heap = this.outbox.get(partition);
    if (heap === undefined) return [];
    const out: OutboxEntry[] = [];
    const seen = new Set<string>();
    const keep: TimedId[] = [];
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
      out.push({ task_id: id, outbox_pk: partition, outbox_due: due });
    }
    // Reading an index does not remove entries: the sweeper's writes move them.
    for (const entry of keep) heap.push(entry);
    return out;
  }

  private index(r: TaskRecord): void {
    if (r.outbox_pk === undefined || typeof r.outbox_due !== 'number') return;
    let heap = this.outbox.get(r.outbox_pk);
    if (heap === undefined) {
      heap = dueHeap();
      this.outbox.set(r.outbox_pk, heap);
    }
    heap.push([r.outbox_due, r.task_id]);
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
      const e = this.expiring[this.expiringHead] as TimedId;
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
