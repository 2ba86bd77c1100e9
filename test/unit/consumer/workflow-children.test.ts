import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { DEFAULTS } from '../../../shared/config/resources.js';
import { defineTask, PermanentError, TaskRegistry } from '../../../shared/task/define.js';
import type { TaskMessage } from '../../../shared/task/message.js';
import { childTaskId } from '../../../shared/task/child.js';
import { defineWorkflow } from '../../../shared/workflow/define.js';
import { ChildFailedError } from '../../../shared/workflow/errors.js';
import { apiEvent, lambdaContext, sqsEvent, sqsRecord, TimerClock, unitKaj } from '../../../testing/fixtures.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';

/** What the children's handlers did, and how the test steers them. */
const calls = { resize: 0, fanned: 0, after: 0 };
const steer: { fail: Set<number>; hang: boolean } = { fail: new Set(), hang: false };

const resize = defineTask({
  type: 'resize',
  schema: z.object({ n: z.number().int() }),
  maxAttempts: 1,
  handler: async (p, ctx) => {
    calls.resize += 1;
    if (steer.hang) {
      await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    }
    if (steer.fail.has(p.n)) throw new PermanentError(`image ${p.n} is corrupt`);
    return { n: p.n, px: p.n * 10 };
  },
});

const album = defineWorkflow({
  type: 'album',
  schema: z.object({ count: z.number().int(), catchFailure: z.boolean().default(false) }),
  timeoutSeconds: 30,
  run: async (input, wf) => {
    try {
      const sizes = await Promise.all(
        Array.from({ length: input.count }, (_, n) => wf.run(resize, { n }, { name: `resize_${n}` })),
      );
      const total = await wf.step('sum', () => {
        calls.after += 1;
        return sizes.reduce((s, r) => s + r.px, 0);
      });
      return { total };
    } catch (err) {
      if (input.catchFailure && err instanceof ChildFailedError) return { failed: err.step, status: err.childStatus };
      throw err;
    }
  },
});

/** A child that is itself a workflow: a step, a durable sleep, a grandchild. */
const albumPage = defineWorkflow({
  type: 'album_page',
  schema: z.object({ page: z.number().int() }),
  timeoutSeconds: 30,
  run: async (input, wf) => {
    const layout = await wf.step('layout', () => `page-${input.page}`);
    await wf.sleep('settle', '1m');
    const cover = await wf.run(resize, { n: input.page }, { name: 'cover' });
    return { layout, px: cover.px };
  },
});
const book = defineWorkflow({
  type: 'book',
  schema: z.object({}),
  timeoutSeconds: 30,
  run: async (_input, wf) => {
    const pages = await Promise.all([1, 2].map((page) => wf.run(albumPage, { page }, { name: `page_${page}` })));
    return { pages };
  },
});

/** Woken by each child's end (as a pipeline is): a failure ends the run while others are open. */
const albumFailFast = defineWorkflow({
  type: 'album_fail_fast',
  schema: z.object({ count: z.number().int() }),
  timeoutSeconds: 30,
  wakeOnEachChild: true,
  run: async (input, wf) => {
    await Promise.all(Array.from({ length: input.count }, (_, n) => wf.run(resize, { n }, { name: `resize_${n}` })));
    return {};
  },
});

const registry = new TaskRegistry([resize, album, albumPage, book, albumFailFast]);

function setup() {
  const history = new MemoryHistoryStore();
  const u = unitKaj(registry, undefined, new TimerClock(), { history, defaultOwner: 'anonymous' });
  return { ...u, history };
}
type Unit = ReturnType<typeof setup>;

async function submit(u: Unit, payload: unknown, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await u.kaj.handleHttp(
    apiEvent('POST', '/api/v1/tasks', { body: JSON.stringify({ type: 'album', payload, ...extra }) }),
  );
  expect(res.statusCode).toBe(202);
  return (JSON.parse(res.body) as { task_id: string }).task_id;
}

/** The messages sent for a task so far. */
function messagesOf(u: Unit, taskId: string): TaskMessage[] {
  return u.queue.sent.filter((s) => s.message.task_id === taskId).map((s) => s.message);
}

async function deliver(u: Unit, message: TaskMessage | undefined): Promise<void> {
  expect(message).toBeDefined();
  await u.kaj.processBatch(sqsEvent(sqsRecord(message)), lambdaContext());
}

const deliverLatest = (u: Unit, taskId: string) => deliver(u, messagesOf(u, taskId).at(-1));

async function get(u: Unit, id: string): Promise<Record<string, unknown>> {
  const res = await u.kaj.handleHttp(apiEvent('GET', `/api/v1/tasks/${id}`));
  return JSON.parse(res.body) as Record<string, unknown>;
}

describe('Workflow children (wf.run): fan-out, exactly-once fan-in, failures, cancel', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      now: Date.parse('2026-03-01T00:00:00Z'),
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
    calls.resize = 0;
    calls.after = 0;
    steer.fail = new Set();
    steer.hang = false;
  });
  afterEach(() => vi.useRealTimers());

  it('starts each child once under an id derived from the run and the name, inheriting owner, tenant, priority', async () => {
    const u = setup();
    const id = await submit(u, { count: 3 }, { priority: 'high', tenant: 'acme' });
    await deliverLatest(u, id);
    const run = await u.store.get(id);
    expect(run?.status).toBe('waiting');
    expect(run?.children_open).toBe(3);
    for (let n = 0; n < 3; n += 1) {
      const child = await u.store.get(childTaskId(id, `resize_${n}`));
      expect(child).toMatchObject({
        type: 'resize',
        status: 'queued',
        parent_id: id,
        parent_step: `resize_${n}`,
        owner: run?.owner,
        tenant: 'acme',
        priority: 'high',
        payload: { n },
      });
    }
    // A second delivery of the same run message (a duplicate) starts no second child.
    const sent = u.queue.sent.length;
    await deliver(u, messagesOf(u, id)[0]);
    expect(u.queue.sent.length).toBe(sent);
    const view = await get(u, id);
    expect(view.waiting_for).toMatchObject({ children: 3 });
    expect((view.steps as { kind: string; status: string }[]).filter((s) => s.kind === 'child')).toHaveLength(3);
  });

  it('the last child to end wakes the run once; the run gets every result and goes on', async () => {
    const u = setup();
    const id = await submit(u, { count: 3 });
    await deliverLatest(u, id);
    const before = messagesOf(u, id).length;
    await deliverLatest(u, childTaskId(id, 'resize_0'));
    await deliverLatest(u, childTaskId(id, 'resize_1'));
    expect((await u.store.get(id))?.status).toBe('waiting');
    expect((await u.store.get(id))?.children_open).toBe(1);
    expect(messagesOf(u, id).length).toBe(before); // not woken yet
    await deliverLatest(u, childTaskId(id, 'resize_2'));
    expect(messagesOf(u, id).length).toBe(before + 1); // one wake
    await deliverLatest(u, id);
    const done = await u.store.get(id);
    expect(done?.status).toBe('succeeded');
    expect(done?.result).toEqual({ total: 30 });
    expect(calls.resize).toBe(3);
    expect(calls.after).toBe(1);
    const view = await get(u, id);
    const children = (view.steps as { kind: string; status: string; child_id?: string }[]).filter(
      (s) => s.kind === 'child',
    );
    expect(children.map((c) => c.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(children[0]?.child_id).toBe(childTaskId(id, 'resize_0'));
    expect((await get(u, childTaskId(id, 'resize_0'))).parent_id).toBe(id);
  });

  it('two last children ending at the same instant wake the run exactly once', async () => {
    const u = setup();
    const id = await submit(u, { count: 2 });
    await deliverLatest(u, id);
    const before = messagesOf(u, id).length;
    await Promise.all([deliverLatest(u, childTaskId(id, 'resize_0')), deliverLatest(u, childTaskId(id, 'resize_1'))]);
    expect(messagesOf(u, id).length).toBe(before + 1);
    // The wake delivered twice (SQS at-least-once): the second finds no such dispatch, nothing runs twice.
    const wake = messagesOf(u, id).at(-1);
    await deliver(u, wake);
    await deliver(u, wake);
    expect((await u.store.get(id))?.status).toBe('succeeded');
    expect(calls.after).toBe(1);
  });

  it('a child that fails for good (dead-lettered) raises ChildFailedError in the run: uncaught it fails the run', async () => {
    const u = setup();
    steer.fail.add(1);
    const id = await submit(u, { count: 2 });
    await deliverLatest(u, id);
    await deliverLatest(u, childTaskId(id, 'resize_0'));
    await deliverLatest(u, childTaskId(id, 'resize_1'));
    expect((await u.store.get(childTaskId(id, 'resize_1')))?.status).toBe('failed');
    await deliverLatest(u, id);
    const run = await u.store.get(id);
    expect(run?.status).toBe('failed');
    expect(run?.last_error).toMatchObject({ name: 'ChildFailedError', code: 'CHILD_FAILED' });
    expect(run?.last_error?.message).toContain('resize_1');
    expect(run?.last_error?.message).toContain('image 1 is corrupt');
  });

  it('a run that fails while children are open (woken by each end) cancels them', async () => {
    const u = setup();
    steer.fail.add(0);
    const id = await submit(u, { count: 3 }, { type: 'album_fail_fast' });
    await deliverLatest(u, id);
    expect((await u.store.get(id))?.children_open).toBe(1);
    await deliverLatest(u, childTaskId(id, 'resize_0'));
    await deliverLatest(u, id);
    expect((await u.store.get(id))?.status).toBe('failed');
    for (const n of [1, 2]) expect((await u.store.get(childTaskId(id, `resize_${n}`)))?.status).toBe('cancelled');
    expect(calls.resize).toBe(1);
  });

  it('ChildFailedError can be caught: the run goes on with the child’s status', async () => {
    const u = setup();
    steer.fail.add(0);
    const id = await submit(u, { count: 1, catchFailure: true });
    await deliverLatest(u, id);
    await deliverLatest(u, childTaskId(id, 'resize_0'));
    await deliverLatest(u, id);
    const run = await u.store.get(id);
    expect(run?.status).toBe('succeeded');
    expect(run?.result).toEqual({ failed: 'resize_0', status: 'failed' });
  });

  it('a child end that was never recorded (its writer died) is found by the run’s check timer', async () => {
    const u = setup();
    const id = await submit(u, { count: 1 });
    await deliverLatest(u, id);
    // The child's end reaches no history: the append fails (as if the worker died after its final write).
    u.history.failNext.append = new Error('worker killed');
    await deliverLatest(u, childTaskId(id, 'resize_0'));
    expect((await u.store.get(childTaskId(id, 'resize_0')))?.status).toBe('succeeded');
    const waiting = await u.store.get(id);
    expect(waiting?.status).toBe('waiting');
    // Its timer: the check, DEFAULTS.childCheckMs after the child started.
    expect(Date.parse(waiting?.run_at ?? '') - Date.now()).toBeLessThanOrEqual(DEFAULTS.childCheckMs);
    vi.setSystemTime(Date.parse(waiting?.run_at ?? ''));
    await deliverLatest(u, id);
    const run = await u.store.get(id);
    expect(run?.status).toBe('succeeded');
    expect(run?.result).toEqual({ total: 0 });
    expect(calls.resize).toBe(1);
  });

  it('a worker dies after a child’s end is written: the child’s message comes back and the run hears of it', async () => {
    const u = setup();
    const id = await submit(u, { count: 2 });
    await deliverLatest(u, id);
    await deliverLatest(u, childTaskId(id, 'resize_0'));
    // Child 1's end reaches the history but its count-down is lost (the worker dies in between).
    u.store.beforeUpdate = (taskId, changes) => {
      if (taskId === id && changes.add?.children_open !== undefined) {
        u.store.beforeUpdate = undefined;
        throw new Error('worker killed');
      }
    };
    const childMessage = messagesOf(u, childTaskId(id, 'resize_1')).at(-1);
    await deliver(u, childMessage);
    expect((await u.store.get(id))?.status).toBe('waiting');
    const before = messagesOf(u, id).length;
    // Its message was not acknowledged: SQS gives it back; the child is finished, the run is told again.
    await deliver(u, childMessage);
    expect(messagesOf(u, id).length).toBe(before + 1);
    await deliverLatest(u, id);
    expect((await u.store.get(id))?.status).toBe('succeeded');
    expect(calls.resize).toBe(2);
  });

  it('cancelling a run cancels its 1,000 open children; a running child gets its abort signal', async () => {
    const u = setup();
    const id = await submit(u, { count: 1_000 });
    await deliverLatest(u, id);
    expect((await u.store.get(id))?.children_open).toBe(1_000);
    // One child is running (its handler waits for the abort).
    steer.hang = true;
    let ended = false;
    const running = deliverLatest(u, childTaskId(id, 'resize_7')).then(() => {
      ended = true;
    });
    await vi.waitFor(() => expect(calls.resize).toBe(1));
    const res = await u.kaj.handleHttp(apiEvent('DELETE', `/api/v1/tasks/${id}`));
    expect(res.statusCode).toBe(200);
    expect((await u.store.get(id))?.status).toBe('cancelled');
    let cancelled = 0;
    for (let n = 0; n < 1_000; n += 1) {
      if ((await u.store.get(childTaskId(id, `resize_${n}`)))?.status === 'cancelled') cancelled += 1;
    }
    expect(cancelled).toBe(1_000);
    // The running child's handler is aborted at its worker's next cancel look.
    expect(ended).toBe(false);
    await vi.advanceTimersByTimeAsync(DEFAULTS.cancelPollSeconds * 1000 + 1_000);
    await running;
    expect(ended).toBe(true);
    expect((await u.store.get(childTaskId(id, 'resize_7')))?.history.at(-1)?.outcome).toBe('cancelled');
  });

  it('a cancel cut off among the children: the run’s pending timer message comes back and cancels the rest', async () => {
    const u = setup();
    const id = await submit(u, { count: 40 });
    await deliverLatest(u, id);
    let cancels = 0;
    u.store.beforeUpdate = (taskId, changes) => {
      if (taskId === id || changes.set?.status !== 'cancelled') return;
      cancels += 1;
      if (cancels > 10) throw new Error('the API function timed out');
    };
    const res = await u.kaj.handleHttp(apiEvent('DELETE', `/api/v1/tasks/${id}`));
    expect(res.statusCode).toBe(200);
    u.store.beforeUpdate = undefined;
    const open = async () => {
      let n = 0;
      for (let i = 0; i < 40; i += 1)
        if ((await u.store.get(childTaskId(id, `resize_${i}`)))?.status !== 'cancelled') n += 1;
      return n;
    };
    expect(await open()).toBeGreaterThan(0);
    // The waiting run's check timer message, due later, comes back and finds the run cancelled.
    await deliverLatest(u, id);
    expect(await open()).toBe(0);
    expect(calls.resize).toBe(0);
  });

  it('a child may be a workflow: it sleeps and runs its own child; the run gets its result; a cancel reaches the grandchildren', async () => {
    const u = setup();
    const res = await u.kaj.handleHttp(
      apiEvent('POST', '/api/v1/tasks', { body: JSON.stringify({ type: 'book', payload: {} }) }),
    );
    const id = (JSON.parse(res.body) as { task_id: string }).task_id;
    await deliverLatest(u, id);
    const pages = [1, 2].map((p) => childTaskId(id, `page_${p}`));
    for (const p of pages) await deliverLatest(u, p); // each page: its step, then its sleep
    for (const p of pages) expect((await u.store.get(p))?.status).toBe('waiting');
    vi.setSystemTime(Date.now() + 61_000);
    for (const p of pages) await deliverLatest(u, p); // the sleep is over: the cover starts
    for (const p of pages) await deliverLatest(u, childTaskId(p, 'cover'));
    for (const p of pages) await deliverLatest(u, p); // the cover's end woke its page
    await deliverLatest(u, id); // the last page's end woke the book
    const done = await u.store.get(id);
    expect(done?.status).toBe('succeeded');
    expect(done?.result).toEqual({
      pages: [
        { layout: 'page-1', px: 10 },
        { layout: 'page-2', px: 20 },
      ],
    });

    // Cancelling a book whose pages wait for their covers: pages and covers end cancelled.
    const again = await u.kaj.handleHttp(
      apiEvent('POST', '/api/v1/tasks', { body: JSON.stringify({ type: 'book', payload: {} }) }),
    );
    const second = (JSON.parse(again.body) as { task_id: string }).task_id;
    await deliverLatest(u, second);
    const secondPages = [1, 2].map((p) => childTaskId(second, `page_${p}`));
    for (const p of secondPages) await deliverLatest(u, p);
    vi.setSystemTime(Date.now() + 61_000);
    for (const p of secondPages) await deliverLatest(u, p);
    const covers = secondPages.map((p) => childTaskId(p, 'cover'));
    for (const c of covers) expect((await u.store.get(c))?.status).toBe('queued');
    expect((await u.kaj.handleHttp(apiEvent('DELETE', `/api/v1/tasks/${second}`))).statusCode).toBe(200);
    for (const t of [second, ...secondPages, ...covers]) expect((await u.store.get(t))?.status).toBe('cancelled');
  });

  it('a payload that does not fit the child’s type fails the run at the call, naming it; no child is created', async () => {
    const u = setup();
    const bad = defineWorkflow({
      type: 'bad_parent',
      schema: z.object({}),
      run: async (_i, wf) => wf.run(resize, { n: 'x' } as unknown as { n: number }, { name: 'broken' }),
    });
    const u2 = unitKaj(new TaskRegistry([resize, bad]), undefined, new TimerClock(), {
      history: new MemoryHistoryStore(),
      defaultOwner: 'anonymous',
    });
    const res = await u2.kaj.handleHttp(
      apiEvent('POST', '/api/v1/tasks', { body: JSON.stringify({ type: 'bad_parent', payload: {} }) }),
    );
    const id = (JSON.parse(res.body) as { task_id: string }).task_id;
    await u2.kaj.processBatch(sqsEvent(sqsRecord(u2.queue.sent.at(-1)?.message)), lambdaContext());
    const run = await u2.store.get(id);
    expect(run?.status).toBe('failed');
    expect(run?.last_error?.message).toContain('child "broken"');
    expect(await u2.store.get(childTaskId(id, 'broken'))).toBeUndefined();
    expect(u.queue.sent).toHaveLength(0);
  });
});
