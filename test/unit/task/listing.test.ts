import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { classifyError } from '../../../shared/retry/classify.js';
import { PermanentError, RetryableError } from '../../../shared/retry/errors.js';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import type { ListedTask, TaskChanges } from '../../../shared/task/task-store.js';
import { defineTask, resolvePolicy, TaskRegistry } from '../../../shared/task/define.js';
import { InvalidCursorError, ValidationError } from '../../../shared/task/errors.js';
import { listedAt, TaskListing, withListing } from '../../../shared/task/listing.js';
import { outboxKey, type TaskRecord } from '../../../shared/task/model.js';
import { MemoryTaskStore } from '../../../testing/memory-task-store.js';
import { OWNER, unitKaj } from '../../../testing/fixtures.js';
import { sequenceRandom } from '../../../testing/doubles.js';
import { claimAndStart } from '../../support/claims.js';

const registry = new TaskRegistry([
  defineTask({ type: 'job', schema: z.object({}), maxAttempts: 3, handler: async () => ({}) }),
  defineTask({ type: 'other', schema: z.object({}), maxAttempts: 3, handler: async () => ({}) }),
]);
const policy = resolvePolicy({ maxAttempts: 3 });
const NOW = Date.parse('2026-12-02T10:00:00.000Z');

describe('withListing', () => {
  it('puts a task entering retrying, failed or cancelled in the index at the write’s time', () => {
    for (const status of ['retrying', 'failed', 'cancelled'] as const) {
      const c = withListing('t_1', { set: { status, updated_at: '2026-12-02T10:00:05.000Z' } }, NOW);
      expect(c.set).toMatchObject({ list_pk: status, list_sk: '2026-12-02T10:00:05.000Z#t_1' });
      expect(c.remove ?? []).not.toContain('list_pk');
    }
  });

  it('takes a task entering queued, running (a claim) or succeeded out of it, keeping the other removals', () => {
    for (const status of ['queued', 'running', 'succeeded'] as const) {
      const c = withListing('t_1', { set: { status }, remove: ['solo'] }, NOW);
      expect(c.set?.list_pk).toBeUndefined();
      expect(c.remove).toEqual(['solo', 'list_pk', 'list_sk']);
    }
  });

  it('leaves a write that sets no status, or sets the listing itself (the heartbeat), as it is', () => {
    const heartbeat: TaskChanges = { set: { lease_until: 5 } };
    expect(withListing('t_1', heartbeat, NOW)).toBe(heartbeat);
    const lazyClaim: TaskChanges = { set: { status: 'running', list_pk: 'running', list_sk: 'x#t_1' } };
    expect(withListing('t_1', lazyClaim, NOW)).toBe(lazyClaim);
  });
});

/** Every update the lifecycle makes, as the store received it. */
function recordingUpdates(store: MemoryTaskStore): TaskChanges[] {
  const seen: TaskChanges[] = [];
  store.beforeUpdate = (_id, changes) => {
    seen.push(changes);
  };
  return seen;
}

describe('the lifecycle keeps the listing index right', () => {
  it('a task that succeeds at its first attempt, within one heartbeat, never enters the index', async () => {
    const { kaj, store } = unitKaj(registry);
    const updates = recordingUpdates(store);
    const { record } = await kaj.submitter.submit({ type: 'job' }, OWNER);
    expect(store.items.get(record.task_id)?.list_pk).toBeUndefined();
    const claim = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await kaj.lifecycle.outcomes.succeed(claim.record, { ok: true }, 5);
    expect(updates.length).toBeGreaterThan(0);
    expect(updates.every((u) => u.set?.list_pk === undefined)).toBe(true);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'succeeded' });
    expect(store.items.get(record.task_id)?.list_pk).toBeUndefined();
  });

  it('retry → listed retrying; the next claim → out; a permanent failure → listed failed', async () => {
    const { kaj, store, clock } = unitKaj(registry);
    const { record } = await kaj.submitter.submit({ type: 'job' }, OWNER);
    const first = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id, { receiveCount: 2 });
    if (first.kind !== 'claimed') throw new Error(first.kind);
    const retried = await kaj.lifecycle.outcomes.attemptFailed(
      first.record,
      classifyError(new RetryableError('x')),
      policy,
      3,
    );
    expect(store.items.get(record.task_id)).toMatchObject({
      status: 'retrying',
      list_pk: 'retrying',
      list_sk: `${retried.updated_at}#${record.task_id}`,
    });
    clock.advance(60_000);
    const second = await claimAndStart(kaj.lifecycle, record.task_id, retried.dispatch_id, { receiveCount: 1 });
    if (second.kind !== 'claimed') throw new Error(second.kind);
    // The claim of a retried task is written at once (it ran before), and takes it out.
    const afterClaim = await kaj.lifecycle.leases.heartbeat(second.record);
    expect(afterClaim.status).toBe('running');
    await kaj.lifecycle.outcomes.attemptFailed(afterClaim, classifyError(new PermanentError('bad')), policy, 3);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'failed', list_pk: 'failed' });
  });

  it('a task running at a heartbeat enters as running once (later heartbeats leave its key), and leaves on success', async () => {
    const { kaj, store, clock } = unitKaj(registry);
    const { record } = await kaj.submitter.submit({ type: 'job' }, OWNER);
    const claim = await claimAndStart(kaj.lifecycle, record.task_id, record.dispatch_id);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    clock.advance(20_000);
    const beat1 = await kaj.lifecycle.leases.heartbeat(claim.record);
    const key = store.items.get(record.task_id)?.list_sk;
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'running', list_pk: 'running' });
    expect(key).toBe(`${beat1.started_at}#${record.task_id}`);
    const updates = recordingUpdates(store);
    clock.advance(20_000);
    const beat2 = await kaj.lifecycle.leases.heartbeat(beat1);
    expect(updates[0]?.set?.list_sk).toBeUndefined();
    expect(store.items.get(record.task_id)?.list_sk).toBe(key);
    await kaj.lifecycle.outcomes.succeed(beat2, {}, 40_000);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'succeeded' });
    expect(store.items.get(record.task_id)?.list_pk).toBeUndefined();
    expect(store.items.get(record.task_id)?.list_sk).toBeUndefined();
  });

  it('a cancelled task is listed cancelled', async () => {
    const { kaj, store } = unitKaj(registry);
    const { record } = await kaj.submitter.submit({ type: 'job' }, OWNER);
    await kaj.lifecycle.requests.cancel(record.task_id, OWNER.owner);
    expect(store.items.get(record.task_id)).toMatchObject({ status: 'cancelled', list_pk: 'cancelled' });
  });
});

/** A store with `n` listed failed tasks, one per second, alternating types and owners. */
function listedStore(n: number): MemoryTaskStore {
  const store = new MemoryTaskStore();
  for (let i = 0; i < n; i += 1) add(store, i);
  return store;
}

function add(store: MemoryTaskStore, i: number, status: 'failed' | 'retrying' = 'failed'): TaskRecord {
  const at = new Date(NOW + i * 1000).toISOString();
  const id = `t_${String(i).padStart(32, '0')}`;
  const r = {
    task_id: id,
    type: i % 3 === 0 ? 'other' : 'job',
    owner: i % 2 === 0 ? 'alice' : 'bob',
    status,
    priority: 'normal',
    payload: { secret: 'not in the listing' },
    attempts: 1,
    max_attempts: 3,
    timeout_seconds: 60,
    run_at: at,
    created_at: at,
    updated_at: at,
    history: [],
    fingerprint: 'f',
    lease_token: 1,
    dispatch_id: '0.x',
    list_pk: status,
    list_sk: `${at}#${id}`,
  } as TaskRecord;
  store.items.set(id, r);
  return r;
}

async function all(listing: TaskListing, q: Omit<Parameters<TaskListing['list']>[0], 'cursor'>) {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await listing.list({ ...q, ...(cursor === undefined ? {} : { cursor }) });
    ids.push(...page.items.map((t) => t.task_id));
    cursor = page.cursor;
    pages += 1;
  } while (cursor !== undefined && pages < 100);
  return { ids, pages };
}

describe('Class: TaskListing', () => {
  it('pages newest first, the projected attributes only, with no cursor after the last page', async () => {
    const store = listedStore(25);
    const listing = new TaskListing(store, 'k');
    const page = await listing.list({ status: 'failed', limit: 10 });
    expect(page.items.map((t) => t.task_id)).toEqual(
      Array.from({ length: 10 }, (_, k) => `t_${String(24 - k).padStart(32, '0')}`),
    );
    expect(page.items[0]).not.toHaveProperty('payload');
    expect(page.items[0]).toMatchObject({ type: 'other', owner: 'alice', status: 'failed', attempts: 1 });
    const { ids, pages } = await all(listing, { status: 'failed', limit: 10 });
    expect(ids).toHaveLength(25);
    expect(new Set(ids).size).toBe(25);
    expect(pages).toBe(3);
    // A page that ends exactly at the last entry may still carry a cursor (DynamoDB returns
    // LastEvaluatedKey whenever the Limit was reached): the next page is then empty.
    const exact = await all(listing, { status: 'failed', limit: 25 });
    expect(exact.ids).toHaveLength(25);
    expect(exact.pages).toBeLessThanOrEqual(2);
  });

  it('filters by type and owner (and another status is another partition)', async () => {
    const store = listedStore(30);
    add(store, 100, 'retrying');
    const listing = new TaskListing(store, 'k');
    const { ids } = await all(listing, { status: 'failed', type: 'other', owner: 'alice', limit: 4 });
    const expected = [...store.items.values()]
      .filter((r) => r.status === 'failed' && r.type === 'other' && r.owner === 'alice')
      .map((r) => r.task_id)
      .sort()
      .reverse();
    expect(expected.length).toBe(5);
    expect(ids).toEqual(expected);
    expect((await listing.list({ status: 'retrying', limit: 10 })).items.map((t) => t.task_id)).toEqual([
      `t_${String(100).padStart(32, '0')}`,
    ]);
  });

  it('is stable under concurrent inserts: newer entries never shift the pages being read', async () => {
    const store = listedStore(20);
    const listing = new TaskListing(store, 'k');
    const first = await listing.list({ status: 'failed', limit: 7 });
    // Ten tasks fail while the reader is between pages: all newer than the first page.
    for (let i = 20; i < 30; i += 1) add(store, i);
    const ids = first.items.map((t) => t.task_id);
    let cursor = first.cursor;
    while (cursor !== undefined) {
      const page = await listing.list({ status: 'failed', limit: 7, cursor });
      ids.push(...page.items.map((t) => t.task_id));
      cursor = page.cursor;
    }
    expect(ids).toEqual(Array.from({ length: 20 }, (_, k) => `t_${String(19 - k).padStart(32, '0')}`));
  });

  it('refuses a tampered cursor, one of another query, and one signed under another key (field cursor)', async () => {
    const store = listedStore(10);
    const listing = new TaskListing(store, 'k');
    const { cursor } = await listing.list({ status: 'failed', limit: 3 });
    if (cursor === undefined) throw new Error('expected a cursor');
    const [body, sig] = cursor.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify(['9999#t_x', 't_x'])).toString('base64url');
    const bad = [
      `${forged}.${sig}`,
      `${body}.${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`,
      body,
      'not-a-cursor',
      `${cursor}.extra`,
    ];
    for (const c of bad) {
      await expect(listing.list({ status: 'failed', limit: 3, cursor: c })).rejects.toMatchObject({
        constructor: InvalidCursorError,
        field: 'cursor',
      });
    }
    await expect(listing.list({ status: 'failed', type: 'job', limit: 3, cursor })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(listing.list({ status: 'failed', owner: 'bob', limit: 3, cursor })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(new TaskListing(store, 'other').list({ status: 'failed', limit: 3, cursor })).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect((await listing.list({ status: 'failed', limit: 3, cursor })).items).toHaveLength(3);
  });

  it('refuses a limit outside 1–100 (field limit)', async () => {
    const listing = new TaskListing(new MemoryTaskStore(), 'k');
    for (const limit of [0, 101, 2.5]) {
      await expect(listing.list({ status: 'failed', limit })).rejects.toMatchObject({ field: 'limit' });
    }
  });

  it('answers within its read budget when a filter matches little: a short page with a cursor', async () => {
    const store = listedStore(1_500);
    const listing = new TaskListing(store, 'k');
    const page = await listing.list({ status: 'failed', type: 'none-such', limit: 10 });
    expect(page.items).toEqual([]);
    expect(page.cursor).toBeDefined();
    const rest = await listing.list({ status: 'failed', type: 'none-such', limit: 10, cursor: page.cursor as string });
    expect(rest.items).toEqual([]);
    expect(rest.cursor).toBeUndefined();
  });
});

/** A queued task waiting in the table: its run_at is `runInS` seconds after NOW, beyond SQS's 15 minutes. */
function addDelayed(
  store: MemoryTaskStore,
  i: number,
  runInS: number,
  o: { priority?: 'high' | 'normal' | 'low'; status?: 'queued' | 'retrying' } = {},
): TaskRecord {
  const r = add(store, i);
  const priority = o.priority ?? (['high', 'normal', 'low'] as const)[i % 3];
  const runAt = NOW + runInS * 1000;
  const { list_pk: _pk, list_sk: _sk, ...rest } = r;
  const delayed = {
    ...rest,
    status: o.status ?? 'queued',
    attempts: 0,
    priority,
    run_at: new Date(runAt).toISOString(),
    outbox_pk: outboxKey('queue', priority as 'normal', r.task_id),
    outbox_due: runAt - 15 * 60_000,
  } as TaskRecord;
  store.items.set(r.task_id, delayed);
  return delayed;
}

describe('Class: TaskListing (status delayed: the outbox index)', () => {
  it('lists what submit put in the table, soonest first across priorities and shards; not what went to SQS', async () => {
    const { kaj, store } = unitKaj(registry, sequenceRandom([0.1, 0.5, 0.9, 0.3, 0.7]));
    const submit = (delay: number, priority: 'high' | 'normal' | 'low') =>
      kaj.submitter.submit({ type: 'job', payload: {}, delay_seconds: delay, priority }, OWNER).then((s) => s.record);
    const later = await submit(7_200, 'low');
    const soon = await submit(3_600, 'high');
    const middle = await submit(5_400, 'normal');
    await submit(60, 'normal'); // within SQS's 15 minutes: sent at once, not in the table
    const cancelled = await submit(9_000, 'normal');
    await kaj.lifecycle.requests.cancel(cancelled.task_id, OWNER.owner);
    const listing = new TaskListing(store, 'k');
    const page = await listing.list({ status: 'delayed', limit: 10 });
    expect(page.items.map((t) => t.task_id)).toEqual([soon.task_id, middle.task_id, later.task_id]);
    expect(page.cursor).toBeUndefined();
    expect(page.items[0]).toMatchObject({
      status: 'queued',
      priority: 'high',
      run_at: soon.run_at,
      owner: 'test-owner',
    });
    expect(page.items[0]).not.toHaveProperty('payload');
    expect(page.items[0]).not.toHaveProperty('outbox_pk');
    expect(listedAt(page.items[0] as ListedTask)).toBe(soon.updated_at);
  });

  it('pages every delayed task exactly once, in due order, also through many equal due times (a batch)', async () => {
    const store = new MemoryTaskStore();
    // 60 tasks: 40 share one run_at (a batch for tomorrow 09:00), spread over every partition.
    for (let i = 0; i < 60; i += 1) addDelayed(store, i, i < 40 ? 86_400 : 3_600 + i);
    const listing = new TaskListing(store, 'k');
    for (const limit of [1, 7, 40, 100]) {
      const { ids, pages } = await all(listing, { status: 'delayed', limit });
      expect(new Set(ids).size).toBe(60);
      expect(ids).toHaveLength(60);
      const due = ids.map((id) => store.items.get(id)?.outbox_due as number);
      expect(due).toEqual([...due].sort((a, b) => a - b));
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(60 / limit));
    }
  });

  it('is stable under concurrent inserts: what was there is listed once; nothing repeats', async () => {
    const store = new MemoryTaskStore();
    for (let i = 0; i < 30; i += 1) addDelayed(store, i, 3_600 + i * 10);
    const listing = new TaskListing(store, 'k');
    const first = await listing.list({ status: 'delayed', limit: 8 });
    // Submits land while the reader is between pages: due before, among and after the pages.
    for (let i = 30; i < 45; i += 1) addDelayed(store, i, 3_000 + (i - 30) * 40);
    const ids = first.items.map((t) => t.task_id);
    let cursor = first.cursor;
    while (cursor !== undefined) {
      const page = await listing.list({ status: 'delayed', limit: 8, cursor });
      ids.push(...page.items.map((t) => t.task_id));
      cursor = page.cursor;
    }
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 0; i < 30; i += 1) expect(ids).toContain(`t_${String(i).padStart(32, '0')}`);
  });

  it('passes over entries that are not delayed tasks (a retry owed a send, a claimed task) and filters by type and owner', async () => {
    const store = new MemoryTaskStore();
    for (let i = 0; i < 12; i += 1) addDelayed(store, i, 3_600 + i);
    addDelayed(store, 12, 3_600, { status: 'retrying' });
    const claimed = store.items.get(`t_${String(3).padStart(32, '0')}`) as TaskRecord;
    store.items.set(claimed.task_id, { ...claimed, status: 'running' });
    const listing = new TaskListing(store, 'k');
    const { ids } = await all(listing, { status: 'delayed', limit: 5 });
    expect(ids).toHaveLength(11);
    expect(ids).not.toContain(claimed.task_id);
    const filtered = await all(listing, { status: 'delayed', type: 'other', owner: 'alice', limit: 5 });
    const expected = [...store.items.values()]
      .filter((r) => r.status === 'queued' && r.type === 'other' && r.owner === 'alice')
      .sort((a, b) => (a.outbox_due as number) - (b.outbox_due as number))
      .map((r) => r.task_id);
    expect(expected.length).toBeGreaterThan(0);
    expect(filtered.ids).toEqual(expected);
  });

  it('answers within its read budget when a filter matches little, and refuses a cursor of another view', async () => {
    const store = new MemoryTaskStore();
    for (let i = 0; i < 1_100; i += 1) addDelayed(store, i, 3_600 + i);
    const listing = new TaskListing(store, 'k');
    const page = await listing.list({ status: 'delayed', type: 'none-such', limit: 10 });
    expect(page.items).toEqual([]);
    const cursor = page.cursor as string;
    expect(cursor).toBeDefined();
    const rest = await listing.list({ status: 'delayed', type: 'none-such', limit: 10, cursor });
    expect(rest).toEqual({ items: [] });
    await expect(listing.list({ status: 'failed', type: 'none-such', limit: 10, cursor })).rejects.toMatchObject({
      field: 'cursor',
    });
    const failedCursor = (await new TaskListing(listedStore(5), 'k').list({ status: 'failed', limit: 2 })).cursor;
    await expect(listing.list({ status: 'delayed', limit: 2, cursor: failedCursor as string })).rejects.toBeInstanceOf(
      ValidationError,
    );
  });

  it('passes a store failure on (the API answers 503)', async () => {
    const store = new MemoryTaskStore();
    addDelayed(store, 1, 3_600);
    store.failNext.readRows = new StoreUnavailableError('DynamoDB BatchGetItem failed: Throttling');
    await expect(new TaskListing(store, 'k').list({ status: 'delayed', limit: 5 })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  });
});
