import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import type { OutboxRangeRequest } from '../../../shared/task/task-store.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { boundedText, countTableDelayed, DELAYED_COUNT_BOUND } from '../../../shared/task/delayed-count.js';
import { outboxPartitions, type TaskRecord } from '../../../shared/task/model.js';
import { OWNER, unitKaj } from '../../../testing/fixtures.js';
import { MemoryTaskStore } from '../../../testing/memory-task-store.js';

const registry = new TaskRegistry([defineTask({ type: 'job', schema: z.object({}), handler: async () => ({}) })]);

/** `n` outbox entries in one queue partition, written straight into the fake store. */
function fill(store: MemoryTaskStore, partition: string, n: number): void {
  for (let i = 0; i < n; i += 1) {
    const id = `t_${partition.replaceAll('#', '_')}_${i}`;
    store.items.set(id, { task_id: id, status: 'queued', outbox_pk: partition, outbox_due: 1_000 + i } as TaskRecord);
  }
}

describe('Function: countTableDelayed', () => {
  it('counts 0 on an empty table, reading each of the 27 queue partitions once (not the DLQ ones)', async () => {
    const store = new MemoryTaskStore();
    const read: OutboxRangeRequest[] = [];
    const reader = {
      readOutbox: (r: OutboxRangeRequest) => {
        read.push(r);
        return store.readOutbox(r);
      },
    };
    const c = await countTableDelayed(reader);
    expect(c.total).toEqual({ count: 0, capped: false });
    expect(c.byPriority).toEqual({
      high: { count: 0, capped: false },
      normal: { count: 0, capped: false },
      low: { count: 0, capped: false },
    });
    expect(read.map((r) => r.partition).sort()).toEqual(
      outboxPartitions()
        .filter((p) => p.startsWith('queue#'))
        .sort(),
    );
    expect(read).toHaveLength(27);
    expect(new Set(read.map((r) => r.limit))).toEqual(new Set([DELAYED_COUNT_BOUND]));
  });

  it('counts the tasks a submit left in the table (delay beyond 15 minutes), per priority; not those SQS holds', async () => {
    const { kaj, store } = unitKaj(registry);
    const submit = (delay: number, priority: 'high' | 'normal' | 'low') =>
      kaj.submitter.submit({ type: 'job', payload: {}, delay_seconds: delay, priority }, OWNER);
    await submit(3_600, 'high');
    await submit(7_200, 'low');
    await submit(5_400, 'low');
    await submit(600, 'normal'); // SQS holds a delay of 10 minutes: not in the table
    await submit(0, 'normal');
    const c = await countTableDelayed(store);
    expect(c.total).toEqual({ count: 3, capped: false });
    expect(c.byPriority.high).toEqual({ count: 1, capped: false });
    expect(c.byPriority.normal).toEqual({ count: 0, capped: false });
    expect(c.byPriority.low).toEqual({ count: 2, capped: false });
    expect(boundedText(c.total)).toBe('3');
  });

  it('stops at the bound per partition and says so ("100+"), in that priority and in the total', async () => {
    const store = new MemoryTaskStore();
    fill(store, 'queue#low#3', DELAYED_COUNT_BOUND + 20);
    fill(store, 'queue#high#0', 2);
    const c = await countTableDelayed(store);
    expect(c.byPriority.low).toEqual({ count: DELAYED_COUNT_BOUND, capped: true });
    expect(c.byPriority.high).toEqual({ count: 2, capped: false });
    expect(c.total).toEqual({ count: DELAYED_COUNT_BOUND + 2, capped: true });
    expect(boundedText(c.total, (n) => n.toLocaleString('en-US'))).toBe('102+');
    expect(boundedText(c.byPriority.high)).toBe('2');
  });

  it('a partition holding exactly the bound is "at least" (DynamoDB says more whenever the limit is reached)', async () => {
    const store = new MemoryTaskStore();
    fill(store, 'queue#normal#1', 5);
    const c = await countTableDelayed(store, 5);
    expect(c.total).toEqual({ count: 5, capped: true });
    fill(store, 'queue#normal#2', 4);
    expect((await countTableDelayed(store, 5)).byPriority.normal).toEqual({ count: 9, capped: true });
    expect((await countTableDelayed(store, 6)).byPriority.normal).toEqual({ count: 9, capped: false });
  });

  it('an unavailable store is reported, not counted as 0', async () => {
    const store = new MemoryTaskStore();
    store.failNext.readOutbox = new StoreUnavailableError('DynamoDB Query failed');
    await expect(countTableDelayed(store)).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
