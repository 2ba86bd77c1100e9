import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import {
  IdempotencyConflictError,
  PayloadTooLargeError,
  UnknownTaskTypeError,
  ValidationError,
} from '../../../shared/task/errors.js';
import { canonicalJson, fingerprint, submitRequestSchema } from '../../../shared/task/submit.js';
import { QueueUnavailableError } from '../../../shared/task/queue-errors.js';
import { unitKaj, OWNER } from '../../../testing/fixtures.js';

const registry = new TaskRegistry([
  defineTask({
    type: 'send_email',
    schema: z.object({ to: z.email(), subject: z.string().min(1) }),
    maxAttempts: 7,
    timeoutSeconds: 20,
    handler: async () => ({}),
  }),
]);

const valid = { type: 'send_email', payload: { to: 'a@b.co', subject: 'hi' } };

async function fieldOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ValidationError) return err.field;
    throw err;
  }
  throw new Error('expected a ValidationError');
}

describe('Class: TaskSubmitter', () => {
  describe('Method: submit', () => {
    it('writes a queued task with the type policy and sends its message', async () => {
      const { kaj, store, queue, clock } = unitKaj(registry);
      const { record, replayed } = await kaj.submitter.submit({ ...valid, priority: 'high' }, OWNER);
      expect(replayed).toBe(false);
      expect(record).toMatchObject({
        status: 'queued',
        priority: 'high',
        attempts: 0,
        max_attempts: 7,
        timeout_seconds: 20,
        run_at: new Date(clock.now()).toISOString(),
      });
      expect(record.task_id).toMatch(/^t_[0-9a-f]{32}$/);
      expect(queue.sent).toEqual([
        {
          priority: 'high',
          message: {
            task_id: record.task_id,
            dispatch_id: record.dispatch_id,
            timeout_seconds: 20,
            sent_at: clock.now(),
          },
          delaySeconds: 0,
          type: 'send_email',
        },
      ]);
      // Sent first, then written: the message keeps the task, so the record has no outbox entry.
      const stored = store.items.get(record.task_id);
      expect(stored?.outbox_pk).toBeUndefined();
      expect(stored?.outbox_due).toBeUndefined();
      expect(record.dispatch_id).toMatch(/^0\./);
      expect(kaj.lifecycle.outboxes.sendUnconfirmed(stored!)).toBe(false);
    });

    it('keeps the outbox entry when SQS fails, so the task is still accepted and will be swept', async () => {
      const { kaj, store, queue, clock } = unitKaj(registry);
      queue.failNext.send = new QueueUnavailableError('down');
      const { record } = await kaj.submitter.submit(valid, OWNER);
      expect(queue.sent).toHaveLength(0);
      const stored = store.items.get(record.task_id);
      expect(stored?.outbox_pk).toMatch(/^queue#normal#[0-7]$/);
      expect(stored?.outbox_due).toBe(clock.now() + 30_000);
      clock.advance(30_000);
      expect(await kaj.sweep()).toEqual({ sent: 1, deferred: 0, extended: 0, failed: 0, stale: 0 });
      expect(queue.sent[0]?.message.task_id).toBe(record.task_id);
      // Sent: the entry is gone, the message keeps the task; nothing more is owed.
      expect(store.items.get(record.task_id)?.outbox_pk).toBeUndefined();
      clock.advance(3_600_000);
      expect((await kaj.sweep()).sent).toBe(0);
    });

    it('surfaces a store failure (nothing was written; the message sent ahead finds no task)', async () => {
      const { kaj, store, queue } = unitKaj(registry);
      store.failNext.create = new StoreUnavailableError('throttled');
      await expect(kaj.submitter.submit(valid, OWNER)).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(store.items.size).toBe(0);
      // The message went out first; with no record behind it, consumers drop it after the window.
      expect(queue.sent).toHaveLength(1);
    });

    it('replays the same request with the same key and refuses a different one', async () => {
      const { kaj, queue } = unitKaj(registry);
      const first = await kaj.submitter.submit({ ...valid, idempotency_key: 'k1' }, OWNER);
      const again = await kaj.submitter.submit(
        { payload: valid.payload, idempotency_key: 'k1', type: 'send_email', priority: 'normal' },
        OWNER,
      );
      expect(again.replayed).toBe(true);
      expect(again.record.task_id).toBe(first.record.task_id);
      expect(first.record.task_id).toBe(kaj.submitter.idempotentTaskId(OWNER.owner, 'send_email', 'k1'));
      // The replay's message (sent before its put found the task) carries a dispatch the task
      // does not: consumers drop it. The task has one dispatch, the first request's.
      expect(queue.sent.map((m) => m.message.dispatch_id === first.record.dispatch_id)).toEqual([true, false]);
      expect(again.record.dispatch_id).toBe(first.record.dispatch_id);
      await expect(
        kaj.submitter.submit({ ...valid, idempotency_key: 'k1', priority: 'low' }, OWNER),
      ).rejects.toBeInstanceOf(IdempotencyConflictError);
    });

    it('completes an enqueue a failed earlier request left undone when the client retries', async () => {
      const { kaj, queue, store } = unitKaj(registry);
      queue.failNext.send = new QueueUnavailableError('down');
      const first = await kaj.submitter.submit({ ...valid, idempotency_key: 'k2' }, OWNER);
      expect(queue.sent).toHaveLength(0);
      await kaj.submitter.submit({ ...valid, idempotency_key: 'k2' }, OWNER);
      // The retry's own message (another dispatch) and the owed one, which is the task's.
      expect(queue.sent.map((s) => s.message.dispatch_id === first.record.dispatch_id)).toEqual([false, true]);
      expect(store.items.get(first.record.task_id)?.outbox_pk).toBeUndefined();
    });

    it('holds a delay beyond 15 minutes in the table until the sweeper can hand it to SQS', async () => {
      const { kaj, store, queue, clock } = unitKaj(registry);
      const { record } = await kaj.submitter.submit({ ...valid, delay_seconds: 3600 }, OWNER);
      expect(queue.sent).toHaveLength(0);
      expect(store.items.get(record.task_id)?.outbox_due).toBe(clock.now() + (3600 - 900) * 1000);
      clock.advance((3600 - 900) * 1000 - 1);
      expect((await kaj.sweep()).sent).toBe(0);
      clock.advance(1);
      expect((await kaj.sweep()).sent).toBe(1);
      expect(queue.sent[0]?.delaySeconds).toBe(900);
    });

    it.each([
      [{}, 'type'],
      [{ ...valid, priority: 'urgent' }, 'priority'],
      [{ ...valid, payload: { to: 'not-an-email', subject: 'x' } }, 'payload.to'],
      [{ ...valid, payload: { to: 'a@b.co' } }, 'payload.subject'],
      [{ ...valid, delay_seconds: -1 }, 'delay_seconds'],
      [{ ...valid, delay_seconds: 1.5 }, 'delay_seconds'],
      [{ ...valid, run_at: '2026-01-01 10:00' }, 'run_at'],
      [{ ...valid, run_at: '2026-01-01T10:00:00Z', delay_seconds: 5 }, 'run_at'],
      [{ ...valid, max_attempts: 0 }, 'max_attempts'],
      [{ ...valid, timeout_seconds: 10_000 }, 'timeout_seconds'],
      [{ ...valid, idempotency_key: 'has space' }, 'idempotency_key'],
      [{ ...valid, colour: 'blue' }, 'colour'],
      ['a string', 'body'],
    ])('names the offending field: %j → %s', async (body, field) => {
      const { kaj } = unitKaj(registry);
      expect(await fieldOf(kaj.submitter.submit(body, OWNER))).toBe(field);
    });

    it('rejects an unknown type, listing the known ones', async () => {
      const { kaj } = unitKaj(registry);
      await expect(kaj.submitter.submit({ type: 'nope' }, OWNER)).rejects.toThrow(UnknownTaskTypeError);
      await expect(kaj.submitter.submit({ type: 'nope' }, OWNER)).rejects.toThrow(/known types: send_email/);
    });

    it('rejects a payload over the size limit', async () => {
      const big = defineTask({ type: 'big', schema: z.object({ s: z.string() }), handler: async () => ({}) });
      const { kaj } = unitKaj(new TaskRegistry([big]));
      await expect(
        kaj.submitter.submit({ type: 'big', payload: { s: 'x'.repeat(40_000) } }, OWNER),
      ).rejects.toBeInstanceOf(PayloadTooLargeError);
    });
  });
});

describe('Class: TaskSubmitter, Method: submitMany', () => {
  const email = (n: number, extra: Record<string, unknown> = {}) => ({
    type: 'send_email',
    payload: { to: `u${n}@b.co`, subject: 'hi' },
    ...extra,
  });

  it('answers each item in request order; one bad item never rejects the others', async () => {
    const { kaj, store } = unitKaj(registry);
    const earlier = await kaj.submitter.submit(email(0, { idempotency_key: 'old' }), OWNER);
    const results = await kaj.submitter.submitMany(
      [
        email(1),
        { ...email(2), payload: { to: 'not-an-email', subject: 'x' } },
        { type: 'nope' },
        email(0, { idempotency_key: 'old' }),
        email(9, { idempotency_key: 'old' }),
        'not an object',
        email(3, { priority: 'high' }),
      ],
      OWNER,
    );
    expect(results.map((r) => (r.kind === 'accepted' ? (r.replayed ? 'replayed' : 'accepted') : r.error.name))).toEqual(
      [
        'accepted',
        'ValidationError',
        'UnknownTaskTypeError',
        'replayed',
        'IdempotencyConflictError',
        'ValidationError',
        'accepted',
      ],
    );
    const [first, badPayload, , replay, , , high] = results;
    expect(badPayload?.kind === 'rejected' && (badPayload.error as ValidationError).field).toBe('payload.to');
    expect(replay?.kind === 'accepted' && replay.record.task_id).toBe(earlier.record.task_id);
    // The accepted items are stored, as a single submit would store them.
    for (const r of [first, high]) {
      if (r?.kind !== 'accepted') throw new Error('expected accepted');
      expect(store.items.get(r.record.task_id)).toMatchObject({ status: 'queued', attempts: 0, max_attempts: 7 });
    }
    expect(store.items.size).toBe(3);
  });

  it('sends with SendMessageBatch, 10 entries a request per priority; puts one record per item', async () => {
    const { kaj, queue, store } = unitKaj(registry);
    const bodies = [
      ...Array.from({ length: 23 }, (_, i) => email(i)),
      ...Array.from({ length: 4 }, (_, i) => email(100 + i, { priority: 'low' })),
    ];
    const results = await kaj.submitter.submitMany(bodies, OWNER);
    expect(results.every((r) => r.kind === 'accepted' && !r.replayed)).toBe(true);
    expect(queue.batches).toEqual([
      { priority: 'normal', size: 10 },
      { priority: 'normal', size: 10 },
      { priority: 'normal', size: 3 },
      { priority: 'low', size: 4 },
    ]);
    // Sent first, then written: no item owes a message.
    expect([...store.items.values()].filter((r) => r.outbox_pk !== undefined)).toEqual([]);
    const ids = results.map((r) => (r.kind === 'accepted' ? r.record.task_id : ''));
    expect(new Set(ids).size).toBe(27);
    expect(queue.sent.map((m) => m.message.task_id).sort()).toEqual([...ids].sort());
  });

  it('the same idempotency key twice in one batch is one task: a replay, or a conflict when the request differs', async () => {
    const { kaj, store, queue } = unitKaj(registry);
    const results = await kaj.submitter.submitMany(
      [email(1, { idempotency_key: 'k' }), email(1, { idempotency_key: 'k' }), email(2, { idempotency_key: 'k' })],
      OWNER,
    );
    expect(results.map((r) => (r.kind === 'accepted' ? r.replayed : r.error.name))).toEqual([
      false,
      true,
      'IdempotencyConflictError',
    ]);
    expect(store.items.size).toBe(1);
    expect(queue.sent).toHaveLength(1);
  });

  it('an entry SQS did not take and a delay beyond 15 minutes wait in the outbox; both are accepted and swept', async () => {
    const { kaj, queue, store, clock } = unitKaj(registry);
    // The id of an idempotent item is known before the send: reject exactly that one.
    const target = kaj.submitter.idempotentTaskId(OWNER.owner, 'send_email', 'flaky');
    queue.rejectEntry = (e) => (e.message.task_id === target ? new QueueUnavailableError('throttled') : undefined);
    const results = await kaj.submitter.submitMany(
      [email(1, { idempotency_key: 'flaky' }), email(2, { delay_seconds: 3600 }), email(3)],
      OWNER,
    );
    expect(results.every((r) => r.kind === 'accepted')).toBe(true);
    const [flaky, later, now] = results.map((r) => (r.kind === 'accepted' ? r.record.task_id : ''));
    expect(store.items.get(flaky as string)?.outbox_due).toBe(clock.now() + 30_000);
    expect(store.items.get(later as string)?.outbox_due).toBe(clock.now() + (3600 - 900) * 1000);
    expect(store.items.get(now as string)?.outbox_pk).toBeUndefined();
    expect(queue.sent.map((m) => m.message.task_id)).toEqual([now]);
    queue.rejectEntry = undefined;
    clock.advance(30_000);
    expect((await kaj.sweep()).sent).toBe(1);
    expect(queue.sent.map((m) => m.message.task_id)).toEqual([now, flaky]);
  });

  it('a put the store refuses for one item answers that item with the store error (retry it); the others stand', async () => {
    const { kaj, store } = unitKaj(registry);
    store.failNext.create = new StoreUnavailableError('throttled');
    const results = await kaj.submitter.submitMany([email(1), email(2), email(3)], OWNER);
    expect(results.filter((r) => r.kind === 'rejected').map((r) => r.kind === 'rejected' && r.error)).toEqual([
      expect.any(StoreUnavailableError),
    ]);
    expect(results.filter((r) => r.kind === 'accepted')).toHaveLength(2);
    expect(store.items.size).toBe(2);
  });

  it('refuses more than 100 items, naming the field tasks', async () => {
    const { kaj, queue } = unitKaj(registry);
    await expect(
      fieldOf(
        kaj.submitter.submitMany(
          Array.from({ length: 101 }, (_, i) => email(i)),
          OWNER,
        ),
      ),
    ).resolves.toBe('tasks');
    expect(queue.sent).toHaveLength(0);
  });
});

describe('Function: fingerprint', () => {
  const parse = (b: unknown) => submitRequestSchema.parse(b);
  it('ignores key order and the idempotency key itself', () => {
    expect(fingerprint(parse({ type: 't', payload: { a: 1, b: 2 }, idempotency_key: 'x' }))).toBe(
      fingerprint(parse({ payload: { b: 2, a: 1 }, type: 't', idempotency_key: 'y' })),
    );
  });
  it('treats an omitted priority as the default', () => {
    expect(fingerprint(parse({ type: 't', priority: 'normal' }))).toBe(fingerprint(parse({ type: 't' })));
  });
  it('differs when anything the client asked for differs', () => {
    const base = fingerprint(parse({ type: 't', payload: { a: 1 } }));
    expect(fingerprint(parse({ type: 't', payload: { a: 2 } }))).not.toBe(base);
    expect(fingerprint(parse({ type: 't', payload: { a: 1 }, delay_seconds: 5 }))).not.toBe(base);
    expect(fingerprint(parse({ type: 't', payload: { a: 1 }, priority: 'high' }))).not.toBe(base);
  });
  it('canonicalJson sorts keys at every depth', () => {
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[{"c":2,"d":1}]}');
  });
});
