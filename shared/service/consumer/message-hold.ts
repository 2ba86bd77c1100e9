import type { Priority } from '../../config/resources.js';
import type { RuntimeSettings } from '../../config/settings.js';
import { MessageGoneError } from '../../task/queue-errors.js';
import type { TaskQueue } from '../../task/task-queue.js';
import { changeVisibilities } from '../../task/visibility.js';
import type { Logger } from '../../runtime/logger.js';

/** A message of the invocation: its receipt handle and the queue (lane and priority) it came from. */
export interface HeldMessage {
  readonly receiptHandle: string;
  readonly priority: Priority;
  readonly lane: string;
}

export interface MessageHoldDeps {
  readonly queue: TaskQueue;
  readonly settings: Pick<RuntimeSettings, 'leaseSeconds' | 'heartbeatSeconds'>;
  readonly logger: Logger;
}

/**
 * Holds the messages of one invocation for one lease at a time, from the start of the invocation
 * until each has its disposition, so that a consumer that dies gives every message back within
 * about one lease — running or not: waiting for a limit, for its turn to run alone, for its
 * record, or started but not yet at its first heartbeat.
 *
 * - `start({ shorten: true })` sets every message's visibility to one lease at once (one
 *   ChangeMessageVisibilityBatch per 10): for messages received with the queue's long visibility
 *   timeout (Lambda's event source mapping receives with the queue's; it must be at least the
 *   function timeout). A poller that received them with one lease already (`npm start`, the
 *   workers) says `shorten: false`: nothing is sent then.
 * - Every lease/3 it extends the messages still held to one lease again (one batch request per
 *   10), so a message expires only if two extensions in a row fail or come late.
 * - `setVisibility` gives a message its own visibility (a deferral, a backoff, 0 to release it)
 *   and stops holding it; it waits for an extension in flight, which could otherwise land after
 *   it and undo it. `release` stops holding a message left as it is.
 * - `stop()` (in a `finally`) ends it; a message acknowledged earlier stays held until then, so it
 *   is not delivered again before the caller deletes it.
 *
 * Best effort, as the heartbeat: the table's lease and the claim's fencing are the truth; a failed
 * extension is retried at the next period.
 */
export class MessageHold {
  private readonly held = new Map<string, HeldMessage>();
  private timer: NodeJS.Timeout | undefined;
  /** The extension now running, if any (its promise never rejects). */
  private inFlight: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly d: MessageHoldDeps,
    messages: readonly HeldMessage[],
  ) {
    for (const m of messages) this.held.set(m.receiptHandle, m);
  }

  /** The receipt handles held now. */
  get receiptHandles(): string[] {
    return [...this.held.keys()];
  }

  start(o: { readonly shorten: boolean }): void {
    if (o.shorten) this.extend();
    this.timer = setInterval(() => this.extend(), this.d.settings.heartbeatSeconds * 1000);
  }

  /** Stops holding a message, leaving its visibility as the last extension set it (at most one lease). */
  release(receiptHandle: string): void {
    this.held.delete(receiptHandle);
  }

  /** Sets a message's visibility to `seconds` from now and stops holding it. @throws MessageGoneError, QueueUnavailableError */
  async setVisibility(message: HeldMessage, seconds: number): Promise<void> {
    this.held.delete(message.receiptHandle);
    await this.inFlight;
    await this.d.queue.changeVisibility(message.priority, message.receiptHandle, seconds, message.lane);
  }

  /** Stops holding every message. Resolves once an extension in flight has settled. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.held.clear();
    await this.inFlight;
  }

  /** One extension at a time: a slow one is not overtaken by the next. */
  private extend(): void {
    if (this.stopped || this.inFlight !== undefined || this.held.size === 0) return;
    this.inFlight = this.extendAll().finally(() => {
      this.inFlight = undefined;
    });
  }

  private async extendAll(): Promise<void> {
    const byQueue = new Map<string, HeldMessage[]>();
    for (const m of this.held.values()) {
      const key = `${m.lane}\u0000${m.priority}`;
      byQueue.set(key, [...(byQueue.get(key) ?? []), m]);
    }
    const seconds = this.d.settings.leaseSeconds;
    await Promise.all(
      [...byQueue.values()].map(async (messages) => {
        const first = messages[0] as HeldMessage;
        const entries = messages.map((m) => ({ receiptHandle: m.receiptHandle, seconds }));
        try {
          const failed = await changeVisibilities(this.d.queue, first.priority, entries, first.lane);
          for (const f of failed) {
            // Gone (deleted, or received again by another consumer): nothing left to hold.
            if (f.error instanceof MessageGoneError) this.held.delete(f.entry.receiptHandle);
            this.d.logger[f.error instanceof MessageGoneError ? 'info' : 'warn'](
              'could not extend message visibility',
              {
                priority: first.priority,
                lane: first.lane,
                error: String(f.error),
              },
            );
          }
        } catch (err) {
          this.d.logger.warn('could not extend message visibility', { priority: first.priority, error: String(err) });
        }
      }),
    );
  }
}
