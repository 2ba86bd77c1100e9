/**
 * The listing on each emulator, through the local runtime's API: the sparse index (a GSI with an
 * INCLUDE projection, queried newest first with ExclusiveStartKey) as DynamoDB semantics give it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../local/runtime.js';
import { startOnTarget, targets } from '../support/targets.js';
import { TaskProbe, testRegistry } from '../support/test-tasks.js';
import { uniquePrefix, waitFor } from '../support/wait.js';

const probe = new TaskProbe();

describe.each(targets())('task listing on $name', (target) => {
  let runtime: LocalRuntime;
  let stop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ runtime, stop } = await startOnTarget(target, {
      registry: testRegistry(probe),
      prefix: uniquePrefix('list'),
      port: 0,
      sweepIntervalMs: 500,
      waitTimeSeconds: 1,
    }));
  }, 60_000);
  afterAll(() => stop(), 60_000);

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

  it('a tampered cursor is a 400 naming the cursor', async () => {
    const res = await list('status=failed&cursor=eyJ4Ijp0cnVlfQ.AAAA');
    expect(res.status).toBe(400);
    expect(res.body.error?.field).toBe('cursor');
  });
});
