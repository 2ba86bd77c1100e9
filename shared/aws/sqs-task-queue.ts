import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DEFAULT_LANE, type LaneQueueUrls } from '../config/lanes.js';
import { DEFAULTS, type Priority } from '../config/resources.js';
import { MessageGoneError, QueueRejectedError, QueueUnavailableError } from '../task/queue-errors.js';
import {
  MAX_ERROR_ATTRIBUTE_CHARS,
  MESSAGE_ATTRIBUTES as A,
  type DeadLetter,
  type TaskMessage,
} from '../task/message.js';
import type {
  FailedSend,
  FailedVisibilityChange,
  OutgoingMessage,
  TaskQueue,
  VisibilityChange,
} from '../task/task-queue.js';

/** SQS takes at most 10 entries per SendMessageBatch. */
export const MAX_BATCH_ENTRIES = 10;

export interface QueueUrls {
  /** The default lane's queues. */
  readonly queues: Readonly<Record<Priority, string>>;
  /** One DLQ per priority, shared by every lane. */
  readonly deadLetterQueues: Readonly<Record<Priority, string>>;
  /** The queues of the other lanes (`shared/config/lanes.ts`). */
  readonly lanes?: LaneQueueUrls;
}

const GONE = new Set([
  'ReceiptHandleIsInvalid',
  'MessageNotInflight',
  'InvalidParameterValue',
  'AWS.SimpleQueueService.MessageNotInflight',
]);

/**
 * `TaskQueue` on SQS standard queues: per lane one queue per priority, one DLQ per priority.
 * A message goes to its task's lane (the record's `lane`, set at submit from its type); a task
 * with a tenant is sent with the tenant as its message group id, which makes SQS serve the
 * tenants of a standard queue fairly (fair queues).
 */
export class SqsTaskQueue implements TaskQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly urls: QueueUrls,
  ) {}

  /**
   * The queue of a lane and priority. A lane this process has no URLs for (a type moved to a new
   * lane before every function learnt it) falls back to the default lane's queue: the task still
   * runs, on the default consumer, rather than being lost.
   */
  private queueUrl(priority: Priority, lane: string | undefined): string {
    if (lane === undefined || lane === DEFAULT_LANE) return this.urls.queues[priority];
    return this.urls.lanes?.[lane]?.[priority] ?? this.urls.queues[priority];
  }

  async send(
    priority: Priority,
    message: TaskMessage,
    options: { delaySeconds: number; type: string; lane?: string },
  ): Promise<void> {
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: this.queueUrl(priority, options.lane),
          MessageBody: JSON.stringify(message),
          DelaySeconds: delayOf(options.delaySeconds),
          MessageAttributes: taskAttributes(message, options.type, priority),
          ...groupOf(message),
        }),
      );
    } catch (err) {
      throw new QueueUnavailableError(`SQS SendMessage to ${priority} failed: ${nameOf(err)}`, {
        taskId: message.task_id,
        cause: err,
      });
    }
  }

  async sendMany(priority: Priority, entries: readonly OutgoingMessage[]): Promise<FailedSend[]> {
    // One queue per lane: a batch request goes to one queue.
    const byLane = new Map<string, OutgoingMessage[]>();
    for (const e of entries) {
      const lane = e.lane ?? DEFAULT_LANE;
      const list = byLane.get(lane) ?? [];
      list.push(e);
      byLane.set(lane, list);
    }
    const batches: { url: string; batch: OutgoingMessage[] }[] = [];
    for (const [lane, list] of byLane) {
      const url = this.queueUrl(priority, lane);
      for (let i = 0; i < list.length; i += MAX_BATCH_ENTRIES)
        batches.push({ url, batch: list.slice(i, i + MAX_BATCH_ENTRIES) });
    }
    const failed = await Promise.all(batches.map((b) => this.sendBatch(priority, b.url, b.batch)));
    return failed.flat();
  }

  /** One SendMessageBatch; the entries it did not send. Entry ids are positions in the batch. */
  private async sendBatch(priority: Priority, url: string, batch: readonly OutgoingMessage[]): Promise<FailedSend[]> {
    let out: {
      Successful?: { Id?: string }[];
      Failed?: { Id?: string; Code?: string; Message?: string; SenderFault?: boolean }[];
    };
    try {
      out = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: batch.map((e, i) => ({
            Id: String(i),
            MessageBody: JSON.stringify(e.message),
            DelaySeconds: delayOf(e.delaySeconds),
            MessageAttributes: taskAttributes(e.message, e.type, priority),
            ...groupOf(e.message),
          })),
        }),
      );
    } catch (err) {
      return batch.map((entry) => ({
        entry,
        error: new QueueUnavailableError(`SQS SendMessageBatch to ${priority} failed: ${nameOf(err)}`, {
          taskId: entry.message.task_id,
          cause: err,
        }),
      }));
    }
    const sent = new Set((out.Successful ?? []).map((s) => s.Id));
    const refused = new Map((out.Failed ?? []).map((f) => [f.Id, f]));
    const failures: FailedSend[] = [];
    batch.forEach((entry, i) => {
      if (sent.has(String(i))) return;
      const f = refused.get(String(i));
      const taskId = entry.message.task_id;
      // An entry SQS reports neither way was not confirmed: as good as not sent.
      const why =
        f === undefined ? 'no result for the entry' : `${f.Code ?? 'Error'}${f.Message ? `: ${f.Message}` : ''}`;
      const message = `SQS SendMessageBatch to ${priority} failed for task ${taskId}: ${why}`;
      failures.push({
        entry,
        error:
          f?.SenderFault === true
            ? new QueueRejectedError(message, { taskId })
            : new QueueUnavailableError(message, { taskId }),
      });
    });
    return failures;
  }

  async sendDead(letter: DeadLetter): Promise<void> {
    const attributes: Record<string, MessageAttributeValue> = {
      [A.taskId]: str(letter.task_id),
      [A.type]: str(letter.type),
      [A.priority]: str(letter.priority),
      [A.attempts]: { DataType: 'Number', StringValue: String(letter.attempts) },
      [A.failedAt]: str(letter.failed_at),
      [A.error]: str(truncate(letter.last_error?.message ?? letter.reason, MAX_ERROR_ATTRIBUTE_CHARS)),
    };
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: this.urls.deadLetterQueues[letter.priority],
          MessageBody: JSON.stringify(letter),
          MessageAttributes: attributes,
        }),
      );
    } catch (err) {
      throw new QueueUnavailableError(`SQS SendMessage to the ${letter.priority} DLQ failed: ${nameOf(err)}`, {
        taskId: letter.task_id,
        cause: err,
      });
    }
  }

  async changeVisibility(
    priority: Priority,
    receiptHandle: string,
    seconds: number,
    lane: string = DEFAULT_LANE,
  ): Promise<void> {
    try {
      await this.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.queueUrl(priority, lane),
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: visibilityOf(seconds),
        }),
      );
    } catch (err) {
      if (GONE.has(nameOf(err)))
        throw new MessageGoneError(`message is no longer in flight: ${nameOf(err)}`, { cause: err });
      throw new QueueUnavailableError(`SQS ChangeMessageVisibility on ${priority} failed: ${nameOf(err)}`, {
        cause: err,
      });
    }
  }

  async changeVisibilityMany(
    priority: Priority,
    entries: readonly VisibilityChange[],
    lane: string = DEFAULT_LANE,
  ): Promise<FailedVisibilityChange[]> {
    const url = this.queueUrl(priority, lane);
    const chunks: VisibilityChange[][] = [];
    for (let i = 0; i < entries.length; i += MAX_BATCH_ENTRIES) chunks.push(entries.slice(i, i + MAX_BATCH_ENTRIES));
    const failed = await Promise.all(chunks.map((chunk) => this.changeVisibilityBatch(priority, url, chunk)));
    return failed.flat();
  }

  /** One ChangeMessageVisibilityBatch; the entries it did not change. Entry ids are positions. */
  private async changeVisibilityBatch(
    priority: Priority,
    url: string,
    chunk: readonly VisibilityChange[],
  ): Promise<FailedVisibilityChange[]> {
    let out: { Successful?: { Id?: string }[]; Failed?: { Id?: string; Code?: string; Message?: string }[] };
    try {
      out = await this.client.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: url,
          Entries: chunk.map((e, i) => ({
            Id: String(i),
            ReceiptHandle: e.receiptHandle,
            VisibilityTimeout: visibilityOf(e.seconds),
          })),
        }),
      );
    } catch (err) {
      const error = new QueueUnavailableError(
        `SQS ChangeMessageVisibilityBatch on ${priority} failed: ${nameOf(err)}`,
        { cause: err },
      );
      return chunk.map((entry) => ({ entry, error }));
    }
    const changed = new Set((out.Successful ?? []).map((s) => s.Id));
    const refused = new Map((out.Failed ?? []).map((f) => [f.Id, f]));
    const failures: FailedVisibilityChange[] = [];
    chunk.forEach((entry, i) => {
      if (changed.has(String(i))) return;
      const f = refused.get(String(i));
      const why =
        f === undefined ? 'no result for the entry' : `${f.Code ?? 'Error'}${f.Message ? `: ${f.Message}` : ''}`;
      const message = `SQS ChangeMessageVisibilityBatch on ${priority}: ${why}`;
      failures.push({
        entry,
        error:
          f?.Code !== undefined && GONE.has(f.Code)
            ? new MessageGoneError(`message is no longer in flight: ${f.Code}`)
            : new QueueUnavailableError(message),
      });
    });
    return failures;
  }
}

/** Whole seconds within SQS's visibility range (0-43,200). */
function visibilityOf(seconds: number): number {
  return Math.max(0, Math.min(43_200, Math.ceil(seconds)));
}

/** The message group of a tenant's task (SQS fair queues on a standard queue). */
function groupOf(message: TaskMessage): { MessageGroupId?: string } {
  return message.tenant === undefined ? {} : { MessageGroupId: message.tenant };
}

/** Whole seconds within SQS's 0-900. */
function delayOf(seconds: number): number {
  return Math.max(0, Math.min(DEFAULTS.maxSqsDelaySeconds, Math.ceil(seconds)));
}

/** The attributes of a task message: what the admin CLI and the tests read without parsing bodies. */
function taskAttributes(message: TaskMessage, type: string, priority: Priority): Record<string, MessageAttributeValue> {
  return { [A.taskId]: str(message.task_id), [A.type]: str(type), [A.priority]: str(priority) };
}

function str(value: string): MessageAttributeValue {
  // SQS rejects empty attribute values.
  return { DataType: 'String', StringValue: value === '' ? '-' : value };
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

function nameOf(err: unknown): string {
  return err instanceof Error ? err.name : 'Error';
}
