/**
 * Issue 8, the crash-loop design risk: killing a whole worker under several healthy tasks is no
 * evidence against any of them, so they must survive repeated kills; a handler that really kills
 * its worker (process.exit) must still be failed after `crashLoopReceives` crashes. A crash
 * counts against a task only when it ran alone (docs/reliability.md, "Crash loops").
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { targets } from '../../support/targets.js';
import { waitFor } from '../../support/wait.js';
import { Bench, expectSettled, type StartedWorker } from './harness.js';

const LEASE = 3;
const CRASHES = 3;
const KILLS = 4;

describe.each(targets())('crash attribution on $name', (target) => {
  let bench: Bench;

  beforeAll(async () => {
    bench = await Bench.start(target, {
      tag: 'attrib',
      lease: LEASE,
      settings: { outboxGraceSeconds: 1, watchdogSeconds: 10, crashLoopReceives: CRASHES },
    });
  });
  afterEach(async (ctx) => bench?.afterEach(ctx));
  afterAll(async () => bench?.stop());

  /** Handlers of `label` that started and have not finished (a kill leaves them so). */
  const running = (label: string) => {
    const open = new Map<string, number>();
    for (const e of bench.executions()) {
      if (e.worker !== label) continue;
      open.set(e.taskId, (open.get(e.taskId) ?? 0) + (e.event === 'S' ? 1 : -1));
    }
    return [...open.values()].filter((n) => n > 0).length;
  };

  /** The handler of `taskId` started on `label` and has not finished. */
  const runningOn = (label: string, taskId: string) =>
    bench.executions(taskId).reduce((n, e) => (e.worker === label ? n + (e.event === 'S' ? 1 : -1) : n), 0) > 0;

  /**
   * SIGKILLs the worker once at least two handlers run on it side by side (so the kill cannot be
   * blamed on one; none of them runs alone) and those of `mustRun` are among them.
   */
  async function killWhenSideBySide(w: StartedWorker, mustRun: readonly string[] = []): Promise<void> {
    await waitFor(
      `two handlers running on ${w.label}`,
      () => (running(w.label) >= 2 && mustRun.every((id) => runningOn(w.label, id)) ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    w.kill('SIGKILL');
    await w.exited;
  }

  it(`healthy tasks survive ${KILLS} SIGKILLs of their whole worker; a process.exit handler still dies after ${CRASHES} crashes`, async () => {
    // One long task, cut off by the first kill: before crash attribution, a task in flight at three
    // kills was failed with "crashed the worker 3 times" although it never crashed anything.
    const long = await bench.submit('sleep', { ms: 6_000, retry_ms: 6_000 });
    const healthy = [long];
    for (let k = 0; k < KILLS; k += 1) {
      const fresh: string[] = [];
      if (k > 0) {
        // The tasks the previous kill cut off come back to this worker and, having crashed a worker
        // once, run alone (the gate's exclusive side). While one of them waits, fresh tasks queue
        // behind it and run one at a time, so the worker could finish them all without ever running
        // two side by side. Let it work them off first: then the fresh ones run together.
        const w = await bench.startWorker({ label: `kill-${k}` });
        for (const id of healthy) await bench.until(id, ['succeeded'], 60_000);
        for (let i = 0; i < 3; i += 1) fresh.push(await bench.submit('sleep', { ms: 3_000, retry_ms: 1_500 }));
        healthy.push(...fresh);
        await killWhenSideBySide(w);
      } else {
        for (let i = 0; i < 3; i += 1) fresh.push(await bench.submit('sleep', { ms: 3_000, retry_ms: 1_500 }));
        healthy.push(...fresh);
        await killWhenSideBySide(await bench.startWorker({ label: `kill-${k}` }), [long]);
      }
    }
    const crasher = await bench.submit('crasher', {}, { priority: 'low' });
    const supervisor = bench.superviseWorker({ label: 'after' });
    try {
      for (const id of healthy) {
        const done = await bench.until(id, ['succeeded', 'failed'], 120_000);
        expect({ id, status: done.status, error: done.last_error?.message }).toMatchObject({ id, status: 'succeeded' });
      }
      const failed = await bench.until(crasher, ['failed'], 120_000);
      expect(failed.last_error).toMatchObject({ code: 'CRASH', message: `crashed the worker ${CRASHES} times` });
    } finally {
      await supervisor.stop();
    }
    const records = await Promise.all(healthy.map((id) => bench.record(id)));
    // No crash was held against a healthy task; the kills show as unattributed crashes.
    expect(records.map((r) => r?.crashes ?? 0)).toEqual(healthy.map(() => 0));
    expect(records.reduce((n, r) => n + (r?.unattributed_crashes ?? 0), 0)).toBeGreaterThanOrEqual(KILLS * 2);
    expect((await bench.record(long))?.unattributed_crashes).toBeGreaterThanOrEqual(1);
    const crashed = await bench.record(crasher);
    expect(crashed?.crashes).toBe(CRASHES);
    await expectSettled(bench, [...healthy, crasher]);
  }, 300_000);
});
