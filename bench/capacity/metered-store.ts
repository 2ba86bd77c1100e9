/**
 * The table: the contract-tested fake of the test suite (testing/memory-task-store.ts) behind a
 * decorator that counts, per second, the requests and capacity units DynamoDB would bill.
 *
 * Finished tasks are dropped `retainFinishedMs` after they finish (DynamoDB would keep them for
 * the retention period; the simulation only needs them while a late duplicate might still ask),
 * so that millions of tasks fit in memory.
 *
 * @module
 */
import { ConditionFailedError } from '../../shared/task/store-errors.js';
import type { OutboxEntry, ReadOptions, TaskChanges, TaskCondition, TaskStore } from '../../shared/task/task-store.js';
import type { TaskRecord } from '../../shared/task/model.js';
import { isFinished } from '../../shared/task/state-machine.js';
import { MemoryTaskStore } from '../../testing/memory-task-store.js';
import { readUnits, writeUnits } from '../lib/dynamo-accounting.js';
import type { PeakMeter } from './meter.js';

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

export class MeteredTaskStore implements TaskStore {
  private readonly fake = new MemoryTaskStore();
  /** Finished task ids, oldest first, with when they may be dropped. */
  private readonly expiring: [number, string][] = [];
  private expiringHead = 0;

  constructor(
    private readonly now: () => number,
    private readonly meter: PeakMeter,
    private readonly retainFinishedMs = 60_000,
  ) {}

  /** Every task held, as stored (read-only: for the end-of-run report). */
  records(): IterableIterator<TaskRecord> {
    return this.fake.items.values();
  }

  async create(record: TaskRecord): Promise<void> {
    await this.fake.create(record);
    this.written(undefined, record.task_id);
  }

  async get(taskId: string, options: ReadOptions = {}): Promise<TaskRecord | undefined> {
    const r = this.fake.items.get(taskId);
    const consistent = options.consistent !== false;
    this.meter.add(consistent ? 'ddb.reads' : 'ddb.reads.eventual');
    this.meter.add('ddb.rcu', r === undefined ? 0.5 : readUnits(sizeOf(r), consistent));
    return this.fake.get(taskId, options);
  }

  async update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord> {
    const before = this.fake.items.get(taskId);
    let after: TaskRecord;
    try {
      after = await this.fake.update(taskId, changes, condition);
    } catch (err) {
      if (err instanceof ConditionFailedError) {
        // A failed condition still costs a write unit on DynamoDB.
        this.meter.add('ddb.writes');
        this.meter.add('ddb.wcu', before ? writeUnits(sizeOf(before)) : 1);
      }
      throw err;
    }
    this.written(before, taskId);
    return after;
  }

  listOutboxDue(partition: string, dueBy: number, limit: number): Promise<OutboxEntry[]> {
    return this.fake.listOutboxDue(partition, dueBy, limit);
  }

  /**
   * Write units as DynamoDB bills them: the larger of the item before and after, per KB; and the
   * outbox index's own writes (a GSI projecting ALL is written whenever an indexed item changes,
   * twice when its key changes: a delete and a put). Then drops what has finished long enough.
   */
  private written(before: TaskRecord | undefined, taskId: string): void {
    const after = this.fake.items.get(taskId) as TaskRecord;
    this.meter.add('ddb.writes');
    this.meter.add('ddb.wcu', writeUnits(Math.max(before ? sizeOf(before) : 0, sizeOf(after))));
    if (before?.outbox_pk !== undefined || after.outbox_pk !== undefined) {
      const moved = before?.outbox_pk !== after.outbox_pk || before?.outbox_due !== after.outbox_due;
      this.meter.add('gsi.writes', before?.outbox_pk !== undefined && after.outbox_pk !== undefined && moved ? 2 : 1);
    }
    if (before !== undefined && isFinished(after.status) && !isFinished(before.status)) {
      this.expiring.push([this.now() + this.retainFinishedMs, taskId]);
    }
    const now = this.now();
    while (this.expiringHead < this.expiring.length) {
      const [at, id] = this.expiring[this.expiringHead] as [number, string];
      if (at > now) break;
      const r = this.fake.items.get(id);
      if (r !== undefined && isFinished(r.status) && r.outbox_pk === undefined) this.fake.items.delete(id);
      this.expiringHead += 1;
    }
    if (this.expiringHead > 100_000) {
      this.expiring.splice(0, this.expiringHead);
      this.expiringHead = 0;
    }
  }
}
