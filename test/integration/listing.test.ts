/**
 * The listing on each emulator, through the local runtime's API: the sparse index (a GSI with an
 * INCLUDE projection, queried newest first with ExclusiveStartKey) as DynamoDB semantics give it.
 */
import { describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../local/runtime.js';
import { DEVELOPMENT_ID_SECRET, LOCAL_OWNER } from '../../shared/service/all-in-one.js';
import { CursorSigner } from '../../shared/task/cursor.js';
import { runtimeForSuite } from '../support/suite-runtime.js';
import { targets } from '../support/targets.js';
import { TaskProbe, testRegistry } from '../support/test-tasks.js';
import { waitFor } from '../../testing/wait.js';

const probe = new TaskProbe();

describe.each(targets())('task listing on $name', (target) => {
  let runtime: LocalRuntime;
  runtimeForSuite(
    target,
    'list',
    {
      registry: testRegistry(probe),
      sweepIntervalMs: 500,
      waitTimeSeconds: 1,
    },
    (r) => (runtime = r),
    60_000,
  );

  const submit = async (body: unknown, identity?: string) => {
    const res = await fetch(`${runtime.url}/api/v1/tasks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(identity === undefined ? {} : { 'x-kaj-identity': identity }),
      },
      body: JSON.stringify(body),
    });
    return ((await res.json()) as { task_id: string }).task_id;
  };
  const list = async (query: string, identity?: string) => {
    const res = await fetch(`${runtime.url}/api/v1/tasks?${query}`, {
      headers: identity === undefined ? {} : { 'x-kaj-identity': identity },
    });
    return {
      status: res.status,
      body: (await res.json()) as {
        items: { task_id: string; type: string; status: string }[];
        cursor?: string;
        error?: { field: string };
      },
    };
  };
  const status = async (id: string) =>
    ((await (await fetch(`${runtime.url}/api/v1/tasks/${id}`)).json()) as { status: string }).status;

  it('lists failed and cancelled tasks, filters by type, pages with a cursor; a succeeded task never appears', async () => {
    const failed: string[] = [];
    for (let i = 0; i < 5; i += 1) failed.push(await submit({ type: 'always_fails', payload: {}, max_attempts: 1 }));
    const ok = await submit({ type: 'echo', payload: { value: 1 } });
    const cancelled = await submit({ type: 'echo', payload: { value: 2 }, delay_seconds: 3600 });
    await fetch(`${runtime.url}/api/v1/tasks/${cancelled}`, { method: 'DELETE' });
    await waitFor(
      'the failures and the success',
      async () => {
        const all = await Promise.all([...failed, ok].map(status));
        return all.every((s) => s === 'failed' || s === 'succeeded') ? true : undefined;
      },
      { timeoutMs: 30_000 },
    );

    // Newest first, two a page: every failed task once, in the order they failed.
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await list(
        `status=failed&limit=2${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((t) => t.task_id));
      cursor = page.body.cursor;
      pages += 1;
    } while (cursor !== undefined && pages < 10);
    expect(new Set(seen)).toEqual(new Set(failed));
    expect(seen).toHaveLength(5);
    expect(pages).toBeGreaterThanOrEqual(3);

    const byType = await list('status=failed&type=echo');
    expect(byType.body.items).toEqual([]);
    const c = await list('status=cancelled');
    expect(c.body.items.map((t) => t.task_id)).toEqual([cancelled]);
    for (const s of ['failed', 'cancelled', 'retrying', 'running']) {
      expect((await list(`status=${s}`)).body.items.map((t) => t.task_id)).not.toContain(ok);
    }
    // Another identity sees none of them.
    expect((await list('status=failed', 'arn:aws:iam::1:role/someone-else')).body.items).toEqual([]);
  }, 60_000);

  it('lists delayed tasks (waiting in the table) soonest first across priorities, paged; not those sent to SQS', async () => {
    const me = 'arn:aws:iam::123456789012:role/delayed-lister';
    const later = await submit({ type: 'echo', payload: { value: 1 }, delay_seconds: 7_200, priority: 'low' }, me);
    const soon = await submit({ type: 'echo', payload: { value: 2 }, delay_seconds: 3_600, priority: 'high' }, me);
    // A batch for one time (equal due times: the index's own order among them, across shards).
    const runAt = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 + 30 * 86_400_000).toISOString();
    const batch: string[] = [];
    for (let i = 0; i < 4; i += 1)
      batch.push(await submit({ type: 'echo', payload: { value: 10 + i }, run_at: runAt }, me));
    const middle = await submit({ type: 'echo', payload: { value: 3 }, delay_seconds: 5_400 }, me);
    const sent = await submit({ type: 'echo', payload: { value: 4 }, delay_seconds: 60 }, me);
    const gone = await submit({ type: 'echo', payload: { value: 5 }, delay_seconds: 9_000 }, me);
    await fetch(`${runtime.url}/api/v1/tasks/${gone}`, { method: 'DELETE', headers: { 'x-kaj-identity': me } });

    const seen: { task_id: string; status: string }[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await list(
        `status=delayed&limit=2${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
        me,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.items);
      cursor = page.body.cursor;
      pages += 1;
    } while (cursor !== undefined && pages < 10);
    const ids = seen.map((t) => t.task_id);
    expect(ids.slice(0, 3)).toEqual([soon, middle, later]);
    expect(new Set(ids.slice(3))).toEqual(new Set(batch));
    expect(ids).toHaveLength(7);
    expect(ids).not.toContain(sent);
    expect(ids).not.toContain(gone);
    expect(seen.every((t) => t.status === 'queued')).toBe(true);
    expect((await list('status=delayed&type=always_fails', me)).body.items).toEqual([]);
    expect((await list('status=delayed', 'arn:aws:iam::1:role/someone-else')).body.items).toEqual([]);
  }, 60_000);

  it('a tampered cursor is a 400 naming the cursor', async () => {
    const res = await list('status=failed&cursor=eyJ4Ijp0cnVlfQ.AAAA');
    expect(res.status).toBe(400);
    expect(res.body.error?.field).toBe('cursor');
  });

  // Signed with the runtime's key (the development key: no secret), so only what they hold is
  // wrong; each reached the table as an ExclusiveStartKey it refuses, and was a 500.
  it.each([
    ['an empty position', 'failed', ['', '']],
    // Under the 2,048 characters a cursor may have: the key alone is over DynamoDB's 1,024 bytes.
    ['a sort key over 1 KB', 'failed', [`2030-01-01T00:00:00.000Z#t_${'a'.repeat(1010)}`, 't_a']],
    ['a due time of 1e308', 'delayed', [1e308, 0, `t_${'a'.repeat(32)}`]],
  ])('a signed cursor holding %s is a 400 invalid_cursor, not a 500', async (_, status, position) => {
    const cursor = new CursorSigner(`${DEVELOPMENT_ID_SECRET}\nlisting`, 'kaj-list-cursor').encode(position, [
      status,
      '',
      LOCAL_OWNER,
    ]);
    const res = await list(`status=${status}&cursor=${encodeURIComponent(cursor)}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_cursor', field: 'cursor' });
  });
});
