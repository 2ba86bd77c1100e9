/** The `TaskQueue` contract on the in-memory fake the unit tests use, and what the fake adds. */
import { describe, expect, it } from 'vitest';
import { QueueRejectedError } from '../../shared/task/queue-errors.js';
import type { OutgoingMessage } from '../../shared/task/task-queue.js';
import { MemoryTaskQueue } from '../../testing/memory-task-queue.js';
import { describeTaskQueueContract } from './task-queue.contract.js';

describeTaskQueueContract('MemoryTaskQueue', async () => {
  let now = Date.UTC(2030, 0, 1);
  const fake = new MemoryTaskQueue({ now: () => now, strictReceiptHandles: true });
  return {
    queue: fake,
    receive: async (priority, options) => fake.receive(priority, options),
    delete: async (priority, receiptHandle) => {
      fake.deleteMessage(priority, receiptHandle);
    },
    elapse: async (ms) => {
      now += ms;
    },
    unreachable: () => {
      const down = new MemoryTaskQueue({ now: () => now });
      down.available = false;
      return down;
    },
    cleanup: async () => {},
  };
});

/** What the fake adds to the contract for the domain's unit tests: the batches and the injected failures. */
describe('Class: MemoryTaskQueue', () => {
  const entries = (n: number): OutgoingMessage[] =>
    Array.from({ length: n }, (_, i) => ({
      message: { task_id: `t_${i}`, dispatch_id: `d_${i}` },
      delaySeconds: 0,
      type: 'job',
    }));

  describe('Method: sendMany', () => {
    it('records one batch per 10 entries, and each sent entry in `sent` as send would', async () => {
      const fake = new MemoryTaskQueue();
      await fake.sendMany('low', entries(12));
      expect(fake.batches).toEqual([
        { priority: 'low', size: 10 },
        { priority: 'low', size: 2 },
      ]);
      expect(fake.sent.map((s) => [s.priority, s.message.task_id])).toHaveLength(12);
      expect(fake.sent[11]).toEqual({
        priority: 'low',
        message: entries(12)[11]?.message,
        delaySeconds: 0,
        type: 'job',
      });
    });

    it('fails the entries rejectEntry picks, alone, with its error; the others are sent', async () => {
      const fake = new MemoryTaskQueue();
      const refused = new QueueRejectedError('InvalidMessageContents', { taskId: 't_1' });
      fake.rejectEntry = (e) => (e.message.task_id === 't_1' ? refused : undefined);
      const list = entries(3);
      const failed = await fake.sendMany('high', list);
      expect(failed).toEqual([{ entry: list[1], error: refused }]);
      expect(fake.receive('high').map((m) => JSON.parse(m.body).task_id)).toEqual(['t_0', 't_2']);
    });

    it('fails every entry of the next call with failNext.sendMany (wrapped as retryable unless a queue error), once', async () => {
      const fake = new MemoryTaskQueue();
      fake.failNext.sendMany = new Error('socket hang up');
      const failed = await fake.sendMany('normal', entries(2));
      expect(failed.map((f) => [f.error.constructor.name, f.error.retryable, f.error.taskId])).toEqual([
        ['QueueUnavailableError', true, 't_0'],
        ['QueueUnavailableError', true, 't_1'],
      ]);
      expect(fake.sent).toEqual([]);
      expect(await fake.sendMany('normal', entries(2))).toEqual([]);
      expect(fake.sent).toHaveLength(2);
    });
  });

  describe('Method: queued / nextVisibleAt', () => {
    it('shows what a queue holds without receiving it, and when the next message becomes visible', async () => {
      let now = 1_000_000;
      const fake = new MemoryTaskQueue({ now: () => now });
      expect(fake.nextVisibleAt()).toBeUndefined();
      await fake.send('high', { task_id: 't_1', dispatch_id: 'd_1' }, { delaySeconds: 30, type: 'job' });
      await fake.sendDead({
        task_id: 't_2',
        dispatch_id: 'd_2',
        type: 'job',
        priority: 'high',
        attempts: 1,
        reason: 'r',
        failed_at: 'then',
      });
      expect(fake.queued('high').map((m) => [m.sentAt, m.visibleAt, m.receiveCount])).toEqual([
        [1_000_000, 1_030_000, 0],
      ]);
      expect(fake.queued('high', { dead: true })).toHaveLength(1);
      expect(fake.nextVisibleAt()).toBe(1_030_000); // the DLQs aside
      now = 1_030_000;
      const [got] = fake.receive('high', { visibilitySeconds: 330 });
      expect(fake.queued('high')[0]?.receiveCount).toBe(1);
      expect(fake.nextVisibleAt()).toBe(1_360_000);
      fake.deleteMessage('high', got?.receiptHandle ?? '');
      expect(fake.nextVisibleAt()).toBeUndefined();
    });
  });
});
