/**
 * Workflow runs on worker processes, on the emulators: a worker killed inside a step leaves a
 * run that the next worker replays — recorded steps are not run again — and a durable sleep
 * suspends the run (`waiting`, no worker holding it) until its time.
 *
 * Each step of `wf_order` (testing/worker-tasks.ts) logs its runs as `<run id>:<step>` in the
 * execution log, so real executions are counted across processes and kills.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Bench } from '../../../testing/harness.js';
import { testBudget, waitFor } from '../../../testing/wait.js';
import { targets } from '../../support/targets.js';

const LEASE = 3;
const STEPS = ['reserve', 'charge', 'invoice', 'email'] as const;

describe.each(targets())('workflows on $name', (target) => {
  let bench: Bench;

  beforeAll(async () => {
    bench = await Bench.start(target, { tag: 'wf', lease: LEASE, settings: { outboxGraceSeconds: 1 } });
  });
  afterEach(async (ctx) => bench?.afterEach(ctx));
  afterAll(async () => bench?.stop());

  /** Real executions of each step of a run (handler starts in the execution log). */
  const executions = (runId: string) => Object.fromEntries(STEPS.map((s) => [s, bench.starts(`${runId}:${s}`).length]));

  it('the order workflow: its worker dies inside step 3 of 4 → the run completes; reserve 1, charge 1, invoice 2, email 1', async () => {
    const left = testBudget(120_000);
    const first = await bench.startWorker({ label: 'dies' });
    const id = await bench.submit('wf_order', { die_in: 'invoice' });
    await first.exited; // SIGKILLed by its own invoice step
    expect(bench.starts(`${id}:invoice`)).toHaveLength(1);
    await bench.startWorker({ label: 'survivor' });
    const done = (await bench.until(id, ['succeeded', 'failed'], left())) as unknown as Record<string, unknown>;
    expect(done.status).toBe('succeeded');
    expect(executions(id)).toEqual({ reserve: 1, charge: 1, invoice: 2, email: 1 });
    expect(done.result).toMatchObject({
      results: ['reserve-done', 'charge-done', 'invoice-done', 'email-done'],
      worker: 'survivor',
    });
    const steps = done.steps as { name: string; status: string }[];
    expect(steps.map((s) => [s.name, s.status])).toEqual(STEPS.map((s) => [s, 'succeeded']));
  }, 120_000);

  it('children: a run fans out 20 children, each run once, and goes on when the last has ended; a child that fails for good fails the run with ChildFailedError', async () => {
    const left = testBudget(120_000);
    await bench.startWorker();
    const id = await bench.submit('wf_fanout', { children: 20 });
    const bad = await bench.submit('wf_fanout', { children: 3, poison: 1 });
    const done = (await bench.until(id, ['succeeded', 'failed'], left())) as unknown as Record<string, unknown>;
    expect(done.status).toBe('succeeded');
    expect(done.result).toMatchObject({ total: 20 });
    expect(bench.starts(`${id}:tally`)).toHaveLength(1);
    const children = (done.steps as { name: string; kind: string; status: string; child_id: string }[]).filter(
      (s) => s.kind === 'child',
    );
    expect(children.map((c) => c.status)).toEqual(Array(20).fill('succeeded'));
    for (const c of children) expect(bench.starts(c.child_id)).toHaveLength(1);
    const c0 = children.find((c) => c.name === 'c0');
    const child = (await bench.record(c0?.child_id ?? '')) as unknown as Record<string, unknown>;
    expect(child).toMatchObject({ parent_id: id, parent_step: 'c0', status: 'succeeded' });
    const failed = (await bench.until(bad, ['succeeded', 'failed'], left())) as unknown as Record<string, unknown>;
    expect(failed.status).toBe('failed');
    expect(failed.last_error).toMatchObject({ name: 'ChildFailedError', code: 'CHILD_FAILED' });
    expect(bench.starts(`${bad}:tally`)).toHaveLength(0);
  }, 120_000);

  it('a durable sleep: the run is waiting and listed, held by no worker, and finishes after its time', async () => {
    const left = testBudget(120_000);
    await bench.startWorker();
    const id = await bench.submit('wf_order', { sleep_ms: 4_000 });
    const waiting = (await bench.until(id, ['waiting'], left())) as unknown as Record<string, unknown>;
    expect(waiting.waiting_for).toMatchObject({ timer: expect.any(String) });
    expect(executions(id)).toEqual({ reserve: 1, charge: 1, invoice: 1, email: 0 });
    const record = await bench.record(id);
    expect(record?.lease_until).toBeUndefined();
    expect(record?.attempts).toBe(0);
    const listed = await waitFor(
      'the run in the waiting listing',
      async () => {
        const res = await fetch(`${bench.runtime.url}/api/v1/tasks?status=waiting`);
        const body = (await res.json()) as { items: { task_id: string }[] };
        return body.items.some((i) => i.task_id === id) ? body : undefined;
      },
      { timeoutMs: left() },
    );
    expect(listed.items.length).toBeGreaterThan(0);
    const done = (await bench.until(id, ['succeeded', 'failed'], left())) as unknown as Record<string, unknown>;
    expect(done.status).toBe('succeeded');
    expect(executions(id)).toEqual({ reserve: 1, charge: 1, invoice: 1, email: 1 });
    const sleep = (done.steps as { name: string; kind: string; status: string }[]).find((s) => s.kind === 'sleep');
    expect(sleep).toMatchObject({ name: 'before_email', status: 'done' });
  }, 120_000);

  it('a signal: the run waits for it (waiting, no worker holding it), the signal wakes it, and the run gets its payload', async () => {
    const left = testBudget(120_000);
    await bench.startWorker();
    const id = await bench.submit('wf_order', { approval_ms: 600_000 });
    const waiting = (await bench.until(id, ['waiting'], left())) as unknown as Record<string, unknown>;
    expect(waiting.waiting_for).toMatchObject({ signals: [{ name: 'approval' }] });
    expect(executions(id)).toEqual({ reserve: 1, charge: 1, invoice: 1, email: 0 });
    const res = await fetch(`${bench.runtime.url}/api/v1/tasks/${id}/signals/approval`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ approved: true, by: 'manager' }),
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ task_id: id, signal: 'approval', woken: true });
    const done = (await bench.until(id, ['succeeded', 'failed'], left())) as unknown as Record<string, unknown>;
    expect(done).toMatchObject({ status: 'succeeded', result: { approval: { approved: true, by: 'manager' } } });
    expect(executions(id)).toEqual({ reserve: 1, charge: 1, invoice: 1, email: 1 });
    const again = await fetch(`${bench.runtime.url}/api/v1/tasks/${id}/signals/approval`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(again.status).toBe(409);
  }, 120_000);
});
