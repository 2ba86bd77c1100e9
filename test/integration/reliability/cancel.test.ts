/** Cancellation over HTTP against a worker process: before start, and while running (cooperative or not). */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { targets } from '../../support/targets.js';
import { waitFor } from '../../support/wait.js';
import { Bench, expectSettled } from './harness.js';

const LEASE = 3; // heartbeat every second: a cancel request is seen within about a second

describe.each(targets())('cancel over HTTP on $name', (target) => {
  let bench: Bench;

  beforeAll(async () => {
    bench = await Bench.start(target, {
      tag: 'cancel',
      lease: LEASE,
      settings: { outboxGraceSeconds: 1, watchdogSeconds: 10 },
    });
  });
  afterEach(async (c) => bench?.afterEach(c));
  afterAll(async () => bench?.stop());

  it('before it starts: 200 cancelled at once; its message is dropped later and the handler never runs', async () => {
    const id = await bench.submit('sleep', { ms: 0 }); // no worker yet: it waits on the queue
    const del = await bench.cancel(id);
    expect(del).toEqual({ status: 200, json: { task_id: id, status: 'cancelled' } });
    await bench.startWorker({ label: 'late' });
    await expectSettled(bench, [id], { queuesEmpty: true }); // the message was consumed and dropped
    expect(bench.starts(id)).toHaveLength(0);
    expect((await bench.view(id)).status).toBe('cancelled');
    expect((await bench.cancel(id)).status).toBe(200); // idempotent
  });

  it('while running, cooperative handler: 202 cancel_requested, the handler is aborted at the next heartbeat, status cancelled', async () => {
    await bench.startWorker({ label: 'coop' });
    const id = await bench.submit('sleep', { ms: 60_000 });
    await bench.started(id, 1);
    const del = await bench.cancel(id);
    expect(del).toEqual({ status: 202, json: { task_id: id, status: 'running', cancel_requested: true } });
    expect((await bench.view(id)).cancel_requested).toBe(true);
    const requestedAt = Date.now();
    const done = await bench.until(id, ['cancelled'], 15_000);
    expect(Date.now() - requestedAt).toBeLessThan(LEASE * 1000 + 2_000);
    expect(done.result).toBeUndefined();
    expect(done.history.map((h) => h.outcome)).toEqual(['cancelled']);
    expect(bench.executions(id).filter((e) => e.event === 'E')).toHaveLength(0); // aborted, never finished
    await expectSettled(bench, [id], { queuesEmpty: true });
  });

  it('while running, uncooperative handler: it runs to the end, its result is discarded, status cancelled', async () => {
    await bench.startWorker({ label: 'stubborn' });
    const id = await bench.submit('stubborn', { ms: 3_000 });
    await bench.started(id, 1);
    expect((await bench.cancel(id)).status).toBe(202);
    const done = await bench.until(id, ['cancelled'], 15_000);
    await waitFor('the handler to have finished', () => bench.executions(id).find((e) => e.event === 'E'));
    expect(done.result).toBeUndefined();
    expect(done.attempts).toBe(1);
    expect(done.history.map((h) => h.outcome)).toEqual(['cancelled']);
    await expectSettled(bench, [id], { queuesEmpty: true });
  });
});
