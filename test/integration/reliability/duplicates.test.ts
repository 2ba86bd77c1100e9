/**
 * The same message delivered twice at once, driven straight through `TaskConsumer.processBatch`
 * (as two concurrent Lambda invocations, and as two records of one batch) against the real
 * emulated table, via `createKajOnAws`; and stale owners fenced off.
 *
 * Claims are lazy (docs/reliability.md, "Lazy claims"): a first delivery runs on one read, and
 * its outcome write is its claim. Two copies delivered at once therefore may both run the
 * handler (guarantee 3); exactly one outcome is recorded: the other copy's outcome write (or, for
 * a run longer than a heartbeat, its claim at the first heartbeat) is refused, it is left on the
 * queue, and dropped when it comes back. The run counts are logged and asserted exactly for
 * what the timing makes certain, within [1, 2] otherwise.
 */
import { ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKajOnAws, type Kaj } from '../../../shared/service/all-in-one.js';
import { METRICS } from '../../../shared/config/metrics.js';
import { RecordingLogger, type Metrics } from '../../../shared/runtime/logger.js';
import { targets } from '../../support/targets.js';
import { waitFor } from '../../../testing/wait.js';
import { Bench } from '../../../testing/harness.js';
import { lambdaSqsRecord } from '../../../testing/fixtures.js';
import { createRegistry } from '../../../testing/worker-tasks.js';
import { claimAndStart } from '../../support/claims.js';

const ctx = { getRemainingTimeInMillis: () => 300_000 };

class CountingMetrics implements Metrics {
  readonly counts = new Map<string, number>();
  count(name: string, _type: string | undefined, value = 1): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + value);
  }
  durationMs(): void {}
  get(name: string): number {
    return this.counts.get(name) ?? 0;
  }
}

describe.each(targets())('duplicate deliveries on $name', (target) => {
  let bench: Bench;
  let kaj: Kaj;
  let metrics: CountingMetrics;
  let logger: RecordingLogger;

  beforeAll(async () => {
    bench = await Bench.start(target, { tag: 'dup', lease: 3 });
  });
  afterEach(async (c) => bench?.afterEach(c));
  afterAll(async () => bench?.stop());

  /** A fresh consumer (its own metrics and log) over the bench's real table and queues. */
  function consumer(): Kaj {
    metrics = new CountingMetrics();
    logger = new RecordingLogger();
    const { sqs, dynamodb } = bench.runtime.clients;
    kaj = createKajOnAws(bench.runtime.config, createRegistry({ execLog: bench.execLogPath, label: 'direct' }), {
      sqs,
      dynamodb,
      metrics,
      logger,
    });
    return kaj;
  }

  /** Submits a task and takes its message off the queue, as the event source would. */
  async function submitAndReceive(payload: unknown): Promise<{ id: string; message: Message }> {
    const id = await bench.submit('sleep', payload);
    const url = bench.runtime.resources.queueUrls.normal;
    const message = await waitFor('the task message', async () => {
      const out = await bench.runtime.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1, WaitTimeSeconds: 1, VisibilityTimeout: 30 }),
      );
      return out.Messages?.find((m) => m.Body?.includes(id));
    });
    return { id, message };
  }

  /** One copy of `m` as the event source hands it over; `receiveCount` 1 is a first delivery. */
  function record(m: Message, copy: string, receiveCount = 1): SQSRecord {
    return lambdaSqsRecord({
      messageId: `${m.MessageId}-${copy}`,
      receiptHandle: m.ReceiptHandle ?? '',
      body: m.Body ?? '',
      receiveCount,
      eventSourceARN: bench.runtime.resources.queueArns.normal,
    });
  }

  /** Log entries of the consumer with this message. */
  const logged = (message: string) => logger.entries.filter((e) => e.message === message);

  // On moto too: the launcher (local/moto_server.py) serves one request at a time, so its
  // conditional UpdateItem is atomic like DynamoDB's; `python3 -m moto.server` alone let both
  // concurrent outcome writes pass their condition.
  it('two concurrent invocations with the same message: both may run (lazy claims), one success write; the other copy is fenced off, left, and dropped when it comes back', async () => {
    consumer();
    const { id, message } = await submitAndReceive({ ms: 500 });
    const a = record(message, 'a');
    const b = record(message, 'b');
    const [ra, rb] = await Promise.all([
      kaj.processBatch({ Records: [a] }, ctx),
      kaj.processBatch({ Records: [b] }, ctx),
    ]);

    const runs = bench.starts(id).length;
    console.info(`[${bench.target}] two concurrent copies: ${runs} run(s) of the handler`);
    // Both read the task before either wrote (the handler takes 500 ms, well under a heartbeat):
    // both ran. Only the timing makes that so; one run (the second read after the first write,
    // and then dropped at once) would be as correct.
    expect(runs).toBeGreaterThanOrEqual(1);
    expect(runs).toBeLessThanOrEqual(2);
    expect(metrics.get(METRICS.succeeded)).toBe(1);
    const stored = await bench.record(id);
    // One outcome, and it was the claim too: no claim write (lease_token 0), attempt 1.
    expect(stored).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 0 });
    expect(stored?.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'succeeded']]);
    const failed = [...ra.batchItemFailures, ...rb.batchItemFailures].map((f) => f.itemIdentifier);
    if (runs === 2) {
      // The loser's outcome write was refused (the task was no longer queued): fenced off, and
      // its copy left on the queue rather than deleted.
      expect(failed).toHaveLength(1);
      expect(metrics.get(METRICS.fencedWrites)).toBe(1);
      expect(logged('write fenced off: lease lost to another worker')).toHaveLength(1);
      // The copy comes back later (a redelivery): dropped and acknowledged, nothing runs.
      const late = await kaj.processBatch({ Records: [record(message, 'late', 2)] }, ctx);
      expect(late.batchItemFailures).toEqual([]);
    } else {
      expect(failed).toEqual([]);
    }
    expect(logged('message dropped').filter((e) => e.fields?.reason === 'task is succeeded')).toHaveLength(1);
    expect(metrics.get(METRICS.claimsRejected)).toBe(1);
    expect(bench.starts(id)).toHaveLength(runs);
    expect(bench.executions(id).filter((e) => e.event === 'E')).toHaveLength(runs);
    expect(metrics.get(METRICS.succeeded)).toBe(1);
  });

  it('two copies in one batch: both may run, one success write; the other copy is left for redelivery', async () => {
    consumer();
    const { id, message } = await submitAndReceive({ ms: 300 });
    const res = await kaj.processBatch({ Records: [record(message, 'a'), record(message, 'b')] }, ctx);
    const runs = bench.starts(id).length;
    console.info(`[${bench.target}] two copies in one batch: ${runs} run(s) of the handler`);
    expect(runs).toBeGreaterThanOrEqual(1);
    expect(runs).toBeLessThanOrEqual(2);
    // Two runs: the loser is fenced off and left; one run: the second copy was dropped at once.
    expect(res.batchItemFailures).toHaveLength(runs - 1);
    expect(metrics.get(METRICS.fencedWrites)).toBe(runs - 1);
    expect(metrics.get(METRICS.succeeded)).toBe(1);
    const stored = await bench.record(id);
    expect(stored).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 0 });
    expect(stored?.history).toHaveLength(1);
  });

  it('two copies of a task longer than a heartbeat: both start, the first heartbeat writes the claim for one, the other is fenced off and aborted; one completion, one outcome', async () => {
    consumer();
    const { id, message } = await submitAndReceive({ ms: 2_500 }); // heartbeat at 1 s (lease 3 s)
    const [ra, rb] = await Promise.all([
      kaj.processBatch({ Records: [record(message, 'a')] }, ctx),
      kaj.processBatch({ Records: [record(message, 'b')] }, ctx),
    ]);
    // Both read the task within milliseconds of each other, 1 s before any write.
    expect(bench.starts(id)).toHaveLength(2);
    // One heartbeat wrote the claim (queued → running, lease_token 1); the other's claim write
    // found the task running, lost, and aborted its (cooperative) handler: it never finished.
    expect(bench.executions(id).filter((e) => e.event === 'E')).toHaveLength(1);
    expect([...ra.batchItemFailures, ...rb.batchItemFailures]).toHaveLength(1);
    expect(metrics.get(METRICS.fencedWrites)).toBe(1);
    expect(metrics.get(METRICS.succeeded)).toBe(1);
    const stored = await bench.record(id);
    expect(stored).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 1 });
    expect(stored?.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'succeeded']]);
  });

  it('a stale owner’s writes are fenced against the real table: heartbeat and completion both rejected after a takeover', async () => {
    consumer();
    const id = await bench.submit('sleep', { ms: 0 });
    const submitted = await bench.record(id);
    // A redelivery (receive count > 1) is claimed by a write at once: running, lease_token 1.
    const first = await claimAndStart(kaj.lifecycle, id, submitted?.dispatch_id ?? '', { receiveCount: 2 });
    expect(first).toMatchObject({ kind: 'claimed', record: { status: 'running', lease_token: 1, attempts: 1 } });
    if (first.kind !== 'claimed') return;
    // The first owner stalls past its lease; a second claim of the same dispatch takes over.
    await waitFor(
      'the lease to expire',
      async () => (((await bench.record(id))?.lease_until ?? Infinity) < Date.now() - 50 ? true : undefined),
      {
        timeoutMs: 10_000,
      },
    );
    const second = await claimAndStart(kaj.lifecycle, id, submitted?.dispatch_id ?? '', { receiveCount: 3 });
    // The first owner did not run alone (no solo mark), so its crash is recorded but not held against the task.
    expect(second).toMatchObject({ kind: 'claimed', record: { lease_token: 2, attempts: 2, unattributed_crashes: 1 } });
    if (second.kind === 'claimed') expect(second.record.crashes ?? 0).toBe(0);
    await expect(kaj.lifecycle.leases.heartbeat(first.record)).rejects.toMatchObject({
      name: 'LeaseLostError',
      leaseToken: 1,
    });
    await expect(kaj.lifecycle.outcomes.succeed(first.record, { from: 'stale' }, 1)).rejects.toMatchObject({
      name: 'LeaseLostError',
    });
    expect(metrics.get(METRICS.fencedWrites)).toBe(2);
    if (second.kind !== 'claimed') return;
    await kaj.lifecycle.outcomes.succeed(second.record, { from: 'new owner' }, 1);
    expect(await bench.record(id)).toMatchObject({
      status: 'succeeded',
      result: { from: 'new owner' },
      lease_token: 2,
    });
  });

  it('a lazy claim overtaken by a redelivery’s written claim: the lazy owner’s heartbeat and outcome are both rejected; the writer’s outcome stands', async () => {
    consumer();
    const id = await bench.submit('sleep', { ms: 0 });
    const submitted = await bench.record(id);
    const dispatch = submitted?.dispatch_id ?? '';
    // A first delivery: one read, nothing written; the attempt's view says queued, attempt 1.
    const lazy = await claimAndStart(kaj.lifecycle, id, dispatch, { receiveCount: 1 });
    expect(lazy).toMatchObject({ kind: 'claimed', record: { status: 'queued', attempts: 1, lease_token: 0 } });
    expect(await bench.record(id)).toMatchObject({ status: 'queued', attempts: 0, lease_token: 0 });
    // A redelivery of the same message meanwhile is claimed by a write.
    const written = await claimAndStart(kaj.lifecycle, id, dispatch, { receiveCount: 2 });
    expect(written).toMatchObject({ kind: 'claimed', record: { status: 'running', attempts: 1, lease_token: 1 } });
    if (lazy.kind !== 'claimed' || written.kind !== 'claimed') return;
    // The lazy owner's first heartbeat (its claim write) and its outcome are conditioned on the
    // task still waiting at this dispatch: both refused.
    await expect(kaj.lifecycle.leases.heartbeat(lazy.record)).rejects.toMatchObject({ name: 'LeaseLostError' });
    await expect(kaj.lifecycle.outcomes.succeed(lazy.record, { from: 'lazy' }, 1)).rejects.toMatchObject({
      name: 'LeaseLostError',
    });
    expect(metrics.get(METRICS.fencedWrites)).toBe(2);
    await kaj.lifecycle.outcomes.succeed(written.record, { from: 'writer' }, 1);
    const stored = await bench.record(id);
    expect(stored).toMatchObject({ status: 'succeeded', result: { from: 'writer' }, attempts: 1, lease_token: 1 });
    expect(stored?.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'succeeded']]);
  });
});
