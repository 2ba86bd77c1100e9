/**
 * Handlers that take their worker down (process.exit, running out of memory) and workers that
 * stall and then try to record an outcome: past their lease after a written claim (fenced by
 * the lease token), and before their first heartbeat (a lazy claim, fenced by dispatch and
 * status once a redelivery claimed the task by a write).
 *
 * Claims are lazy (docs/reliability.md, "Lazy claims"): a handler that kills its worker at once
 * dies before its first heartbeat, so its first run leaves no trace and costs one queue
 * visibility timeout (2 × lease here); the redelivery is claimed by a write, and from there the
 * crashes are on the record. A crash loop therefore takes one run more than before: CRASHES + 2.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { targets } from '../../support/targets.js';
import { testBudget, waitFor } from '../../../testing/wait.js';
import { Bench, expectSettled } from '../../../testing/harness.js';

const LEASE = 3;
const CRASHES = 3; // DEFAULTS.crashLoopReceives, set explicitly so the test says what it expects

describe.each(targets())('crash loops and stale workers on $name', (target) => {
  let bench: Bench;

  beforeAll(async () => {
    bench = await Bench.start(target, {
      tag: 'crash',
      lease: LEASE,
      // A crash loop takes RUNS + 1 receives. A worker process starved for more than its 3 s hold
      // right after its start (a loaded machine) lets its message be received once more: headroom
      // so that such receives never let SQS dead-letter the message before Kaj's own verdict.
      maxReceiveCount: 20,
      settings: { outboxGraceSeconds: 1, watchdogSeconds: 10, crashLoopReceives: CRASHES },
    });
  });
  afterEach(async (ctx) => bench?.afterEach(ctx));
  afterAll(async () => bench?.stop());

  /** Handler runs a crash loop takes: see below. */
  const RUNS = CRASHES + 3;
  /**
   * A crash loop starts a worker process for each of its RUNS runs (node + tsx: 1–3 s each on a
   * quiet machine, 10–20 s under a full suite's load) and waits a visibility timeout or a lease
   * between them: 25–30 s quiet, well over 90 s loaded. The wait for the failure takes what is left
   * of this budget (`testBudget`): the guarantee is the verdict after CRASHES crashes, not its speed.
   */
  const CRASH_LOOP_TIMEOUT_MS = 240_000;

  async function expectCrashLooped(id: string, priority: 'high' | 'normal' | 'low', left: () => number) {
    const reason = `crashed the worker ${CRASHES} times`;
    const done = await bench.until(id, ['failed'], left());
    expect(done.last_error).toMatchObject({
      name: 'WorkerCrashError',
      code: 'CRASH',
      retryable: false,
      message: reason,
    });
    // Each run of the handler took a worker down:
    // - run 1, a first delivery, was claimed lazily and died before its first heartbeat: no
    //   trace in the record (still queued, attempts 0); its message came back after the queue's
    //   visibility timeout;
    // - runs 2 and 3, redeliveries, were claimed by a write (attempts 1 and 2) and ran as
    //   ordinary tasks: their crashes are recorded but not held against it (a worker might die
    //   of anything under several tasks; SHARED_CRASHES_BEFORE_SOLO = 2);
    // - runs 4 to CRASHES + 3 ran alone (attempts 3 to CRASHES + 2): those crashes are the
    //   task's, and the claim after the last one failed it.
    const attempts = CRASHES + 2;
    expect(done.attempts).toBe(attempts);
    expect(bench.starts(id).map((e) => e.attempt)).toEqual([1, ...Array.from({ length: attempts }, (_, i) => i + 1)]);
    expect(done.history.map((h) => [h.attempt, h.outcome])).toEqual(
      Array.from({ length: attempts }, (_, i) => [i + 1, 'crashed']),
    );
    const record = await bench.record(id);
    expect(record).toMatchObject({ crashes: CRASHES, unattributed_crashes: 2 });
    const letter = await bench.deadLetter(priority, id);
    expect(letter.MessageAttributes?.['kaj-error']?.StringValue).toBe(reason);
    expect(JSON.parse(letter.Body ?? '{}')).toMatchObject({ task_id: id, reason, attempts });
    await expectSettled(bench, [id]);
  }

  it(
    `a handler that calls process.exit: after ${CRASHES} crashes while running alone (${RUNS} runs in all) the task is failed with the reason, and dead-lettered`,
    async () => {
      const left = testBudget(CRASH_LOOP_TIMEOUT_MS);
      const supervisor = bench.superviseWorker({ label: 'exit' });
      try {
        const id = await bench.submit('crasher', {}, { priority: 'low' });
        await expectCrashLooped(id, 'low', left);
        expect(supervisor.exits.slice(0, RUNS).map((e) => e.code)).toEqual(Array(RUNS).fill(1));
      } finally {
        await supervisor.stop();
      }
    },
    CRASH_LOOP_TIMEOUT_MS,
  );

  it(
    `a handler that exhausts the heap (--max-old-space-size=64): after ${CRASHES} crashes (${RUNS} runs) failed and dead-lettered`,
    async () => {
      const left = testBudget(CRASH_LOOP_TIMEOUT_MS);
      const supervisor = bench.superviseWorker({ label: 'oom', nodeArgs: ['--max-old-space-size=64'] });
      try {
        const id = await bench.submit('hog', {}, { priority: 'high' });
        await expectCrashLooped(id, 'high', left);
        // V8 aborts the process when the heap limit is reached.
        expect(supervisor.exits.slice(0, RUNS).map((e) => e.signal)).toEqual(Array(RUNS).fill('SIGABRT'));
      } finally {
        await supervisor.stop();
      }
    },
    CRASH_LOOP_TIMEOUT_MS,
  );

  /**
   * The longest a paused worker stays paused, or a rerun waits to be released, should the test
   * never raise their flags (it failed): the pause and the rerun end on the state the test waits
   * for, not on a guess of how fast this machine starts a worker process or polls a queue.
   */
  const AT_MOST_MS = 90_000;
  /** Each stale-worker case starts two worker processes (node + tsx: seconds each on a loaded machine). */
  const STALE_CASE_TIMEOUT_MS = 150_000;

  it(
    'a worker paused past its lease after its claim was written tries to complete while the new owner runs: fenced off by the lease token, the new owner’s outcome stands',
    async () => {
      const stale = await bench.startWorker({ label: 'stale' });
      // Attempt 1 sleeps until `pause` is raised: once its first heartbeat has written the claim
      // (running, lease_token 1). Then it blocks its worker's event loop (no heartbeat, no timers)
      // until `wake` is raised: once attempt 2 runs. Attempt 2 runs until `release` is raised, so the
      // stale worker wakes while the task is `running`: only the fencing token (lease_token) can
      // reject its success write.
      const pause = bench.flag('pause');
      const wake = bench.flag('wake');
      const release = bench.flag('release');
      const id = await bench.submit('block', {
        lead_ms: AT_MOST_MS,
        pause_file: pause.path,
        ms: AT_MOST_MS,
        wake_file: wake.path,
        retry_ms: AT_MOST_MS,
        release_file: release.path,
      });
      await bench.claimed(id, { attempt: 1 });
      pause.raise();
      const fresh = await bench.startWorker({ label: 'fresh' });
      // However long that start took, the stale worker is still paused: its lease runs out and its
      // message comes back to the fresh worker, which reclaims the task as a crash.
      await bench.started(id, 2);
      expect(bench.starts(id).map((e) => [e.worker, e.attempt])).toEqual([
        [stale.label, 1],
        [fresh.label, 2],
      ]);

      // The stale worker wakes up, finishes its handler and tries to record success with lease 1.
      wake.raise();
      await waitFor('the stale worker to finish its handler', () =>
        bench.executions(id).find((e) => e.event === 'E' && e.worker === stale.label),
      );
      await waitFor('the stale write to be fenced off', () =>
        stale.output().includes('write fenced off: lease lost to another worker') ? true : undefined,
      );
      expect(await bench.record(id)).toMatchObject({ status: 'running', lease_token: 2, attempts: 2 });

      release.raise();
      const done = await bench.until(id, ['succeeded'], 30_000);
      expect(done.result).toMatchObject({ worker: fresh.label, attempt: 2 });
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect((await bench.record(id))?.lease_token).toBe(2);
      await expectSettled(bench, [id]);
    },
    STALE_CASE_TIMEOUT_MS,
  );

  it(
    'a worker paused before its first heartbeat (claim not written) tries to complete after a redelivery claimed the task by a write: fenced off by dispatch and status, one outcome, the lost run not in the history',
    async () => {
      const stale = await bench.startWorker({ label: 'stale-lazy' });
      // The first run blocks its worker's event loop at once, until `wake` is raised: no heartbeat
      // ever writes its claim, and the message comes back after the queue's visibility timeout. The
      // rerun (attempt 1 again: the first run was no attempt) runs until `release` is raised, so the
      // stale one wakes while it runs.
      const wake = bench.flag('wake');
      const release = bench.flag('release');
      const id = await bench.submit('block', {
        ms: AT_MOST_MS,
        wake_file: wake.path,
        retry_ms: AT_MOST_MS,
        release_file: release.path,
        first: 'run',
      });
      await bench.started(id);
      const fresh = await bench.startWorker({ label: 'fresh-lazy' });
      await waitFor('the redelivery to start on the fresh worker', () =>
        bench.starts(id).find((e) => e.worker === fresh.label),
      );
      expect(await bench.record(id)).toMatchObject({ status: 'running', attempts: 1, lease_token: 1 });

      // The stale worker wakes up, finishes its handler and tries its lazy success write, which
      // is conditioned on the dispatch and the waiting status: the task is running now.
      wake.raise();
      await waitFor('the stale worker to finish its handler', () =>
        bench.executions(id).find((e) => e.event === 'E' && e.worker === stale.label),
      );
      await waitFor('the stale write to be fenced off', () =>
        stale.output().includes('write fenced off: lease lost to another worker') ? true : undefined,
      );
      expect(await bench.record(id)).toMatchObject({ status: 'running', lease_token: 1, attempts: 1 });

      release.raise();
      const done = await bench.until(id, ['succeeded'], 30_000);
      expect(done.result).toMatchObject({ worker: fresh.label, attempt: 1 });
      // Two runs of attempt 1, both completed (the handler's side effects happened twice), one outcome.
      expect(bench.starts(id).map((e) => [e.worker, e.attempt])).toEqual([
        [stale.label, 1],
        [fresh.label, 1],
      ]);
      expect(done.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'succeeded']]);
      const record = await bench.record(id);
      expect(record?.lease_token).toBe(1);
      expect((record?.crashes ?? 0) + (record?.unattributed_crashes ?? 0)).toBe(0);
      await expectSettled(bench, [id]);
    },
    STALE_CASE_TIMEOUT_MS,
  );
});
