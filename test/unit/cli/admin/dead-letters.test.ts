import { describe, expect, it } from 'vitest';
import { matches, parseDeadEntry, summarize, type DlqMessage } from '../../../../cli/admin/dead-letters.js';
import { listDeadLetters } from '../../../../cli/admin/list.js';
import { MESSAGE_ATTRIBUTES as A } from '../../../../shared/task/message.js';
import { deadTask, world } from './fakes.js';

const msg = (body: string, attributes: Record<string, string> = {}): DlqMessage => ({
  messageId: 'm1',
  receiptHandle: 'h1',
  body,
  attributes,
});

const letter = {
  task_id: 't_1',
  dispatch_id: 'd1',
  type: 'send_email',
  priority: 'high',
  attempts: 6,
  reason: 'provider rejected recipient',
  last_error: { name: 'PermanentError', message: 'provider rejected recipient', retryable: false, code: 'HTTP_400' },
  failed_at: '2026-01-01T00:00:00.000Z',
};

describe('parseDeadEntry', () => {
  it('reads a consumer dead letter: origin is the letter’s priority', () => {
    const e = parseDeadEntry('normal', msg(JSON.stringify(letter)));
    expect(e).toMatchObject({
      kind: 'dead_letter',
      taskId: 't_1',
      dispatchId: 'd1',
      originPriority: 'high',
      dlq: 'normal',
    });
    expect(summarize(e)).toMatchObject({
      type: 'send_email',
      attempts: 6,
      deadSince: letter.failed_at,
      lastError: 'HTTP_400 PermanentError: provider rejected recipient',
    });
  });

  it('reads a message SQS moved (maxReceiveCount): origin is the DLQ it sits in, details from the record', () => {
    const e = parseDeadEntry('low', msg(JSON.stringify({ task_id: 't_2', dispatch_id: 'd2', timeout_seconds: 30 })));
    expect(e).toMatchObject({ kind: 'moved_by_sqs', taskId: 't_2', originPriority: 'low' });
    expect(summarize(e).type).toBeUndefined();
    e.record = {
      type: 'make_thumbnails',
      attempts: 0,
      updated_at: '2026-01-02T00:00:00.000Z',
      priority: 'low',
    } as never;
    expect(summarize(e)).toMatchObject({ type: 'make_thumbnails', attempts: 0, deadSince: '2026-01-02T00:00:00.000Z' });
    const withAttr = parseDeadEntry(
      'low',
      msg(JSON.stringify({ task_id: 't_2', dispatch_id: 'd2' }), { [A.priority]: 'high' }),
    );
    expect(withAttr.originPriority).toBe('high');
  });

  it('keeps anything else as unreadable', () => {
    expect(parseDeadEntry('high', msg('not json')).kind).toBe('unreadable');
    expect(parseDeadEntry('high', msg('{"hello":1}')).kind).toBe('unreadable');
  });
});

describe('matches', () => {
  const e = parseDeadEntry('high', msg(JSON.stringify(letter)));
  it('filters by type, error text (case-insensitive, name and code too), since and task id', () => {
    expect(matches(e, {})).toBe(true);
    expect(matches(e, { type: 'send_email' })).toBe(true);
    expect(matches(e, { type: 'other' })).toBe(false);
    expect(matches(e, { errorContains: 'REJECTED' })).toBe(true);
    expect(matches(e, { errorContains: 'http_400' })).toBe(true);
    expect(matches(e, { errorContains: 'timeout' })).toBe(false);
    expect(matches(e, { since: Date.parse(letter.failed_at) })).toBe(true);
    expect(matches(e, { since: Date.parse(letter.failed_at) + 1 })).toBe(false);
    expect(matches(e, { taskIds: ['t_1', 't_9'] })).toBe(true);
    expect(matches(e, { taskIds: ['t_9'] })).toBe(false);
    expect(matches(e, { type: 'send_email', errorContains: 'timeout' })).toBe(false);
  });
  it('an unreadable message matches only an empty filter', () => {
    const u = parseDeadEntry('high', msg('x'));
    expect(matches(u, {})).toBe(true);
    expect(matches(u, { type: 'send_email' })).toBe(false);
  });
});

describe('listDeadLetters', () => {
  it('changes nothing and releases every message it received', async () => {
    const w = world();
    for (let i = 0; i < 25; i += 1) await deadTask(w, { type: i % 5 === 0 ? 'make_thumbnails' : 'send_email' });
    const listing = await listDeadLetters(
      { dlq: w.dlq, store: w.store },
      { queues: ['high', 'normal', 'low'], filter: { type: 'make_thumbnails' }, visibilitySeconds: 30, waitSeconds: 0 },
    );
    expect(listing.tasks).toHaveLength(5);
    expect(listing.scan).toMatchObject({ received: 25, released: 25 });
    expect(w.dlq.visible('normal')).toHaveLength(25);
    expect(w.dlq.all().every((m) => m.receiveCount === 1)).toBe(true);
    expect(w.store.updates).toBe(0);
  });

  it('stops at the limit and releases the rest', async () => {
    const w = world();
    for (let i = 0; i < 15; i += 1) await deadTask(w);
    const listing = await listDeadLetters(
      { dlq: w.dlq, store: w.store },
      { queues: ['normal'], filter: {}, limit: 3, visibilitySeconds: 30, waitSeconds: 0 },
    );
    expect(listing.tasks).toHaveLength(3);
    expect(w.dlq.visible('normal')).toHaveLength(15);
  });

  it('a message seen again after its visibility ran out is not listed twice', async () => {
    const w = world();
    for (let i = 0; i < 12; i += 1) await deadTask(w);
    const slowStore = {
      get: async (id: string) => {
        w.clock.advance(31_000); // every record read outlasts the 30 s visibility
        return w.store.get(id);
      },
    };
    const listing = await listDeadLetters(
      { dlq: w.dlq, store: slowStore },
      {
        queues: ['normal'],
        filter: {},
        visibilitySeconds: 30,
        waitSeconds: 0,
        loadRecords: true,
        emptyReceivesToStop: 2,
      },
    );
    expect(new Set(listing.tasks.map((t) => t.taskId)).size).toBe(listing.tasks.length);
    expect(listing.tasks).toHaveLength(12);
  });
});
