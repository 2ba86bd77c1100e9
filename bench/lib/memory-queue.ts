/**
 * A minimal in-memory `TaskQueue` for the cost benchmark: it keeps what Kaj sends (one queue and
 * one DLQ per priority, with `SqsTaskQueue`'s bodies and message attributes, delays and
 * visibility) so the bench can receive it again and hand it to the real consumer as the event
 * source mapping would (`toSqsEvent`). Time comes from the bench's fake clock.
 *
 * @module
 */
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { DEFAULTS, type Priority } from '../../shared/config/resources.js';
import { MessageGoneError } from '../../shared/task/queue-errors.js';
import { MESSAGE_ATTRIBUTES as A, type DeadLetter, type TaskMessage } from '../../shared/task/message.js';
import type { FailedSend, OutgoingMessage, TaskQueue } from '../../shared/task/task-queue.js';
import type { Clock } from '../../shared/runtime/clock.js';

export interface MessageAttribute {
  readonly dataType: 'String' | 'Number';
  readonly value: string;
}

export interface QueuedMessage {
  readonly messageId: string;
  readonly priority: Priority;
  readonly dead: boolean;
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttribute>>;
  readonly sentAt: number;
  visibleAt: number;
  receiptHandle: string | undefined;
  receiveCount: number;
}

/** What `send` was asked to send, for the request counter (`SqsTaskQueue` builds the same). */
export function taskMessageAttributes(
  message: TaskMessage,
  priority: Priority,
  type: string,
): Record<string, MessageAttribute> {
  return { [A.taskId]: str(message.task_id), [A.type]: str(type), [A.priority]: str(priority) };
}

export function deadLetterAttributes(letter: DeadLetter): Record<string, MessageAttribute> {
  return {
    [A.taskId]: str(letter.task_id),
    [A.type]: str(letter.type),
    [A.priority]: str(letter.priority),
    [A.attempts]: { dataType: 'Number', value: String(letter.attempts) },
    [A.failedAt]: str(letter.failed_at),
    [A.error]: str(letter.last_error?.message ?? letter.reason),
  };
}

export class BenchTaskQueue implements TaskQueue {
  readonly messages: QueuedMessage[] = [];
  private seq = 0;

  constructor(
    private readonly clock: Clock,
    /** Queue visibility timeout (what a receive hides a message for). */
    private readonly visibilitySeconds: number = DEFAULTS.queueVisibilityTimeoutSeconds,
  ) {}

  async send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void> {
    const delay = Math.max(0, Math.min(DEFAULTS.maxSqsDelaySeconds, Math.ceil(options.delaySeconds)));
    this.push(priority, false, JSON.stringify(message), taskMessageAttributes(message, priority, options.type), delay);
  }

  async sendDead(letter: DeadLetter): Promise<void> {
    this.push(letter.priority, true, JSON.stringify(letter), deadLetterAttributes(letter), 0);
  }

  /** Batched send: every entry is sent (this queue never fails), so none is returned. */
  async sendMany(priority: Priority, entries: readonly OutgoingMessage[]): Promise<FailedSend[]> {
    for (const e of entries) await this.send(priority, e.message, { delaySeconds: e.delaySeconds, type: e.type });
    return [];
  }

  async changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void> {
    const m = this.messages.find((x) => x.receiptHandle === receiptHandle && x.priority === priority && !x.dead);
    if (m === undefined) throw new MessageGoneError('message is no longer in flight: ReceiptHandleIsInvalid');
    m.visibleAt = this.clock.now() + Math.max(0, Math.min(43_200, Math.ceil(seconds))) * 1000;
  }

  /** Up to `max` messages of a priority queue visible now, oldest first, hidden for the visibility timeout. */
  receive(priority: Priority, max: number): QueuedMessage[] {
    const now = this.clock.now();
    const out: QueuedMessage[] = [];
    for (const m of this.messages) {
      if (out.length >= max) break;
      if (m.dead || m.priority !== priority || m.visibleAt > now) continue;
      m.receiveCount += 1;
      m.receiptHandle = `rh-${m.messageId}-${m.receiveCount}`;
      m.visibleAt = now + this.visibilitySeconds * 1000;
      out.push(m);
    }
    return out;
  }

  /** Deletes a message by its latest receipt handle (what the mapping does for records not reported as failed). */
  delete(receiptHandle: string): boolean {
    const i = this.messages.findIndex((m) => m.receiptHandle === receiptHandle);
    if (i >= 0) this.messages.splice(i, 1);
    return i >= 0;
  }

  /** Earliest time a message on a priority queue becomes visible (undefined: none queued). */
  nextVisibleAt(): number | undefined {
    let next: number | undefined;
    for (const m of this.messages) if (!m.dead && (next === undefined || m.visibleAt < next)) next = m.visibleAt;
    return next;
  }

  /** Messages on the DLQs. */
  deadLetters(): QueuedMessage[] {
    return this.messages.filter((m) => m.dead);
  }

  private push(
    priority: Priority,
    dead: boolean,
    body: string,
    attributes: Record<string, MessageAttribute>,
    delaySeconds: number,
  ): void {
    const now = this.clock.now();
    this.messages.push({
      messageId: `m-${(this.seq += 1).toString().padStart(8, '0')}`,
      priority,
      dead,
      body,
      attributes,
      sentAt: now,
      visibleAt: now + delaySeconds * 1000,
      receiptHandle: undefined,
      receiveCount: 0,
    });
  }
}

/** The event Lambda's SQS event source mapping would invoke the consumer with. */
export function toSqsEvent(messages: readonly QueuedMessage[], queueName: string, now: number): SQSEvent {
  const arn = `arn:aws:sqs:us-east-1:000000000000:${queueName}`;
  const records: SQSRecord[] = messages.map((m) => ({
    messageId: m.messageId,
    receiptHandle: m.receiptHandle ?? '',
    body: m.body,
    attributes: {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: String(m.sentAt),
      SenderId: 'AROAEXAMPLE:kaj',
      ApproximateFirstReceiveTimestamp: String(now),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(m.attributes).map(([k, a]) => [
        k,
        { dataType: a.dataType, stringValue: a.value, stringListValues: [], binaryListValues: [] },
      ]),
    ),
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: arn,
    awsRegion: 'us-east-1',
  }));
  return { Records: records };
}

function str(value: string): MessageAttribute {
  return { dataType: 'String', value: value === '' ? '-' : value };
}
