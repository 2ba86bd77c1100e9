/** `kaj stats`: the tasks delayed in the table beside SQS's delayed depth, in the snapshot and the text. */
import { describe, expect, it } from 'vitest';
import { collectStats } from '../../../cli/admin/stats.js';
import { renderStats } from '../../../cli/commands/stats.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { DELAYED_COUNT_BOUND } from '../../../shared/task/delayed-count.js';
import { FakeClock } from '../../../testing/doubles.js';
import { MemoryTaskStore } from '../../../testing/memory-task-store.js';

const inspector = {
  depth: async (kind: 'queue' | 'dlq') => ({ visible: kind === 'dlq' ? 0 : 4, inFlight: 1, delayed: 2 }),
};

function delayedIn(store: MemoryTaskStore, partition: string, n: number): void {
  for (let i = 0; i < n; i += 1) {
    const id = `t_${partition.replaceAll('#', '_')}_${i}`;
    store.items.set(id, { task_id: id, status: 'queued', outbox_pk: partition, outbox_due: 5 + i } as TaskRecord);
  }
}

describe('kaj stats: delayed in SQS and delayed in the table', () => {
  it('the snapshot counts the outbox per priority when given the index, and not otherwise', async () => {
    const store = new MemoryTaskStore();
    delayedIn(store, 'queue#normal#2', 3);
    delayedIn(store, 'queue#low', 1);
    const clock = new FakeClock(0);
    const snap = await collectStats({ inspector, clock, outbox: store }, { byStatus: false });
    expect(snap.delayedInTable).toEqual({
      byPriority: {
        high: { count: 0, capped: false },
        normal: { count: 3, capped: false },
        low: { count: 1, capped: false },
      },
      total: { count: 4, capped: false },
    });
    expect(snap.queues[1]?.queue.delayed).toBe(2);
    expect((await collectStats({ inspector, clock }, { byStatus: false })).delayedInTable).toBeUndefined();
  });

  it('prints both columns, labelled, with the table count per priority and in all ("N+" at the bound)', async () => {
    const store = new MemoryTaskStore();
    delayedIn(store, 'queue#high#0', 2);
    delayedIn(store, 'queue#low#7', DELAYED_COUNT_BOUND + 1);
    const snap = await collectStats({ inspector, clock: new FakeClock(0), outbox: store }, { byStatus: false });
    const text = renderStats(snap, 'local', undefined);
    expect(text).toMatch(/QUEUE\s+VISIBLE\s+IN FLIGHT\s+DELAYED \(SQS\)\s+DELAYED \(TABLE\)\s+OLDEST\s+DLQ/);
    expect(text).toMatch(/\nhigh\s+4\s+1\s+2\s+2\s+-\s+0\s+1\n/);
    expect(text).toMatch(/\nnormal\s+4\s+1\s+2\s+0\s+-/);
    expect(text).toMatch(new RegExp(`\\nlow\\s+4\\s+1\\s+2\\s+${DELAYED_COUNT_BOUND}\\+\\s+-`));
    expect(text).toContain(`DELAYED (TABLE): ${DELAYED_COUNT_BOUND + 2}+ task(s) wait in the table`);
    expect(text).toMatch(/OLDEST: '-' because/);
  });

  it("without the index the table column says '-' and no total is claimed", async () => {
    const snap = await collectStats({ inspector, clock: new FakeClock(0) }, { byStatus: false });
    const text = renderStats(snap, 'local', undefined);
    expect(text).toMatch(/\nhigh\s+4\s+1\s+2\s+-\s+-\s+0\s+1\n/);
    expect(text).not.toContain('DELAYED (TABLE):');
  });
});
