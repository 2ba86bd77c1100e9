import {
  ChangeMessageVisibilityCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DEFAULTS, type Priority } from '../config/resources.js';
import { MessageGoneError, QueueRejectedError, QueueUnavailableError } from './errors.js';
import { MAX_ERROR_ATTRIBUTE_CHARS, MESSAGE_ATTRIBUTES as A, type DeadLetter, type TaskMessage } from './message.js';
import type { FailedSend, OutgoingMessage, TaskQueue } from './task-queue.js';

/** SQS takes at most 10 entries per SendMessageBatch. */
export const MAX_BATCH_ENTRIES = 10;

export interface QueueUrls {
  readonly queues: Readonly<Record<Priority, string>>;
  readonly deadLetterQueues: Readonly<Record<Priority, string>>;
}

const GONE = new Set([
  'ReceiptHandleIsInvalid',
  'MessageNotInflight',
  'InvalidParameterValue',
  'AWS.SimpleQueueService.MessageNotInflight',
]);

/** `TaskQueue` on SQS standard queues, one per priority, each with its own DLQ. */
export class SqsTaskQueue implements TaskQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly urls: QueueUrls,
  ) {}

  async send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void> {
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: this.urls.queues[priority],
          MessageBody: JSON.stringify(message),
          DelaySeconds: delayOf(options.delaySeconds),
          MessageAttributes: taskAttributes(message, options.type, priority),
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
    const batches: OutgoingMessage[][] = [];
    for (let i = 0; i < entries.length; i += MAX_BATCH_ENTRIES) batches.push(entries.slice(i, i + MAX_BATCH_ENTRIES));
    const failed = await Promise.all(batches.map((batch) => this.sendBatch(priority, batch)));
    return failed.flat();
  }

  /** One SendMessageBatch; the entries it did not send. Entry ids are positions in the batch. */
  private async sendBatch(priority: Priority, batch: readonly OutgoingMessage[]): Promise<FailedSend[]> {
    let out: {
      Successful?: { Id?: string }[];
      Failed?: { Id?: string; Code?: string; Message?: string; SenderFault?: boolean }[];
    };
    try {
      out = await this.client.send(
        new SendMessageBatchCommand({
          QueueUrl: this.urls.queues[priority],
          Entries: batch.map((e, i) => ({
            Id: String(i),
            MessageBody: JSON.stringify(e.message),
            DelaySeconds: delayOf(e.delaySeconds),
            MessageAttributes: taskAttributes(e.message, e.type, priority),
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

  async changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void> {
    try {
      await this.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.urls.queues[priority],
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: Math.max(0, Math.min(43_200, Math.ceil(seconds))),
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
