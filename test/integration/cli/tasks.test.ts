/**
 * `kaj --local tasks list` and `kaj --local tasks cancel` against a running local runtime: tasks
 * waiting for a retry are listed, bulk-cancelled (paced, audited), and then listed as cancelled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { LocalRuntime } from '../../../local/runtime.js';
import { RetryableError } from '../../../shared/retry/errors.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { type CliRuntime, startCliRuntime, waitFor } from './harness.js';

const registry = new TaskRegistry([
  defineTask({
    type: 'stuck',
    schema: z.object({}),
    maxAttempts: 5,
    // Retried in an hour: the task waits as `retrying` for the whole test.
    handler: async () => {
      throw new RetryableError('upstream down', { retryAfterSeconds: 3600 });
    },
  }),
  defineTask({ type: 'fine', schema: z.object({}), handler: async () => ({ ok: true }) }),
]);
let runtime: LocalRuntime;
let kaj: CliRuntime['kaj'];
let stop = async () => {};

beforeAll(async () => {
  ({ runtime, kaj, stop } = await startCliRuntime(registry, 'tasks'));
}, 60_000);

afterAll(() => stop());

const post = async (type: string, more: Record<string, unknown> = {}) => {
  const res = await fetch(`${runtime.url}/api/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type, payload: {}, ...more }),
  });
  return ((await res.json()) as { task_id: string }).task_id;
};
const statusOf = async (id: string) =>
  ((await (await fetch(`${runtime.url}/api/v1/tasks/${id}`)).json()) as { status: string }).status;

describe('kaj tasks', () => {
  it('list → cancel --dry-run → cancel --yes (audited) → listed as cancelled', async () => {
    const stuck = [await post('stuck'), await post('stuck'), await post('stuck')];
    const fine = await post('fine');
    await waitFor(
      'three retrying tasks and one success',
      async () => {
        const s = await Promise.all([...stuck, fine].map(statusOf));
        return s.slice(0, 3).every((x) => x === 'retrying') && s[3] === 'succeeded' ? true : undefined;
      },
      30_000,
    );

    const list = await kaj(['tasks', 'list', '--local', '--status', 'retrying']);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^TASK\s+TYPE\s+STATUS\s+PRIORITY\s+ATTEMPTS\s+SINCE\s+OWNER\s+LAST ERROR$/m);
    for (const id of stuck)
      expect(list.out).toMatch(new RegExp(`^${id}\\s+stuck\\s+retrying\\s+normal\\s+1/5\\s`, 'm'));
    expect(list.out).toMatch(/RetryableError: upstream down/);
    expect(list.out).toMatch(/^3 task\(s\)$/m);
    const paged = JSON.parse(
      (await kaj(['tasks', 'list', '--local', '--status', 'retrying', '--limit', '2', '--json'])).out,
    );
    expect(paged.items).toHaveLength(2);
    const rest = JSON.parse(
      (
        await kaj([
          'tasks',
          'list',
          '--local',
          '--status',
          'retrying',
          '--limit',
          '2',
          '--cursor',
          paged.cursor,
          '--json',
        ])
      ).out,
    );
    expect([...paged.items, ...rest.items].map((t: { task_id: string }) => t.task_id).sort()).toEqual(
      [...stuck].sort(),
    );

    const bad = await kaj(['tasks', 'list', '--local', '--status', 'retrying', '--cursor', 'tampered.x']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/cursor/);
    const queued = await kaj(['tasks', 'list', '--local', '--status', 'queued']);
    expect(queued.code).toBe(2);

    // Without --yes and no terminal: refused, nothing changed.
    const refused = await kaj(['tasks', 'cancel', '--local', '--status', 'retrying', '--type', 'stuck']);
    expect(refused.code).toBe(2);
    const dry = await kaj(['tasks', 'cancel', '--local', '--status', 'retrying', '--type', 'stuck', '--dry-run']);
    expect(dry.out).toMatch(/^dry run: selected 3: would cancel 3, skipped 0, failed 0$/m);
    expect(await Promise.all(stuck.map(statusOf))).toEqual(['retrying', 'retrying', 'retrying']);

    const done = await kaj([
      'tasks',
      'cancel',
      '--local',
      '--status',
      'retrying',
      '--type',
      'stuck',
      '--rate',
      '50/s',
      '--reason',
      'upstream gone',
      '--yes',
      '--json',
    ]);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.out)).toMatchObject({ selected: 3, cancelled: 3, skipped: 0, failed: 0 });
    expect(await Promise.all(stuck.map(statusOf))).toEqual(['cancelled', 'cancelled', 'cancelled']);
    const shown = JSON.parse((await kaj(['task', 'show', stuck[0] as string, '--local', '--json'])).out);
    expect(shown.audit).toEqual([expect.objectContaining({ action: 'cancel', reason: 'upstream gone' })]);
    const cancelled = JSON.parse((await kaj(['tasks', 'list', '--local', '--status', 'cancelled', '--json'])).out);
    expect(cancelled.items.map((t: { task_id: string }) => t.task_id).sort()).toEqual([...stuck].sort());
    expect(JSON.parse((await kaj(['tasks', 'list', '--local', '--status', 'retrying', '--json'])).out).items).toEqual(
      [],
    );
  }, 90_000);

  it('list --status delayed: the tasks waiting in the table, soonest first; cancel --status delayed cancels them', async () => {
    const later = await post('fine', { delay_seconds: 7_200 });
    const soon = await post('fine', { delay_seconds: 3_600, priority: 'high' });
    const stuck = await post('stuck');
    await waitFor(
      'a task waiting for its retry',
      async () => ((await statusOf(stuck)) === 'retrying' ? true : undefined),
      30_000,
    );

    const list = await kaj(['tasks', 'list', '--local', '--status', 'delayed']);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^TASK\s+TYPE\s+STATUS\s+PRIORITY\s+ATTEMPTS\s+RUNS AT\s+OWNER\s+LAST ERROR$/m);
    const rows = list.out.split('\n').filter((l) => l.startsWith('t_'));
    expect(rows.map((l) => l.split(/\s+/)[0])).toEqual([soon, later]);
    expect(rows[0]).toMatch(/\sfine\s+queued\s+high\s+0\/\d+\s+\S+ \(in 3[56]\d\ds\)/);
    // The retry owed a send in an hour is in the outbox too, but it is listed as retrying, not here.
    expect(list.out).not.toContain(stuck);

    const done = await kaj(['tasks', 'cancel', '--local', '--status', 'delayed', '--type', 'fine', '--yes', '--json']);
    expect(done.code).toBe(0);
    expect(JSON.parse(done.out)).toMatchObject({ selected: 2, cancelled: 2, skipped: 0, failed: 0 });
    expect(await Promise.all([soon, later].map(statusOf))).toEqual(['cancelled', 'cancelled']);
    expect(JSON.parse((await kaj(['tasks', 'list', '--local', '--status', 'delayed', '--json'])).out).items).toEqual(
      [],
    );
    expect(await statusOf(stuck)).toBe('retrying');
  }, 90_000);
});
