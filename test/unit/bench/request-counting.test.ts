import { describe, expect, it } from 'vitest';
import {
  batchSendRequests,
  CountingTaskQueue,
  esmRequests,
  idleReceivesPerDay,
  messagePayloadBytes,
  SqsLedger,
  sqsBilledRequests,
} from '../../../bench/lib/request-counting.js';
import { MemoryTaskQueue } from '../../../testing/memory-task-queue.js';

const message = (i: number) => ({ task_id: `t_${i}`, dispatch_id: `d_${i}`, timeout_seconds: 60 });

describe('Function: sqsBilledRequests', () => {
  it('bills each started 64 KB chunk of a payload as one request, at least one', () => {
    expect(sqsBilledRequests(0)).toBe(1);
    expect(sqsBilledRequests(65_536)).toBe(1);
    expect(sqsBilledRequests(65_537)).toBe(2);
    expect(sqsBilledRequests(256 * 1024)).toBe(4);
  });

  it('sizes a message as its body plus each attribute name, type and value', () => {
    expect(messagePayloadBytes('{}', { k: { dataType: 'String', value: 'v' } })).toBe(2 + 1 + 6 + 1);
  });

  it('makes one request per 10 entries of a batch send, billed by the batch payload', () => {
    expect(batchSendRequests(Array(25).fill(100))).toEqual({ requests: 3, billed: 3 });
    expect(batchSendRequests(Array(10).fill(10_000))).toEqual({ requests: 1, billed: 2 });
    expect(batchSendRequests([])).toEqual({ requests: 0, billed: 0 });
  });
});

describe('Function: esmRequests / idleReceivesPerDay (the event source mapping model)', () => {
  it('charges each delivered / acknowledged message a tenth of a receive / delete batch', () => {
    expect(esmRequests(10, 10, 10)).toEqual({ receive: 1, deleteBatch: 1 });
    expect(esmRequests(20, 10, 10)).toEqual({ receive: 2, deleteBatch: 1 });
    // A receive returns at most 10 messages whatever the batch size.
    expect(esmRequests(100, 100, 100)).toEqual({ receive: 10, deleteBatch: 10 });
    expect(esmRequests(5, 5, 5)).toEqual({ receive: 1, deleteBatch: 1 });
  });

  it('counts a 20 s long poll per poller at rest', () => {
    expect(idleReceivesPerDay(1)).toBe(4320);
    expect(idleReceivesPerDay(5)).toBe(21_600);
  });
});

describe('Class: CountingTaskQueue', () => {
  it('records one request per port call and forwards it', async () => {
    const inner = new MemoryTaskQueue();
    const ledger = new SqsLedger();
    const queue = new CountingTaskQueue(inner, ledger);
    ledger.tag = 'api';
    await queue.send('normal', message(1), { delaySeconds: 0, type: 'send_email' });
    await queue.sendDead({ ...message(2), type: 'x', priority: 'high', attempts: 1, reason: 'r', failed_at: 'now' });
    const [received] = inner.receive('normal');
    await queue.changeVisibility('normal', received?.receiptHandle ?? '', 60);
    expect(ledger.calls.map((c) => [c.api, c.requests, c.billed, c.by, c.tag])).toEqual([
      ['SendMessage', 1, 1, 'kaj', 'api'],
      ['SendMessage', 1, 1, 'kaj', 'api'],
      ['ChangeMessageVisibility', 1, 1, 'kaj', 'api'],
    ]);
    expect(inner.queued('high', { dead: true })).toHaveLength(1);
  });

  it('counts a batched send as one request per 10 entries, and enqueues every entry', async () => {
    const inner = new MemoryTaskQueue();
    const ledger = new SqsLedger();
    const queue = new CountingTaskQueue(inner, ledger);
    const entries = Array.from({ length: 12 }, (_, i) => ({ message: message(i), delaySeconds: 0, type: 'x' }));
    await queue.sendMany('low', entries);
    expect(ledger.calls).toMatchObject([{ api: 'SendMessageBatch', requests: 2, billed: 2 }]);
    expect(inner.queued('low')).toHaveLength(12);
  });
});
