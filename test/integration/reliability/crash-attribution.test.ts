/**
 * The crash-loop design risk: killing a whole worker under several healthy tasks is no
 * evidence against any of them, so they must survive repeated kills; a handler that really kills
 * its worker (process.exit) must still be failed after `crashLoopReceives` crashes. A crash
 * counts against a task only when it ran alone (docs/reliability.md, "Crash loops").
 *
 * Claims are lazy ("Lazy claims"): a first delivery writes its claim only at its first
 * heartbeat (lease/3 = 1 s here), and a worker killed before that leaves no trace of the run.
 * The kills here land after the claims of the handlers side by side are written (their records
 * are `running`), so that each kill is a recorded crash of at least two tasks.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { targets } from '../../support/targets.js';
import { testBudget, waitFor } from '../../../testing/wait.js';
import { Bench, expectSettled, type StartedWorker } from '../../../testing/harness.js';

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

  /** Tasks whose handler started on `label` and has not finished (a kill leaves them so). */
  const runningOn = (label: string): string[] => {
    const open = new Map<string, number>();
    for (const e of bench.executions()) {
      if (e.worker !== label) continue;
      open.set(e.taskId, (open.get(e.taskId) ?? 0) + (e.event === 'S' ? 1 : -1));
    }
    return [...open].filter(([, n]) => n > 0).map(([id]) => id);
  };

  /** Of `ids`, those whose claim is written: `running` with a live lease (only the worker running them renews it). */
  const claimed = async (ids: readonly string[]): Promise<string[]> => {
    const records = await Promise.all(ids.map((id) => bench.record(id)));
    const now = Date.now();
    return ids.filter((_, i) => records[i]?.status === 'running' && (records[i]?.lease_until ?? 0) > now);
  };

  /**
   * SIGKILLs the worker once at least two handlers run on it side by side with their claims
   * written (so the kill is a recorded crash of each, and cannot be blamed on one: none of them
   * runs alone), and those of `mustRun` are among them. Returns the tasks cut off.
   */
  async function killWhenSideBySide(
    w: StartedWorker,
    left: () => number,
    mustRun: readonly string[] = [],
  ): Promise<string[]> {
    let seen: { running: string[]; claimed: string[] } = { running: [], claimed: [] };
    const cut = await waitFor(
      `two handlers running on ${w.label} with their claims written`,
      async () => {
        const running = runningOn(w.label);
        const ids = await claimed(running);
        seen = { running, claimed: ids };
        return ids.length >= 2 && mustRun.every((id) => ids.includes(id)) ? ids : undefined;
      },
      { timeoutMs: left(), intervalMs: 20 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; last seen: ${JSON.stringify(seen)}; runs: ${bench.executions().length}`);
    });
    w.kill('SIGKILL');
    await w.exited;
    return cut;
  }

  /**
   * A fresh task's first run: two of them run side by side for about this long, a window the
   * kill must not miss (a look at the records takes seconds on a loaded moto); they are killed
   * long before it ends. Their later runs are short.
   */
  const FIRST_RUN_MS = 10_000;
  const FRESH = { ms: FIRST_RUN_MS, retry_ms: 1_500 };

  /**
   * Nine worker processes (node + tsx: 1–3 s each quiet, 10–20 s under a full suite's load), kills
   * and tasks that run alone after them: about 60 s quiet, several minutes loaded. Every wait takes
   * what is left of this budget (`testBudget`): the guarantees are the verdicts, not their speed.
   */
  const TEST_TIMEOUT_MS = 420_000;

  it(
    `healthy tasks survive ${KILLS} SIGKILLs of their whole worker; a process.exit handler still dies after ${CRASHES} crashes`,
    async () => {
      const left = testBudget(TEST_TIMEOUT_MS);
      // One long task, cut off by the first kill: before crash attribution, a task in flight at three
      // kills was failed with "crashed the worker 3 times" although it never crashed anything.
      // Its first run lasts long enough that the fresh tasks started beside it overlap it for seconds,
      // wide enough for this test's look at the records, however slow a loaded machine is.
      const long = await bench.submit('sleep', { ms: FIRST_RUN_MS * 3, retry_ms: 6_000 });
      const healthy = [long];
      /** Recorded crashes the kills caused: each cut-off task whose claim was written. */
      let cutOff = 0;
      for (let k = 0; k < KILLS; k += 1) {
        const fresh: string[] = [];
        if (k > 0) {
          // The tasks the previous kill cut off come back to this worker and, once cut off twice, run
          // alone (the gate's exclusive side). While one of them waits, fresh tasks queue
          // behind it and run one at a time, so the worker could finish them all without ever running
          // two side by side. Let it work them off first: then the fresh ones run together.
          const w = await bench.startWorker({ label: `kill-${k}` });
          for (const id of healthy) await bench.until(id, ['succeeded'], left());
          for (let i = 0; i < 3; i += 1) fresh.push(await bench.submit('sleep', FRESH));
          healthy.push(...fresh);
          cutOff += (await killWhenSideBySide(w, left)).length;
        } else {
          // The long task runs first, so that the fresh ones run beside it, not before it.
          const w = await bench.startWorker({ label: `kill-${k}` });
          await bench.started(long, 1, left());
          for (let i = 0; i < 3; i += 1) fresh.push(await bench.submit('sleep', FRESH));
          healthy.push(...fresh);
          cutOff += (await killWhenSideBySide(w, left, [long])).length;
        }
      }
      const crasher = await bench.submit('crasher', {}, { priority: 'low' });
      // At debug level, so that a failure's diagnostics show every message dropped and why.
      const supervisor = bench.superviseWorker({ label: 'after', args: ['--log-level', 'debug'] });
      try {
        for (const id of healthy) {
          const done = await bench.until(id, ['succeeded', 'failed'], left());
          expect({ id, status: done.status, error: done.last_error?.message }).toMatchObject({
            id,
            status: 'succeeded',
          });
        }
        const failed = await bench.until(crasher, ['failed'], left());
        expect(failed.last_error).toMatchObject({ code: 'CRASH', message: `crashed the worker ${CRASHES} times` });
      } finally {
        await supervisor.stop();
      }
      const records = await Promise.all(healthy.map((id) => bench.record(id)));
      // No crash was held against a healthy task; the kills show as unattributed crashes: at
      // least one for each claimed task a kill cut off (the crasher's kills may add some).
      const unattributed = records.reduce((n, r) => n + (r?.unattributed_crashes ?? 0), 0);
      console.info(
        `[${bench.target}] ${KILLS} kills cut off ${cutOff} claimed healthy run(s); ${unattributed} unattributed crash(es) recorded on healthy tasks; ` +
          `${healthy.reduce((n, id) => n + bench.starts(id).length, 0)} healthy runs for ${healthy.length} tasks; crasher ran ${bench.starts(crasher).length} times`,
      );
      expect(records.map((r) => r?.crashes ?? 0)).toEqual(healthy.map(() => 0));
      expect(cutOff).toBeGreaterThanOrEqual(KILLS * 2);
      expect(unattributed).toBeGreaterThanOrEqual(cutOff);
      expect((await bench.record(long))?.unattributed_crashes).toBeGreaterThanOrEqual(1);
      const crashed = await bench.record(crasher);
      expect(crashed?.crashes).toBe(CRASHES);
      // Its first two claimed attempts crashed beside whatever else ran (unattributed,
      // SHARED_CRASHES_BEFORE_SOLO = 2); the CRASHES after them ran alone, and the claim after the
      // last failed it: CRASHES + 2 attempts. Its first delivery is claimed lazily: if the handler
      // ran at once, it died before its first heartbeat and left no trace (one run more, CRASHES +
      // 3); if it first waited for the gate behind healthy suspects running alone, its heartbeat
      // wrote the claim while it waited, and that run is the first attempt (CRASHES + 2 runs).
      expect(crashed?.attempts).toBe(CRASHES + 2);
      expect(crashed?.unattributed_crashes).toBeGreaterThanOrEqual(2);
      expect(bench.starts(crasher).length).toBeGreaterThanOrEqual(CRASHES + 2);
      expect(bench.starts(crasher).length).toBeLessThanOrEqual(CRASHES + 3);
      await expectSettled(bench, [...healthy, crasher]);
    },
    TEST_TIMEOUT_MS,
  );
});
