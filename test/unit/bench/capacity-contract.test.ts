/**
 * The capacity simulation's table (the in-memory fake behind its metering decorator,
 * bench/capacity/metered-store.ts) and its model of the queues (sim-queue.ts) run the `TaskStore`
 * and `TaskQueue` contracts DynamoDB, SQS and the in-memory fakes run, so the figures of
 * `npm run bench:capacity` rest on the same semantics. What they leave out on purpose is skipped
 * through the contract's `leftOut` option, with the reason.
 */
import type { Priority } from '../../../shared/config/resources.js';
import { MeteredTaskStore } from '../../../bench/capacity/metered-store.js';
import { PeakMeter } from '../../../bench/capacity/meter.js';
import { type SimMessage, SimTaskQueue } from '../../../bench/capacity/sim-queue.js';
import { deadLetterAttributes, taskMessageAttributes } from '../../../testing/memory-task-queue.js';
import { VirtualClock } from '../../../testing/virtual-clock.js';
import type { DeadLetter, TaskMessage } from '../../../shared/task/message.js';
import { describeTaskQueueContract } from '../../contract/task-queue.contract.js';
import { describeTaskStoreContract } from '../../contract/task-store.contract.js';

const T0 = Date.UTC(2030, 0, 1);

describeTaskStoreContract(
  'MeteredTaskStore (bench/capacity)',
  async () => {
    const now = () => T0;
    return { store: new MeteredTaskStore(now, new PeakMeter(now)), cleanup: async () => {} };
  },
  {
    conditionFailureReturnsItem: true,
    leftOut: { listing: 'the simulation lists no tasks (no console, no admin CLI)' },
  },
);

describeTaskQueueContract(
  'SimTaskQueue (bench/capacity)',
  async () => {
    const time = new VirtualClock(T0);
    const queue = new SimTaskQueue(time, new PeakMeter(() => time.now()));
    const received = (m: SimMessage) => ({
      body: m.body,
      attributes: m.dead
        ? deadLetterAttributes(JSON.parse(m.body) as DeadLetter)
        : taskMessageAttributes(JSON.parse(m.body) as TaskMessage, m.priority, m.type),
      receiptHandle: m.receiptHandle as string,
      receiveCount: m.receiveCount,
    });
    return {
      queue,
      receive: async (priority: Priority, options = {}) =>
        queue
          .receive(priority, 10, {
            dead: options.dead ?? false,
            visibilityMs: (options.visibilitySeconds ?? 30) * 1000,
          })
          .map(received),
      delete: async (_priority, receiptHandle) => queue.delete([receiptHandle]),
      elapse: (ms) => time.runUntil(time.now() + ms),
      cleanup: async () => {},
    };
  },
  { leftOut: { unreachable: 'the simulation models SQS as always reachable' } },
);
