import type { Priority } from '../../shared/config/resources.js';
import type { DeadLetter, TaskMessage } from '../../shared/queue/message.js';
import type { TaskQueue } from '../../shared/queue/task-queue.js';

/** Records what the domain sends, for unit tests. */
export class MemoryTaskQueue implements TaskQueue {
  readonly sent: { priority: Priority; message: TaskMessage; delaySeconds: number; type: string }[] = [];
  readonly dead: DeadLetter[] = [];
  readonly visibility: { priority: Priority; receiptHandle: string; seconds: number }[] = [];
  failNext: Partial<Record<'send' | 'sendDead' | 'changeVisibility', Error>> = {};

  async send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void> {
    this.maybeFail('send');
    this.sent.push({ priority, message, ...options });
  }

  async sendDead(letter: DeadLetter): Promise<void> {
    this.maybeFail('sendDead');
    this.dead.push(letter);
  }

  async changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void> {
    this.maybeFail('changeVisibility');
    this.visibility.push({ priority, receiptHandle, seconds });
  }

  private maybeFail(op: keyof MemoryTaskQueue['failNext']): void {
    const err = this.failNext[op];
    if (err) {
      delete this.failNext[op];
      throw err;
    }
  }
}
