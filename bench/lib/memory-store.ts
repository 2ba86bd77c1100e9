/**
 * A minimal in-memory `TaskStore` for the cost benchmark, beside the contract-tested fake
 * (`testing/memory-task-store.ts`). It keeps the port's contract as
 * `shared/task/task-store.ts` documents it and `DynamoTaskStore` implements it:
 * - `create` fails with `TaskAlreadyExistsError` (carrying the item) when the id is taken;
 * - `update` applies `set` / `add` / `append` / `remove` only if the item exists and every part of
 *   the condition holds (`status` OR `orLeaseExpiredBefore`, AND the rest), else
 *   `ConditionFailedError` with the item as stored (DynamoDB's ALL_OLD);
 * - `listOutboxDue` reads the sparse outbox index: items with both index keys, due by `dueBy`,
 *   oldest first, returned as the index projects them (KEYS_ONLY: keys only).
 * A condition it does not know throws, so a new `TaskCondition` field cannot be silently ignored
 * (the bench would then count writes the real store refuses).
 *
 * @module
 */
import { TABLE_SCHEMA } from '../../shared/config/resources.js';
import { ConditionFailedError, TaskAlreadyExistsError } from '../../shared/task/store-errors.js';
import type { ReadOptions, TaskChanges, TaskCondition, TaskStore } from '../../shared/task/task-store.js';
import type { TaskRecord } from '../../shared/task/model.js';
import {
  applyChanges,
  isInIndex,
  type Item,
  projectedItem,
  type TableModel,
  withoutUndefined,
} from './dynamo-accounting.js';

const KNOWN_CONDITIONS = new Set<string>([
  'status',
  'orLeaseExpiredBefore',
  'dispatchId',
  'leaseToken',
  'outboxPending',
  'noCancelRequest',
]);

export class BenchTaskStore implements TaskStore {
  readonly items = new Map<string, Record<string, unknown>>();

  constructor(
    private readonly table: TableModel,
    /** The index `listOutboxDue` reads. */
    private readonly outboxIndex: string = TABLE_SCHEMA.outboxIndex.name,
  ) {}

  async create(record: TaskRecord): Promise<void> {
    const existing = this.items.get(record.task_id);
    if (existing !== undefined) throw new TaskAlreadyExistsError(record.task_id, copy(existing));
    this.items.set(record.task_id, withoutUndefined(record) as Record<string, unknown>);
  }

  async get(taskId: string, _options?: ReadOptions): Promise<TaskRecord | undefined> {
    const item = this.items.get(taskId);
    return item === undefined ? undefined : copy(item);
  }

  async update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord> {
    const current = this.items.get(taskId);
    if (current === undefined || !holds(current, condition)) {
      throw new ConditionFailedError(taskId, current === undefined ? undefined : copy(current));
    }
    const next = applyChanges(current, changes, this.table.partitionKey);
    this.items.set(taskId, next);
    return copy(next);
  }

  async listOutboxDue(partition: string, dueBy: number, limit: number): Promise<TaskRecord[]> {
    const index = this.table.indexes.find((i) => i.name === this.outboxIndex);
    if (index === undefined) throw new Error(`bench store: the table model has no index "${this.outboxIndex}"`);
    const due = (item: Item): number => Number(index.sortKey === undefined ? 0 : item[index.sortKey]);
    return [...this.items.values()]
      .filter((item) => isInIndex(item, index) && item[index.partitionKey] === partition && due(item) <= dueBy)
      .sort((a, b) => due(a) - due(b))
      .slice(0, limit)
      .map((item) => copy(projectedItem(item, this.table, index)));
  }
}

/** Whether `item` meets the condition, as the adapter's ConditionExpression decides it. */
export function holds(item: Item, c: TaskCondition): boolean {
  for (const [k, v] of Object.entries(c)) {
    if (v !== undefined && !KNOWN_CONDITIONS.has(k)) {
      throw new Error(`bench store: unknown TaskCondition "${k}"; teach bench/lib/memory-store.ts what it means`);
    }
  }
  const alternatives: boolean[] = [];
  if (c.status !== undefined && c.status.length > 0) alternatives.push(c.status.includes(item.status as never));
  if (c.orLeaseExpiredBefore !== undefined) {
    alternatives.push(
      item.status === 'running' && typeof item.lease_until === 'number' && item.lease_until < c.orLeaseExpiredBefore,
    );
  }
  if (alternatives.length > 0 && !alternatives.some(Boolean)) return false;
  if (c.dispatchId !== undefined && item.dispatch_id !== c.dispatchId) return false;
  if (c.leaseToken !== undefined && item.lease_token !== c.leaseToken) return false;
  const outboxKey = TABLE_SCHEMA.outboxIndex.partitionKey;
  if (c.outboxPending === true && item[outboxKey] === undefined) return false;
  if (c.outboxPending === false && item[outboxKey] !== undefined) return false;
  if (c.noCancelRequest === true && item.cancel_requested !== undefined) return false;
  return true;
}

function copy(item: Item): TaskRecord {
  return structuredClone(item) as unknown as TaskRecord;
}
