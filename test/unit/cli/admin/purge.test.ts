import { describe, expect, it } from 'vitest';
import { planPurge, purgeDeadLetters, type PurgeOptions } from '../../../../cli/admin/purge.js';
import { BATCH_BASE, batchDeps, deadTask, letterless, PLAN, storedRecord, world, type World } from './fakes.js';

const run = (w: World, o: Partial<PurgeOptions> = {}) => purgeDeadLetters(batchDeps(w), { ...BATCH_BASE, ...o });
const rec = storedRecord;

describe('planPurge', () => {
  const { entry, record: r } = PLAN;
  it.each([
    ['failed', r('failed'), 'mark'],
    ['failed and discarded already', r('failed', 'd1', { discarded_at: 'x' }), 'delete'],
    ['queued (SQS moved its only message)', r('queued'), 'cancel'],
    ['running', r('running'), 'leave'],
    ['succeeded', r('succeeded'), 'delete'],
    ['redriven since', r('queued', 'd2'), 'delete'],
    ['no record', null, 'delete'],
  ])('%s → %s', (_n, record, action) => expect(planPurge(entry, record).action).toBe(action));
});

describe('purgeDeadLetters', () => {
  it('marks the task discarded with an audit entry (status stays failed), then deletes the letter', async () => {
    const w = world();
    const dead = await deadTask(w);
    const other = await deadTask(w, { type: 'make_thumbnails' });
    w.clock.advance(5_000);
    const report = await run(w, { filter: { type: 'send_email' }, reason: 'bad addresses' });
    expect(report).toMatchObject({ selected: 1, purged: 1, skipped: 0, failed: 0 });
    const r = await rec(w, dead.task_id);
    const at = new Date(w.clock.now()).toISOString();
    expect(r).toMatchObject({ status: 'failed', discarded_at: at, dispatch_id: dead.dispatch_id });
    expect(r.audit).toEqual([{ action: 'purge', at, by: 'ops', reason: 'bad addresses' }]);
    expect(r.expires_at).toBe(Math.floor(w.clock.now() / 1000) + 7 * 86_400);
    expect((await rec(w, other.task_id)).discarded_at).toBeUndefined();
    expect(w.dlq.all().map((m) => JSON.parse(m.body).task_id)).toEqual([other.task_id]);
  });

  it('a crash before the delete, then a re-run: one audit entry, letter gone', async () => {
    const w = world();
    const dead = await deadTask(w);
    w.dlq.failNextDelete = 1;
    expect(await run(w)).toMatchObject({ purged: 0, failed: 1 });
    expect(await run(w)).toMatchObject({ purged: 1, failed: 0 });
    expect((await rec(w, dead.task_id)).audit).toHaveLength(1);
    expect(w.dlq.all()).toHaveLength(0);
  });

  it('--dry-run changes nothing', async () => {
    const w = world();
    await deadTask(w);
    expect(await run(w, { dryRun: true })).toMatchObject({ dryRun: true, selected: 1, purged: 1 });
    expect(w.store.updates).toBe(0);
    expect(w.dlq.visible('normal')).toHaveLength(1);
  });

  it('cancels a waiting task whose only message SQS moved to the DLQ', async () => {
    const w = world();
    const dead = await deadTask(w, { priority: 'high' });
    await w.store.update(dead.task_id, { set: { status: 'queued' }, remove: ['finished_at'] }, {});
    w.dlq.queues.high.length = 0;
    w.dlq.put('high', { task_id: dead.task_id, dispatch_id: dead.dispatch_id });
    expect(await run(w)).toMatchObject({ purged: 1 });
    expect(await rec(w, dead.task_id)).toMatchObject({ status: 'cancelled', discarded_at: expect.any(String) });
  });

  it('deletes obsolete letters and foreign messages without marking anything', async () => {
    const w = world();
    const dead = await deadTask(w);
    await w.store.update(dead.task_id, { set: { status: 'queued', dispatch_id: 'newer' } }, {});
    w.dlq.put('low', 'garbage');
    expect(await run(w)).toMatchObject({ selected: 2, purged: 0, skipped: 2 });
    expect((await rec(w, dead.task_id)).audit).toBeUndefined();
    expect(w.dlq.all()).toHaveLength(0);
  });
});

describe('purgeDeadLetters with --task: a named task whose dead letter is gone', () => {
  it('is discarded from its record (audited, status stays failed); a re-run counts it done', async () => {
    const w = world();
    const dead = await letterless(w);
    const report = await run(w, { filter: { taskIds: [dead.task_id] }, reason: 'lost letter' });
    expect(report).toMatchObject({ selected: 1, purged: 1, failed: 0 });
    expect(report.items).toEqual([
      expect.objectContaining({
        message_id: null,
        task_id: dead.task_id,
        dlq: 'normal',
        action: 'mark',
        outcome: 'done',
      }),
    ]);
    const r = await rec(w, dead.task_id);
    const at = new Date(w.clock.now()).toISOString();
    expect(r).toMatchObject({ status: 'failed', discarded_at: at });
    expect(r.audit).toEqual([{ action: 'purge', at, by: 'ops', reason: 'lost letter' }]);
    expect(await run(w, { filter: { taskIds: [dead.task_id] } })).toMatchObject({ selected: 1, purged: 1, failed: 0 });
    expect((await rec(w, dead.task_id)).audit).toHaveLength(1);
  });

  it('--dry-run changes nothing', async () => {
    const w = world();
    const dead = await letterless(w);
    const updates = w.store.updates;
    const report = await run(w, { filter: { taskIds: [dead.task_id] }, dryRun: true });
    expect(report).toMatchObject({ selected: 1, purged: 1 });
    expect(w.store.updates).toBe(updates);
    expect((await rec(w, dead.task_id)).discarded_at).toBeUndefined();
  });

  it('an unknown id, or a task that is not dead: failed, with the reason', async () => {
    const w = world();
    const waiting = await letterless(w);
    await w.store.update(waiting.task_id, { set: { status: 'queued' } }, {});
    const report = await run(w, { filter: { taskIds: ['t_nosuchtask', waiting.task_id] } });
    expect(report).toMatchObject({ selected: 2, purged: 0, failed: 2 });
    expect(report.items.map((i) => i.detail)).toEqual([
      expect.stringMatching(/no task record/),
      expect.stringMatching(/task is queued, not dead: nothing to purge \(kaj task cancel/),
    ]);
    expect((await rec(w, waiting.task_id)).status).toBe('queued');
  });
});
