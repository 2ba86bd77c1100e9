/**
 * SQS and DynamoDB errors injected through SDK middleware (`test/support/faults.ts`) at each of
 * Kaj's call sites, with the API, the sweeper and the consumers in this process sharing the
 * faulty clients. Each case asserts that the fault really fired, what the task's record says at
 * the end, and how often the handler really ran (the execution log).
 *
 * Faults are raised at the `app` layer (outside the SDK's retry: "the SDK gave up") unless a case
 * says `wire` (inside the retry loop, where the SDK sees and retries it). `before` = the request
 * never reached the service; `after` = it was applied and the response was lost (a timeout).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PRIORITIES } from '../../../shared/config/resources.js';
import { LOCAL_OWNER } from '../../../shared/app.js';
import {
  FaultInjector,
  isSendTo,
  isUpdate,
  updatedAttributes,
  type Fault,
  type FaultSpec,
} from '../../support/faults.js';
import { targets } from '../../support/targets.js';
import { waitFor } from '../../support/wait.js';
import { Bench, expectSettled } from './harness.js';

const LEASE = 3;

/** The task an SDK call is about, when its input names one (UpdateItem's key, a message's attribute). */
function taskIdOf(input: Record<string, unknown>): string | undefined {
  const key = (input.Key as Record<string, unknown> | undefined)?.task_id;
  if (typeof key === 'string') return key;
  if (key !== undefined) return (key as { S?: string }).S;
  const attrs = input.MessageAttributes as Record<string, { StringValue?: string }> | undefined;
  return attrs?.['kaj-task-id']?.StringValue;
}

describe.each(targets())('SDK faults at each call site on $name', (target) => {
  let bench: Bench;
  const app = new FaultInjector();
  const wire = new FaultInjector();
  let mainQueues: string[];
  let deadLetterQueues: string[];

  beforeAll(async () => {
    bench = await Bench.start(target, {
      tag: 'fault',
      lease: LEASE,
      consumers: true,
      // High has two consumers for the takeover case, which needs a second one while the first is busy.
      concurrency: { high: 2, normal: 2, low: 1 },
      batchSize: 5,
      // A short grace and watchdog, so that the sweeper's part shows within seconds.
      settings: { outboxGraceSeconds: 1, watchdogSeconds: 4 },
    });
    const { sqs, dynamodb } = bench.runtime.clients;
    app.attach(sqs).attach(dynamodb);
    wire.attach(sqs, { layer: 'wire' }).attach(dynamodb, { layer: 'wire' });
    mainQueues = PRIORITIES.map((p) => bench.runtime.resources.queueUrls[p]);
    deadLetterQueues = PRIORITIES.map((p) => bench.runtime.resources.deadLetterQueueUrls[p]);
  });
  afterEach(async (ctx) => {
    app.clear();
    wire.clear();
    await bench?.afterEach(ctx);
  });
  afterAll(async () => {
    app.detach();
    wire.detach();
    await bench?.stop();
  });

  /**
   * Arms a fault (at the app layer unless `layer` says otherwise) for the tasks this case creates:
   * a call about a task that already exists — a late duplicate of an earlier case's message, its
   * dead letter still on the way — neither takes the fault nor counts towards `nth`. Calls that
   * name no task (ChangeMessageVisibility, DeleteMessageBatch, Query) are not filtered.
   */
  async function inject(spec: FaultSpec, layer: FaultInjector = app): Promise<Fault> {
    const earlier = new Set((await bench.records()).map((r) => r.task_id));
    const { match } = spec;
    return layer.add({
      ...spec,
      match: (input) => {
        const id = taskIdOf(input);
        if (id !== undefined && earlier.has(id)) return false;
        return match === undefined || match(input);
      },
    });
  }
  const toMain = () => isSendTo(mainQueues);
  /**
   * A heartbeat's lease refresh — not the write that marks an attempt as running alone (`solo`,
   * after a crash), which sets the lease too and must go through for the attempt to start.
   */
  const heartbeats = () => (input: Record<string, unknown>) =>
    isUpdate('heartbeat')(input) && !updatedAttributes(input).set.has('solo');
  const runs = (id: string) => bench.starts(id).length;

  /** Submits and returns the id; the record count grows by exactly one. */
  async function submitOne(type: string, payload: unknown, extra: Record<string, unknown> = {}): Promise<string> {
    const before = (await bench.records()).length;
    const id = await bench.submit(type, payload, extra);
    expect((await bench.records()).length).toBe(before + 1);
    return id;
  }

  async function settled(id: string): Promise<void> {
    await expectSettled(bench, [id], { queuesEmpty: true, timeoutMs: 20_000 });
  }

  describe('submit: the table write (PutItem)', () => {
    it('throttled before the write: 503, nothing stored; the client’s retry with the same idempotency key creates it once', async () => {
      const f = await inject({ command: 'PutItem', error: 'provisioned-throughput' });
      const key = `put-before-${Math.random()}`;
      const body = { type: 'sleep', payload: { ms: 0 }, idempotency_key: key };
      const first = await bench.post(body);
      expect(first.status).toBe(503);
      expect(first.json.error.code).toBe('unavailable');
      expect(f.fired).toBe(1);
      const id = bench.runtime.kaj.submitter.idempotentTaskId(LOCAL_OWNER, 'sleep', key);
      expect(await bench.record(id)).toBeUndefined();
      expect((await bench.post(body)).status).toBe(202);
      expect((await bench.until(id, ['succeeded'])).attempts).toBe(1);
      expect(runs(id)).toBe(1);
      await settled(id);
    });

    it('timed out after the write landed: 503, yet the task exists and runs once (the sweeper sends it); the retry is a replay', async () => {
      const f = await inject({ command: 'PutItem', error: 'timeout', phase: 'after' });
      const key = `put-after-${Math.random()}`;
      const body = { type: 'sleep', payload: { ms: 0 }, idempotency_key: key };
      const before = (await bench.records()).length;
      expect((await bench.post(body)).status).toBe(503);
      expect(f.fired).toBe(1);
      const id = bench.runtime.kaj.submitter.idempotentTaskId(LOCAL_OWNER, 'sleep', key);
      expect(await bench.record(id)).toBeDefined();
      const retry = await bench.post(body);
      expect(retry.status).toBe(200); // replayed
      expect(retry.json.task_id).toBe(id);
      await bench.until(id, ['succeeded']);
      expect(runs(id)).toBe(1);
      expect((await bench.records()).length).toBe(before + 1);
      await settled(id);
    });
  });

  describe('submit: the send (SendMessage) after the table write', () => {
    it('throttled: the API still answers 202 and the sweeper sends it after the grace; one record, one run', async () => {
      const f = await inject({ command: 'SendMessage', match: toMain(), error: 'throttling' });
      const id = await submitOne('sleep', { ms: 0 });
      expect(f.fired).toBe(1);
      const stored = await bench.record(id);
      expect(stored).toMatchObject({ status: 'queued', outbox_pk: 'queue#normal' });
      await bench.until(id, ['succeeded'], 15_000);
      expect(bench.logged('send failed; the sweeper will send it')).toBe(true);
      expect(runs(id)).toBe(1);
      await settled(id);
    });

    it('timed out after SQS took it: the sweeper sends a duplicate, which the claim absorbs (one run)', async () => {
      const f = await inject({ command: 'SendMessage', match: toMain(), error: 'timeout', phase: 'after' });
      // A 3 s delay keeps the first message from being claimed before the 1 s grace is up, so the
      // sweeper does send the duplicate (unconfirmed send) and both messages arrive together.
      const id = await submitOne('sleep', { ms: 300 }, { delay_seconds: 3 });
      expect(f.fired).toBe(1);
      await waitFor('the sweeper to send the duplicate', () => (bench.logged('outbox swept') ? true : undefined), {
        timeoutMs: 10_000,
      });
      await bench.until(id, ['succeeded'], 15_000);
      await settled(id);
      expect(runs(id)).toBe(1);
      expect((await bench.record(id))?.attempts).toBe(1);
    });

    it('(wire) one throttle inside the SDK’s retry loop is absorbed by the SDK: no sweep needed', async () => {
      const f = await inject({ command: 'SendMessage', match: toMain(), error: 'throttling' }, wire);
      const id = await submitOne('sleep', { ms: 0 });
      expect(f.fired).toBe(1);
      expect(f.matched).toBe(2); // the failed try and the SDK's retry
      await bench.until(id, ['succeeded']);
      expect(bench.logged('send failed')).toBe(false);
      await settled(id);
    });
  });

  describe('consumer: the heartbeat', () => {
    it('table lease refresh throttled twice: the attempt carries on and succeeds', async () => {
      const f = await inject({ command: 'UpdateItem', match: heartbeats(), error: 'provisioned-throughput', times: 2 });
      const id = await submitOne('sleep', { ms: 2_500 });
      const done = await bench.until(id, ['succeeded']);
      expect(f.fired).toBe(2);
      expect(done.attempts).toBe(1);
      expect(bench.logged('heartbeat failed; will try again')).toBe(true);
      expect(runs(id)).toBe(1);
      await settled(id);
    });

    it('table unavailable for longer than the lease: the task is taken over, the first worker is fenced; two runs, one outcome', async () => {
      const f = await inject({ command: 'UpdateItem', match: heartbeats(), error: 'unavailable', times: 1_000 });
      // Attempt 1 cannot extend its lease; the running-task watchdog re-sends the message and the
      // task is reclaimed. Attempt 1 ends (6 s) while attempt 2 still runs, so only the fencing
      // token rejects its success write.
      const id = await submitOne('sleep', { ms: 6_000, retry_ms: 4_000 }, { priority: 'high' });
      await bench.started(id, 2, 20_000);
      app.clear(); // attempt 2's heartbeats go through
      expect(f.fired).toBeGreaterThanOrEqual(3);
      await waitFor(
        'attempt 1 to end fenced off',
        () => (bench.logged('write fenced off: lease lost to another worker') ? true : undefined),
        { timeoutMs: 15_000 },
      );
      expect(await bench.record(id)).toMatchObject({ status: 'running', lease_token: 2 });
      const done = await bench.until(id, ['succeeded'], 30_000);
      expect(done.attempts).toBe(2);
      expect(runs(id)).toBe(2);
      expect(await bench.record(id)).toMatchObject({ status: 'succeeded', lease_token: 2, result: { attempt: 2 } });
      await expectSettled(bench, [id]);
    });

    it('ChangeMessageVisibility throttled: logged, and the task still succeeds (the table lease is the truth)', async () => {
      const f = await inject({ command: 'ChangeMessageVisibility', error: 'throttling', times: 3 });
      const id = await submitOne('sleep', { ms: 1_500 });
      const done = await bench.until(id, ['succeeded']);
      expect(f.fired).toBeGreaterThanOrEqual(1);
      expect(done.attempts).toBe(1);
      expect(bench.logged('could not extend message visibility')).toBe(true);
      expect(runs(id)).toBe(1);
      await settled(id);
    });
  });

  describe('consumer: the completion write', () => {
    it('500 on the success write: the message is redelivered after the lease and the task runs again (at-least-once), then succeeds', async () => {
      const f = await inject({ command: 'UpdateItem', match: isUpdate('succeed'), error: 'internal' });
      const id = await submitOne('sleep', { ms: 0 });
      const done = await bench.until(id, ['succeeded'], 20_000);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect(runs(id)).toBe(2);
      await settled(id);
    });

    it('success write landed but timed out: the redelivered message is dropped (task is succeeded), one run', async () => {
      const f = await inject({ command: 'UpdateItem', match: isUpdate('succeed'), error: 'timeout', phase: 'after' });
      const id = await submitOne('sleep', { ms: 0 });
      await bench.until(id, ['succeeded']);
      expect(f.fired).toBe(1);
      await settled(id); // the message came back after the lease and was dropped
      expect(runs(id)).toBe(1);
      expect((await bench.record(id))?.attempts).toBe(1);
    });

    it('500 on the failure write of a permanent error: the attempt is repeated after the lease, then failed', async () => {
      const f = await inject({ command: 'UpdateItem', match: isUpdate('fail'), error: 'internal' });
      const id = await submitOne('soak', { poison: true });
      const done = await bench.until(id, ['failed'], 20_000);
      expect(f.fired).toBe(1);
      expect(done.last_error).toMatchObject({ code: 'POISON', retryable: false });
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'failed']);
      expect(runs(id)).toBe(2);
      await settled(id); // the dead letter is confirmed sent once the outbox entry is gone
      expect(await bench.drainDeadLetters('normal', id)).toHaveLength(1);
    });

    it('DeleteMessageBatch (the ack) unavailable: the message comes back and is dropped, one run', async () => {
      const f = await inject({ command: 'DeleteMessageBatch', error: 'unavailable' });
      const id = await submitOne('sleep', { ms: 0 });
      await bench.until(id, ['succeeded']);
      await settled(id); // the ack comes after the success write: count the fault once it is back and dropped
      expect(f.fired).toBe(1);
      expect(runs(id)).toBe(1);
    });
  });

  describe('retries: the send of the next attempt', () => {
    it('SQS unavailable for the retry message: the outbox entry stays and the sweeper sends it', async () => {
      const f = await inject({
        command: 'SendMessage',
        match: isSendTo(mainQueues, 'soak'),
        nth: 2,
        error: 'unavailable',
      });
      const id = await submitOne('soak', { fail_attempts: 1 });
      const done = await bench.until(id, ['succeeded'], 15_000);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['retrying', 'succeeded']);
      expect(runs(id)).toBe(2);
      await settled(id);
    });

    it('retry message sent but timed out: the entry stays unconfirmed; any duplicate the sweeper sends is absorbed by the claim', async () => {
      const f = await inject({
        command: 'SendMessage',
        match: isSendTo(mainQueues, 'soak'),
        nth: 2,
        error: 'timeout',
        phase: 'after',
      });
      const id = await submitOne('soak', { fail_attempts: 1 });
      await bench.until(id, ['succeeded'], 15_000);
      expect(f.fired).toBe(1);
      await settled(id);
      expect(runs(id)).toBe(2);
      expect((await bench.record(id))?.attempts).toBe(2);
    });
  });

  describe('dead letters: the DLQ send', () => {
    it('throttled: the task is failed at once and the sweeper writes the dead letter', async () => {
      const f = await inject({ command: 'SendMessage', match: isSendTo(deadLetterQueues), error: 'throttling' });
      const id = await submitOne('soak', { poison: true }, { priority: 'low' });
      await bench.until(id, ['failed']);
      await settled(id); // outbox entry cleared once the sweeper sent the dead letter
      expect(f.fired).toBe(1); // the direct send follows the failure write: counted once the task settled
      expect(await bench.drainDeadLetters('low', id)).toHaveLength(1);
      expect(runs(id)).toBe(1);
    });

    it('sent but timed out: the sweeper sends it again — dead letters are at-least-once too', async () => {
      const f = await inject({
        command: 'SendMessage',
        match: isSendTo(deadLetterQueues),
        error: 'timeout',
        phase: 'after',
      });
      const id = await submitOne('soak', { poison: true }, { priority: 'high' });
      await bench.until(id, ['failed']);
      await settled(id);
      expect(f.fired).toBe(1);
      expect(await bench.drainDeadLetters('high', id)).toHaveLength(2);
      expect(runs(id)).toBe(1);
    });
  });

  it('sweeper: its outbox query fails twice while a send is owed; a later run sends it', async () => {
    await inject({ command: 'SendMessage', match: toMain(), error: 'unavailable' });
    const q = await inject({ command: 'Query', error: 'internal', times: 2 });
    const id = await submitOne('sleep', { ms: 0 });
    await bench.until(id, ['succeeded'], 15_000);
    expect(q.fired).toBe(2);
    expect(bench.logged('sweep failed')).toBe(true);
    expect(runs(id)).toBe(1);
    await settled(id);
  });
  // Last: a failed claim leaves its message in flight for the queue's visibility timeout (330 s),
  // which would count as a leftover message in the cases after it.
  describe('consumer: the claim (UpdateItem)', () => {
    it('500 before the claim: the message is left (queue visibility 330 s), the watchdog re-sends it, one run', async () => {
      const f = await inject({ command: 'UpdateItem', match: isUpdate('claim'), error: 'internal' });
      const id = await submitOne('sleep', { ms: 0 });
      const done = await bench.until(id, ['succeeded'], 20_000);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(1);
      expect(runs(id)).toBe(1);
      await expectSettled(bench, [id]); // the first message stays in flight for the queue's visibility timeout
    });

    it('claim applied but the response timed out: nobody runs it; after the lease it is reclaimed (counted as a crash), one run', async () => {
      const f = await inject({ command: 'UpdateItem', match: isUpdate('claim'), error: 'timeout', phase: 'after' });
      const id = await submitOne('sleep', { ms: 0 });
      const done = await bench.until(id, ['succeeded'], 20_000);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect(runs(id)).toBe(1);
      await expectSettled(bench, [id]);
    });

    it('(wire) claim applied, response lost, and the SDK re-sends it: the retry fails its own condition, the task is deferred and reclaimed', async () => {
      const f = await inject(
        { command: 'UpdateItem', match: isUpdate('claim'), error: 'timeout', phase: 'after' },
        wire,
      );
      const id = await submitOne('sleep', { ms: 0 });
      const done = await bench.until(id, ['succeeded'], 20_000);
      expect(f.fired).toBe(1);
      expect(f.matched).toBeGreaterThanOrEqual(2); // the SDK retried the applied claim
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect(runs(id)).toBe(1);
      await expectSettled(bench, [id]);
    });
  });
});
