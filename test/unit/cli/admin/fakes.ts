/** Hand-made fakes of the contracts the CLI's DLQ work runs on (cli/admin/), and the domain over them. */
import type { BatchDeps, BatchOptions } from '../../../../cli/admin/batch.js';
import { parseDeadEntry, type DeadLetterQueues, type DlqMessage } from '../../../../cli/admin/dead-letters.js';
import type { Sleep } from '../../../../cli/admin/pacer.js';
import { DEFAULTS, PRIORITIES, type Priority } from '../../../../shared/config/resources.js';
import { runtimeSettings } from '../../../../shared/config/settings.js';
import { MESSAGE_ATTRIBUTES as A, type DeadLetter, type TaskMessage } from '../../../../shared/task/message.js';
import { QueueUnavailableError } from '../../../../shared/task/queue-errors.js';
import type { FailedSend, OutgoingMessage, TaskQueue } from '../../../../shared/task/task-queue.js';
import { FakeClock, sequenceRandom } from '../../../../testing/doubles.js';
import { deadTaskRecord } from '../../../../testing/fixtures.js';
import { noMetrics, silentLogger } from '../../../../shared/runtime/logger.js';
import type { RandomSource } from '../../../../shared/runtime/random.js';
import { TaskLifecycle } from '../../../../shared/task/lifecycle.js';
import type { TaskRecord } from '../../../../shared/task/model.js';

import { MemoryTaskStore } from '../../../../testing/memory-task-store.js';

export { MemoryTaskStore };

interface StoredMessage {
  id: string;
  body: string;
  attributes: Record<string, string>;
  receiveCount: number;
  invisibleUntil: number;
  handle: string | undefined;
  sentAt: number;
}

/** Three DLQs in memory, with visibility timeouts on the fake clock. */
export class FakeDlq implements DeadLetterQueues {
  readonly queues: Record<Priority, StoredMessage[]> = { high: [], normal: [], low: [] };
  private n = 0;
  receives = 0;
  /** Makes the next `delete` throw (a crash or an outage between send and delete). */
  failNextDelete = 0;

  constructor(private readonly clock: FakeClock) {}

  put(priority: Priority, body: unknown, attributes: Record<string, string> = {}): string {
    const id = `m${(this.n += 1)}`;
    this.queues[priority].push({
      id,
      body: typeof body === 'string' ? body : JSON.stringify(body),
      attributes,
      receiveCount: 0,
      invisibleUntil: 0,
      handle: undefined,
      sentAt: this.clock.now(),
    });
    return id;
  }

  putDeadLetter(letter: DeadLetter): string {
    return this.put(letter.priority, letter, {
      [A.taskId]: letter.task_id,
      [A.type]: letter.type,
      [A.priority]: letter.priority,
      [A.attempts]: String(letter.attempts),
      [A.failedAt]: letter.failed_at,
      [A.error]: letter.last_error?.message ?? letter.reason,
    });
  }

  visible(priority: Priority): StoredMessage[] {
    return this.queues[priority].filter((m) => m.invisibleUntil <= this.clock.now());
  }

  all(): StoredMessage[] {
    return [...this.queues.high, ...this.queues.normal, ...this.queues.low];
  }

  async receive(priority: Priority, o: { max: number; visibilitySeconds: number }): Promise<DlqMessage[]> {
    this.receives += 1;
    const out: DlqMessage[] = [];
    for (const m of this.visible(priority).slice(0, o.max)) {
      m.receiveCount += 1;
      m.invisibleUntil = this.clock.now() + o.visibilitySeconds * 1000;
      m.handle = `${m.id}#${m.receiveCount}`;
      out.push({
        messageId: m.id,
        receiptHandle: m.handle,
        body: m.body,
        attributes: { ...m.attributes },
        sentTimestamp: m.sentAt,
        receiveCount: m.receiveCount,
      });
    }
    return out;
  }

  async release(priority: Priority, handles: readonly string[]): Promise<void> {
    for (const m of this.queues[priority])
      if (m.handle !== undefined && handles.includes(m.handle)) m.invisibleUntil = 0;
  }

  async delete(priority: Priority, handles: readonly string[]): Promise<string[]> {
    if (this.failNextDelete > 0) {
      this.failNextDelete -= 1;
      throw new Error('injected: the process died before deleting');
    }
    const failed: string[] = [];
    for (const h of handles) {
      const i = this.queues[priority].findIndex((m) => m.handle === h);
      if (i < 0) failed.push(h);
      else this.queues[priority].splice(i, 1);
    }
    return failed;
  }
}

/** `TaskQueue` that records sends; dead letters go to the FakeDlq. */
export class FakeTaskQueue implements TaskQueue {
  readonly sent: { priority: Priority; message: TaskMessage; delaySeconds: number; type: string }[] = [];
  failNextSends = 0;

  constructor(private readonly dlq: FakeDlq) {}

  async send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void> {
    if (this.failNextSends > 0) {
      this.failNextSends -= 1;
      throw new Error('injected: SQS unavailable');
    }
    this.sent.push({ priority, message: { ...message }, ...options });
  }

  /** As `send` for each entry; an injected failure fails that entry only. */
  async sendMany(priority: Priority, entries: readonly OutgoingMessage[]): Promise<FailedSend[]> {
    const failed: FailedSend[] = [];
    for (const entry of entries) {
      try {
        await this.send(priority, entry.message, entry);
      } catch (err) {
        failed.push({ entry, error: new QueueUnavailableError('injected: SQS unavailable', { cause: err }) });
      }
    }
    return failed;
  }

  async sendDead(letter: DeadLetter): Promise<void> {
    this.dlq.putDeadLetter(letter);
  }

  async changeVisibility(): Promise<void> {}
}

/** A sleep that moves the fake clock instead of waiting. */
export function clockSleep(clock: FakeClock, log: number[] = []): Sleep {
  return async (ms) => {
    log.push(ms);
    clock.advance(ms);
  };
}

export interface World {
  clock: FakeClock;
  store: MemoryTaskStore;
  dlq: FakeDlq;
  queue: FakeTaskQueue;
  lifecycle: TaskLifecycle;
  random: RandomSource;
  sleeps: number[];
  sleep: Sleep;
}

export function world(): World {
  const clock = new FakeClock();
  const store = new MemoryTaskStore();
  const dlq = new FakeDlq(clock);
  const queue = new FakeTaskQueue(dlq);
  const random = sequenceRandom([0.5]);
  const lifecycle = new TaskLifecycle({
    store,
    queue,
    clock,
    random,
    logger: silentLogger,
    metrics: noMetrics,
    settings: runtimeSettings(),
  });
  const sleeps: number[] = [];
  return { clock, store, dlq, queue, lifecycle, random, sleeps, sleep: clockSleep(clock, sleeps) };
}

let seq = 0;

/** A task that died: its failed record in the store and its dead letter in the DLQ of its priority. */
export async function deadTask(
  w: World,
  o: { type?: string; priority?: Priority; error?: string; id?: string; attempts?: number; diedAt?: number } = {},
): Promise<TaskRecord> {
  const now = o.diedAt ?? w.clock.now();
  const at = new Date(now).toISOString();
  const id = o.id ?? `t_${(seq += 1).toString().padStart(4, '0')}`;
  const error = {
    name: 'PermanentError',
    message: o.error ?? 'provider rejected recipient',
    retryable: false,
    code: 'HTTP_400',
  };
  const record = deadTaskRecord(id, now, error, {
    type: o.type ?? 'send_email',
    priority: o.priority ?? 'normal',
    payload: { to: 'ada@example.com' },
    attempts: o.attempts ?? 3,
    history: [{ attempt: 1, outcome: 'failed', finished_at: at, error }],
    dispatch_id: `d_${id}_1`,
    expires_at: Math.floor(now / 1000) + DEFAULTS.dlqRetentionSeconds,
  });
  await w.store.create(record);
  w.dlq.putDeadLetter({
    task_id: id,
    dispatch_id: record.dispatch_id,
    type: record.type,
    priority: record.priority,
    attempts: record.attempts,
    reason: error.message,
    last_error: error,
    failed_at: at,
  });
  return record;
}

/** A dead task whose letter is not in the DLQs (lost with an in-memory SQS, or deleted by hand). */
export async function letterless(w: World, o: Parameters<typeof deadTask>[1] = {}): Promise<TaskRecord> {
  const dead = await deadTask(w, o);
  for (const p of PRIORITIES) w.dlq.queues[p].length = 0;
  return dead;
}

/** The deps of a DLQ batch over the world, with its domain. */
export const batchDeps = (w: World): BatchDeps & { lifecycle: TaskLifecycle } => ({
  dlq: w.dlq,
  store: w.store,
  lifecycle: w.lifecycle,
  clock: w.clock,
  sleep: w.sleep,
});

/** A batch over every DLQ, nothing filtered, one empty receive to stop, by operator `ops`. */
export const BATCH_BASE: BatchOptions & { actor: string } = {
  queues: PRIORITIES,
  filter: {},
  visibilitySeconds: 30,
  waitSeconds: 0,
  emptyReceivesToStop: 1,
  dryRun: false,
  actor: 'ops',
};

/** The stored record of a task, which the test knows is there. */
export const storedRecord = async (w: World, id: string): Promise<TaskRecord> => (await w.store.get(id)) as TaskRecord;

const planEntry = parseDeadEntry('normal', {
  messageId: 'm',
  receiptHandle: 'h',
  attributes: {},
  body: JSON.stringify({
    task_id: 't',
    dispatch_id: 'd1',
    type: 'x',
    priority: 'normal',
    attempts: 1,
    reason: 'r',
    failed_at: 'z',
  }),
});

const planRecord = (status: TaskRecord['status'], dispatch_id = 'd1', extra: Partial<TaskRecord> = {}) =>
  ({ task_id: 't', status, dispatch_id, ...extra }) as TaskRecord;

/**
 * For the plan tables: the dead letter of task `t` (dispatch `d1`) as read from the normal DLQ,
 * and a bare record of task `t` with a status, a dispatch id and what else is given.
 */
export const PLAN = { entry: planEntry, record: planRecord };
