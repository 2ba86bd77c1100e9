import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../shared/config/resources.js';
import { runtimeSettings } from '../../../shared/config/settings.js';
import { dispatchSequence } from '../../../shared/task/changes.js';
import { outboxKey, type TaskRecord } from '../../../shared/task/model.js';
import { ValidationError } from '../../../shared/task/errors.js';
import {
  dlqRetentionStart,
  MAX_REASON_LENGTH,
  planLetterPurge,
  planLetterRedrive,
  planRecordPurge,
  planRecordRedrive,
  redriveTarget,
  type DeadLetterRef,
  type RedriveRequest,
} from '../../../shared/task/operations.js';
import { deadTaskRecord, memoryLifecycle } from '../../../testing/fixtures.js';

/** A deployment whose settings differ from the defaults, to see that the operations use them. */
const settings = runtimeSettings({ retentionDays: 30 });
const request: RedriveRequest = { to: 'original', keepAttempts: false, actor: 'ops', reason: 'fixed it' };

function setup() {
  const { clock, store, queue, lifecycle } = memoryLifecycle(settings);
  const get = async (id: string) => (await store.get(id)) as TaskRecord;
  return { clock, store, queue, lifecycle, ops: lifecycle.operations, get };
}

let seq = 0;

/** A task as stored, `failed` (dead, its letter sent) unless told otherwise. */
async function stored(s: ReturnType<typeof setup>, extra: Partial<TaskRecord> = {}): Promise<TaskRecord> {
  const error = { name: 'PermanentError', message: 'rejected', retryable: false };
  const record = deadTaskRecord(`t_op${(seq += 1)}`, s.clock.now(), error, {
    dispatch_id: `d_${seq}`,
    expires_at: Math.floor(s.clock.now() / 1000) + 1000,
    ...extra,
  });
  await s.store.create(record);
  return record;
}

const letterOf = (r: TaskRecord, extra: Partial<DeadLetterRef> = {}): DeadLetterRef => ({
  taskId: r.task_id,
  dispatchId: r.dispatch_id,
  origin: r.priority,
  ...extra,
});

/** Makes the next update find the record changed by someone else first. */
function raceOnce(s: ReturnType<typeof setup>, change: Partial<TaskRecord>): void {
  let raced = false;
  s.store.beforeUpdate = (id) => {
    if (raced) return;
    raced = true;
    s.store.items.set(id, { ...(s.store.items.get(id) as TaskRecord), ...change });
  };
}

describe('plans', () => {
  it('redriveTarget: original is the queue it died on', () => {
    expect(redriveTarget('original', 'low')).toBe('low');
    expect(redriveTarget('high', 'low')).toBe('high');
  });

  it('planLetterRedrive and planLetterPurge name their reasons as values, not sentences', async () => {
    const s = setup();
    const r = await stored(s);
    expect(planLetterRedrive({ dispatchId: 'other' }, r)).toEqual({
      action: 'discard_letter',
      reason: 'superseded',
      status: 'failed',
    });
    expect(planLetterRedrive({ dispatchId: r.dispatch_id }, undefined)).toEqual({
      action: 'leave',
      reason: 'not_found',
    });
    expect(planLetterPurge({ dispatchId: r.dispatch_id }, { ...r, discarded_at: 'x' })).toEqual({
      action: 'delete',
      reason: 'already_discarded',
    });
    expect(planLetterPurge({ dispatchId: r.dispatch_id }, { ...r, status: 'succeeded' })).toEqual({
      action: 'delete',
      reason: 'finished',
      status: 'succeeded',
    });
  });

  it('planRecordRedrive and planRecordPurge: only a dead task', async () => {
    const s = setup();
    const r = await stored(s);
    expect(planRecordRedrive(r)).toEqual({ action: 'reset' });
    expect(planRecordRedrive({ ...r, discarded_at: 'x' })).toEqual({ action: 'skip', reason: 'discarded' });
    expect(planRecordRedrive({ ...r, status: 'queued' })).toEqual({ action: 'skip', reason: 'not_dead' });
    expect(planRecordRedrive({ ...r, status: 'queued', redrive_count: 1 })).toEqual({
      action: 'skip',
      reason: 'already_redriven',
    });
    expect(planRecordPurge(r)).toEqual({ action: 'mark' });
    expect(planRecordPurge({ ...r, discarded_at: 'x' })).toEqual({ action: 'skip', reason: 'already_discarded' });
    expect(planRecordPurge({ ...r, status: 'running' })).toEqual({ action: 'skip', reason: 'not_dead' });
  });
});

describe('OperatorActions.redriveLetter', () => {
  it('reset: failed → queued, new dispatch, attempts 0, audited, outbox entry with the deployment’s grace; then sent', async () => {
    const s = setup();
    const dead = await stored(s, { priority: 'low', discarded_at: 'x' });
    s.clock.advance(5_000);
    const out = await s.ops.redriveLetter(letterOf(dead), dead, request);
    expect(out).toMatchObject({ kind: 'reset', target: 'low', sending: { sent: true } });
    const r = await s.get(dead.task_id);
    const now = s.clock.now();
    expect(r).toMatchObject({
      status: 'queued',
      priority: 'low',
      attempts: 0,
      crashes: 0,
      redrive_count: 1,
      run_at: new Date(now).toISOString(),
    });
    expect(r.dispatch_id).not.toBe(dead.dispatch_id);
    expect(r.dispatch_id.startsWith(`${dispatchSequence(dead.dispatch_id) + 1}.`)).toBe(true);
    expect(r.audit).toEqual([{ action: 'redrive', at: new Date(now).toISOString(), by: 'ops', reason: 'fixed it' }]);
    for (const gone of ['finished_at', 'expires_at', 'discarded_at'] as const) expect(r[gone]).toBeUndefined();
    // Sent: the entry is removed, the message keeps the task.
    expect(r.outbox_pk).toBeUndefined();
    expect(r.outbox_due).toBeUndefined();
    expect(s.queue.sent).toEqual([
      {
        priority: 'low',
        message: { task_id: dead.task_id, dispatch_id: r.dispatch_id, timeout_seconds: 30, sent_at: now },
        delaySeconds: 0,
        type: 'send_email',
      },
    ]);
  });

  it('reset with --keep-attempts and --to: the count stays, the priority changes', async () => {
    const s = setup();
    const dead = await stored(s, { attempts: 4 });
    const out = await s.ops.redriveLetter(letterOf(dead), dead, { ...request, keepAttempts: true, to: 'high' });
    expect(out).toMatchObject({ kind: 'reset', target: 'high' });
    expect(await s.get(dead.task_id)).toMatchObject({
      attempts: 4,
      crashes: 1,
      priority: 'high',
    });
    expect(s.queue.sent.map((m) => m.priority)).toEqual(['high']);
  });

  it('reset whose send fails: the record is reset and owes the message (for the sweeper)', async () => {
    const s = setup();
    const dead = await stored(s);
    s.queue.failNext.send = new Error('SQS down');
    const out = await s.ops.redriveLetter(letterOf(dead), dead, request);
    expect(out).toMatchObject({ kind: 'reset', sending: { sent: false, error: expect.any(Error) } });
    const r = await s.get(dead.task_id);
    expect(r).toMatchObject({
      status: 'queued',
      outbox_pk: outboxKey('queue', 'normal', dead.task_id),
      outbox_due: s.clock.now() + settings.outboxGraceSeconds * 1000,
    });
    expect(s.lifecycle.outboxes.sendUnconfirmed(r)).toBe(true);
  });

  it('resumed: a reset record whose send was never confirmed gets it sent', async () => {
    const s = setup();
    const dead = await stored(s);
    s.queue.failNext.send = new Error('SQS down');
    await s.ops.redriveLetter(letterOf(dead), dead, request);
    const reset = await s.get(dead.task_id);
    const out = await s.ops.redriveLetter(letterOf(dead), reset, request);
    expect(out).toMatchObject({ kind: 'resumed', sending: { sent: true } });
    expect(s.queue.sent.map((m) => m.message.dispatch_id)).toEqual([reset.dispatch_id]);
    expect(s.lifecycle.outboxes.sendUnconfirmed(await s.get(dead.task_id))).toBe(false);
    expect((await s.get(dead.task_id)).redrive_count).toBe(1);
  });

  it('resent: a waiting task whose message SQS moved gets the same message again, audited, status unchanged', async () => {
    const s = setup();
    const waiting = await stored(s, { status: 'queued', outbox_pk: 'queue#normal', outbox_due: 0 });
    const out = await s.ops.redriveLetter(letterOf(waiting), waiting, request);
    expect(out).toMatchObject({ kind: 'resent', target: 'normal', was: 'queued' });
    const r = await s.get(waiting.task_id);
    expect(r).toMatchObject({
      status: 'queued',
      dispatch_id: waiting.dispatch_id,
      redrive_count: 1,
      priority: 'normal',
    });
    expect(r.audit?.map((a) => a.action)).toEqual(['redrive']);
    expect(s.queue.sent.map((m) => [m.priority, m.message.dispatch_id])).toEqual([['normal', waiting.dispatch_id]]);
  });

  it('resent to another queue: the message goes there, the record keeps its priority', async () => {
    const s = setup();
    const running = await stored(s, { status: 'running', outbox_pk: 'queue#normal', outbox_due: 0 });
    const out = await s.ops.redriveLetter(letterOf(running), running, { ...request, to: 'high' });
    expect(out).toMatchObject({ kind: 'resent', target: 'high', was: 'running' });
    expect(s.queue.sent.map((m) => m.priority)).toEqual(['high']);
    expect((await s.get(running.task_id)).priority).toBe('normal');
  });

  it.each([
    ['not_found', undefined, undefined],
    ['finished', { status: 'succeeded' as const }, undefined],
    ['superseded', {}, 'an-older-dispatch'],
    ['already_redriven', { status: 'queued' as const }, 'an-older-dispatch'],
  ])('skipped: %s (nothing written, nothing sent)', async (reason, change, letterDispatch) => {
    const s = setup();
    const dead = await stored(s);
    const record = change === undefined ? undefined : { ...dead, ...change };
    if (record !== undefined) s.store.items.set(dead.task_id, record);
    const updates = s.store.updates;
    const out = await s.ops.redriveLetter(
      letterOf(dead, letterDispatch === undefined ? {} : { dispatchId: letterDispatch }),
      record,
      request,
    );
    expect(out).toMatchObject({ kind: 'skipped', reason });
    expect(s.store.updates).toBe(updates);
    expect(s.queue.sent).toEqual([]);
  });

  it('changed: the record moved between the read and the write; the fresh record comes back', async () => {
    const s = setup();
    const dead = await stored(s);
    raceOnce(s, { status: 'queued', dispatch_id: 'someone-else' });
    const out = await s.ops.redriveLetter(letterOf(dead), dead, request);
    expect(out).toMatchObject({ kind: 'changed', current: { status: 'queued', dispatch_id: 'someone-else' } });
    expect(s.queue.sent).toEqual([]);
  });
});

describe('OperatorActions.redriveRecord', () => {
  it('reset: a dead task without its letter, to its own queue', async () => {
    const s = setup();
    const dead = await stored(s, { priority: 'high' });
    expect(await s.ops.redriveRecord(dead, request)).toMatchObject({
      kind: 'reset',
      target: 'high',
      sending: { sent: true },
    });
    expect(await s.get(dead.task_id)).toMatchObject({ status: 'queued', redrive_count: 1 });
  });

  it.each([
    ['not_dead', { status: 'succeeded' as const }],
    ['already_redriven', { status: 'queued' as const, redrive_count: 1 }],
    ['discarded', { discarded_at: '2026-01-01T00:00:00.000Z' }],
  ])('skipped: %s', async (reason, change) => {
    const s = setup();
    const r = await stored(s, change);
    expect(await s.ops.redriveRecord(r, request)).toMatchObject({ kind: 'skipped', reason });
    expect(s.queue.sent).toEqual([]);
  });
});

describe('OperatorActions.purgeLetter and discardRecord', () => {
  it('discarded: status stays failed, audited, expires after the deployment’s retention, owed letter cancelled', async () => {
    const s = setup();
    const dead = await stored(s, { outbox_pk: 'dlq#normal', outbox_due: 1 });
    s.clock.advance(1_000);
    const out = await s.ops.purgeLetter(letterOf(dead), dead, { actor: 'ops', reason: 'spam' });
    expect(out).toMatchObject({ kind: 'discarded' });
    const r = await s.get(dead.task_id);
    const at = new Date(s.clock.now()).toISOString();
    expect(r).toMatchObject({
      status: 'failed',
      discarded_at: at,
      expires_at: Math.floor(s.clock.now() / 1000) + 30 * 86_400,
    });
    expect(r.outbox_pk).toBeUndefined();
    expect(r.audit).toEqual([{ action: 'purge', at, by: 'ops', reason: 'spam' }]);
  });

  it('cancelled: a waiting task whose only message SQS moved is cancelled and marked', async () => {
    const s = setup();
    const waiting = await stored(s, { status: 'retrying', outbox_pk: 'queue#normal', outbox_due: 0 });
    const out = await s.ops.purgeLetter(letterOf(waiting), waiting, { actor: 'ops' });
    expect(out).toMatchObject({ kind: 'cancelled', was: 'retrying' });
    const r = await s.get(waiting.task_id);
    expect(r).toMatchObject({
      status: 'cancelled',
      discarded_at: expect.any(String),
      expires_at: Math.floor(s.clock.now() / 1000) + 30 * 86_400,
    });
    expect(r.outbox_pk).toBeUndefined();
    expect(r.audit).toEqual([{ action: 'purge', at: new Date(s.clock.now()).toISOString(), by: 'ops' }]);
  });

  it.each([
    ['not_found', undefined, undefined],
    ['obsolete', {}, 'an-older-dispatch'],
    ['already_discarded', { discarded_at: 'x' }, undefined],
    ['finished', { status: 'succeeded' as const }, undefined],
    ['running', { status: 'running' as const }, undefined],
  ])('skipped: %s (nothing written)', async (reason, change, letterDispatch) => {
    const s = setup();
    const dead = await stored(s);
    const record = change === undefined ? undefined : { ...dead, ...change };
    const out = await s.ops.purgeLetter(
      letterOf(dead, letterDispatch === undefined ? {} : { dispatchId: letterDispatch }),
      record,
      { actor: 'ops' },
    );
    expect(out).toMatchObject({ kind: 'skipped', reason });
    expect(s.store.updates).toBe(0);
  });

  it('discardRecord: discarded; skipped not_dead and already_discarded', async () => {
    const s = setup();
    const dead = await stored(s);
    expect(await s.ops.discardRecord(dead, { actor: 'ops' })).toMatchObject({
      kind: 'discarded',
      record: { discarded_at: expect.any(String) },
    });
    expect(await s.ops.discardRecord(await s.get(dead.task_id), { actor: 'ops' })).toMatchObject({
      kind: 'skipped',
      reason: 'already_discarded',
    });
    const waiting = await stored(s, { status: 'queued' });
    expect(await s.ops.discardRecord(waiting, { actor: 'ops' })).toMatchObject({
      kind: 'skipped',
      reason: 'not_dead',
      status: 'queued',
    });
    expect((await s.get(dead.task_id)).audit).toHaveLength(1);
  });

  it('changed: redriven by someone else between the read and the write', async () => {
    const s = setup();
    const dead = await stored(s);
    raceOnce(s, { status: 'queued', dispatch_id: 'newer' });
    expect(await s.ops.purgeLetter(letterOf(dead), dead, { actor: 'ops' })).toMatchObject({
      kind: 'changed',
      current: { dispatch_id: 'newer' },
    });
    expect((await s.get(dead.task_id)).discarded_at).toBeUndefined();
  });
});

describe('the native move: resetForMove and rewriteDeadLetter', () => {
  it('resetForMove keeps the dispatch id (the moved message stays claimable) and leaves the send to the outbox', async () => {
    const s = setup();
    const dead = await stored(s);
    const out = await s.ops.resetForMove(dead, request);
    expect(out).toMatchObject({
      kind: 'reset',
      record: {
        status: 'queued',
        dispatch_id: dead.dispatch_id,
        attempts: 0,
        redrive_count: 1,
        outbox_pk: outboxKey('queue', 'normal', dead.task_id),
      },
    });
    if (out.kind === 'reset') expect(s.lifecycle.outboxes.sendUnconfirmed(out.record)).toBe(true);
    expect(s.queue.sent).toEqual([]);
    expect(await s.ops.resetForMove(dead, request)).toMatchObject({ kind: 'changed', current: { status: 'queued' } });
  });

  it('rewriteDeadLetter writes the letter again through the outbox; changed when the task is no longer that dead task', async () => {
    const s = setup();
    const dead = await stored(s);
    expect(await s.ops.rewriteDeadLetter(dead)).toMatchObject({ kind: 'rewritten' });
    expect(s.queue.dead.map((l) => [l.task_id, l.dispatch_id])).toEqual([[dead.task_id, dead.dispatch_id]]);
    expect((await s.get(dead.task_id)).outbox_pk).toBeUndefined();
    expect(await s.ops.rewriteDeadLetter({ ...dead, dispatch_id: 'stale' })).toMatchObject({ kind: 'changed' });
    expect(s.queue.dead).toHaveLength(1);
  });

  it('dlqRetentionStart: as far back as a DLQ keeps a letter', () => {
    expect(dlqRetentionStart(DEFAULTS.dlqRetentionSeconds * 1000 + 5)).toBe(5);
  });
});

describe('OperatorActions.recover (npm start after a restart)', () => {
  it('requeued: a waiting task whose send was owed gets its message, same dispatch id, and its entry goes', async () => {
    const s = setup();
    const waiting = await stored(s, { status: 'queued', outbox_pk: 'queue#high#1', outbox_due: 0, priority: 'high' });
    expect(await s.ops.recover(waiting)).toMatchObject({ kind: 'requeued' });
    expect(s.queue.sent.map((m) => [m.priority, m.message.dispatch_id, m.delaySeconds])).toEqual([
      ['high', waiting.dispatch_id, 0],
    ]);
    expect((await s.get(waiting.task_id)).outbox_pk).toBeUndefined();
  });

  it('requeued: a running task’s message arrives just after its lease ends; the record is not rewritten', async () => {
    const s = setup();
    const running = await stored(s, {
      status: 'running',
      outbox_pk: 'queue#normal',
      outbox_due: 7,
      lease_until: s.clock.now() + 20_000,
    });
    expect(await s.ops.recover(running)).toMatchObject({ kind: 'requeued' });
    expect(s.queue.sent.map((m) => [m.message.dispatch_id, m.delaySeconds])).toEqual([[running.dispatch_id, 21]]);
    expect(await s.get(running.task_id)).toEqual(running);
  });

  it('requeued: a waiting task kept by its message alone (sent at once) gets that message again, nothing written', async () => {
    const s = setup();
    const waiting = await stored(s, { status: 'retrying' });
    expect(await s.ops.recover(waiting)).toMatchObject({ kind: 'requeued', record: { task_id: waiting.task_id } });
    expect(s.queue.sent.map((m) => m.message.dispatch_id)).toEqual([waiting.dispatch_id]);
    expect(s.store.updates).toBe(0);
    expect((await s.get(waiting.task_id)).outbox_pk).toBeUndefined();
  });

  it('dead_letter_sent: a dead task gets its letter again; dead_letter_unsent when SQS refuses', async () => {
    const s = setup();
    const dead = await stored(s);
    expect(await s.ops.recover(dead)).toEqual({ kind: 'dead_letter_sent' });
    expect(s.queue.dead.map((l) => l.task_id)).toEqual([dead.task_id]);
    s.queue.failNext.sendDead = new Error('SQS down');
    expect(await s.ops.recover(dead)).toMatchObject({ kind: 'dead_letter_unsent', error: expect.any(Error) });
    expect(s.store.updates).toBe(0);
  });

  it.each([
    ['finished', { status: 'succeeded' as const }],
    ['discarded', { discarded_at: 'x' }],
    ['letter_owed', { outbox_pk: 'dlq#normal', outbox_due: 0 }],
  ])('skipped: %s', async (reason, change) => {
    const s = setup();
    const r = await stored(s, change);
    expect(await s.ops.recover(r)).toEqual({ kind: 'skipped', reason });
    expect(s.queue.sent).toEqual([]);
    expect(s.queue.dead).toEqual([]);
  });

  it('skipped letter_expired: it died longer ago than a DLQ keeps a letter', async () => {
    const s = setup();
    const old = await stored(s);
    s.clock.advance(DEFAULTS.dlqRetentionSeconds * 1000 + 1);
    expect(await s.ops.recover(old)).toEqual({ kind: 'skipped', reason: 'letter_expired' });
    expect(s.queue.dead).toEqual([]);
  });
});

describe('the reason cap: every operator write refuses a reason over MAX_REASON_LENGTH, before it reads or writes', () => {
  const long = 'x'.repeat(MAX_REASON_LENGTH + 1);
  const cases: [string, (s: ReturnType<typeof setup>, r: TaskRecord, reason: string) => Promise<unknown>][] = [
    ['redriveLetter', (s, r, reason) => s.ops.redriveLetter(letterOf(r), r, { ...request, reason })],
    ['redriveRecord', (s, r, reason) => s.ops.redriveRecord(r, { ...request, reason })],
    ['resetForMove', (s, r, reason) => s.ops.resetForMove(r, { ...request, reason })],
    ['purgeLetter', (s, r, reason) => s.ops.purgeLetter(letterOf(r), r, { actor: 'ops', reason })],
    ['discardRecord', (s, r, reason) => s.ops.discardRecord(r, { actor: 'ops', reason })],
    ['cancel', (s, r, reason) => s.lifecycle.requests.cancel(r.task_id, undefined, { actor: 'ops', reason })],
  ];

  it.each(cases)(
    '%s: 201 characters are refused (field reason, the task id), the record is unchanged',
    async (_n, op) => {
      const s = setup();
      const r = await stored(s, _n === 'cancel' ? { status: 'retrying' } : {});
      const err = await op(s, r, long).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect(err).toMatchObject({
        field: 'reason',
        taskId: r.task_id,
        message: 'reason: at most 200 characters (got 201)',
      });
      expect(await s.get(r.task_id)).toEqual(r);
      expect(s.queue.sent).toEqual([]);
    },
  );

  it.each(cases)('%s: exactly 200 characters are written to the audit entry', async (_n, op) => {
    const s = setup();
    const r = await stored(s, _n === 'cancel' ? { status: 'retrying' } : {});
    await op(s, r, 'y'.repeat(MAX_REASON_LENGTH));
    expect((await s.get(r.task_id)).audit?.at(-1)?.reason).toBe('y'.repeat(MAX_REASON_LENGTH));
  });
});
