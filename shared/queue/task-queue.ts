import type { Priority } from '../config/resources.js';
import type { DeadLetter, TaskMessage } from './message.js';

/** The queue contract the domain uses. `SqsTaskQueue` implements it on SQS. */
export interface TaskQueue {
  /** Sends a task message to its priority queue, invisible for `delaySeconds` (0-900). */
  send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void>;
  /** Writes a dead letter to the DLQ of the task's priority, with attributes the admin CLI reads. */
  sendDead(letter: DeadLetter): Promise<void>;
  /** Sets the remaining invisibility of a received message. @throws MessageGoneError */
  changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void>;
}
