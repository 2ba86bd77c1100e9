import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { TASK_STATUSES } from '../../../shared/task/model.js';
import { isFinished } from '../../../shared/task/state-machine.js';
import { unitKaj, OWNER } from '../../support/fixtures.js';

const registry = new TaskRegistry([defineTask({ type: 'job', schema: z.object({}), handler: async () => ({}) })]);

async function queuedAndSent() {
  const u = unitKaj(registry);
  const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {} }, OWNER);
  return { ...u, record };
}

describe('Class: OutboxSweeper (the invariant)', () => {
  it('re-sends the message of a queued task nobody claimed an hour after its run_at (a lost message)', async () => {
    const { kaj, queue, clock, record } = await queuedAndSent();
    expect(queue.sent).toHaveLength(1);
    clock.advance(3_600_000 - 1);
    expect((await kaj.sweep()).sent).toBe(0);
    clock.advance(1);
    expect((await kaj.sweep()).sent).toBe(1);
    expect(queue.sent[1]?.message).toMatchObject({ task_id: record.task_id, dispatch_id: record.dispatch_id });
    // The claim still accepts it: same dispatch id.
    expect((await kaj.lifecycle.claim(record.task_id, record.dispatch_id)).kind).toBe('claimed');
  });

  it('backs the watchdog off exponentially while a task keeps waiting (a long outage)', async () => {
    const { kaj, queue, clock, store, record } = await queuedAndSent();
    const runAt = Date.parse(record.run_at);
    const resentAt: number[] = [];
    for (let hour = 1; hour <= 48; hour += 1) {
      clock.set(runAt + hour * 3_600_000);
      if ((await kaj.sweep()).sent > 0) resentAt.push(hour);
    }
    expect(resentAt).toEqual([1, 2, 4, 8, 16, 32]);
    expect(queue.sent).toHaveLength(1 + 6);
    expect(store.items.get(record.task_id)?.outbox_due).toBe(runAt + 64 * 3_600_000);
  });

  it('leaves a running task with a live lease alone, and re-sends once its worker and message are gone', async () => {
    const { kaj, queue, clock, store, record } = await queuedAndSent();
    const c = await kaj.lifecycle.claim(record.task_id, record.dispatch_id);
    if (c.kind !== 'claimed') throw new Error('claim');
    // The watchdog (run_at + 1 h) finds it running with a live lease (a long backlog, then a
    // late claim): it only looks again after the lease.
    clock.advance(3_600_000);
    const late = await kaj.lifecycle.heartbeat(c.record);
    expect(await kaj.sweep()).toMatchObject({ sent: 0, extended: 1 });
    expect(store.items.get(record.task_id)?.outbox_due).toBe((late.lease_until ?? 0) + 30_000);
    // The worker dies: no heartbeat. Lease (60 s) + grace (30 s) later the sweeper re-sends.
    clock.advance(60_000 + 30_000);
    expect(await kaj.sweep()).toMatchObject({ sent: 1 });
    expect(queue.sent).toHaveLength(2);
    const again = await kaj.lifecycle.claim(record.task_id, record.dispatch_id);
    expect(again.kind).toBe('claimed');
    expect(store.items.get(record.task_id)).toMatchObject({ attempts: 2, unattributed_crashes: 1 });
  });

  it('extends the watchdog of a running task whose lease is live', async () => {
    const { kaj, clock, store, record } = await queuedAndSent();
    await kaj.lifecycle.claim(record.task_id, record.dispatch_id);
    // Entry due at lease+grace; simulate a stale due time (e.g. written before a heartbeat landed).
    store.items.set(record.task_id, { ...store.items.get(record.task_id)!, outbox_due: clock.now() });
    expect(await kaj.sweep()).toMatchObject({ sent: 0, extended: 1 });
    expect(store.items.get(record.task_id)?.outbox_due).toBe(clock.now() + 90_000);
  });

  it('keeps an entry on every unfinished task and none on a finished one', async () => {
    const { kaj, store, record } = await queuedAndSent();
    const other = (await kaj.submitter.submit({ type: 'job', payload: {}, delay_seconds: 7200 }, OWNER)).record;
    const c = await kaj.lifecycle.claim(record.task_id, record.dispatch_id);
    if (c.kind !== 'claimed') throw new Error('claim');
    const check = () => {
      for (const r of store.items.values()) {
        expect(TASK_STATUSES).toContain(r.status);
        if (isFinished(r.status)) expect(r.outbox_pk).toBeUndefined();
        else expect(r.outbox_pk).toBeDefined();
      }
    };
    check();
    await kaj.lifecycle.succeed(c.record, 1, 1);
    await kaj.lifecycle.cancel(other.task_id);
    check();
    expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
  });

  it('counts a send failure and tries again on the next run', async () => {
    const { kaj, queue, clock } = await queuedAndSent();
    clock.advance(3_600_000);
    queue.failNext.send = new Error('sqs down');
    expect(await kaj.sweep()).toMatchObject({ sent: 0, failed: 1 });
    expect(await kaj.sweep()).toMatchObject({ sent: 1, failed: 0 });
  });

  it('skips an index entry its item no longer matches (a lagging GSI, a torn local write): no duplicate dead letter, no stale send', async () => {
    const { kaj, queue, clock, store, record } = await queuedAndSent();
    const c = await kaj.lifecycle.claim(record.task_id, record.dispatch_id);
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await kaj.lifecycle.attemptFailed(
      c.record,
      { retryable: false, info: { name: 'E', message: 'boom', retryable: false } },
      {
        maxAttempts: 1,
        timeoutSeconds: 60,
        backoff: { baseSeconds: 1, capSeconds: 1 },
      },
      1,
    );
    expect(queue.dead).toHaveLength(1);
    // The index still shows the entries the item had before (the dead letter owed, and a phantom).
    const snapshot = { ...store.items.get(record.task_id)!, outbox_pk: 'dlq#normal', outbox_due: 0 };
    const phantom = { ...snapshot, task_id: 't_gone', outbox_due: 0 };
    const list = store.listOutboxDue.bind(store);
    store.listOutboxDue = async (partition, dueBy, limit) =>
      partition === 'dlq#normal' ? [snapshot, phantom] : list(partition, dueBy, limit);
    clock.advance(120_000);
    const report = await kaj.sweep();
    expect(report).toMatchObject({ sent: 0, stale: 2, failed: 0 });
    expect(queue.dead).toHaveLength(1);
  });
});
