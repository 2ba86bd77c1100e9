import {
  ChangeMessageVisibilityCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DEFAULTS, type Priority } from '../config/resources.js';
import { MessageGoneError, QueueUnavailableError } from './errors.js';
import { MAX_ERROR_ATTRIBUTE_CHARS, MESSAGE_ATTRIBUTES as A, type DeadLetter, type TaskMessage } from './message.js';
import type { TaskQueue } from './task-queue.js';

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
    const delay = Math.max(0, Math.min(DEFAULTS.maxSqsDelaySeconds, Math.ceil(options.delaySeconds)));
    try {
      await this.client.send(
        new SendMessageCommand({
          QueueUrl: this.urls.queues[priority],
          MessageBody: JSON.stringify(message),
          DelaySeconds: delay,
          MessageAttributes: {
            [A.taskId]: str(message.task_id),
            [A.type]: str(options.type),
            [A.priority]: str(priority),
          },
        }),
      );
    } catch (err) {
      throw new QueueUnavailableError(`SQS SendMessage to ${priority} failed: ${nameOf(err)}`, {
        taskId: message.task_id,
        cause: err,
      });
    }
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
