import { ConditionFailedError, TaskAlreadyExistsError } from '../../shared/store/errors.js';
import type { ReadOptions, TaskChanges, TaskCondition, TaskStore } from '../../shared/store/task-store.js';
import type { TaskRecord } from '../../shared/task/model.js';

/**
 * The TaskStore contract in memory, for unit tests of domain logic. Conditions are evaluated
 * as DynamoDB would; integration tests check the real thing against emulators.
 */
export class MemoryTaskStore implements TaskStore {
  readonly items = new Map<string, TaskRecord>();
  /** Make the next call(s) of an operation throw. */
  failNext: Partial<Record<'create' | 'get' | 'update' | 'listOutboxDue', Error>> = {};
  /** Updates applied so far. */
  updates = 0;
  /** Runs before each update (to inject a concurrent change or a failure). */
  beforeUpdate: ((taskId: string, changes: TaskChanges) => void | Promise<void>) | undefined;

  async create(record: TaskRecord): Promise<void> {
    this.maybeFail('create');
    const existing = this.items.get(record.task_id);
    if (existing) throw new TaskAlreadyExistsError(record.task_id, clone(existing));
    this.items.set(record.task_id, clone(record));
  }

  /** Reads made so far, by consistency (the cancel poll uses eventually consistent reads). */
  reads = { consistent: 0, eventual: 0 };

  async get(taskId: string, options: ReadOptions = {}): Promise<TaskRecord | undefined> {
    if (options.consistent === false) this.reads.eventual += 1;
    else this.reads.consistent += 1;
    this.maybeFail('get');
    const r = this.items.get(taskId);
    return r && clone(r);
  }

  async update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord> {
    this.maybeFail('update');
    await this.beforeUpdate?.(taskId, changes);
    const current = this.items.get(taskId);
    if (!current || !holds(current, condition)) throw new ConditionFailedError(taskId, current && clone(current));
    const next: Record<string, unknown> = { ...current };
    for (const [k, v] of Object.entries(changes.set ?? {})) if (v !== undefined) next[k] = clone(v);
    for (const [k, v] of Object.entries(changes.add ?? {})) next[k] = ((next[k] as number | undefined) ?? 0) + (v ?? 0);
    for (const [k, v] of Object.entries(changes.append ?? {})) next[k] = [...((next[k] as unknown[] | undefined) ?? []), ...clone(v ?? [])];
    for (const k of changes.remove ?? []) delete next[k];
    this.items.set(taskId, next as unknown as TaskRecord);
    this.updates += 1;
    return clone(next as unknown as TaskRecord);
  }

  async listOutboxDue(partition: string, dueBy: number, limit: number): Promise<TaskRecord[]> {
    this.maybeFail('listOutboxDue');
    return [...this.items.values()]
      .filter((r) => r.outbox_pk === partition && (r.outbox_due ?? Infinity) <= dueBy)
      .sort((a, b) => (a.outbox_due ?? 0) - (b.outbox_due ?? 0))
      .slice(0, limit)
      .map(clone);
  }

  private maybeFail(op: keyof MemoryTaskStore['failNext']): void {
    const err = this.failNext[op];
    if (err) {
      delete this.failNext[op];
      throw err;
    }
  }
}

function holds(r: TaskRecord, c: TaskCondition): boolean {
  const alternatives: boolean[] = [];
  if (c.status !== undefined && c.status.length > 0) alternatives.push(c.status.includes(r.status));
  if (c.orLeaseExpiredBefore !== undefined) {
    alternatives.push(r.status === 'running' && (r.lease_until ?? Infinity) < c.orLeaseExpiredBefore);
  }
  if (alternatives.length > 0 && !alternatives.some(Boolean)) return false;
  if (c.dispatchId !== undefined && r.dispatch_id !== c.dispatchId) return false;
  if (c.leaseToken !== undefined && r.lease_token !== c.leaseToken) return false;
  if (c.outboxPending === true && r.outbox_pk === undefined) return false;
  if (c.outboxPending === false && r.outbox_pk !== undefined) return false;
  if (c.noCancelRequest === true && r.cancel_requested !== undefined) return false;
  return true;
}

function clone<T>(v: T): T {
  return v === undefined ? v : (structuredClone(v) as T);
}
