import type { Priority } from '../config/resources.js';
import type { MessageGoneError, QueueRejectedError, QueueUnavailableError } from './queue-errors.js';
import type { DeadLetter, TaskMessage } from './message.js';

/** One message of a {@link TaskQueue.sendMany}: what {@link TaskQueue.send} takes, as one value. */
export interface OutgoingMessage {
  readonly message: TaskMessage;
  /** Invisible this long after sending (whole seconds, 0-900; more is cut to 900). */
  readonly delaySeconds: number;
  /** The task's type, for the message attributes. */
  readonly type: string;
  /** The task's lane (its record's `lane`). @default the default lane */
  readonly lane?: string;
}

/** An entry {@link TaskQueue.sendMany} did not send, and why. */
export interface FailedSend {
  /** The very object the caller passed: retry exactly these. */
  readonly entry: OutgoingMessage;
  /**
   * `QueueUnavailableError` (retryable: throttling, an SQS fault, the network) or
   * `QueueRejectedError` (SQS blamed the entry itself; sending it again as it is cannot succeed).
   */
  readonly error: QueueUnavailableError | QueueRejectedError;
}

/** One message's new visibility, for {@link TaskQueue.changeVisibilityMany}. */
export interface VisibilityChange {
  readonly receiptHandle: string;
  /** Seconds from now until the message is visible again (0-43,200). */
  readonly seconds: number;
}

/** An entry {@link TaskQueue.changeVisibilityMany} could not change, and why. */
export interface FailedVisibilityChange {
  /** The very object the caller passed. */
  readonly entry: VisibilityChange;
  /**
   * `MessageGoneError` (the handle no longer refers to a message in flight: deleted, or received
   * again since) or `QueueUnavailableError` (retryable).
   */
  readonly error: MessageGoneError | QueueUnavailableError;
}

/** The queue contract the domain uses. `SqsTaskQueue` implements it on SQS. */
export interface TaskQueue {
  /** Sends a task message to its priority queue in its lane, invisible for `delaySeconds` (0-900). */
  send(
    priority: Priority,
    message: TaskMessage,
    options: { delaySeconds: number; type: string; lane?: string },
  ): Promise<void>;
  /**
   * Sends many messages to one priority queue as `send` would each, in as few requests as the
   * service allows (SQS: SendMessageBatch, 10 a request, the requests concurrent). Entries
   * succeed or fail one by one: the promise resolves with the entries *not* sent (none: `[]`),
   * so the caller can confirm the others and retry those. It does not reject for a queue failure,
   * not even when nothing could be sent (every entry is then listed, retryable).
   */
  sendMany(priority: Priority, entries: readonly OutgoingMessage[]): Promise<FailedSend[]>;
  /** Writes a dead letter to the DLQ of the task's priority, with attributes the admin CLI reads. */
  sendDead(letter: DeadLetter): Promise<void>;
  /**
   * Sets the remaining invisibility of a message received from the queue of `priority` in `lane`
   * (@default the default lane). @throws MessageGoneError
   */
  changeVisibility(priority: Priority, receiptHandle: string, seconds: number, lane?: string): Promise<void>;
  /**
   * Sets the visibility of many messages received from the queue of `priority` in `lane`, as
   * `changeVisibility` would each, in as few requests as the service allows (SQS:
   * ChangeMessageVisibilityBatch, 10 a request). Entries succeed or fail one by one: resolves with
   * the entries *not* changed (none: `[]`); it does not reject for a queue failure (every entry is
   * then listed, retryable). Optional: without it, callers change each message with
   * `changeVisibility` (`changeVisibilities` in `visibility.ts`).
   */
  changeVisibilityMany?(
    priority: Priority,
    entries: readonly VisibilityChange[],
    lane?: string,
  ): Promise<FailedVisibilityChange[]>;
}
