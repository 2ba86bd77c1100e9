import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { classifyError } from '../../../shared/retry/classify.js';
import { PermanentError, RetryableError } from '../../../shared/retry/errors.js';
import { defineTask, resolvePolicy, TaskRegistry } from '../../../shared/task/define.js';
import { LeaseLostError, TaskNotCancellableError, TaskNotFoundError } from '../../../shared/task/errors.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { unitKaj, OWNER } from '../../support/fixtures.js';

const registry = new TaskRegistry([
  defineTask({ type: 'job', schema: z.object({}), maxAttempts: 3, handler: async () => ({}) }),
]);
const policy = resolvePolicy({ maxAttempts: 3 });

async function submitted() {
  const u = unitKaj(registry);
  const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {} }, OWNER);
  return { ...u, record };
}

async function claimed(): Promise<ReturnType<typeof unitKaj> & { record: TaskRecord }> {
  const u = await submitted();
  const outcome = await u.kaj.lifecycle.claim(u.record.task_id, u.record.dispatch_id);
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
      expect(await kaj.lifecycle.claim(record.task_id, record.dispatch_id)).toEqual({ kind: 'defer', seconds: 41 });
    });

    it('drops a message from an older dispatch, and one for a finished task', async () => {
      const { kaj, record } = await claimed();
      expect(await kaj.lifecycle.claim(record.task_id, 'old-dispatch')).toEqual({
        kind: 'drop',
        reason: 'superseded by a newer dispatch',
      });
      await kaj.lifecycle.succeed(record, { ok: 1 }, 5);
      expect(await kaj.lifecycle.claim(record.task_id, record.dispatch_id)).toEqual({
        kind: 'drop',
        reason: 'task is succeeded',
      });
      expect(await kaj.lifecycle.claim('t_missing', 'x')).toEqual({ kind: 'drop', reason: 'task not found' });
    });

    it('reclaims a task whose worker vanished under several tasks: the crash is recorded, not held against it', async () => {
      const { kaj, record, clock } = await claimed();
      clock.advance(60_001);
      const again = await kaj.lifecycle.claim(record.task_id, record.dispatch_id);
      expect(again.kind).toBe('claimed');
      if (again.kind !== 'claimed') return;
      expect(again.record).toMatchObject({ attempts: 2, lease_token: 2, unattributed_crashes: 1, status: 'running' });
      expect(again.record.crashes).toBeUndefined();
      expect(kaj.lifecycle.isSuspect(again.record)).toBe(true);
      expect(again.record.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'crashed' })]);
    });

    it('holds a crash against the task when it ran alone (solo), and clears solo for the next attempt', async () => {
      const { kaj, record, clock } = await claimed();
      await kaj.lifecycle.markSolo(record);
      clock.advance(60_001);
      const again = await kaj.lifecycle.claim(record.task_id, record.dispatch_id);
      if (again.kind !== 'claimed') throw new Error(again.kind);
      expect(again.record).toMatchObject({ attempts: 2, crashes: 1 });
      expect(again.record.solo).toBeUndefined();
      expect(again.record.unattributed_crashes).toBeUndefined();
    });

    it('never fails a task for crashes that happened beside other tasks (whole-worker kills)', async () => {
      const u = unitKaj(registry);
      const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {}, max_attempts: 25 }, OWNER);
      await u.kaj.lifecycle.claim(record.task_id, record.dispatch_id);
      for (let i = 0; i < 10; i += 1) {
        u.clock.advance(60_001);
        expect((await u.kaj.lifecycle.claim(record.task_id, record.dispatch_id)).kind).toBe('claimed');
      }
      expect(u.store.items.get(record.task_id)).toMatchObject({ status: 'running', unattributed_crashes: 10 });
    });

    it('fails a task that keeps crashing its workers while alone, with the reason, and dead-letters it', async () => {
      const u = unitKaj(registry);
      const { record } = await u.kaj.submitter.submit({ type: 'job', payload: {}, max_attempts: 10 }, OWNER);
      const first = await u.kaj.lifecycle.claim(record.task_id, record.dispatch_id);
      if (first.kind !== 'claimed') throw new Error(first.kind);
      await u.kaj.lifecycle.markSolo(first.record);
      let last;
      for (let i = 0; i < 3; i += 1) {
        u.clock.advance(60_001);
        last = await u.kaj.lifecycle.claim(record.task_id, record.dispatch_id);
        if (last.kind === 'claimed') await u.kaj.lifecycle.markSolo(last.record);
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
      const first = await u.kaj.lifecycle.claim(record.task_id, record.dispatch_id);
      if (first.kind !== 'claimed') throw new Error(first.kind);
      await u.kaj.lifecycle.markSolo(first.record);
      u.clock.advance(60_001);
      expect((await u.kaj.lifecycle.claim(record.task_id, record.dispatch_id)).kind).toBe('crash_loop');
      expect(u.store.items.get(record.task_id)?.last_error?.message).toBe('crashed the worker 1 times');
    });
  });

  describe('Fencing', () => {
    it('rejects every write of a worker whose lease was taken over', async () => {
      const { kaj, record: stale, clock, store } = await claimed();
      clock.advance(60_001);
      const taken = await kaj.lifecycle.claim(stale.task_id, stale.dispatch_id);
      if (taken.kind !== 'claimed') throw new Error('expected reclaim');
      await expect(kaj.lifecycle.succeed(stale, 'late', 1)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(kaj.lifecycle.heartbeat(stale)).rejects.toBeInstanceOf(LeaseLostError);
      await expect(
        kaj.lifecycle.attemptFailed(stale, classifyError(new RetryableError('x')), policy, 1),
      ).rejects.toBeInstanceOf(LeaseLostError);
      await kaj.lifecycle.succeed(taken.record, 'owner', 1);
      expect(store.items.get(stale.task_id)).toMatchObject({ status: 'succeeded', result: 'owner' });
    });
  });

  describe('Method: attemptFailed', () => {
    it('schedules a retry with a full-jitter delay as a new message with a new dispatch id', async () => {
      const { kaj, record, queue, clock } = await claimed();
      const after = await kaj.lifecycle.attemptFailed(record, classifyError(new RetryableError('flaky')), policy, 10);
      // random 0.5 × ceiling(attempt 1) = 0.5 × 4 s
      expect(after).toMatchObject({ status: 'retrying', run_at: new Date(clock.now() + 2_000).toISOString() });
      expect(after.dispatch_id).not.toBe(record.dispatch_id);
      expect(queue.sent.at(-1)).toMatchObject({ delaySeconds: 2, message: { dispatch_id: after.dispatch_id } });
      expect(after.history.at(-1)).toMatchObject({ attempt: 1, outcome: 'retrying', error: { message: 'flaky' } });
    });

    it('honours retryAfterSeconds', async () => {
      const { kaj, record, queue } = await claimed();
      await kaj.lifecycle.attemptFailed(
        record,
        classifyError(new RetryableError('429', { retryAfterSeconds: 42 })),
        policy,
        1,
      );
      expect(queue.sent.at(-1)?.delaySeconds).toBe(42);
    });

    it('fails at once on a permanent error and writes the dead letter', async () => {
      const { kaj, record, queue, store } = await claimed();
      const after = await kaj.lifecycle.attemptFailed(
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
      const after = await kaj.lifecycle.attemptFailed(
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
      await kaj.lifecycle.attemptFailed(record, classifyError(new PermanentError('no')), policy, 1);
      expect(queue.dead).toHaveLength(0);
      clock.advance(30_000);
      await kaj.sweep();
      expect(queue.dead.map((d) => d.task_id)).toEqual([record.task_id]);
    });
  });

  describe('Method: cancel', () => {
    it('cancels a queued task at once', async () => {
      const { kaj, record } = await submitted();
      expect((await kaj.lifecycle.cancel(record.task_id)).status).toBe('cancelled');
      expect(await kaj.lifecycle.claim(record.task_id, record.dispatch_id)).toEqual({
        kind: 'drop',
        reason: 'task is cancelled',
      });
    });

    it('asks a running task to stop', async () => {
      const { kaj, record } = await claimed();
      const r = await kaj.lifecycle.cancel(record.task_id);
      expect(r).toMatchObject({ status: 'running', cancel_requested: true });
      expect((await kaj.lifecycle.heartbeat(record)).cancel_requested).toBe(true);
    });

    it('refuses a finished task and an unknown one', async () => {
      const { kaj, record } = await claimed();
      await kaj.lifecycle.succeed(record, null, 1);
      await expect(kaj.lifecycle.cancel(record.task_id)).rejects.toBeInstanceOf(TaskNotCancellableError);
      await expect(kaj.lifecycle.cancel('t_nope')).rejects.toBeInstanceOf(TaskNotFoundError);
    });
  });
});
