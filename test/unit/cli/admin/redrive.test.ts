import { outboxKey } from '../../../../shared/task/model.js';
import { describe, expect, it } from 'vitest';
import { parseDeadEntry } from '../../../../cli/admin/dead-letters.js';
import { planRedrive, redriveDeadLetters, type RedriveOptions } from '../../../../cli/admin/redrive.js';
import { BATCH_BASE, batchDeps, deadTask, letterless, PLAN, storedRecord, world, type World } from './fakes.js';

const base: RedriveOptions = { ...BATCH_BASE, to: 'original', keepAttempts: false };

const deps = batchDeps;
const run = (w: World, o: Partial<RedriveOptions> = {}) => redriveDeadLetters(deps(w), { ...base, ...o });
const rec = storedRecord;

describe('planRedrive', () => {
  const { entry, record: r } = PLAN;
  it.each([
    ['failed, same dispatch', r('failed'), 'reset'],
    ['queued, same dispatch (SQS moved it)', r('queued'), 'resend'],
    ['running, same dispatch', r('running'), 'resend'],
    ['succeeded, same dispatch', r('succeeded'), 'discard_letter'],
    ['queued, newer dispatch with an owed message', r('queued', 'd2', { outbox_pk: 'queue#normal' }), 'resume'],
    ['queued, newer dispatch already sent', r('queued', 'd2'), 'discard_letter'],
    ['failed again, newer dispatch', r('failed', 'd2'), 'discard_letter'],
    ['running, newer dispatch', r('running', 'd2'), 'discard_letter'],
    ['no record', null, 'leave'],
  ])('%s → %s', (_name, record, action) => {
    expect(planRedrive(entry, record, (x) => x.outbox_pk !== undefined).action).toBe(action);
  });
  it('leaves a message that is not Kaj’s', () => {
    expect(
      planRedrive(parseDeadEntry('high', { messageId: 'm', receiptHandle: 'h', attributes: {}, body: 'x' }), undefined)
        .action,
    ).toBe('leave');
  });
});

describe('redriveDeadLetters', () => {
  it('resets the record, sends a new message, then deletes the dead letter', async () => {
    const w = world();
    const dead = await deadTask(w, { priority: 'high' });
    w.clock.advance(60_000);
    const report = await run(w, { reason: 'provider fixed' });

    expect(report).toMatchObject({ selected: 1, redriven: 1, skipped: 0, failed: 0, interrupted: false });
    const r = await rec(w, dead.task_id);
    expect(r).toMatchObject({
      status: 'queued',
      attempts: 0,
      crashes: 0,
      redrive_count: 1,
      priority: 'high',
      run_at: new Date(w.clock.now()).toISOString(),
    });
    expect(r.dispatch_id).not.toBe(dead.dispatch_id);
    expect(r.audit).toEqual([
      { action: 'redrive', at: new Date(w.clock.now()).toISOString(), by: 'ops', reason: 'provider fixed' },
    ]);
    expect(r.finished_at).toBeUndefined();
    expect(r.expires_at).toBeUndefined();
    // Sent: the entry is removed, the message keeps the task.
    expect(r.outbox_pk).toBeUndefined();
    expect(r.outbox_due).toBeUndefined();
    expect(w.lifecycle.outboxes.sendUnconfirmed(r)).toBe(false);
    expect(w.queue.sent).toEqual([
      {
        priority: 'high',
        message: { task_id: dead.task_id, dispatch_id: r.dispatch_id, timeout_seconds: 30, sent_at: w.clock.now() },
        delaySeconds: 0,
        type: 'send_email',
      },
    ]);
    expect(w.dlq.all()).toHaveLength(0);
  });

  it('--keep-attempts keeps the count; --to sends to another queue and changes the priority', async () => {
    const w = world();
    const dead = await deadTask(w, { priority: 'low', attempts: 4 });
    await run(w, { keepAttempts: true, to: 'high' });
    expect(await rec(w, dead.task_id)).toMatchObject({ status: 'queued', attempts: 4, crashes: 1, priority: 'high' });
    expect(w.queue.sent.map((s) => s.priority)).toEqual(['high']);
  });

  it('redrives only the selected type; the others are released untouched', async () => {
    const w = world();
    const emails = [await deadTask(w), await deadTask(w)];
    const thumbs = [
      await deadTask(w, { type: 'make_thumbnails' }),
      await deadTask(w, { type: 'make_thumbnails', priority: 'high' }),
    ];
    const report = await run(w, { filter: { type: 'send_email' } });
    expect(report).toMatchObject({ selected: 2, redriven: 2 });
    for (const t of emails) expect((await rec(w, t.task_id)).status).toBe('queued');
    for (const t of thumbs) expect((await rec(w, t.task_id)).status).toBe('failed');
    expect(w.dlq.all()).toHaveLength(2);
    expect(w.dlq.visible('normal')).toHaveLength(1);
    expect(w.dlq.visible('high')).toHaveLength(1);
  });

  it('--dry-run writes nothing, sends nothing, deletes nothing, and reports the plan', async () => {
    const w = world();
    await deadTask(w);
    await deadTask(w, { type: 'make_thumbnails' });
    w.dlq.put('low', 'garbage');
    const before = JSON.stringify([...w.store.items.values()]);
    const report = await run(w, { dryRun: true });
    expect(report).toMatchObject({ dryRun: true, selected: 3, redriven: 2, failed: 1 });
    expect(report.items.map((i) => i.action).sort()).toEqual(['leave', 'reset', 'reset']);
    expect(JSON.stringify([...w.store.items.values()])).toBe(before);
    expect(w.store.updates).toBe(0);
    expect(w.queue.sent).toHaveLength(0);
    expect(w.dlq.all()).toHaveLength(3);
    expect(w.dlq.visible('normal')).toHaveLength(2);
  });

  it('a crash between send and delete, then a re-run: each task sent once, every letter gone', async () => {
    const w = world();
    const tasks = await Promise.all(Array.from({ length: 12 }, () => deadTask(w)));
    w.dlq.failNextDelete = 1; // the first page's delete "crashes"
    const first = await run(w);
    expect(first).toMatchObject({ selected: 12, redriven: 2, failed: 10 });
    expect(first.items.filter((i) => i.outcome === 'failed')[0]?.detail).toMatch(/could not be deleted.*re-run/);
    expect(w.dlq.all()).toHaveLength(10);

    const second = await run(w);
    expect(second).toMatchObject({ selected: 10, redriven: 0, skipped: 10, failed: 0 });
    expect(second.items.every((i) => i.action === 'discard_letter')).toBe(true);
    expect(w.dlq.all()).toHaveLength(0);
    for (const t of tasks) {
      const r = await rec(w, t.task_id);
      expect(r).toMatchObject({ status: 'queued', redrive_count: 1 });
      expect(w.queue.sent.filter((s) => s.message.task_id === t.task_id).map((s) => s.message.dispatch_id)).toEqual([
        r.dispatch_id,
      ]);
    }
  });

  it('a crash between the record write and the send: the outbox owes it, a re-run sends it once', async () => {
    const w = world();
    const dead = await deadTask(w);
    w.queue.failNextSends = 1;
    const first = await run(w);
    expect(first).toMatchObject({ redriven: 0, failed: 1 });
    const reset = await rec(w, dead.task_id);
    expect(reset).toMatchObject({ status: 'queued', outbox_pk: outboxKey('queue', 'normal', dead.task_id) });
    expect(w.lifecycle.outboxes.sendUnconfirmed(reset)).toBe(true);
    expect(w.dlq.all()).toHaveLength(1);

    const second = await run(w);
    expect(second).toMatchObject({ redriven: 1, failed: 0 });
    expect(second.items[0]?.action).toBe('resume');
    expect(w.queue.sent.map((s) => s.message.dispatch_id)).toEqual([reset.dispatch_id]);
    expect(w.lifecycle.outboxes.sendUnconfirmed(await rec(w, dead.task_id))).toBe(false);
    expect((await rec(w, dead.task_id)).redrive_count).toBe(1);
    expect(w.dlq.all()).toHaveLength(0);
  });

  it('duplicate dead letters of one task redrive it once', async () => {
    const w = world();
    const dead = await deadTask(w);
    const letter = JSON.parse(w.dlq.all()[0]!.body) as never;
    w.dlq.putDeadLetter(letter);
    const report = await run(w);
    expect(report).toMatchObject({ selected: 2, redriven: 1, skipped: 1 });
    expect(w.queue.sent).toHaveLength(1);
    expect((await rec(w, dead.task_id)).redrive_count).toBe(1);
  });

  it('re-plans when the record changes between read and write (another operator redrove it)', async () => {
    const w = world();
    const dead = await deadTask(w);
    let raced = false;
    w.store.beforeUpdate = async (id) => {
      if (raced) return;
      raced = true;
      const cur = w.store.items.get(id)!;
      w.store.items.set(id, { ...cur, status: 'queued', dispatch_id: 'someone-else' });
    };
    const report = await run(w);
    expect(report).toMatchObject({ redriven: 0, skipped: 1, failed: 0 });
    expect(w.queue.sent).toHaveLength(0);
    expect((await rec(w, dead.task_id)).dispatch_id).toBe('someone-else');
    expect(w.dlq.all()).toHaveLength(0);
  });

  it('re-sends the message of a waiting task that SQS moved to the DLQ (no status change)', async () => {
    const w = world();
    const dead = await deadTask(w, { priority: 'low' });
    await w.store.update(dead.task_id, { set: { status: 'queued' }, remove: ['finished_at'] }, {});
    w.dlq.queues.low.length = 0;
    w.dlq.put('low', { task_id: dead.task_id, dispatch_id: dead.dispatch_id, timeout_seconds: 30 });
    const report = await run(w);
    expect(report).toMatchObject({ redriven: 1 });
    expect(report.items[0]?.action).toBe('resend');
    const r = await rec(w, dead.task_id);
    expect(r).toMatchObject({ status: 'queued', dispatch_id: dead.dispatch_id, redrive_count: 1 });
    expect(r.audit?.[0]?.action).toBe('redrive');
    expect(w.queue.sent.map((s) => [s.priority, s.message.dispatch_id])).toEqual([['low', dead.dispatch_id]]);
    expect(w.dlq.all()).toHaveLength(0);
  });

  it('leaves (and counts as failed) a letter whose task record is gone', async () => {
    const w = world();
    const dead = await deadTask(w);
    w.store.items.delete(dead.task_id);
    const report = await run(w);
    expect(report).toMatchObject({ failed: 1, redriven: 0 });
    expect(report.items[0]?.detail).toMatch(/record not found/);
    expect(w.dlq.visible('normal')).toHaveLength(1);
  });

  it('with pages handled in a pipeline, every task is still redriven exactly once', async () => {
    const w = world();
    const tasks = await Promise.all(
      Array.from({ length: 35 }, (_, i) => deadTask(w, { priority: i % 2 ? 'normal' : 'high' })),
    );
    const report = await run(w, { pipeline: 3 });
    expect(report).toMatchObject({ selected: 35, redriven: 35, skipped: 0, failed: 0 });
    expect(w.queue.sent).toHaveLength(35);
    expect(new Set(w.queue.sent.map((s) => s.message.task_id)).size).toBe(35);
    for (const t of tasks) expect((await rec(w, t.task_id)).redrive_count).toBe(1);
    expect(w.dlq.all()).toHaveLength(0);
  });

  it('--limit stops after N', async () => {
    const w = world();
    for (let i = 0; i < 7; i += 1) await deadTask(w);
    const report = await run(w, { limit: 3 });
    expect(report).toMatchObject({ selected: 3, redriven: 3 });
    expect(w.dlq.visible('normal')).toHaveLength(4);
  });

  it('--rate paces the tasks on the injected clock', async () => {
    const w = world();
    for (let i = 0; i < 5; i += 1) await deadTask(w);
    const started = w.clock.now();
    await run(w, { ratePerSecond: 2, concurrency: 1 });
    expect(w.sleeps).toEqual([500, 500, 500, 500]);
    expect(w.clock.now() - started).toBe(2000);
  });

  it('Ctrl-C during a paced wait: what had not started is released untouched and not counted', async () => {
    const w = world();
    for (let i = 0; i < 10; i += 1) await deadTask(w);
    const controller = new AbortController();
    let waits = 0;
    const report = await redriveDeadLetters(
      {
        ...deps(w),
        sleep: async (ms) => {
          w.clock.advance(ms);
          if (++waits === 3) controller.abort();
        },
      },
      { ...base, ratePerSecond: 1, concurrency: 1, signal: controller.signal },
    );
    expect(report).toMatchObject({ interrupted: true, selected: 3, redriven: 3, failed: 0 });
    expect(w.dlq.visible('normal')).toHaveLength(7);
    expect([...w.store.items.values()].filter((r) => r.status === 'failed')).toHaveLength(7);
  });

  it('stops on abort: the rest untouched and released', async () => {
    const w = world();
    for (let i = 0; i < 25; i += 1) await deadTask(w);
    const controller = new AbortController();
    const report = await run(w, {
      signal: controller.signal,
      onProgress: (c) => {
        if (c.done === 10) controller.abort();
      },
    });
    expect(report).toMatchObject({ interrupted: true, selected: 10, redriven: 10 });
    expect(w.dlq.visible('normal')).toHaveLength(15);
    expect([...w.store.items.values()].filter((r) => r.status === 'failed')).toHaveLength(15);
  });
});

describe('redriveDeadLetters with --task: a named task whose dead letter is gone', () => {
  it('is redriven from its record: reset, sent, audited; reported without a message id', async () => {
    const w = world();
    const dead = await letterless(w, { priority: 'high' });
    w.clock.advance(1_000);
    const report = await run(w, { filter: { taskIds: [dead.task_id] }, reason: 'lost letter' });
    expect(report).toMatchObject({ selected: 1, redriven: 1, skipped: 0, failed: 0 });
    expect(report.items).toEqual([
      expect.objectContaining({
        message_id: null,
        task_id: dead.task_id,
        dlq: 'high',
        action: 'reset_from_record',
        outcome: 'done',
      }),
    ]);
    const r = await rec(w, dead.task_id);
    expect(r).toMatchObject({
      status: 'queued',
      attempts: 0,
      redrive_count: 1,
      priority: 'high',
    });
    expect(r.outbox_pk).toBeUndefined();
    expect(r.audit).toEqual([
      { action: 'redrive', at: new Date(w.clock.now()).toISOString(), by: 'ops', reason: 'lost letter' },
    ]);
    expect(w.queue.sent.map((s) => [s.priority, s.message.dispatch_id])).toEqual([['high', r.dispatch_id]]);
  });

  it('a named task whose letter is there is redriven once, through its letter', async () => {
    const w = world();
    const dead = await deadTask(w);
    const report = await run(w, { filter: { taskIds: [dead.task_id, dead.task_id] } });
    expect(report).toMatchObject({ selected: 1, redriven: 1 });
    expect(report.items.map((i) => i.action)).toEqual(['reset']);
    expect(w.queue.sent).toHaveLength(1);
  });

  it('--dry-run says it would redrive from the record and changes nothing', async () => {
    const w = world();
    const dead = await letterless(w);
    const report = await run(w, { filter: { taskIds: [dead.task_id] }, dryRun: true });
    expect(report).toMatchObject({ selected: 1, redriven: 1, failed: 0 });
    expect(report.items[0]?.detail).toMatch(/dry run: would redrive from the task record/);
    expect(w.store.updates).toBe(0);
    expect(w.queue.sent).toHaveLength(0);
  });

  it.each([
    ['no record at all', async () => 't_nosuchtask', {}, /no task record/],
    [
      'a task that is not dead',
      async (w: World) => {
        const t = await letterless(w);
        await w.store.update(t.task_id, { set: { status: 'succeeded' } }, {});
        return t.task_id;
      },
      {},
      /task is succeeded, not dead/,
    ],
    [
      'a purged task',
      async (w: World) => {
        const t = await letterless(w);
        await w.store.update(t.task_id, { set: { discarded_at: 'x' } }, {});
        return t.task_id;
      },
      {},
      /discarded/,
    ],
    [
      'a task outside --queue',
      async (w: World) => (await letterless(w, { priority: 'low' })).task_id,
      { queues: ['high'] },
      /died on low, outside --queue high/,
    ],
    [
      'a task outside --type',
      async (w: World) => (await letterless(w, { type: 'make_thumbnails' })).task_id,
      { type: 'send_email' },
      /does not match the other filters/,
    ],
  ] as const)('%s: failed, with the reason, nothing changed', async (_name, make, extra, reason) => {
    const w = world();
    const id = await make(w);
    const updatesBefore = w.store.updates;
    const { queues, ...filter } = extra as { queues?: RedriveOptions['queues']; type?: string };
    const report = await run(w, { ...(queues === undefined ? {} : { queues }), filter: { taskIds: [id], ...filter } });
    expect(report).toMatchObject({ selected: 1, redriven: 0, skipped: 0, failed: 1 });
    expect(report.items[0]?.detail).toMatch(reason);
    expect(w.queue.sent).toHaveLength(0);
    expect(w.store.updates).toBe(updatesBefore);
  });

  it('a task redriven already (a re-run): skipped', async () => {
    const w = world();
    const dead = await letterless(w);
    expect(await run(w, { filter: { taskIds: [dead.task_id] } })).toMatchObject({ redriven: 1 });
    const again = await run(w, { filter: { taskIds: [dead.task_id] } });
    expect(again).toMatchObject({ selected: 1, redriven: 0, skipped: 1, failed: 0 });
    expect(again.items[0]?.detail).toMatch(/already redriven/);
    expect(w.queue.sent).toHaveLength(1);
  });

  it('--limit counts named tasks too', async () => {
    const w = world();
    const a = await letterless(w);
    const b = await letterless(w);
    const report = await run(w, { filter: { taskIds: [a.task_id, b.task_id] }, limit: 1 });
    expect(report).toMatchObject({ selected: 1, redriven: 1 });
    expect((await rec(w, b.task_id)).status).toBe('failed');
  });
});
