import { randomUUID } from 'node:crypto';
import { DEFAULTS, type Priority } from '../shared/config/resources.js';
import { MessageGoneError, QueueRejectedError, QueueUnavailableError } from '../shared/task/queue-errors.js';
import {
  MAX_ERROR_ATTRIBUTE_CHARS,
  MESSAGE_ATTRIBUTES as A,
  type DeadLetter,
  type TaskMessage,
} from '../shared/task/message.js';
import type {
  FailedSend,
  FailedVisibilityChange,
  OutgoingMessage,
  TaskQueue,
  VisibilityChange,
} from '../shared/task/task-queue.js';

/** SQS's SendMessageBatch limit, which the fake's `batches` mirror. */
const MAX_BATCH_ENTRIES = 10;

export interface MemoryTaskQueueOptions {
  /** The fake's clock (epoch ms), for delays and visibility. @default Date.now */
  readonly now?: () => number;
  /**
   * Whether `changeVisibility` refuses (MessageGoneError) a receipt handle this fake never gave
   * out, as SQS refuses one it does not know. Off by default: unit tests build SQS records by
   * hand, with handles of their own. A handle the fake gave out is always checked: one whose
   * message was deleted or received again since is gone.
   */
  readonly strictReceiptHandles?: boolean;
}

/** A message attribute as SQS returns it. */
export interface ReceivedAttribute {
  readonly dataType: 'String' | 'Number';
  readonly value: string;
}

/** A message as received from the fake's queues (and, in the contract tests, from SQS). */
export interface ReceivedTaskMessage {
  readonly body: string;
  readonly attributes: Readonly<Record<string, ReceivedAttribute>>;
  readonly receiptHandle: string;
  /** Receives so far, this one included. */
  readonly receiveCount: number;
}

/** A message on one of the fake's queues, as `queued` shows it without receiving it. */
export interface QueuedTaskMessage {
  readonly body: string;
  readonly attributes: Readonly<Record<string, ReceivedAttribute>>;
  /** When it was sent (epoch ms). */
  readonly sentAt: number;
  /** When it is (or becomes again) visible to a receive (epoch ms). */
  readonly visibleAt: number;
  readonly receiveCount: number;
}

interface StoredMessage {
  readonly body: string;
  readonly attributes: Record<string, ReceivedAttribute>;
  readonly sentAt: number;
  visibleAt: number;
  receiptHandle: string | undefined;
  receiveCount: number;
}

const HANDLE_PREFIX = 'memory-receipt-';
const DLQ_SUFFIX = '-dlq';

/**
 * Records what the domain sends, for unit tests (`sent`, `dead`, `visibility`), and keeps the
 * messages as `SqsTaskQueue` puts them on SQS: one queue and one DLQ per priority, with the same
 * bodies and message attributes, a send's delay (whole seconds, at most 900), and the visibility
 * `changeVisibility` sets. `receive` / `deleteMessage` read them back as a consumer would.
 * `test/contract/` runs one suite on this and on `SqsTaskQueue` over SQS emulators.
 */
export class MemoryTaskQueue implements TaskQueue {
  readonly sent: { priority: Priority; message: TaskMessage; delaySeconds: number; type: string }[] = [];
  readonly dead: DeadLetter[] = [];
  readonly visibility: { priority: Priority; receiptHandle: string; seconds: number }[] = [];
  /** The ChangeMessageVisibilityBatch requests `changeVisibilityMany` stands for (≤ 10 entries each), in order. */
  readonly visibilityBatches: { priority: Priority; entries: VisibilityChange[] }[] = [];
  /** The SendMessageBatch requests `sendMany` stands for (≤ 10 entries each), in order. */
  readonly batches: { priority: Priority; size: number }[] = [];
  /** Make the next call of an operation fail (`sendMany`: every entry of that call, reported, not thrown). */
  failNext: Partial<Record<'send' | 'sendMany' | 'sendDead' | 'changeVisibility' | 'changeVisibilityMany', Error>> = {};
  /**
   * Fails chosen entries of `sendMany`, as SQS reports single entries of a batch failed: return the
   * error for an entry, or undefined to send it.
   */
  rejectEntry: ((entry: OutgoingMessage) => QueueUnavailableError | QueueRejectedError | undefined) | undefined;
  /** `false`: SQS cannot be reached; every call throws QueueUnavailableError until it is `true` again. */
  available = true;
  private readonly now: () => number;
  private readonly strict: boolean;
  private readonly queues = new Map<string, StoredMessage[]>();
  /** Every receipt handle given out, so a stale one is told apart from a stranger's. */
  private readonly issued = new Set<string>();

  constructor(options: MemoryTaskQueueOptions = {}) {
    this.now = options.now ?? (() => Date.now()); // looked up per call: vitest's fake timers replace Date.now
    this.strict = options.strictReceiptHandles ?? false;
  }

  async send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void> {
    this.maybeFail('send');
    if (!this.available) throw unavailable(`SendMessage to ${priority}`, message.task_id);
    this.enqueue(priority, message, options);
  }

  async sendMany(priority: Priority, entries: readonly OutgoingMessage[]): Promise<FailedSend[]> {
    const injected = this.failNext.sendMany;
    delete this.failNext.sendMany;
    const failed: FailedSend[] = [];
    for (let i = 0; i < entries.length; i += MAX_BATCH_ENTRIES) {
      const batch = entries.slice(i, i + MAX_BATCH_ENTRIES);
      this.batches.push({ priority, size: batch.length });
      for (const entry of batch) {
        const taskId = entry.message.task_id;
        const error =
          injected !== undefined
            ? batchFailure(injected, priority, taskId)
            : this.available
              ? this.rejectEntry?.(entry)
              : unavailable(`SendMessageBatch to ${priority}`, taskId);
        if (error === undefined) this.enqueue(priority, entry.message, entry);
        else failed.push({ entry, error });
      }
    }
    return failed;
  }

  private enqueue(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): void {
    this.sent.push({ priority, message, delaySeconds: options.delaySeconds, type: options.type });
    const delay = Math.max(0, Math.min(DEFAULTS.maxSqsDelaySeconds, Math.ceil(options.delaySeconds)));
    const now = this.now();
    this.queue(priority, false).push({
      body: JSON.stringify(message),
      attributes: taskMessageAttributes(message, priority, options.type),
      sentAt: now,
      visibleAt: now + delay * 1000,
      receiptHandle: undefined,
      receiveCount: 0,
    });
  }

  async sendDead(letter: DeadLetter): Promise<void> {
    this.maybeFail('sendDead');
    if (!this.available) throw unavailable(`SendMessage to the ${letter.priority} DLQ`, letter.task_id);
    this.dead.push(letter);
    const now = this.now();
    this.queue(letter.priority, true).push({
      body: JSON.stringify(letter),
      attributes: deadLetterAttributes(letter),
      sentAt: now,
      visibleAt: now,
      receiptHandle: undefined,
      receiveCount: 0,
    });
  }

  async changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void> {
    this.maybeFail('changeVisibility');
    if (!this.available) throw unavailable(`ChangeMessageVisibility on ${priority}`, undefined);
    this.setVisibleAt(priority, receiptHandle, seconds);
    this.visibility.push({ priority, receiptHandle, seconds });
  }

  async changeVisibilityMany(
    priority: Priority,
    entries: readonly VisibilityChange[],
  ): Promise<FailedVisibilityChange[]> {
    const injected = this.failNext.changeVisibilityMany;
    delete this.failNext.changeVisibilityMany;
    const failed: FailedVisibilityChange[] = [];
    for (let i = 0; i < entries.length; i += MAX_BATCH_ENTRIES) {
      const batch = entries.slice(i, i + MAX_BATCH_ENTRIES);
      this.visibilityBatches.push({ priority, entries: [...batch] });
      for (const entry of batch) {
        if (injected !== undefined || !this.available) {
          const error = unavailable(`ChangeMessageVisibilityBatch on ${priority}`, undefined);
          failed.push({ entry, error: injected instanceof MessageGoneError ? injected : error });
          continue;
        }
        try {
          this.setVisibleAt(priority, entry.receiptHandle, entry.seconds);
        } catch (err) {
          failed.push({ entry, error: err as MessageGoneError });
        }
      }
    }
    return failed;
  }

  /** Only the latest receive's handle of a message still on that priority's queue is live. */
  private setVisibleAt(priority: Priority, receiptHandle: string, seconds: number): void {
    if (!this.issued.has(receiptHandle) && !this.strict) return;
    const held = this.queue(priority, false).find((m) => m.receiptHandle === receiptHandle);
    if (held === undefined) throw new MessageGoneError('message is no longer in flight: ReceiptHandleIsInvalid');
    held.visibleAt = this.now() + Math.max(0, Math.min(43_200, Math.ceil(seconds))) * 1000;
  }

  /**
   * Receives up to `max` messages visible now on the priority's queue (or its DLQ), oldest first,
   * hiding each for `visibilitySeconds` under a new receipt handle.
   */
  receive(
    priority: Priority,
    options: { readonly dead?: boolean; readonly visibilitySeconds?: number; readonly max?: number } = {},
  ): ReceivedTaskMessage[] {
    const now = this.now();
    const out: ReceivedTaskMessage[] = [];
    for (const m of this.queue(priority, options.dead ?? false)) {
      if (out.length >= (options.max ?? 10)) break;
      if (m.visibleAt > now) continue;
      m.receiptHandle = `${HANDLE_PREFIX}${randomUUID()}`;
      this.issued.add(m.receiptHandle);
      m.receiveCount += 1;
      m.visibleAt = now + (options.visibilitySeconds ?? 30) * 1000;
      out.push({
        body: m.body,
        attributes: structuredClone(m.attributes),
        receiptHandle: m.receiptHandle,
        receiveCount: m.receiveCount,
      });
    }
    return out;
  }

  /** Deletes a received message by its latest receipt handle. Returns whether one was deleted. */
  deleteMessage(priority: Priority, receiptHandle: string, options: { readonly dead?: boolean } = {}): boolean {
    const q = this.queue(priority, options.dead ?? false);
    const i = q.findIndex((m) => m.receiptHandle === receiptHandle);
    if (i >= 0) q.splice(i, 1);
    return i >= 0;
  }

  /** What is on the priority's queue (or its DLQ) now, oldest first, without receiving it. */
  queued(priority: Priority, options: { readonly dead?: boolean } = {}): QueuedTaskMessage[] {
    return this.queue(priority, options.dead ?? false).map((m) => ({
      body: m.body,
      attributes: structuredClone(m.attributes),
      sentAt: m.sentAt,
      visibleAt: m.visibleAt,
      receiveCount: m.receiveCount,
    }));
  }

  /** The earliest time a message on a priority queue (DLQs aside) is visible; undefined: none is queued. */
  nextVisibleAt(): number | undefined {
    let next: number | undefined;
    for (const [key, q] of this.queues) {
      if (key.endsWith(DLQ_SUFFIX)) continue;
      for (const m of q) if (next === undefined || m.visibleAt < next) next = m.visibleAt;
    }
    return next;
  }

  private queue(priority: Priority, dead: boolean): StoredMessage[] {
    const key = `${priority}${dead ? DLQ_SUFFIX : ''}`;
    let q = this.queues.get(key);
    if (q === undefined) {
      q = [];
      this.queues.set(key, q);
    }
    return q;
  }

  private maybeFail(op: keyof MemoryTaskQueue['failNext']): void {
    const err = this.failNext[op];
    if (err) {
      delete this.failNext[op];
      throw err;
    }
  }
}

/** The message attributes `SqsTaskQueue` sends a task message with. */
export function taskMessageAttributes(
  message: TaskMessage,
  priority: Priority,
  type: string,
): Record<string, ReceivedAttribute> {
  return { [A.taskId]: str(message.task_id), [A.type]: str(type), [A.priority]: str(priority) };
}

/** The message attributes `SqsTaskQueue` sends a dead letter with (the error cut to its limit). */
export function deadLetterAttributes(letter: DeadLetter): Record<string, ReceivedAttribute> {
  const error = letter.last_error?.message ?? letter.reason;
  return {
    [A.taskId]: str(letter.task_id),
    [A.type]: str(letter.type),
    [A.priority]: str(letter.priority),
    [A.attempts]: { dataType: 'Number', value: String(letter.attempts) },
    [A.failedAt]: str(letter.failed_at),
    [A.error]: str(
      error.length > MAX_ERROR_ATTRIBUTE_CHARS ? `${error.slice(0, MAX_ERROR_ATTRIBUTE_CHARS - 1)}…` : error,
    ),
  };
}

function str(value: string): ReceivedAttribute {
  // As the adapter: SQS rejects empty attribute values.
  return { dataType: 'String', value: value === '' ? '-' : value };
}

/** An injected failure of a whole `sendMany` as the error of each of its entries. */
function batchFailure(err: Error, priority: Priority, taskId: string): QueueUnavailableError | QueueRejectedError {
  if (err instanceof QueueUnavailableError || err instanceof QueueRejectedError) return err;
  return new QueueUnavailableError(`SQS SendMessageBatch to ${priority} failed: ${err.name}`, { taskId, cause: err });
}

function unavailable(what: string, taskId: string | undefined): QueueUnavailableError {
  return new QueueUnavailableError(`SQS ${what} failed: the memory queue is unavailable`, {
    ...(taskId === undefined ? {} : { taskId }),
    cause: new Error('ECONNREFUSED'),
  });
}
