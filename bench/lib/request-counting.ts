/**
 * SQS requests as AWS bills them: the ones Kaj makes through the `TaskQueue` port
 * ({@link CountingTaskQueue}), and the ones Lambda's event source mapping makes on the user's bill
 * ({@link esmRequests}, a model: the bench cannot observe Lambda's pollers).
 *
 * Billing rule (https://aws.amazon.com/sqs/pricing/): every API action is a request; a batch
 * action (SendMessageBatch, DeleteMessageBatch) of up to 10 entries is one request; each 64 KB
 * chunk of a request's payload counts as one more request.
 *
 * @module
 */
import type { Priority } from '../../shared/config/resources.js';
import type { DeadLetter, TaskMessage } from '../../shared/task/message.js';
import type {
  FailedSend,
  FailedVisibilityChange,
  OutgoingMessage,
  TaskQueue,
  VisibilityChange,
} from '../../shared/task/task-queue.js';
import { changeVisibilities } from '../../shared/task/visibility.js';
import { SQS_BILLING_CHUNK_BYTES } from '../prices.js';
import {
  deadLetterAttributes,
  type ReceivedAttribute,
  taskMessageAttributes,
} from '../../testing/memory-task-queue.js';

/** Most entries in one SQS batch request (SendMessageBatch, DeleteMessageBatch, ReceiveMessage). */
export const SQS_MAX_BATCH = 10;
/** Longest ReceiveMessage wait (long poll): what Lambda's pollers use. */
export const SQS_LONG_POLL_SECONDS = 20;

export type SqsApi =
  | 'SendMessage'
  | 'SendMessageBatch'
  | 'ChangeMessageVisibility'
  | 'ChangeMessageVisibilityBatch'
  | 'ReceiveMessage (ESM)'
  | 'DeleteMessageBatch (ESM)';

export interface SqsCall {
  readonly api: SqsApi;
  /** API calls made (fractional for the modelled ESM calls: a share of a batch). */
  readonly requests: number;
  /** Requests billed (64 KB chunks counted). */
  readonly billed: number;
  /** `kaj`: made by Kaj's code through the port; `esm`: modelled calls of Lambda's event source mapping. */
  readonly by: 'kaj' | 'esm';
  readonly tag: string;
}

export class SqsLedger {
  readonly calls: SqsCall[] = [];
  tag = 'untagged';

  record(call: Omit<SqsCall, 'tag'>): void {
    this.calls.push({ ...call, tag: this.tag });
  }
}

/** Requests billed for one request carrying `payloadBytes`: one per started 64 KB chunk, at least one. */
export function sqsBilledRequests(payloadBytes: number): number {
  return Math.max(1, Math.ceil(payloadBytes / SQS_BILLING_CHUNK_BYTES));
}

/** A message's payload as SQS sizes it: body plus each attribute's name, data type and value. */
export function messagePayloadBytes(body: string, attributes: Readonly<Record<string, ReceivedAttribute>>): number {
  let bytes = Buffer.byteLength(body, 'utf8');
  for (const [name, a] of Object.entries(attributes)) {
    bytes += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(a.dataType, 'utf8') + Buffer.byteLength(a.value);
  }
  return bytes;
}

/** Requests and billed requests of sending `payloads` in batches of up to 10. */
export function batchSendRequests(payloads: readonly number[]): { requests: number; billed: number } {
  let requests = 0;
  let billed = 0;
  for (let i = 0; i < payloads.length; i += SQS_MAX_BATCH) {
    const total = payloads.slice(i, i + SQS_MAX_BATCH).reduce((s, b) => s + b, 0);
    requests += 1;
    billed += sqsBilledRequests(total);
  }
  return { requests, billed };
}

/** A `TaskQueue` decorator that records every SQS request the port's calls become. */
export class CountingTaskQueue implements TaskQueue {
  constructor(
    private readonly inner: TaskQueue,
    readonly ledger: SqsLedger,
  ) {}

  async send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void> {
    const bytes = messagePayloadBytes(JSON.stringify(message), taskMessageAttributes(message, priority, options.type));
    this.ledger.record({ api: 'SendMessage', requests: 1, billed: sqsBilledRequests(bytes), by: 'kaj' });
    await this.inner.send(priority, message, options);
  }

  async sendDead(letter: DeadLetter): Promise<void> {
    const bytes = messagePayloadBytes(JSON.stringify(letter), deadLetterAttributes(letter));
    this.ledger.record({ api: 'SendMessage', requests: 1, billed: sqsBilledRequests(bytes), by: 'kaj' });
    await this.inner.sendDead(letter);
  }

  async changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void> {
    this.ledger.record({ api: 'ChangeMessageVisibility', requests: 1, billed: 1, by: 'kaj' });
    await this.inner.changeVisibility(priority, receiptHandle, seconds);
  }

  /** Batched visibility change: one request per 10 entries. */
  async changeVisibilityMany(
    priority: Priority,
    entries: readonly VisibilityChange[],
    lane?: string,
  ): Promise<FailedVisibilityChange[]> {
    const requests = Math.ceil(entries.length / SQS_MAX_BATCH);
    this.ledger.record({ api: 'ChangeMessageVisibilityBatch', requests, billed: requests, by: 'kaj' });
    return changeVisibilities(this.inner, priority, entries, lane);
  }

  /** Batched send: one request per 10 entries. */
  async sendMany(priority: Priority, entries: readonly OutgoingMessage[]): Promise<FailedSend[]> {
    const payloads = entries.map((e) =>
      messagePayloadBytes(JSON.stringify(e.message), taskMessageAttributes(e.message, priority, e.type)),
    );
    const { requests, billed } = batchSendRequests(payloads);
    this.ledger.record({ api: 'SendMessageBatch', requests, billed, by: 'kaj' });
    return this.inner.sendMany(priority, entries);
  }
}

/**
 * The event source mapping's own SQS requests, modelled (Lambda's pollers are not observable here).
 *
 * Under load (the per-task figures): batches are full. A poller's ReceiveMessage returns at most 10
 * messages, so each delivered message costs 1/min(10, batchSize) of a receive; after the
 * invocation Lambda deletes the records not reported as failures with DeleteMessageBatch (at most
 * 10 entries), so each acknowledged message costs 1/min(10, batchSize) of a delete. Payloads are
 * tiny (Kaj's messages carry ids, not payloads): one billed request per call.
 */
export function esmRequests(
  delivered: number,
  acknowledged: number,
  batchSize: number,
): { receive: number; deleteBatch: number } {
  const perCall = Math.min(SQS_MAX_BATCH, batchSize);
  return { receive: delivered / perCall, deleteBatch: acknowledged / perCall };
}

/**
 * At rest (per queue with a mapping, per day, not per task): each poller long-polls (20 s) and
 * gets nothing, so it makes 86,400 / 20 = 4,320 empty receives a day. How many pollers Lambda
 * keeps on an idle queue is not documented; `pollers` is that assumption.
 */
export function idleReceivesPerDay(pollers: number): number {
  return (pollers * 86_400) / SQS_LONG_POLL_SECONDS;
}
