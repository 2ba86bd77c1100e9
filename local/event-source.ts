import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { InvocationContext } from '../shared/service/consumer/consumer.js';
import type { Logger } from '../shared/runtime/logger.js';

export interface EventSourceOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly region: string;
  /** Messages per invocation (Lambda: 1-10 for this use). */
  readonly batchSize: number;
  /** Concurrent invocations for this queue (Lambda's ScalingConfig.MaximumConcurrency). */
  readonly maxConcurrency: number;
  /** Long-poll wait of each receive. */
  readonly waitTimeSeconds: number;
  /** The function timeout, which the context's remaining time counts down from. */
  readonly functionTimeoutMs: number;
  /**
   * Visibility timeout of each receive (the consumer's lease): a message is then held for one
   * lease from its receive, and the consumer keeps it held while it has it (no request needed to
   * shorten the queue's long visibility, as on Lambda). Unset: the queue's visibility timeout.
   */
  readonly visibilityTimeoutSeconds?: number;
  readonly handler: (event: SQSEvent, context: InvocationContext) => Promise<SQSBatchResponse>;
  readonly logger: Logger;
}

/**
 * Lambda's SQS event source mapping, emulated: `maxConcurrency` pollers long-poll the queue,
 * hand each batch to the handler as an SQS event, and delete exactly the records the partial
 * batch response does not list. A failed record (or a handler that throws) stays on the queue
 * and comes back when its visibility timeout ends, as on AWS.
 */
export class SqsEventSource {
  private stopping = false;
  private readonly receiving = new Set<AbortController>();
  /** Running invocations and the messages each holds (handed back if cut off at stop). */
  private readonly invocations = new Map<Promise<void>, Message[]>();
  private pollers: Promise<void>[] = [];
  /** Invocations completed; for the local runtime's summary and tests. */
  invocationCount = 0;

  constructor(private readonly o: EventSourceOptions) {}

  start(): void {
    for (let i = 0; i < this.o.maxConcurrency; i += 1) this.pollers.push(this.poll());
  }

  /**
   * Stops polling, lets running invocations finish for up to `graceMs`, hands the messages of
   * those still running back to the queue (visibility 0: their tasks come back once their lease
   * ends, instead of after the queue's long visibility timeout), and returns how many were cut off.
   */
  async stop(graceMs: number): Promise<number> {
    this.stopping = true;
    for (const c of this.receiving) c.abort();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), graceMs);
    });
    const drained = Promise.all(this.pollers).then(() => 'drained' as const);
    const result = await Promise.race([drained, grace]);
    clearTimeout(timer);
    if (result === 'drained') return 0;
    const cutOff = this.invocations.size;
    await this.release([...this.invocations.values()].flat());
    return cutOff;
  }

  private async poll(): Promise<void> {
    while (!this.stopping) {
      const messages = await this.receive();
      if (this.stopping) {
        // A receive that completed as stop() began: start no new work; hand the messages back.
        await this.release(messages);
        return;
      }
      if (messages.length === 0) continue;
      const invocation = this.invoke(messages);
      this.invocations.set(invocation, messages);
      try {
        await invocation;
      } finally {
        this.invocations.delete(invocation);
      }
    }
  }

  private async receive(): Promise<Message[]> {
    const controller = new AbortController();
    this.receiving.add(controller);
    try {
      const out = await this.o.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.o.queueUrl,
          MaxNumberOfMessages: this.o.batchSize,
          WaitTimeSeconds: this.o.waitTimeSeconds,
          ...(this.o.visibilityTimeoutSeconds === undefined
            ? {}
            : { VisibilityTimeout: this.o.visibilityTimeoutSeconds }),
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
        { abortSignal: controller.signal },
      );
      return out.Messages ?? [];
    } catch (err) {
      if (this.stopping) return [];
      this.o.logger.warn('event source: receive failed; backing off', { queue: this.o.queueArn, error: String(err) });
      await new Promise((r) => setTimeout(r, 1000));
      return [];
    } finally {
      this.receiving.delete(controller);
    }
  }

  /** Makes messages visible again at once (best effort: otherwise they return after their visibility timeout). */
  private async release(messages: Message[]): Promise<void> {
    for (let i = 0; i < messages.length; i += 10) {
      const chunk = messages.slice(i, i + 10);
      try {
        await this.o.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: this.o.queueUrl,
            Entries: chunk.map((m, j) => ({
              Id: String(j),
              ReceiptHandle: m.ReceiptHandle ?? '',
              VisibilityTimeout: 0,
            })),
          }),
        );
      } catch (err) {
        this.o.logger.warn('event source: could not hand messages back; they return after their visibility timeout', {
          error: String(err),
        });
      }
    }
  }

  private async invoke(messages: Message[]): Promise<void> {
    const deadline = Date.now() + this.o.functionTimeoutMs;
    const event: SQSEvent = { Records: messages.map((m) => sqsRecordOf(m, this.o.queueArn, this.o.region)) };
    let failed: Set<string>;
    try {
      const response = await this.o.handler(event, {
        getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
        ...(this.o.visibilityTimeoutSeconds === undefined
          ? {}
          : { receivedVisibilitySeconds: this.o.visibilityTimeoutSeconds }),
      });
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (err) {
      // As on AWS: a handler that throws fails the whole batch; every record stays on the queue.
      this.o.logger.error('consumer invocation failed; the batch stays on the queue', { error: String(err) });
      failed = new Set(messages.map((m) => m.MessageId ?? ''));
    }
    this.invocationCount += 1;
    const done = messages.filter((m) => m.MessageId !== undefined && !failed.has(m.MessageId));
    if (done.length === 0) return;
    try {
      const out = await this.o.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.o.queueUrl,
          Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
        }),
      );
      if ((out.Failed ?? []).length > 0) {
        this.o.logger.warn('event source: some deletes failed; those messages will be redelivered', {
          failed: out.Failed?.length,
        });
      }
    } catch (err) {
      this.o.logger.warn('event source: delete failed; messages will be redelivered', { error: String(err) });
    }
  }
}

/** A received SQS message as Lambda's event source mapping hands it to a function (one `SQSEvent` record). */
export function sqsRecordOf(m: Message, queueArn: string, region: string): SQSRecord {
  const a = m.Attributes ?? {};
  const messageAttributes: SQSRecord['messageAttributes'] = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) {
    messageAttributes[k] = {
      dataType: v.DataType ?? 'String',
      ...(v.StringValue === undefined ? {} : { stringValue: v.StringValue }),
      stringListValues: [],
      binaryListValues: [],
    };
  }
  return {
    messageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body: m.Body ?? '',
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
      SentTimestamp: a.SentTimestamp ?? String(Date.now()),
      SenderId: a.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes,
    md5OfBody: m.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}
