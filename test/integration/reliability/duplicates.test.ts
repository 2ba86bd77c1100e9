/**
 * The same message delivered twice at once, driven straight through `TaskConsumer.processBatch`
 * (as two concurrent Lambda invocations, and as two records of one batch) against the real
 * emulated table, via `createKajOnAws`.
 */
import { ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKajOnAws, type Kaj } from '../../../shared/app.js';
import { METRICS } from '../../../shared/config/metrics.js';
import { RecordingLogger, type Metrics } from '../../../shared/runtime/logger.js';
import { targets } from '../../support/targets.js';
import { waitFor } from '../../support/wait.js';
import { Bench } from './harness.js';
import { createRegistry } from './worker-tasks.js';

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

  function record(m: Message, copy: string): SQSRecord {
    return {
      messageId: `${m.MessageId}-${copy}`,
      receiptHandle: m.ReceiptHandle ?? '',
      body: m.Body ?? '',
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: '0',
        SenderId: 'test',
        ApproximateFirstReceiveTimestamp: '0',
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: bench.runtime.resources.queueArns.normal,
      awsRegion: 'us-east-1',
    };
  }

  // On moto too: the launcher (local/moto_server.py) serves one request at a time, so its
  // conditional UpdateItem is atomic like DynamoDB's; `python3 -m moto.server` alone let both
  // concurrent claims pass their condition.
  it('two concurrent invocations with the same message: one run, one success write; the other copy is deferred, then dropped', async () => {
    consumer();
    const { id, message } = await submitAndReceive({ ms: 500 });
    const a = record(message, 'a');
    const b = record(message, 'b');
    const [ra, rb] = await Promise.all([
      kaj.processBatch({ Records: [a] }, ctx),
      kaj.processBatch({ Records: [b] }, ctx),
    ]);

    // Exactly one copy was acknowledged (no batch item failure); the other was handed back.
    const failed = [...ra.batchItemFailures, ...rb.batchItemFailures].map((f) => f.itemIdentifier);
    expect(failed).toHaveLength(1);
    expect(bench.starts(id)).toHaveLength(1);
    expect(metrics.get(METRICS.succeeded)).toBe(1);
    expect(logger.entries.filter((e) => e.message === 'deferred: task held by another worker')).toHaveLength(1);
    expect(await bench.record(id)).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 1 });
    expect((await bench.record(id))?.history).toHaveLength(1);

    // The deferred copy comes back later: now it is dropped and acknowledged, and nothing runs.
    const late = await kaj.processBatch({ Records: [failed[0] === a.messageId ? a : b] }, ctx);
    expect(late.batchItemFailures).toEqual([]);
    expect(
      logger.entries.some((e) => e.message === 'message dropped' && e.fields?.reason === 'task is succeeded'),
    ).toBe(true);
    expect(metrics.get(METRICS.claimsRejected)).toBe(1);
    expect(bench.starts(id)).toHaveLength(1);
    expect(metrics.get(METRICS.succeeded)).toBe(1);
  });

  it('two copies in one batch: one run, one success write', async () => {
    consumer();
    const { id, message } = await submitAndReceive({ ms: 300 });
    const res = await kaj.processBatch({ Records: [record(message, 'a'), record(message, 'b')] }, ctx);
    expect(res.batchItemFailures).toHaveLength(1);
    expect(bench.starts(id)).toHaveLength(1);
    expect(metrics.get(METRICS.succeeded)).toBe(1);
    expect(await bench.record(id)).toMatchObject({ status: 'succeeded', attempts: 1, lease_token: 1 });
  });

  it('a stale owner’s writes are fenced against the real table: heartbeat and completion both rejected after a takeover', async () => {
    consumer();
    const id = await bench.submit('sleep', { ms: 0 });
    const submitted = await bench.record(id);
    const first = await kaj.lifecycle.claim(id, submitted?.dispatch_id ?? '');
    expect(first.kind).toBe('claimed');
    if (first.kind !== 'claimed') return;
    // The first owner stalls past its lease; a second claim of the same dispatch takes over.
    await waitFor(
      'the lease to expire',
      async () => (((await bench.record(id))?.lease_until ?? Infinity) < Date.now() - 50 ? true : undefined),
      {
        timeoutMs: 10_000,
      },
    );
    const second = await kaj.lifecycle.claim(id, submitted?.dispatch_id ?? '');
    // The first owner did not run alone (no solo mark), so its crash is recorded but not held against the task.
    expect(second).toMatchObject({ kind: 'claimed', record: { lease_token: 2, attempts: 2, unattributed_crashes: 1 } });
    if (second.kind === 'claimed') expect(second.record.crashes ?? 0).toBe(0);
    await expect(kaj.lifecycle.heartbeat(first.record)).rejects.toMatchObject({
      name: 'LeaseLostError',
      leaseToken: 1,
    });
    await expect(kaj.lifecycle.succeed(first.record, { from: 'stale' }, 1)).rejects.toMatchObject({
      name: 'LeaseLostError',
    });
    expect(metrics.get(METRICS.fencedWrites)).toBe(2);
    if (second.kind !== 'claimed') return;
    await kaj.lifecycle.succeed(second.record, { from: 'new owner' }, 1);
    expect(await bench.record(id)).toMatchObject({
      status: 'succeeded',
      result: { from: 'new owner' },
      lease_token: 2,
    });
  });
});
