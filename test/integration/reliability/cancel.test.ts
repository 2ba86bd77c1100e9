/**
 * Cancellation over HTTP against a worker process: before start; while running before its claim
 * is written (a lazy claim: DELETE ends it at once); and while running after its first heartbeat
 * wrote the claim (a cancel request the worker acts on), with a cooperative and an uncooperative
 * handler (docs/reliability.md, "Lazy claims" and guarantee 5).
 *
 * The workers run with the default `cancelPollSeconds` (5 s), longer than their heartbeat (1 s
 * here), so they poll nothing: a worker learns of a cancel at its next heartbeat.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { targets } from '../../support/targets.js';
import { waitFor } from '../../../testing/wait.js';
import { Bench, expectSettled } from '../../../testing/harness.js';

const LEASE = 3; // heartbeat every second: a cancel is seen within about a second
/** Each case starts a worker process (node + tsx: up to tens of seconds on a loaded 2-core machine), then waits up to 30 s. */
const WORKER_TEST_TIMEOUT_MS = 150_000;

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

  /**
   * A task whose handler has started but whose first heartbeat (lease/3), which would write its
   * lazy claim, cannot come until `wakeFile` is raised: the handler holds its worker's event loop
   * until then, and then sleeps 60 s, stopped by a cancel that heartbeat finds. However slowly a
   * loaded machine lets this test send its DELETE, the record still says queued when it lands.
   */
  async function lazyRunning(wakeFile: string): Promise<string> {
    const id = await bench.submit('block', { ms: 90_000, wake_file: wakeFile, after_ms: 60_000 });
    await bench.started(id, 1);
    return id;
  }

  it(
    'before it starts: 200 cancelled at once; its message is dropped later and the handler never runs',
    async () => {
      const id = await bench.submit('sleep', { ms: 0 }); // no worker yet: it waits on the queue
      const del = await bench.cancel(id);
      expect(del).toEqual({ status: 200, json: { task_id: id, status: 'cancelled' } });
      await bench.startWorker({ label: 'late' });
      await expectSettled(bench, [id], { queuesEmpty: true }); // the message was consumed and dropped
      expect(bench.starts(id)).toHaveLength(0);
      expect((await bench.view(id)).status).toBe('cancelled');
      expect((await bench.cancel(id)).status).toBe(200); // idempotent
    },
    WORKER_TEST_TIMEOUT_MS,
  );

  it(
    'while running, before its claim is written: 200 cancelled at once; the handler is aborted at its first heartbeat, never finishes and never runs again',
    async () => {
      await bench.startWorker({ label: 'lazy' });
      const wake = bench.flag('wake');
      const id = await lazyRunning(wake.path);
      // Before the first heartbeat the record still says queued: nothing written.
      const del = await bench.cancel(id);
      expect(del).toEqual({ status: 200, json: { task_id: id, status: 'cancelled' } });
      wake.raise();
      // The 60 s handler holds its message in flight until it ends: an empty queue within seconds
      // shows it was aborted (at the first heartbeat) and its message dropped.
      await expectSettled(bench, [id], { queuesEmpty: true, timeoutMs: 15_000 });
      const done = await bench.view(id);
      expect(done.status).toBe('cancelled');
      expect(done.result).toBeUndefined();
      expect(bench.executions(id).filter((e) => e.event === 'E')).toHaveLength(0); // aborted, never finished
      expect(bench.starts(id)).toHaveLength(1); // and never ran again
    },
    WORKER_TEST_TIMEOUT_MS,
  );

  // KNOWN PRODUCTION BUG (reported, not fixed here: shared/ is out of this suite's reach). The
  // first heartbeat of a lazy claim finds the task cancelled and hands the consumer the stored
  // record (status cancelled, attempts 0) as the attempt's view (shared/task/claim.ts heartbeat,
  // shared/service/consumer/heartbeat.ts beat); `cancelledWhileRunning` then builds cancelChanges from it
  // and throws IllegalTransitionError ("a cancelled task cannot cancel"). The consumer logs
  // "infrastructure failure; message left for redelivery" and the redelivery drops the message:
  // the task stays cancelled, but the attempt it cut short never reaches the history, contrary to
  // docs/reliability.md ("Lazy claims": "adds the attempt it cut short to the history"). Only the
  // cancel poll reaches this case correctly, and it is off whenever cancelPollSeconds ≥ the
  // heartbeat period (here; and on AWS for a DELETE in the last poll period before the first
  // heartbeat). Drop `.fails` once fixed.
  it(
    'while running, before its claim is written: the attempt DELETE cut short is in the history (attempt 1, cancelled), without an infrastructure error',
    async () => {
      const worker = await bench.startWorker({ label: 'lazy-history' });
      const wake = bench.flag('wake');
      const id = await lazyRunning(wake.path);
      expect((await bench.cancel(id)).status).toBe(200);
      wake.raise();
      await waitFor(
        'the attempt to be recorded',
        async () => ((await bench.record(id))?.history.length ?? 0) > 0 || undefined,
        {
          timeoutMs: 10_000,
        },
      );
      const done = await bench.view(id);
      expect(done).toMatchObject({ status: 'cancelled', attempts: 1 });
      expect(done.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'cancelled' })]);
      expect(worker.output()).not.toContain('infrastructure failure');
    },
    WORKER_TEST_TIMEOUT_MS,
  );

  it(
    'while running, claim written, cooperative handler: 202 cancel_requested, the handler is aborted at the next heartbeat, status cancelled',
    async () => {
      await bench.startWorker({ label: 'coop' });
      const id = await bench.submit('sleep', { ms: 60_000 });
      await bench.claimed(id, { attempt: 1 }); // past the first heartbeat: running, leased
      const requestedAt = Date.now();
      const del = await bench.cancel(id);
      expect(del).toEqual({ status: 202, json: { task_id: id, status: 'running', cancel_requested: true } });
      expect((await bench.view(id)).cancel_requested).toBe(true);
      const done = await bench.until(id, ['cancelled'], 15_000);
      // Guarantee: a heartbeat every lease/3 sees the request, well within one lease of it (a worker
      // stalled longer loses its lease: the history would show a crash). Measured on the worker's
      // own outcome write (finished_at), not on this test's polling.
      expect(Date.parse(done.finished_at ?? '') - requestedAt).toBeLessThan(LEASE * 1000 + 2_000);
      expect(done.result).toBeUndefined();
      expect(done.attempts).toBe(1);
      expect(done.history.map((h) => h.outcome)).toEqual(['cancelled']);
      expect(bench.executions(id).filter((e) => e.event === 'E')).toHaveLength(0); // aborted, never finished
      await expectSettled(bench, [id], { queuesEmpty: true });
    },
    WORKER_TEST_TIMEOUT_MS,
  );

  it(
    'while running, claim written, uncooperative handler: 202, it runs to the end, its result is discarded, status cancelled',
    async () => {
      await bench.startWorker({ label: 'stubborn' });
      const id = await bench.submit('stubborn', { ms: 4_000 });
      await bench.claimed(id, { attempt: 1 });
      expect((await bench.cancel(id)).status).toBe(202);
      const done = await bench.until(id, ['cancelled'], 15_000);
      await waitFor('the handler to have finished', () => bench.executions(id).find((e) => e.event === 'E'));
      expect(done.result).toBeUndefined();
      expect(done.attempts).toBe(1);
      expect(done.history.map((h) => h.outcome)).toEqual(['cancelled']);
      await expectSettled(bench, [id], { queuesEmpty: true });
    },
    WORKER_TEST_TIMEOUT_MS,
  );
});
