/**
 * Handlers that take their worker down (process.exit, running out of memory) and a worker that
 * stalls past its lease and then tries to record an outcome.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { targets } from '../../support/targets.js';
import { waitFor } from '../../support/wait.js';
import { Bench, expectSettled } from './harness.js';

const LEASE = 3;
const CRASHES = 3; // DEFAULTS.crashLoopReceives, set explicitly so the test says what it expects

describe.each(targets())('crash loops and stale workers on $name', (target) => {
  let bench: Bench;

  beforeAll(async () => {
    bench = await Bench.start(target, {
      tag: 'crash',
      lease: LEASE,
      settings: { outboxGraceSeconds: 1, watchdogSeconds: 10, crashLoopReceives: CRASHES },
    });
  });
  afterEach(async (ctx) => bench?.afterEach(ctx));
  afterAll(async () => bench?.stop());

  async function expectCrashLooped(id: string, priority: 'high' | 'normal' | 'low') {
    const reason = `crashed the worker ${CRASHES} times`;
    const done = await bench.until(id, ['failed'], 60_000);
    expect(done.last_error).toMatchObject({
      name: 'WorkerCrashError',
      code: 'CRASH',
      retryable: false,
      message: reason,
    });
    // Each run of the handler took a worker down. The first ran as an ordinary task (its crash is
    // recorded but not held against it: the worker might have died of anything); the next
    // CRASHES ran alone, so those crashes are the task's, and the claim after the last failed it.
    const runs = CRASHES + 1;
    expect(done.attempts).toBe(runs);
    expect(bench.starts(id)).toHaveLength(runs);
    expect(done.history.map((h) => h.outcome)).toEqual(Array(runs).fill('crashed'));
    const record = await bench.record(id);
    expect(record).toMatchObject({ crashes: CRASHES, unattributed_crashes: 1 });
    const letter = await bench.deadLetter(priority, id);
    expect(letter.MessageAttributes?.['kaj-error']?.StringValue).toBe(reason);
    expect(JSON.parse(letter.Body ?? '{}')).toMatchObject({ task_id: id, reason, attempts: runs });
    await expectSettled(bench, [id]);
  }

  it(`a handler that calls process.exit: after ${CRASHES} crashes while running alone the task is failed with the reason, and dead-lettered`, async () => {
    const supervisor = bench.superviseWorker({ label: 'exit' });
    try {
      const id = await bench.submit('crasher', {}, { priority: 'low' });
      await expectCrashLooped(id, 'low');
      expect(supervisor.exits.slice(0, CRASHES + 1).map((e) => e.code)).toEqual(Array(CRASHES + 1).fill(1));
    } finally {
      await supervisor.stop();
    }
  });

  it(`a handler that exhausts the heap (--max-old-space-size=64): after ${CRASHES} crashes failed and dead-lettered`, async () => {
    const supervisor = bench.superviseWorker({ label: 'oom', nodeArgs: ['--max-old-space-size=64'] });
    try {
      const id = await bench.submit('hog', {}, { priority: 'high' });
      await expectCrashLooped(id, 'high');
      // V8 aborts the process when the heap limit is reached.
      expect(supervisor.exits.slice(0, CRASHES + 1).map((e) => e.signal)).toEqual(Array(CRASHES + 1).fill('SIGABRT'));
    } finally {
      await supervisor.stop();
    }
  });

  it('a worker paused past its lease tries to complete while the new owner runs: fenced off, the new owner’s outcome stands', async () => {
    const stale = await bench.startWorker({ label: 'stale' });
    // Attempt 1 blocks its worker's event loop (no heartbeat, no timers) well past the lease, and
    // wakes while attempt 2 is still running: the task is `running`, so only the fencing token
    // (lease_token) can reject the stale success write.
    const id = await bench.submit('block', { ms: LEASE * 1000 + 4_000, retry_ms: 8_000 });
    await bench.started(id, 1);
    const fresh = await bench.startWorker({ label: 'fresh' });
    await bench.started(id, 2);

    // The stale worker wakes up, finishes its handler and tries to record success with lease 1.
    await waitFor(
      'the stale worker to finish its handler',
      () => bench.executions(id).find((e) => e.event === 'E' && e.worker === stale.label),
      { timeoutMs: 20_000 },
    );
    await waitFor(
      'the stale write to be fenced off',
      () => (stale.output().includes('write fenced off: lease lost to another worker') ? true : undefined),
      { timeoutMs: 10_000 },
    );
    expect(await bench.record(id)).toMatchObject({ status: 'running', lease_token: 2, attempts: 2 });

    const done = await bench.until(id, ['succeeded'], 30_000);
    expect(done.result).toMatchObject({ worker: fresh.label, attempt: 2 });
    expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
    expect((await bench.record(id))?.lease_token).toBe(2);
    await expectSettled(bench, [id]);
  });
});
