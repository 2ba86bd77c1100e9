/**
 * `KajClient` against the local runtime on each emulator (no auth: the same code signs on AWS):
 * submit, read, wait, cancel and batch through the real API; a response lost after the server
 * accepted the task (the client sees a 503) is retried with the same key and makes one task.
 */
import { describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../local/runtime.js';
import { KajApiError, KajClient } from '../../client/index.js';
import { expectKeyIsTheTask, runtimeForSuite } from '../support/suite-runtime.js';
import { targets } from '../support/targets.js';
import { TaskProbe, testRegistry } from '../support/test-tasks.js';

const probe = new TaskProbe();
const registry = testRegistry(probe);

describe.each(targets())('KajClient on $name', (target) => {
  let runtime: LocalRuntime;
  runtimeForSuite(
    target,
    'cli',
    {
      registry,
      sweepIntervalMs: 500,
      waitTimeSeconds: 1,
    },
    (r) => (runtime = r),
    60_000,
  );

  it('submits, waits for and reads a task; a bad payload is a KajApiError naming the field', async () => {
    const kaj = new KajClient<typeof registry>({ url: runtime.url });
    const { task_id, replayed } = await kaj.submit('echo', { value: { n: 7 } }, { priority: 'high' });
    expect(replayed).toBe(false);
    const done = await kaj.waitFor(task_id, { timeoutMs: 20_000, pollMs: 100 });
    expect(done).toMatchObject({ status: 'succeeded', priority: 'high', result: { echoed: { n: 7 }, attempt: 1 } });
    const err = await kaj.submit('flaky', { fail_times: 'two' as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajApiError);
    expect(err).toMatchObject({ status: 422, field: 'payload.fail_times' });
  });

  it('a response lost after the server accepted the task: the retry with the same key makes no second task', async () => {
    let lost = 0;
    const lossy: typeof fetch = async (url, init) => {
      const res = await fetch(url, init);
      if (lost > 0) return res;
      lost += 1;
      // The server accepted it; the client sees a 503 instead of its 202.
      return new Response('{"error":{"code":"unavailable","message":"lost"}}', { status: 503 });
    };
    const kaj = new KajClient<typeof registry>({ url: runtime.url, fetch: lossy, sleep: async () => {} });
    const r = await kaj.submit('echo', { value: 'once' });
    expect(r.replayed).toBe(true);
    await kaj.waitFor(r.task_id, { timeoutMs: 20_000, pollMs: 100 });
    expect(probe.runs(r.task_id)).toBe(1);
    // The key the client generated is the task's: a third submit with it is the same task.
    await expectKeyIsTheTask(runtime, r);
  });

  it('submitMany through the batch route; cancel a delayed task', async () => {
    const kaj = new KajClient<typeof registry>({ url: runtime.url });
    const items = await kaj.submitMany([
      { type: 'echo', payload: { value: 1 } },
      { type: 'echo', payload: { value: 2 }, options: { delaySeconds: 600 } },
    ]);
    expect(items.map((i) => i.ok)).toEqual([true, true]);
    const [first, later] = items;
    if (first?.ok !== true || later?.ok !== true) throw new Error('expected both accepted');
    await kaj.waitFor(first.task_id, { timeoutMs: 20_000, pollMs: 100 });
    expect(await kaj.cancel(later.task_id)).toEqual({ task_id: later.task_id, status: 'cancelled' });
    await expect(kaj.get('t_0123456789abcdef0123456789abcdef')).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
    });
  });
});
