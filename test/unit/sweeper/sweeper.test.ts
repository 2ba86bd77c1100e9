import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { outboxPartitions, TASK_STATUSES } from '../../../shared/task/model.js';
import { isFinished } from '../../../shared/task/state-machine.js';
import { unitKaj, OWNER } from '../../../testing/fixtures.js';
import { claimAndStart } from '../../support/claims.js';

const registry = new TaskRegistry([defineTask({ type: 'job', schema: z.object({}), handler: async () => ({}) })]);

async function queuedAndSent() {
  const u = unitKaj(registry);
  const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {} }, OWNER);
  return { ...u, record };
}

/** A task whose submit could not send (SQS failing): it waits in the outbox, due after the grace. */
async function owedASend() {
  const u = unitKaj(registry);
  u.queue.failNext.send = new Error('sqs down');
  const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {} }, OWNER);
  return { ...u, record };
}

describe('Class: OutboxSweeper (the invariant)', () => {
  it('has nothing to do for a task sent at once: its message keeps it, however long it waits', async () => {
    const { kaj, queue, clock, store, record } = await queuedAndSent();
    expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
    for (let hour = 1; hour <= 48; hour += 1) {
      clock.advance(3_600_000);
      expect(await kaj.sweep()).toEqual({ sent: 0, deferred: 0, extended: 0, failed: 0, stale: 0 });
    }
    expect(queue.sent).toHaveLength(1);
  });

  it('sends what a failed send left owed once it is due, and removes the entry', async () => {
    const { kaj, queue, clock, store, record } = await owedASend();
    expect(queue.sent).toHaveLength(0);
    clock.advance(30_000 - 1);
    expect((await kaj.sweep()).sent).toBe(0);
    clock.advance(1);
    expect((await kaj.sweep()).sent).toBe(1);
    expect(queue.sent[0]?.message).toMatchObject({ task_id: record.task_id, dispatch_id: record.dispatch_id });
    expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
    expect((await kaj.sweep()).sent).toBe(0);
    expect((await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id)).kind).toBe('claimed');
  });

  it('leaves a running task with a live lease alone, and re-sends once its worker and message are gone', async () => {
    // An entry a running task still has: its send failed, the sweeper's send went out but the
    // removal of the entry did not land, and a worker claimed it.
    const { kaj, queue, clock, store, record } = await owedASend();
    const c = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, { receiveCount: 2 });
    if (c.kind !== 'claimed') throw new Error('claim');
    clock.advance(30_000);
    const late = await kaj.lifecycle.leases.heartbeat(c.record);
    expect(await kaj.sweep()).toMatchObject({ sent: 0, extended: 1 });
    expect(store.items.get(record.task_id)?.outbox_due).toBe((late.lease_until ?? 0) + 30_000);
    // The worker dies: no heartbeat. Lease (60 s) + grace (30 s) later the sweeper re-sends.
    clock.advance(60_000 + 30_000);
    expect(await kaj.sweep()).toMatchObject({ sent: 1 });
    expect(queue.sent).toHaveLength(1);
    const again = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
    expect(again.kind).toBe('claimed');
    expect(store.items.get(record.task_id)).toMatchObject({ attempts: 2, unattributed_crashes: 1 });
  });

  it('extends the entry of a running task whose lease is live', async () => {
    const { kaj, clock, store, record } = await owedASend();
    await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, { receiveCount: 2 });
    store.items.set(record.task_id, { ...store.items.get(record.task_id)!, outbox_due: clock.now() });
    expect(await kaj.sweep()).toMatchObject({ sent: 0, extended: 1 });
    expect(store.items.get(record.task_id)?.outbox_due).toBe(clock.now() + 90_000);
  });

  it('keeps every unfinished task by a message of its current dispatch or an outbox entry; a finished one has no entry', async () => {
    const { kaj, store, queue, record } = await queuedAndSent();
    const later = (await kaj.submitter.submit({ type: 'job', payload: {}, delay_seconds: 7200 }, OWNER)).record;
    queue.failNext.send = new Error('sqs down');
    const owed = (await kaj.submitter.submit({ type: 'job', payload: {} }, OWNER)).record;
    const c = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
    if (c.kind !== 'claimed') throw new Error('claim');
    const check = () => {
      for (const r of store.items.values()) {
        expect(TASK_STATUSES).toContain(r.status);
        const sent = queue.sent.some((m) => m.message.task_id === r.task_id && m.message.dispatch_id === r.dispatch_id);
        if (isFinished(r.status)) expect(r.outbox_pk).toBeUndefined();
        else expect(sent || r.outbox_pk !== undefined).toBe(true);
      }
    };
    check();
    expect(store.items.get(later.task_id)?.outbox_pk).toBeDefined();
    expect(store.items.get(owed.task_id)?.outbox_pk).toBeDefined();
    await kaj.lifecycle.outcomes.succeed(c.record, 1, 1);
    await kaj.lifecycle.requests.cancel(later.task_id);
    check();
    expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
  });

  it('counts a send failure and tries again on the next run', async () => {
    const { kaj, queue, clock } = await owedASend();
    clock.advance(30_000);
    queue.failNext.send = new Error('sqs down');
    expect(await kaj.sweep()).toMatchObject({ sent: 0, failed: 1 });
    expect(await kaj.sweep()).toMatchObject({ sent: 1, failed: 0 });
  });

  it('a sweep whose outbox query fails ends only after the partitions it was still reading: the next sweep never runs beside it and sends an entry twice', async () => {
    const { kaj, queue, clock, store, record } = await owedASend();
    clock.advance(30_000);
    const own = store.items.get(record.task_id)?.outbox_pk;
    const [failing] = outboxPartitions();
    expect(own).toBeDefined();
    expect(own).not.toBe(failing);
    // The entry's partition is read while another query of the same sweep fails (once); its read
    // is held until `release`.
    let ownStarted!: () => void;
    const ownRead = new Promise<void>((r) => {
      ownStarted = r;
    });
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const list = store.listOutboxDue.bind(store);
    let failures = 0;
    store.listOutboxDue = async (partition, dueBy, limit) => {
      if (partition === failing && failures === 0) {
        failures += 1;
        await ownRead;
        throw new Error('index unavailable');
      }
      if (partition === own) {
        ownStarted();
        await held;
      }
      return list(partition, dueBy, limit);
    };
    // As the runtime runs them (local/serial-timer.ts, one scheduled invocation at a time on AWS):
    // the next sweep starts once the previous one has settled.
    let second: Promise<unknown> | undefined;
    const first = kaj.sweep().then(
      () => 'resolved',
      (err: unknown) => {
        second = kaj.sweep();
        return String(err);
      },
    );
    await ownRead;
    for (let i = 0; i < 10; i += 1) await new Promise((r) => setImmediate(r));
    expect(second).toBeUndefined(); // still reading the entry's partition: not settled
    release();
    expect(await first).toBe('Error: index unavailable');
    expect(await second).toMatchObject({ sent: 0, failed: 0 });
    expect(queue.sent).toHaveLength(1);
    expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
  });

  it('reads every shard of every partition, and the unsharded ones of earlier versions', async () => {
    const { kaj, store } = unitKaj(registry);
    const asked: string[] = [];
    const list = store.listOutboxDue.bind(store);
    store.listOutboxDue = async (partition, dueBy, limit) => {
      asked.push(partition);
      return list(partition, dueBy, limit);
    };
    await kaj.sweep();
    expect(asked).toHaveLength(2 * 3 * 9);
    expect(asked).toEqual(expect.arrayContaining(['dlq#high', 'queue#low#7', 'queue#normal#0', 'queue#normal']));
  });

  it('skips an index entry its item no longer matches (a lagging GSI, a torn local write): no duplicate dead letter, no stale send', async () => {
    const { kaj, queue, clock, store, record } = await queuedAndSent();
    const c = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
    if (c.kind !== 'claimed') throw new Error(c.kind);
    await kaj.lifecycle.outcomes.attemptFailed(
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
