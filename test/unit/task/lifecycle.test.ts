import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { classifyError } from '../../../shared/retry/classify.js';
import { PermanentError, RetryableError } from '../../../shared/retry/errors.js';
import { defineTask, resolvePolicy, TaskRegistry } from '../../../shared/task/define.js';
import { LeaseLostError, TaskNotCancellableError, TaskNotFoundError } from '../../../shared/task/errors.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { claimAndStart } from '../../support/claims.js';
import { FakeClock } from '../../../testing/doubles.js';
import { unitKaj, OWNER } from '../../../testing/fixtures.js';

const registry = new TaskRegistry([
  defineTask({ type: 'job', schema: z.object({}), maxAttempts: 3, handler: async () => ({}) }),
]);
const policy = resolvePolicy({ maxAttempts: 3 });

async function submitted() {
  const u = unitKaj(registry);
  const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {} }, OWNER);
  return { ...u, record };
}

/** A second delivery: its claim is written at once (the first receiver may have crashed). */
const REDELIVERY = { receiveCount: 2 } as const;

/** A task claimed by a written claim (`running`, leased). */
async function claimed(): Promise<ReturnType<typeof unitKaj> & { record: TaskRecord }> {
  const u = await submitted();
  const outcome = await claimAndStart(u.kaj.lifecycle, u.record.task_id, u.record.dispatch_id, REDELIVERY);
  if (outcome.kind !== 'claimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return { ...u, record: outcome.record };
}

describe('Class: TaskLifecycle', () => {
  describe('Method: claim', () => {
    it('moves the task to running, counts the attempt, bumps the fencing token and sets the lease', async () => {
      const { record, clock } = await claimed();
      expect(record).toMatchObject({
        status: 'running',
        attempts: 1,
        lease_token: 1,
        lease_until: clock.now() + 60_000,
      });
    });

    it('defers a duplicate delivery while the first holder’s lease is live', async () => {
      const { kaj, record, clock } = await claimed();
      clock.advance(20_000);
      expect(await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY)).toEqual({
        kind: 'defer',
        seconds: 41,
        reason: 'held by another worker',
      });
    });

    it('waits out a lease in its last heartbeat period (its owner missed its renewals) and reclaims, instead of deferring', async () => {
      const { kaj, record, clock } = await claimed();
      // Lease 60 s, heartbeat every 20 s: 15 s left means two renewals were missed.
      clock.advance(45_000);
      const before = clock.now();
      const again = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY);
      expect(again.kind).toBe('claimed');
      expect(again.kind === 'claimed' && again.record).toMatchObject({ attempts: 2, lease_token: 2 });
      // It waited for the lease to end (plus a margin for a renewal in flight), no longer.
      expect(clock.now() - before).toBe(15_000 + 100);
    });

    it('defers after that wait when the owner renewed its lease meanwhile (it was alive, only late)', async () => {
      const u = await claimed();
      u.clock.advance(45_000);
      const renewing = new (class extends FakeClock {
        override async sleep(ms: number): Promise<void> {
          await u.kaj.lifecycle.leases.heartbeat(u.record);
          await super.sleep(ms);
        }
      })(u.clock.now());
      const late = unitKaj(registry, undefined, renewing, { store: u.store });
      expect(await claimAndStart(late.kaj.lifecycle, u.record.task_id, u.record.dispatch_id, REDELIVERY)).toEqual({
        kind: 'defer',
        seconds: 61 - 15,
        reason: 'held by another worker',
      });
    });

    it('reclaims a task whose lease ended in the very millisecond its message came back', async () => {
      const { kaj, record, clock } = await claimed();
      clock.advance(60_000); // lease_until === now: ended
      const again = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY);
      expect(again.kind).toBe('claimed');
      expect(again.kind === 'claimed' && again.record).toMatchObject({ attempts: 2, lease_token: 2 });
    });

    it('a reclaim refused because the owner renewed its lease meanwhile defers the message: it is the task’s only one', async () => {
      const { kaj, record, clock } = await claimed();
      clock.advance(60_001);
      const planned = await kaj.lifecycle.claims.claim(record.task_id, record.dispatch_id, REDELIVERY);
      if (planned.kind !== 'claimed' || planned.commit === undefined)
        throw new Error(`expected a planned reclaim, got ${planned.kind}`);
      await kaj.lifecycle.leases.heartbeat(record); // the owner was alive, only late
      expect(await planned.commit()).toEqual({
        kind: 'defer',
        seconds: 1,
        reason: 'the reclaim raced its owner’s renewal',
      });
      expect(await kaj.store.get(record.task_id)).toMatchObject({ status: 'running', lease_token: 1, attempts: 1 });
    });

    it('a reclaim lost to another worker’s reclaim is dropped', async () => {
      const { kaj, record, clock } = await claimed();
      clock.advance(60_001);
      const first = await kaj.lifecycle.claims.claim(record.task_id, record.dispatch_id, REDELIVERY);
      const second = await kaj.lifecycle.claims.claim(record.task_id, record.dispatch_id, REDELIVERY);
      if (first.kind !== 'claimed' || second.kind !== 'claimed') throw new Error('expected two planned reclaims');
      expect(await first.commit?.()).toMatchObject({ kind: 'claimed' });
      expect(await second.commit?.()).toEqual({ kind: 'drop', reason: 'another worker reclaimed it first' });
    });

    it('drops a message from an older dispatch, and one for a finished task', async () => {
      const { kaj, record } = await claimed();
      expect(await claimAndStart(kaj.lifecycle, record.task_id, `0.other`)).toEqual({
        kind: 'drop',
        reason: 'superseded by a newer dispatch',
      });
      await kaj.lifecycle.outcomes.succeed(record, { ok: 1 }, 5);
      // The message that ran it: dropped, with the task (what follows its end may be done again).
      expect(await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY)).toEqual({
        kind: 'drop',
        reason: 'task is succeeded',
        finished: expect.objectContaining({ task_id: record.task_id, status: 'succeeded' }),
      });
      expect(await claimAndStart(kaj.lifecycle, 't_missing', 'x')).toEqual({ kind: 'drop', reason: 'task not found' });
    });

    it('reclaims a task whose worker vanished under several tasks: the crash is recorded, not held against it', async () => {
      const { kaj, record, clock } = await claimed();
      clock.advance(60_001);
      const again = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY);
      expect(again.kind).toBe('claimed');
      if (again.kind !== 'claimed') return;
      expect(again.record).toMatchObject({ attempts: 2, lease_token: 2, unattributed_crashes: 1, status: 'running' });
      expect(again.record.crashes).toBeUndefined();
      // One shared crash is no evidence: the next attempt runs beside others; a second makes it run alone.
      expect(kaj.lifecycle.leases.isSuspect(again.record)).toBe(false);
      expect(again.record.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'crashed' })]);
      clock.advance(60_001);
      const third = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, { receiveCount: 3 });
      expect(third.kind).toBe('claimed');
      if (third.kind !== 'claimed') return;
      expect(third.record).toMatchObject({ attempts: 3, unattributed_crashes: 2 });
      expect(third.record.crashes).toBeUndefined();
      expect(kaj.lifecycle.leases.isSuspect(third.record)).toBe(true);
    });

    it('holds a crash against the task when it ran alone (solo), and clears solo for the next attempt', async () => {
      const { kaj, record, clock } = await claimed();
      await kaj.lifecycle.leases.markSolo(record);
      clock.advance(60_001);
      const again = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY);
      if (again.kind !== 'claimed') throw new Error(again.kind);
      expect(again.record).toMatchObject({ attempts: 2, crashes: 1 });
      expect(again.record.solo).toBeUndefined();
      expect(again.record.unattributed_crashes).toBeUndefined();
    });

    it('never fails a task for crashes that happened beside other tasks (whole-worker kills)', async () => {
      const u = unitKaj(registry);
      const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {}, max_attempts: 25 }, OWNER);
      await claimAndStart(u.kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY);
      for (let i = 0; i < 10; i += 1) {
        u.clock.advance(60_001);
        expect((await claimAndStart(u.kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY)).kind).toBe(
          'claimed',
        );
      }
      expect(u.store.items.get(record.task_id)).toMatchObject({ status: 'running', unattributed_crashes: 10 });
    });

    it('fails a task that keeps crashing its workers while alone, with the reason, and dead-letters it', async () => {
      const u = unitKaj(registry);
      const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {}, max_attempts: 10 }, OWNER);
      const first = await claimAndStart(u.kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY);
      if (first.kind !== 'claimed') throw new Error(first.kind);
      await u.kaj.lifecycle.leases.markSolo(first.record);
      let last;
      for (let i = 0; i < 3; i += 1) {
        u.clock.advance(60_001);
        last = await claimAndStart(u.kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY);
        if (last.kind === 'claimed') await u.kaj.lifecycle.leases.markSolo(last.record);
      }
      expect(last?.kind).toBe('crash_loop');
      const stored = u.store.items.get(record.task_id);
      expect(stored?.status).toBe('failed');
      expect(stored?.last_error?.message).toBe('crashed the worker 3 times');
      expect(u.queue.dead).toEqual([
        expect.objectContaining({ task_id: record.task_id, reason: 'crashed the worker 3 times' }),
      ]);
    });

    it('honours a per-type crash limit recorded at submit', async () => {
      const reg = new TaskRegistry([
        defineTask({ type: 'fragile', schema: z.object({}), crashLimit: 1, handler: async () => ({}) }),
      ]);
      const u = unitKaj(reg);
      const { record } = await u.kaj.submitter.submit({ type: 'fragile', payload: {} }, OWNER);
      expect(record.crash_limit).toBe(1);
      const first = await claimAndStart(u.kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY);
      if (first.kind !== 'claimed') throw new Error(first.kind);
      await u.kaj.lifecycle.leases.markSolo(first.record);
      u.clock.advance(60_001);
      expect((await claimAndStart(u.kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY)).kind).toBe(
        'crash_loop',
      );
      expect(u.store.items.get(record.task_id)?.last_error?.message).toBe('crashed the worker 1 times');
    });
  });

  describe('Lazy claims (a first delivery)', () => {
    it('writes nothing to claim: the attempt is a view (attempt 1, started now) over the waiting record', async () => {
      const { kaj, record, store, clock } = await submitted();
      const writes = store.updates;
      const c = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, { receiveCount: 1 });
      if (c.kind !== 'claimed') throw new Error(c.kind);
      expect(c.record).toMatchObject({
        status: 'queued',
        attempts: 1,
        started_at: new Date(clock.now()).toISOString(),
      });
      expect(store.updates).toBe(writes);
      expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0, lease_token: 0 });
    });

    it('a short task costs one outcome write, which records the attempt the claim never wrote', async () => {
      const { kaj, record, store, clock } = await submitted();
      const c = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
      if (c.kind !== 'claimed') throw new Error(c.kind);
      clock.advance(300);
      const writes = store.updates;
      const done = await kaj.lifecycle.outcomes.succeed(c.record, { ok: true }, 300);
      expect(store.updates - writes).toBe(1);
      expect(done).toMatchObject({ status: 'succeeded', attempts: 1, result: { ok: true }, lease_token: 0 });
      expect(done.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'succeeded', duration_ms: 300 })]);
      expect(done.outbox_pk).toBeUndefined();
    });

    it('the first heartbeat writes the claim (running, leased, token bumped); later writes are fenced by it', async () => {
      const { kaj, record, clock } = await submitted();
      const c = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
      if (c.kind !== 'claimed') throw new Error(c.kind);
      clock.advance(20_000);
      const running = await kaj.lifecycle.leases.heartbeat(c.record);
      expect(running).toMatchObject({
        status: 'running',
        attempts: 1,
        lease_token: 1,
        lease_until: clock.now() + 60_000,
      });
      // The lazy view is stale now: its outcome is refused, the running one's lands.
      await expect(kaj.lifecycle.outcomes.succeed(c.record, 'stale', 1)).rejects.toBeInstanceOf(LeaseLostError);
      expect((await kaj.lifecycle.outcomes.succeed(running, 'ok', 1)).status).toBe('succeeded');
    });

    it('two copies of one message may both run; exactly one outcome is recorded', async () => {
      const { kaj, record, store } = await submitted();
      const a = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
      const b = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
      if (a.kind !== 'claimed' || b.kind !== 'claimed') throw new Error('expected two lazy claims');
      await kaj.lifecycle.outcomes.succeed(a.record, 'first', 1);
      await expect(kaj.lifecycle.outcomes.succeed(b.record, 'second', 1)).rejects.toBeInstanceOf(LeaseLostError);
      expect(store.items.get(record.task_id)).toMatchObject({ status: 'succeeded', result: 'first', attempts: 1 });
    });

    it('a DELETE during a lazy run ends the task cancelled at once; the outcome is dropped, the heartbeat sees it', async () => {
      const { kaj, record, store } = await submitted();
      const c = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
      if (c.kind !== 'claimed') throw new Error(c.kind);
      expect((await kaj.lifecycle.requests.cancel(record.task_id)).status).toBe('cancelled');
      expect(await kaj.lifecycle.leases.cancelRequested(c.record)).toBe(true);
      expect((await kaj.lifecycle.leases.heartbeat(c.record)).status).toBe('cancelled');
      expect((await kaj.lifecycle.outcomes.succeed(c.record, 'late', 1)).status).toBe('cancelled');
      expect(store.items.get(record.task_id)?.result).toBeUndefined();
    });

    it('a redelivery, or a task that crashed a worker before, is claimed by a write when its handler starts', async () => {
      const { kaj, store, record } = await submitted();
      const c = await kaj.lifecycle.claims.claim(record.task_id, record.dispatch_id, { receiveCount: 2 });
      if (c.kind !== 'claimed' || c.commit === undefined)
        throw new Error(`expected a claim with a write, got ${c.kind}`);
      // Waiting for its turn: nothing written, so a worker that dies now charges the task nothing.
      expect(store.items.get(record.task_id)).toMatchObject({ status: 'queued', attempts: 0, lease_token: 0 });
      expect(c.record).toMatchObject({ status: 'queued', attempts: 1 });
      expect(await c.commit()).toMatchObject({
        kind: 'claimed',
        record: { status: 'running', attempts: 1, lease_token: 1 },
      });
      expect(store.items.get(record.task_id)).toMatchObject({ status: 'running', attempts: 1, lease_token: 1 });
    });

    it('a claim whose task was cancelled while it waited to start is dropped at its write', async () => {
      const { kaj, store, record } = await submitted();
      const c = await kaj.lifecycle.claims.claim(record.task_id, record.dispatch_id, { receiveCount: 2 });
      if (c.kind !== 'claimed' || c.commit === undefined)
        throw new Error(`expected a claim with a write, got ${c.kind}`);
      expect((await kaj.lifecycle.requests.cancel(record.task_id)).status).toBe('cancelled');
      expect(await c.commit()).toMatchObject({ kind: 'drop' });
      expect(store.items.get(record.task_id)).toMatchObject({ status: 'cancelled', attempts: 0 });
    });

    it('a reclaim after a crash is written when the next attempt starts, the crash counted then', async () => {
      const { kaj, store, record, clock } = await claimed();
      clock.advance(61_000);
      const c = await kaj.lifecycle.claims.claim(record.task_id, record.dispatch_id, REDELIVERY);
      if (c.kind !== 'claimed' || c.commit === undefined) throw new Error(`expected a reclaim, got ${c.kind}`);
      // The view the attempt runs with counts the crash (it decides whether the task runs alone).
      expect(c.record).toMatchObject({ attempts: 2, unattributed_crashes: 1 });
      expect(store.items.get(record.task_id)).toMatchObject({ status: 'running', attempts: 1, lease_token: 1 });
      expect(store.items.get(record.task_id)?.unattributed_crashes ?? 0).toBe(0);
      expect(await c.commit()).toMatchObject({
        kind: 'claimed',
        record: { status: 'running', attempts: 2, lease_token: 2, unattributed_crashes: 1 },
      });
    });
  });

  describe('Send first, then put', () => {
    it('a message whose record is not written yet waits for it within the window, then is dropped', async () => {
      const { kaj, clock } = unitKaj(registry);
      const sentAt = clock.now();
      expect(await claimAndStart(kaj.lifecycle, 't_later', '0.d', { receiveCount: 1, sentAt })).toEqual({
        kind: 'defer',
        seconds: 1,
        reason: 'task not found',
      });
      clock.advance(10_000);
      expect(await claimAndStart(kaj.lifecycle, 't_later', '0.d', { receiveCount: 4, sentAt })).toMatchObject({
        kind: 'defer',
        seconds: 8,
      });
      clock.advance(349_000);
      expect(await claimAndStart(kaj.lifecycle, 't_later', '0.d', { receiveCount: 9, sentAt })).toEqual({
        kind: 'defer',
        seconds: 1,
        reason: 'task not found',
      });
      clock.advance(1_000);
      expect(await claimAndStart(kaj.lifecycle, 't_later', '0.d', { receiveCount: 10, sentAt })).toEqual({
        kind: 'drop',
        reason: 'task not found',
      });
    });

    it('a message of the next dispatch waits for the record to catch up; one of an earlier dispatch is dropped', async () => {
      const { kaj, record, clock } = await submitted();
      const next = `1.${'n'.repeat(8)}`;
      expect(
        await claimAndStart(kaj.lifecycle, record.task_id, next, { receiveCount: 1, sentAt: clock.now() }),
      ).toMatchObject({
        kind: 'defer',
        reason: 'the record is still at an earlier dispatch',
      });
      expect(
        await claimAndStart(kaj.lifecycle, record.task_id, '0.older', { receiveCount: 1, sentAt: clock.now() }),
      ).toEqual({
        kind: 'drop',
        reason: 'superseded by a newer dispatch',
      });
    });

    it('a submit sends first and writes no outbox entry; a failed send leaves one for the sweeper', async () => {
      const { kaj, queue, store, clock } = unitKaj(registry);
      const { record } = await kaj.submitter.submit({ type: 'job', payload: {} }, OWNER);
      expect(queue.sent).toEqual([
        expect.objectContaining({
          message: expect.objectContaining({ dispatch_id: record.dispatch_id, sent_at: clock.now() }),
        }),
      ]);
      expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
      queue.failNext.send = new Error('sqs down');
      const { record: owed } = await kaj.submitter.submit({ type: 'job', payload: {} }, OWNER);
      expect(store.items.get(owed.task_id)).toMatchObject({ outbox_due: clock.now() + 30_000 });
      expect(store.items.get(owed.task_id)?.outbox_pk).toMatch(/^queue#normal#[0-7]$/);
      clock.advance(30_000);
      await kaj.sweep();
      expect(queue.sent.at(-1)?.message.dispatch_id).toBe(owed.dispatch_id);
      expect(store.items.get(owed.task_id)?.outbox_pk).toBeUndefined();
    });

    it('a delay beyond SQS’s 15 minutes waits in the outbox until the rest fits, then is sent', async () => {
      const { kaj, queue, store, clock } = unitKaj(registry);
      const { record } = await kaj.submitter.submit({ type: 'job', payload: {}, delay_seconds: 3_600 }, OWNER);
      expect(queue.sent).toHaveLength(0);
      expect(store.items.get(record.task_id)?.outbox_due).toBe(clock.now() + 2_700_000);
      clock.advance(2_700_000);
      await kaj.sweep();
      expect(queue.sent).toEqual([expect.objectContaining({ delaySeconds: 900 })]);
      expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
    });

    it('a retry sends the next dispatch first and writes it without an outbox entry', async () => {
      const { kaj, record, queue } = await claimed();
      const after = await kaj.lifecycle.outcomes.attemptFailed(
        record,
        classifyError(new RetryableError('flaky')),
        policy,
        10,
      );
      expect(after.dispatch_id.startsWith('1.')).toBe(true);
      expect(queue.sent.at(-1)?.message.dispatch_id).toBe(after.dispatch_id);
      expect(after.outbox_pk).toBeUndefined();
    });
  });

  describe('Fencing', () => {
    it('rejects every write of a worker whose lease was taken over', async () => {
      const { kaj, record: stale, clock, store } = await claimed();
      clock.advance(60_001);
      const taken = await claimAndStart(kaj.lifecycle, stale.task_id, stale.dispatch_id, REDELIVERY);
      if (taken.kind !== 'claimed') throw new Error('expected reclaim');
      await expect(kaj.lifecycle.outcomes.succeed(stale, 'late', 1)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(kaj.lifecycle.leases.heartbeat(stale)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(
        kaj.lifecycle.outcomes.attemptFailed(stale, classifyError(new RetryableError('x')), policy, 1),
      ).rejects.toBeInstanceOf(LeaseLostError);
      await kaj.lifecycle.outcomes.succeed(taken.record, 'owner', 1);
      expect(store.items.get(stale.task_id)).toMatchObject({ status: 'succeeded', result: 'owner' });
    });
  });

  describe('Method: attemptFailed', () => {
    it('schedules a retry with a full-jitter delay as a new message with a new dispatch id', async () => {
      const { kaj, record, queue, clock } = await claimed();
      const after = await kaj.lifecycle.outcomes.attemptFailed(
        record,
        classifyError(new RetryableError('flaky')),
        policy,
        10,
      );
      // random 0.5 × ceiling(attempt 1) = 0.5 × 4 s
      expect(after).toMatchObject({ status: 'retrying', run_at: new Date(clock.now() + 2_000).toISOString() });
      expect(after.dispatch_id).not.toBe(record.dispatch_id);
      expect(queue.sent.at(-1)).toMatchObject({ delaySeconds: 2, message: { dispatch_id: after.dispatch_id } });
      expect(after.history.at(-1)).toMatchObject({ attempt: 1, outcome: 'retrying', error: { message: 'flaky' } });
    });

    it('honours retryAfterSeconds', async () => {
      const { kaj, record, queue } = await claimed();
      await kaj.lifecycle.outcomes.attemptFailed(
        record,
        classifyError(new RetryableError('429', { retryAfterSeconds: 42 })),
        policy,
        1,
      );
      expect(queue.sent.at(-1)?.delaySeconds).toBe(42);
    });

    it('fails at once on a permanent error and writes the dead letter', async () => {
      const { kaj, record, queue, store } = await claimed();
      const after = await kaj.lifecycle.outcomes.attemptFailed(
        record,
        classifyError(new PermanentError('bad address')),
        policy,
        1,
      );
      expect(after.status).toBe('failed');
      expect(queue.dead).toEqual([
        expect.objectContaining({ task_id: record.task_id, attempts: 1, priority: 'normal', reason: 'bad address' }),
      ]);
      expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
    });

    it('fails when attempts are exhausted', async () => {
      const { kaj, record } = await claimed();
      const after = await kaj.lifecycle.outcomes.attemptFailed(
        { ...record, attempts: 3 },
        classifyError(new RetryableError('x')),
        policy,
        1,
      );
      expect(after.status).toBe('failed');
    });

    it('leaves the dead letter in the outbox when the DLQ send fails, and the sweeper writes it', async () => {
      const { kaj, record, queue, clock } = await claimed();
      queue.failNext.sendDead = new Error('sqs down');
      await kaj.lifecycle.outcomes.attemptFailed(record, classifyError(new PermanentError('no')), policy, 1);
      expect(queue.dead).toHaveLength(0);
      clock.advance(30_000);
      await kaj.sweep();
      expect(queue.dead.map((d) => d.task_id)).toEqual([record.task_id]);
    });
  });

  describe('Method: cancel', () => {
    it('cancels a queued task at once', async () => {
      const { kaj, record } = await submitted();
      expect((await kaj.lifecycle.requests.cancel(record.task_id)).status).toBe('cancelled');
      expect(await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, REDELIVERY)).toEqual({
        kind: 'drop',
        reason: 'task is cancelled',
        finished: expect.objectContaining({ task_id: record.task_id, status: 'cancelled' }),
      });
    });

    it('asks a running task to stop', async () => {
      const { kaj, record } = await claimed();
      const r = await kaj.lifecycle.requests.cancel(record.task_id);
      expect(r).toMatchObject({ status: 'running', cancel_requested: true });
      expect((await kaj.lifecycle.leases.heartbeat(record)).cancel_requested).toBe(true);
    });

    it('refuses a finished task and an unknown one', async () => {
      const { kaj, record } = await claimed();
      await kaj.lifecycle.outcomes.succeed(record, null, 1);
      await expect(kaj.lifecycle.requests.cancel(record.task_id)).rejects.toBeInstanceOf(TaskNotCancellableError);
      await expect(kaj.lifecycle.requests.cancel('t_nope')).rejects.toBeInstanceOf(TaskNotFoundError);
    });
  });
});
