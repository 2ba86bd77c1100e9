/** The `TaskQueue` contract on the in-memory fake the unit tests use. */
import { MemoryTaskQueue } from '../support/memory-task-queue.js';
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
