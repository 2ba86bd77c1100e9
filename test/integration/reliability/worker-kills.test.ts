/**
 * A consumer process that dies or is stopped mid-task: SIGKILL, SIGTERM (graceful, within and
 * beyond its grace period), and a kill that also loses the task's message (the watchdog).
 * The worker is `local/worker.ts` as a child process; the API and the sweeper run in the test.
 */
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { targets } from '../../support/targets.js';
import { waitFor } from '../../support/wait.js';
import { Bench, expectSettled } from './harness.js';

const LEASE = 3;

describe.each(targets())('worker processes killed or stopped mid-task on $name', (target) => {
  let bench: Bench;

  beforeAll(async () => {
    bench = await Bench.start(target, {
      tag: 'kill',
      lease: LEASE,
      settings: { outboxGraceSeconds: 1, watchdogSeconds: 10 },
    });
  });
  afterEach(async (ctx) => bench?.afterEach(ctx));
  afterAll(async () => bench?.stop());

  it('SIGKILL mid-task: the task is redelivered and succeeds on another worker, attempts = 2, within about one lease', async () => {
    const first = await bench.startWorker({ label: 'doomed' });
    const id = await bench.submit('sleep', { ms: 60_000, retry_ms: 100 });
    await bench.started(id, 1);
    first.kill('SIGKILL');
    const killedAt = Date.now();
    expect((await first.exited).signal).toBe('SIGKILL');
    const second = await bench.startWorker({ label: 'rescuer' });

    const done = await bench.until(id, ['succeeded'], 30_000);
    const recoveredMs = Date.parse(done.finished_at ?? '') - killedAt;
    expect(done.attempts).toBe(2);
    expect(done.result).toMatchObject({ worker: second.label, attempt: 2 });
    expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
    expect(done.last_error).toMatchObject({ name: 'WorkerCrashError', code: 'CRASH' });
    expect(bench.starts(id).map((e) => [e.worker, e.attempt])).toEqual([
      ['doomed', 1],
      ['rescuer', 2],
    ]);
    // The message was held for one lease; the rescuer claims it once the lease has run out
    // (at most a second or two of claim deferral and polling on top).
    console.info(`[${bench.target}] SIGKILL → succeeded on the next worker after ${recoveredMs} ms (lease ${LEASE} s)`);
    expect(recoveredMs).toBeLessThan(LEASE * 1000 + 4_000);
    await expectSettled(bench, [id]);
  });

  it('SIGTERM mid-task: the worker stops polling, lets the task finish, and exits 0', async () => {
    const worker = await bench.startWorker({ label: 'graceful', args: ['--grace-seconds', '20'] });
    const id = await bench.submit('sleep', { ms: 2_500 });
    await bench.started(id, 1);
    worker.kill('SIGTERM');
    const exit = await worker.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    // The task finished before the process exited: it is already recorded.
    const record = await bench.record(id);
    expect(record).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(worker.output()).toContain('worker drained');
    await expectSettled(bench, [id]);
  });

  it('SIGTERM with a task longer than the grace period: exits 0, hands the message back, and the task finishes elsewhere', async () => {
    const worker = await bench.startWorker({ label: 'impatient', args: ['--grace-seconds', '1'] });
    const id = await bench.submit('sleep', { ms: 60_000, retry_ms: 100 });
    await bench.started(id, 1);
    worker.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    expect(worker.output()).toContain('1 invocation(s) cut off');
    const second = await bench.startWorker({ label: 'next' });
    const done = await bench.until(id, ['succeeded'], 30_000);
    expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
    expect(done.attempts).toBe(2);
    expect(done.result).toMatchObject({ worker: second.label });
    await expectSettled(bench, [id]);
  });

  it('SIGKILL and the message lost too: when the watchdog comes due the sweeper re-sends it, and the task is reclaimed', async () => {
    const first = await bench.startWorker({ label: 'lost' });
    const id = await bench.submit('sleep', { ms: 60_000, retry_ms: 100 }, { priority: 'high' });
    await bench.started(id, 1);
    first.kill('SIGKILL');
    await first.exited;
    // Take the message away for good as soon as its visibility (one lease) runs out.
    const url = bench.runtime.resources.queueUrls.high;
    await waitFor(
      'the orphaned message to come back, to delete it',
      async () => {
        const out = await bench.runtime.clients.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 10,
            VisibilityTimeout: 60,
            WaitTimeSeconds: 1,
          }),
        );
        const mine = (out.Messages ?? []).filter((m) => m.Body?.includes(id));
        for (const m of mine)
          await bench.runtime.clients.sqs.send(
            new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }),
          );
        return mine.length > 0 ? true : undefined;
      },
      { timeoutMs: 20_000 },
    );
    expect(await bench.depth(url)).toBe(0);
    expect((await bench.record(id))?.status).toBe('running');

    await bench.startWorker({ label: 'after-watchdog' });
    const done = await bench.until(id, ['succeeded'], 30_000);
    expect(done.attempts).toBe(2);
    expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
    expect(bench.logged('running task lost its worker and its message')).toBe(true);
    await expectSettled(bench, [id]);
  });
});
