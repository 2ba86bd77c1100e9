/**
 * SQS and DynamoDB errors injected through SDK middleware (`test/support/faults.ts`) at each of
 * Kaj's call sites, with the API, the sweeper and the consumers in this process sharing the
 * faulty clients. Each case asserts that the fault really fired, what the task's record says at
 * the end, how often the handler really ran (the execution log), what was logged, and that the
 * queues settle (docs/reliability.md: send first, then put; lazy claims; leases and fencing).
 *
 * Faults are raised at the `app` layer (outside the SDK's retry: "the SDK gave up") unless a case
 * says `wire` (inside the retry loop, where the SDK sees and retries it). `before` = the request
 * never reached the service; `after` = it was applied and the response was lost (a timeout).
 *
 * Timings here: lease 3 s (heartbeat every 1 s), queue visibility and send-first window 2 × lease
 * = 6 s (the harness), outbox grace 1 s, a sweep every 0.5 s. One message per invocation
 * (`batchSize: 1`), and the low queue has a single consumer: what is sent to `low` is processed
 * strictly one message after another, which makes the duplicate cases deterministic (with lazy
 * claims, two copies of one message run twice when two workers take them at once — guarantee 3).
 * A case about a written claim gives its handler 2.5 s or more, past its first heartbeat (1 s),
 * which writes the claim. An outcome never races that write: the consumer waits for a heartbeat
 * in flight before it writes the outcome, so an attempt is not fenced off by its own claim.
 * Cases wait on the state that proves progress (a record, a fault fired, a flag raised), not on
 * how fast the sweeper or the consumer got there.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_OWNER } from '../../../shared/service/all-in-one.js';
import { PRIORITIES } from '../../../shared/config/resources.js';
import { dispatchSequence } from '../../../shared/task/changes.js';
import { outboxKey } from '../../../shared/task/model.js';
import {
  type CallWatch,
  type Fault,
  FaultInjector,
  type FaultSpec,
  forTask,
  isSendTo,
  isUpdate,
  sentMessage,
  taskIdOf,
  updatedAttributes,
  updateKind,
} from '../../support/faults.js';
import type { Target } from '../../support/targets.js';
import { waitFor } from '../../../testing/wait.js';
import { Bench, expectSettled, FINISHED } from '../../../testing/harness.js';

const LEASE = 3;

/** The cases, on one target (run by `sdk-faults.test.ts` and `sdk-faults.moto.test.ts`). */
export function sdkFaultCases(target: Target): void {
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
      // High has two consumers for the takeover case, which needs a second one while the first is
      // busy; low has one, so that its messages are processed one after another.
      concurrency: { high: 2, normal: 2, low: 1 },
      batchSize: 1,
      // A short grace, so that the sweeper's part shows within seconds.
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
   * dead letter still on the way, a task that keeps the low consumer busy — neither takes the
   * fault nor counts towards `nth`. Calls that name no task (ChangeMessageVisibility,
   * DeleteMessageBatch, Query) are not filtered.
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
  /** The task's messages to its priority queue (every send Kaj tried, failed ones too). */
  const watchSends = (id: string): CallWatch => app.watch('SendMessage', forTask(id, toMain()));
  /** Every UpdateItem of the task, in order; `kinds` names them. */
  const watchWrites = (id: string): CallWatch => app.watch('UpdateItem', forTask(id));
  const kinds = (w: CallWatch) => w.inputs.map(updateKind);
  const dispatches = (w: CallWatch) => w.inputs.map((i) => sentMessage(i).dispatch_id);
  const runs = (id: string) => bench.starts(id).length;
  /** The attempt number each run of the handler had, in order. */
  const runAttempts = (id: string) => bench.starts(id).map((e) => e.attempt);

  /**
   * The task as first read without an outbox entry. Who removed the entry shows in its status:
   * the sweeper's removal after its send leaves the task waiting or running; an outcome write
   * removes it too, and finishes the task.
   */
  const entryRemoved = (id: string) =>
    waitFor(
      `the outbox entry of ${id} to be removed`,
      async () => {
        const r = await bench.record(id);
        return r !== undefined && r.outbox_pk === undefined ? r : undefined;
      },
      { intervalMs: 50 },
    );

  /** What the runtime logged about one task. */
  const logsFor = (text: string, id: string) =>
    bench.log.entries.filter((e) => e.message.includes(text) && e.fields?.task_id === id);
  /** Why the consumer dropped the task's messages, in order. */
  const dropReasons = (id: string) => logsFor('message dropped', id).map((e) => e.fields?.reason);
  /** The backoffs (s) with which infrastructure failures left the task's message. */
  const backoffs = (id: string) =>
    logsFor('infrastructure failure; message left for redelivery', id).map((e) => Number(e.fields?.retry_in_seconds));

  /** Submits and returns the id; the record count grows by exactly one. */
  async function submitOne(type: string, payload: unknown, extra: Record<string, unknown> = {}): Promise<string> {
    const before = (await bench.records()).length;
    const id = await bench.submit(type, payload, extra);
    expect((await bench.records()).length).toBe(before + 1);
    return id;
  }

  /** A request with a fresh idempotency key, and the id its task will have: known before it is sent. */
  function keyed(
    type: string,
    payload: unknown,
    extra: Record<string, unknown> = {},
  ): { id: string; body: Record<string, unknown> } {
    const key = `${type}-${Math.random().toString(36).slice(2)}`;
    return {
      id: bench.runtime.kaj.submitter.idempotentTaskId(LOCAL_OWNER, type, key),
      body: { type, payload, idempotency_key: key, ...extra },
    };
  }

  async function post202(body: Record<string, unknown>, id: string): Promise<void> {
    const res = await bench.post(body);
    expect(res.status).toBe(202);
    expect(res.json.task_id).toBe(id);
  }

  /**
   * Keeps the low queue's only consumer busy for `ms` (a task of its own, started): whatever is
   * sent to `low` meanwhile waits on the queue.
   */
  async function occupyLow(ms: number): Promise<string> {
    const id = await submitOne('sleep', { ms }, { priority: 'low' });
    await bench.started(id, 1, 10_000);
    return id;
  }

  /**
   * {@link occupyLow} until `release()` is called rather than for a fixed time: for a case that
   * needs the low queue held until something has happened a number of times.
   */
  async function holdLow(): Promise<{ id: string; release(): void }> {
    const flag = bench.flag('low');
    const id = await submitOne('block', { lead_ms: 90_000, pause_file: flag.path, ms: 0 }, { priority: 'low' });
    await bench.started(id, 1, 10_000);
    return { id, release: flag.raise };
  }

  async function settled(...ids: string[]): Promise<void> {
    await expectSettled(bench, ids, { queuesEmpty: true, timeoutMs: 25_000 });
  }

  describe('submit: the table write (PutItem), after the message was sent', () => {
    it('throttled: 503 and nothing stored, but the message sent ahead is out (an orphan); the client’s retry with the same idempotency key creates the task once, and the orphan is dropped as superseded', async () => {
      const { id, body } = keyed('sleep', { ms: 0 });
      const sends = watchSends(id);
      const f = await inject({ command: 'PutItem', error: 'provisioned-throughput' });
      const first = await bench.post(body);
      expect(first.status).toBe(503);
      expect(first.json.error.code).toBe('unavailable');
      expect(f.fired).toBe(1);
      expect(sends.count).toBe(1); // sent first, then the put failed
      expect(await bench.record(id)).toBeUndefined();

      await post202(body, id);
      expect((await bench.until(id, ['succeeded'])).attempts).toBe(1);
      await settled(id); // the orphan is off the queue too
      expect(runs(id)).toBe(1);
      const [orphan, kept] = dispatches(sends);
      expect(sends.count).toBe(2);
      expect(orphan).not.toBe(kept);
      expect((await bench.record(id))?.dispatch_id).toBe(kept);
      expect(dropReasons(id)).toEqual(['superseded by a newer dispatch']);
    });

    it('fails and the client gives up: the orphan is deferred (1 s, 2 s, …) while younger than the send-first window, then dropped; nothing stored, nothing runs, the queue empties', async () => {
      const { id, body } = keyed('sleep', { ms: 0 });
      const reads = app.watch('GetItem', forTask(id));
      const sends = watchSends(id);
      // Nothing else is on the normal queue: its visibility changes are the orphan's deferrals.
      const normalQueue = bench.runtime.resources.queueUrls.normal;
      const deferrals = app.watch('ChangeMessageVisibility', (input) => input.QueueUrl === normalQueue);
      const f = await inject({ command: 'PutItem', error: 'internal' });
      const postedAt = Date.now();
      expect((await bench.post(body)).status).toBe(503);
      expect(f.fired).toBe(1);
      await waitFor('the orphan to be dropped', () => (dropReasons(id).length > 0 ? true : undefined), {
        timeoutMs: 20_000,
      });
      const window = bench.runtime.config.settings.sendFirstWindowSeconds;
      expect(Date.now() - postedAt).toBeGreaterThanOrEqual(window * 1000);
      expect(dropReasons(id)).toEqual(['task not found']);
      const deferred = logsFor('message deferred', id);
      expect(deferred.every((e) => e.fields?.reason === 'task not found')).toBe(true);
      // 1 s, 2 s, 4 s, … (doubling with the receive count), but never past the window: shorter
      // only when less of it is left. The window left when the deferral was asked for is at most
      // what it was when the consumer decided: where that is a full backoff, the backoff is whole.
      const seconds = deferred.map((e) => Number(e.fields?.seconds));
      expect(deferrals.inputs.map((i) => i.VisibilityTimeout)).toEqual(seconds);
      const sentAt = sentMessage(sends.inputs[0] ?? {}).sent_at ?? postedAt;
      expect(seconds[0]).toBe(1);
      for (const [i, s] of seconds.entries()) {
        const backoff = 2 ** i;
        expect(s).toBeGreaterThanOrEqual(1);
        expect(s).toBeLessThanOrEqual(backoff);
        const leftMs = window * 1000 - ((deferrals.at[i] ?? 0) - sentAt);
        if (leftMs >= backoff * 1000) expect(s, `deferral ${i + 1}, ${leftMs} ms of the window left`).toBe(backoff);
      }
      // The first delivery reads, then looks again after 25, 100 and 250 ms; every later one reads once.
      expect(reads.count).toBe(4 + deferred.length);
      await waitFor('the queues to empty', async () => ((await bench.queuedMessages()) === 0 ? true : undefined), {
        timeoutMs: 10_000,
      });
      expect(runs(id)).toBe(0);
      expect(await bench.record(id)).toBeUndefined();
    });

    it('timed out after the write landed: 503, yet the task exists — kept by the message sent ahead, no outbox entry — and runs once; the retry is a replay, whose own message is dropped as superseded', async () => {
      const { id, body } = keyed('sleep', { ms: 0 });
      const sends = watchSends(id);
      const f = await inject({ command: 'PutItem', error: 'timeout', phase: 'after' });
      const before = (await bench.records()).length;
      expect((await bench.post(body)).status).toBe(503);
      expect(f.fired).toBe(1);
      const stored = await bench.record(id);
      expect(stored).toBeDefined();
      expect(stored?.outbox_pk).toBeUndefined();
      const retry = await bench.post(body);
      expect(retry.status).toBe(200); // replayed
      expect(retry.json.task_id).toBe(id);
      await bench.until(id, ['succeeded']);
      await settled(id);
      expect(runs(id)).toBe(1);
      expect((await bench.records()).length).toBe(before + 1);
      const [kept, replayed] = dispatches(sends);
      expect(sends.count).toBe(2);
      expect(replayed).not.toBe(kept);
      expect((await bench.record(id))?.dispatch_id).toBe(kept);
      expect(dropReasons(id)).toEqual(['superseded by a newer dispatch']);
    });
  });

  describe('submit: the send (SendMessage), before the table write', () => {
    it('throttled: the record is written with an outbox entry and the API answers 202; the sweeper sends the message after the grace and removes the entry before the task ends; one run', async () => {
      const { id, body } = keyed('sleep', { ms: 2_500 });
      const sends = watchSends(id);
      const removals = app.watch('UpdateItem', forTask(id, isUpdate('outboxRemove')));
      const f = await inject({ command: 'SendMessage', match: toMain(), error: 'throttling' });
      const postedAt = Date.now();
      await post202(body, id);
      expect(f.fired).toBe(1);
      const stored = await bench.record(id);
      expect(stored).toMatchObject({ status: 'queued', outbox_pk: outboxKey('queue', 'normal', id) });
      expect(stored?.outbox_due).toBeGreaterThanOrEqual(postedAt + 1_000);
      expect(stored?.outbox_due).toBeLessThanOrEqual(Date.now() + 1_000);
      expect(logsFor('send failed; the task waits in the outbox for the sweeper', id)).toHaveLength(1);

      await bench.started(id, 1, 10_000);
      // Removed by the sweeper once its send went out: while the handler still runs.
      expect(FINISHED).not.toContain((await entryRemoved(id)).status);
      expect(removals.count).toBe(1);
      const done = await bench.until(id, ['succeeded']);
      expect(done.attempts).toBe(1);
      expect(sends.count).toBe(2); // the failed one, and the sweeper's
      expect(runs(id)).toBe(1);
      await settled(id);
    });

    it('timed out after SQS took it: written with an outbox entry anyway, so the sweeper sends a second copy of the same dispatch; one copy runs it, the other is dropped (task is succeeded); one run', async () => {
      const blocker = await occupyLow(4_000); // the task waits on the queue while the sweeper acts
      const { id, body } = keyed('sleep', { ms: 0 }, { priority: 'low' });
      const sends = watchSends(id);
      const f = await inject({ command: 'SendMessage', match: toMain(), error: 'timeout', phase: 'after' });
      await post202(body, id);
      expect(f.fired).toBe(1);
      expect(await bench.record(id)).toMatchObject({ status: 'queued', outbox_pk: outboxKey('queue', 'low', id) });
      await waitFor('the sweeper to send the second copy', () => (sends.count >= 2 ? true : undefined), {
        timeoutMs: 10_000,
      });
      expect(runs(id)).toBe(0);
      await bench.until(id, ['succeeded'], 20_000);
      await settled(id, blocker);
      expect(sends.count).toBe(2);
      const [first, second] = dispatches(sends);
      expect(second).toBe(first);
      expect(runs(id)).toBe(1);
      expect((await bench.record(id))?.attempts).toBe(1);
      expect(dropReasons(id)).toEqual(['task is succeeded']);
    });

    it('(wire) one throttle inside the SDK’s retry loop is absorbed by the SDK: written without an outbox entry, no sweep needed', async () => {
      const f = await inject({ command: 'SendMessage', match: toMain(), error: 'throttling' }, wire);
      const id = await submitOne('sleep', { ms: 0 });
      expect(f.fired).toBe(1);
      expect(f.matched).toBe(2); // the failed try and the SDK's retry
      expect((await bench.record(id))?.outbox_pk).toBeUndefined();
      await bench.until(id, ['succeeded']);
      expect(bench.logged('send failed')).toBe(false);
      expect(runs(id)).toBe(1);
      await settled(id);
    });
  });

  describe('sweeper', () => {
    it('its removal of the entry after a send fails: the entry stays, so every sweep sends again while the task waits; once the task’s claim is written (first heartbeat) the entry is moved past the lease instead, and the success write removes it; one run', async () => {
      const blocker = await holdLow();
      const { id, body } = keyed('sleep', { ms: 3_000 }, { priority: 'low' });
      const sends = watchSends(id);
      const moves = app.watch('UpdateItem', forTask(id, isUpdate('outboxMove')));
      const send = await inject({ command: 'SendMessage', match: toMain(), error: 'unavailable' });
      const removal = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('outboxRemove')),
        error: 'internal',
        times: 1_000,
      });
      await post202(body, id);
      expect(send.fired).toBe(1);
      // The low consumer is held until two sweeps have sent the message and failed to remove the entry.
      await waitFor('two sweeps to send and fail to remove the entry', () => (removal.fired >= 2 ? true : undefined));
      blocker.release();
      const done = await bench.until(id, ['succeeded'], 30_000);
      await settled(id, blocker.id);
      expect(done.attempts).toBe(1);
      expect(runs(id)).toBe(1);
      // While the low consumer was busy, each sweep sent the owed message and failed to remove the entry.
      expect(removal.fired).toBeGreaterThanOrEqual(2);
      expect(sends.count).toBe(1 + removal.fired);
      expect(new Set(dispatches(sends)).size).toBe(1);
      expect(logsFor('outbox entry not removed after send', id)).toHaveLength(removal.fired);
      // A sweep that finds it running with a live lease moves it (to lease_until + grace, which
      // the task did not reach) instead of sending it again: at most once in a 3 s run. Whether a
      // sweep falls inside the run at all is the machine's speed, not a guarantee; the one run is.
      expect(moves.count).toBeLessThanOrEqual(1);
      // One copy ran the task; the others were dropped after it.
      expect(dropReasons(id)).toEqual(Array(removal.fired - 1).fill('task is succeeded'));
    });

    it('its outbox query fails twice while a send is owed; a later run sends it, once', async () => {
      await inject({ command: 'SendMessage', match: toMain(), error: 'unavailable' });
      // The task table's Queries only: the runtime's scheduler queries its own table every second,
      // and a fault it took instead would leave the sweep unharmed (a flaky pass or failure).
      const tasksTable = bench.runtime.resources.tableName;
      const q = await inject({
        command: 'Query',
        match: (input) => input.TableName === tasksTable,
        error: 'internal',
        times: 2,
      });
      const { id, body } = keyed('sleep', { ms: 0 });
      const sends = watchSends(id);
      await post202(body, id);
      expect((await bench.record(id))?.outbox_pk).toBe(outboxKey('queue', 'normal', id));
      await bench.until(id, ['succeeded'], 15_000);
      expect(q.fired).toBe(2);
      expect(bench.logged('sweep failed')).toBe(true);
      await settled(id);
      // The failed send, and one from the sweeper: a failed sweep ends before the next one starts.
      expect(sends.count).toBe(2);
      expect(runs(id)).toBe(1);
    });
  });

  describe('consumer: the read before running (GetItem)', () => {
    it('500 on the first delivery’s read: nothing written, the message is left with a short backoff; the redelivery is claimed by a write at once and runs once', async () => {
      const { id, body } = keyed('sleep', { ms: 0 });
      const writes = watchWrites(id);
      const f = await inject({ command: 'GetItem', match: forTask(id), error: 'internal' });
      await post202(body, id);
      // Nothing but the consumer reads the task until the fault has fired.
      await waitFor('the read to fail', () => (f.fired === 1 ? true : undefined), { timeoutMs: 10_000 });
      const done = await bench.until(id, ['succeeded'], 20_000);
      expect(done.attempts).toBe(1);
      expect(done.history.map((h) => h.outcome)).toEqual(['succeeded']);
      expect(runs(id)).toBe(1);
      expect(kinds(writes)).toEqual(['claim', 'succeed']);
      expect((await bench.record(id))?.lease_token).toBe(1);
      const [backoff] = backoffs(id);
      expect(backoffs(id)).toHaveLength(1);
      expect(backoff).toBeGreaterThanOrEqual(1);
      expect(backoff).toBeLessThanOrEqual(6); // 1 + random(0, 5) on the first receive
      await settled(id);
    });
  });

  describe('consumer: the claim written at delivery (a redelivery)', () => {
    it('500 on the claim write: the message is left again, with a longer backoff; the next delivery claims it and it runs once', async () => {
      const { id, body } = keyed('sleep', { ms: 0 });
      const writes = watchWrites(id);
      const read = await inject({ command: 'GetItem', match: forTask(id), error: 'internal' });
      const claim = await inject({ command: 'UpdateItem', match: forTask(id, isUpdate('claim')), error: 'internal' });
      await post202(body, id);
      await waitFor('the claim write to fail', () => (claim.fired === 1 ? true : undefined), { timeoutMs: 15_000 });
      const done = await bench.until(id, ['succeeded'], 30_000);
      expect(read.fired).toBe(1);
      expect(done.attempts).toBe(1);
      expect(done.history.map((h) => h.outcome)).toEqual(['succeeded']);
      expect(runs(id)).toBe(1);
      expect(kinds(writes)).toEqual(['claim', 'claim', 'succeed']);
      expect((await bench.record(id))?.lease_token).toBe(1);
      const waits = backoffs(id);
      expect(waits).toHaveLength(2);
      expect(waits[1]).toBeGreaterThanOrEqual(1);
      expect(waits[1]).toBeLessThanOrEqual(11); // 1 + random(0, 10) on the second receive
      await settled(id);
    });

    it('claim applied but its response lost: nobody runs it; after the lease it is reclaimed (a crash whose handler never ran) and runs once', async () => {
      const { id, body } = keyed('sleep', { ms: 0 });
      const writes = watchWrites(id);
      const read = await inject({ command: 'GetItem', match: forTask(id), error: 'internal' });
      const claim = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('claim')),
        error: 'timeout',
        phase: 'after',
      });
      await post202(body, id);
      await waitFor('the claim to be lost', () => (claim.fired === 1 ? true : undefined), { timeoutMs: 15_000 });
      const done = await bench.until(id, ['succeeded'], 40_000);
      expect(read.fired).toBe(1);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect(runAttempts(id)).toEqual([2]);
      // The lost claim, the reclaim, the outcome (one shared crash does not make it run alone).
      expect(kinds(writes)).toEqual(['claim', 'claim', 'succeed']);
      expect(await bench.record(id)).toMatchObject({ lease_token: 2, unattributed_crashes: 1 });
      expect(logsFor('reclaimed a task whose worker vanished', id)).toHaveLength(1);
      await settled(id);
    });
  });

  describe('consumer: the lazy claim, written at the first heartbeat', () => {
    it('throttled twice: tried again at each beat, the third writes it; the attempt carries on and succeeds once', async () => {
      const { id, body } = keyed('sleep', { ms: 4_500 });
      const f = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('lazyClaim')),
        error: 'provisioned-throughput',
        times: 2,
      });
      await post202(body, id);
      const done = await bench.until(id, ['succeeded']);
      expect(f.fired).toBe(2);
      expect(f.matched).toBe(3);
      expect(done.attempts).toBe(1);
      expect(done.history.map((h) => h.outcome)).toEqual(['succeeded']);
      expect((await bench.record(id))?.lease_token).toBe(1); // claimed by the third beat
      expect(logsFor('heartbeat failed; will try again', id)).toHaveLength(2);
      expect(runs(id)).toBe(1);
      await settled(id);
    });

    it('applied but its response lost: the next beat finds the task claimed — by this very attempt, which cannot tell — and stops it, fenced off; after the lease it is reclaimed as a crash; two runs, one outcome', async () => {
      const { id, body } = keyed('sleep', { ms: 4_000, retry_ms: 0 });
      const writes = watchWrites(id);
      const f = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('lazyClaim')),
        error: 'timeout',
        phase: 'after',
      });
      await post202(body, id);
      const done = await bench.until(id, ['succeeded'], 30_000);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect(runAttempts(id)).toEqual([1, 2]);
      expect(kinds(writes)).toEqual(['lazyClaim', 'lazyClaim', 'claim', 'succeed']);
      expect(logsFor('heartbeat failed; will try again', id)).toHaveLength(1);
      expect(logsFor('write fenced off: lease lost to another worker', id)).toHaveLength(1);
      expect(await bench.record(id)).toMatchObject({ lease_token: 2, unattributed_crashes: 1 });
      await settled(id);
    });

    it('(wire) applied, response lost, and the SDK re-sends it: the re-sent claim fails its own condition, so the attempt stops at the first beat; reclaimed as a crash after the lease; two runs, one outcome', async () => {
      const { id, body } = keyed('sleep', { ms: 4_000, retry_ms: 0 });
      const writes = watchWrites(id);
      const f = await inject(
        { command: 'UpdateItem', match: forTask(id, isUpdate('lazyClaim')), error: 'timeout', phase: 'after' },
        wire,
      );
      await post202(body, id);
      const done = await bench.until(id, ['succeeded'], 30_000);
      expect(f.fired).toBe(1);
      expect(f.matched).toBeGreaterThanOrEqual(2); // the SDK retried the applied claim
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect(runAttempts(id)).toEqual([1, 2]);
      expect(kinds(writes)).toEqual(['lazyClaim', 'claim', 'succeed']);
      expect(logsFor('write fenced off: lease lost to another worker', id)).toHaveLength(1);
      expect(await bench.record(id)).toMatchObject({ lease_token: 2, unattributed_crashes: 1 });
      await settled(id);
    });
  });

  describe('consumer: the heartbeat of a written claim', () => {
    it('table lease refresh throttled twice: the attempt carries on and succeeds once', async () => {
      const { id, body } = keyed('sleep', { ms: 4_500 });
      const f = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('heartbeat')),
        error: 'provisioned-throughput',
        times: 2,
      });
      await post202(body, id);
      const done = await bench.until(id, ['succeeded']);
      expect(f.fired).toBe(2);
      expect(done.attempts).toBe(1);
      expect(done.history.map((h) => h.outcome)).toEqual(['succeeded']);
      expect((await bench.record(id))?.lease_token).toBe(1);
      expect(logsFor('heartbeat failed; will try again', id)).toHaveLength(2);
      expect(runs(id)).toBe(1);
      await settled(id);
    });

    it('table lease refresh failing for longer than the lease while the message is still held: nobody takes over (no watchdog), and the success write, fenced by the same token, lands; one run', async () => {
      const { id, body } = keyed('sleep', { ms: 5_500 });
      const f = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('heartbeat')),
        error: 'unavailable',
        times: 1_000,
      });
      await post202(body, id);
      await waitFor(
        'the table lease to run out while the attempt runs',
        async () => {
          const r = await bench.record(id);
          return r?.status === 'running' && (r.lease_until ?? Number.POSITIVE_INFINITY) < Date.now() ? r : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 100 },
      );
      const done = await bench.until(id, ['succeeded']);
      expect(f.fired).toBeGreaterThanOrEqual(3);
      expect(done.attempts).toBe(1);
      expect(done.history.map((h) => h.outcome)).toEqual(['succeeded']);
      expect((await bench.record(id))?.lease_token).toBe(1);
      expect(runs(id)).toBe(1);
      expect(logsFor('reclaimed a task whose worker vanished', id)).toHaveLength(0);
      expect(logsFor('write fenced off', id)).toHaveLength(0);
      await settled(id);
    });

    it('table and queue both unavailable for longer than the lease: the message comes back, the other worker reclaims the task (a crash) and runs it, the first is fenced off at its success write; two runs, one outcome', async () => {
      const { id, body } = keyed('sleep', { ms: 9_000, retry_ms: 2_000 }, { priority: 'high' });
      const beats = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('heartbeat')),
        error: 'unavailable',
        times: 1_000,
      });
      // The batch's hold cannot extend the message's visibility either.
      const visibility = await inject({ command: 'ChangeMessageVisibilityBatch', error: 'unavailable', times: 1_000 });
      await post202(body, id);
      // The message comes back after the lease it was received with (3 s) and is reclaimed; attempt 2 runs
      // beside attempt 1 (one shared crash does not make it a suspect); attempt 1 (9 s) is fenced
      // off at its success write.
      await bench.started(id, 2, 30_000);
      app.clear(); // attempt 2's heartbeats go through
      expect(beats.fired).toBeGreaterThanOrEqual(3);
      expect(visibility.fired).toBeGreaterThanOrEqual(3);
      expect(logsFor('reclaimed a task whose worker vanished', id)).toHaveLength(1);
      expect(await bench.record(id)).toMatchObject({ lease_token: 2, attempts: 2 });
      await waitFor(
        'attempt 1 to be fenced off',
        () => (logsFor('write fenced off: lease lost to another worker', id).length === 1 ? true : undefined),
        { timeoutMs: 30_000 },
      );
      const done = await bench.until(id, ['succeeded'], 30_000);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect(runAttempts(id)).toEqual([1, 2]);
      expect(await bench.record(id)).toMatchObject({
        status: 'succeeded',
        lease_token: 2,
        unattributed_crashes: 1,
        result: { attempt: 2 },
      });
      await settled(id);
    });

    it('ChangeMessageVisibilityBatch throttled at the batch hold’s first extension (a poller receives with one lease: no request before): logged, the claim written at the first heartbeat; the task succeeds once', async () => {
      const { id, body } = keyed('sleep', { ms: 2_500 });
      const reads = app.watch('GetItem', forTask(id));
      const visibility = app.watch('ChangeMessageVisibilityBatch');
      const f = await inject({ command: 'ChangeMessageVisibilityBatch', error: 'throttling' });
      await post202(body, id);
      const done = await bench.until(id, ['succeeded']);
      expect(f.fired).toBe(1);
      // The first extension came a period (lease/3) after the batch began, after the read that let the task run.
      expect((visibility.at[0] ?? 0) - (reads.at[0] ?? 0)).toBeGreaterThanOrEqual(900);
      expect(done.attempts).toBe(1);
      // The hold names the queue, not the task (it extends a whole batch at once).
      expect(bench.log.entries.some((e) => e.message.includes('could not extend message visibility'))).toBe(true);
      expect((await bench.record(id))?.lease_token).toBe(1);
      expect(runs(id)).toBe(1);
      await settled(id);
    });
  });

  describe('consumer: the outcome write', () => {
    it('500 on the success write of a lazy claim: nothing recorded, the message comes back after a short backoff, is claimed by a write and runs again (at-least-once); one outcome, attempt 1 twice', async () => {
      const { id, body } = keyed('sleep', { ms: 0 });
      const writes = watchWrites(id);
      const f = await inject({ command: 'UpdateItem', match: forTask(id, isUpdate('succeed')), error: 'internal' });
      await post202(body, id);
      const done = await bench.until(id, ['succeeded'], 20_000);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(1);
      expect(done.history.map((h) => h.outcome)).toEqual(['succeeded']);
      expect(runAttempts(id)).toEqual([1, 1]); // the lost run left no trace in the record
      expect(kinds(writes)).toEqual(['succeed', 'claim', 'succeed']);
      expect(backoffs(id)).toHaveLength(1);
      expect((await bench.record(id))?.lease_token).toBe(1);
      await settled(id);
    });

    it('500 on the success write of a claim written at the first heartbeat: the message comes back, waits out the lease, and the task is reclaimed (a crash) and runs again; one outcome', async () => {
      const { id, body } = keyed('sleep', { ms: 2_500, retry_ms: 0 });
      const f = await inject({ command: 'UpdateItem', match: forTask(id, isUpdate('succeed')), error: 'internal' });
      await post202(body, id);
      const done = await bench.until(id, ['succeeded'], 30_000);
      expect(f.fired).toBe(1);
      expect(updatedAttributes(f.failedInputs[0] ?? {}).set.has('attempts')).toBe(false); // fenced by the lease, not lazy
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['crashed', 'succeeded']);
      expect(runAttempts(id)).toEqual([1, 2]);
      expect(backoffs(id)).toHaveLength(1);
      expect(logsFor('reclaimed a task whose worker vanished', id)).toHaveLength(1);
      expect(await bench.record(id)).toMatchObject({ lease_token: 2, unattributed_crashes: 1 });
      await settled(id);
    });

    it('success write landed but timed out: the message comes back after a short backoff and is dropped (task is succeeded); one run', async () => {
      const { id, body } = keyed('sleep', { ms: 0 });
      const f = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('succeed')),
        error: 'timeout',
        phase: 'after',
      });
      await post202(body, id);
      await bench.until(id, ['succeeded']);
      expect(f.fired).toBe(1);
      await settled(id);
      expect(backoffs(id)).toHaveLength(1);
      expect(dropReasons(id)).toEqual(['task is succeeded']);
      expect(runs(id)).toBe(1);
      expect((await bench.record(id))?.attempts).toBe(1);
    });

    it('500 on the failure write of a permanent error (lazy claim): the message comes back, is claimed by a write and the attempt is repeated, then failed; one dead letter', async () => {
      const { id, body } = keyed('soak', { poison: true });
      const writes = watchWrites(id);
      const f = await inject({ command: 'UpdateItem', match: forTask(id, isUpdate('fail')), error: 'internal' });
      await post202(body, id);
      const done = await bench.until(id, ['failed'], 20_000);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(1);
      expect(done.last_error).toMatchObject({ code: 'POISON', retryable: false });
      expect(done.history.map((h) => h.outcome)).toEqual(['failed']);
      expect(runAttempts(id)).toEqual([1, 1]);
      await settled(id); // the dead letter is out once the outbox entry is gone
      expect(kinds(writes)).toEqual(['fail', 'claim', 'fail', 'outboxRemove']);
      expect(await bench.drainDeadLetters('normal', id)).toHaveLength(1);
    });

    it('DeleteMessageBatch (the ack) unavailable: the message comes back after the queue’s visibility timeout and is dropped; one run', async () => {
      const f = await inject({ command: 'DeleteMessageBatch', error: 'unavailable' });
      const id = await submitOne('sleep', { ms: 0 });
      await bench.until(id, ['succeeded']);
      await settled(id); // the ack comes after the success write: count the fault once it is back and dropped
      expect(f.fired).toBe(1);
      expect(bench.logged('event source: delete failed')).toBe(true);
      expect(dropReasons(id)).toEqual(['task is succeeded']);
      expect(runs(id)).toBe(1);
    });
  });

  describe('retries: the next dispatch is sent first, then the retry is written', () => {
    it('SQS unavailable for the retry’s message: the retry is written with an outbox entry; the sweeper sends it and removes the entry; two runs', async () => {
      const { id, body } = keyed('soak', { fail_attempts: 1, ms: 2_500 });
      const sends = watchSends(id);
      const retries = app.watch('UpdateItem', forTask(id, isUpdate('retry')));
      const f = await inject({ command: 'SendMessage', match: forTask(id, toMain()), nth: 2, error: 'unavailable' });
      await post202(body, id);
      await bench.started(id, 2, 15_000);
      expect(f.fired).toBe(1);
      expect(logsFor('send failed; the task waits in the outbox for the sweeper', id)).toHaveLength(1);
      expect(retries.count).toBe(1);
      expect(updatedAttributes(retries.inputs[0] ?? {}).set.has('outbox_pk')).toBe(true);
      // Removed by the sweeper after its send, while attempt 2 still runs.
      expect(FINISHED).not.toContain((await entryRemoved(id)).status);
      const done = await bench.until(id, ['succeeded'], 15_000);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['retrying', 'succeeded']);
      expect(runAttempts(id)).toEqual([1, 2]);
      const [d0, failed, swept] = dispatches(sends);
      expect(sends.count).toBe(3); // submit, the failed send of dispatch 1, the sweeper's
      expect(swept).toBe(failed);
      expect(dispatchSequence(swept ?? '')).toBe(dispatchSequence(d0 ?? '') + 1);
      await settled(id);
    });

    it('retry’s message sent but timed out: the retry is written with an outbox entry all the same, so the sweeper sends a second copy; one runs attempt 2, the other is dropped; two runs', async () => {
      const { id, body } = keyed('soak', { fail_attempts: 1, ms: 2_500 }, { priority: 'low' });
      const sends = watchSends(id);
      const retries = app.watch('UpdateItem', forTask(id, isUpdate('retry')));
      const f = await inject({
        command: 'SendMessage',
        match: forTask(id, toMain()),
        nth: 2,
        error: 'timeout',
        phase: 'after',
      });
      await post202(body, id);
      await bench.started(id, 1, 10_000);
      // Queued behind attempt 1: keeps the low consumer busy while the sweeper sends the copy.
      const blocker = await submitOne('sleep', { ms: 3_000 }, { priority: 'low' });
      const done = await bench.until(id, ['succeeded'], 30_000);
      await settled(id, blocker);
      expect(f.fired).toBe(1);
      expect(updatedAttributes(retries.inputs[0] ?? {}).set.has('outbox_pk')).toBe(true);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['retrying', 'succeeded']);
      expect(runAttempts(id)).toEqual([1, 2]);
      const [, sent, copy] = dispatches(sends);
      expect(sends.count).toBe(3);
      expect(copy).toBe(sent);
      expect(dropReasons(id)).toEqual(['task is succeeded']);
    });

    it('retry’s message sent but the retry write fails: the old message comes back and the attempt is claimed and repeated; the message sent ahead (the next dispatch) is dropped; one outcome per attempt', async () => {
      const { id, body } = keyed('soak', { fail_attempts: 1 });
      const sends = watchSends(id);
      const writes = watchWrites(id);
      const f = await inject({ command: 'UpdateItem', match: forTask(id, isUpdate('retry')), error: 'internal' });
      await post202(body, id);
      const done = await bench.until(id, ['succeeded'], 30_000);
      await settled(id);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['retrying', 'succeeded']);
      expect(runAttempts(id)).toEqual([1, 1, 2]);
      expect(kinds(writes)).toEqual(['retry', 'claim', 'retry', 'succeed']);
      expect(backoffs(id)).toHaveLength(1);
      const [d0, orphan, next] = dispatches(sends);
      expect(sends.count).toBe(3);
      expect(dispatchSequence(orphan ?? '')).toBe(dispatchSequence(d0 ?? '') + 1);
      expect(dispatchSequence(next ?? '')).toBe(dispatchSequence(d0 ?? '') + 1);
      expect(next).not.toBe(orphan);
      expect((await bench.record(id))?.dispatch_id).toBe(next);
      // The orphan: superseded once the repeated attempt's retry landed (or, had the write not
      // come within the send-first window, dropped as still ahead of its record).
      const drops = dropReasons(id);
      expect(drops).toHaveLength(1);
      expect(['superseded by a newer dispatch', 'the record is still at an earlier dispatch']).toContain(drops[0]);
    });

    it('retry write landed but timed out: the old message comes back and is dropped as superseded; the next dispatch runs attempt 2; two runs', async () => {
      const { id, body } = keyed('soak', { fail_attempts: 1 });
      const f = await inject({
        command: 'UpdateItem',
        match: forTask(id, isUpdate('retry')),
        error: 'timeout',
        phase: 'after',
      });
      await post202(body, id);
      const done = await bench.until(id, ['succeeded'], 20_000);
      await settled(id);
      expect(f.fired).toBe(1);
      expect(done.attempts).toBe(2);
      expect(done.history.map((h) => h.outcome)).toEqual(['retrying', 'succeeded']);
      expect(runAttempts(id)).toEqual([1, 2]);
      expect(backoffs(id)).toHaveLength(1);
      expect(dropReasons(id)).toEqual(['superseded by a newer dispatch']);
    });
  });

  describe('dead letters: the DLQ send', () => {
    it('throttled: the task is failed at once and the sweeper writes the dead letter', async () => {
      const f = await inject({ command: 'SendMessage', match: isSendTo(deadLetterQueues), error: 'throttling' });
      const id = await submitOne('soak', { poison: true }, { priority: 'low' });
      await bench.until(id, ['failed']);
      await settled(id); // outbox entry cleared once the sweeper sent the dead letter
      expect(f.fired).toBe(1); // the direct send follows the failure write: counted once the task settled
      expect(logsFor('send failed; the sweeper will send it', id)).toHaveLength(1);
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
}
