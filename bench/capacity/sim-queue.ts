/**
 * The TaskQueue port as three in-memory SQS standard queues and their DLQs on the virtual clock:
 * delays, receipt handles, visibility timeouts (a message received and neither deleted nor changed
 * comes back when its visibility ends), receive counts; and the request counts SQS would bill.
 * `receive` and `delete` are what the event source model (event-source.ts) uses, as Lambda's
 * pollers use ReceiveMessage and DeleteMessageBatch. It runs the `TaskQueue` contract
 * (test/unit/bench/capacity-contract.test.ts); SQS being unreachable is not modelled.
 *
 * @module
 */
import { DEFAULTS, PRIORITIES, type Priority } from '../../shared/config/resources.js';
import { MessageGoneError } from '../../shared/task/queue-errors.js';
import type { DeadLetter, TaskMessage } from '../../shared/task/message.js';
import type {
  FailedSend,
  FailedVisibilityChange,
  OutgoingMessage,
  TaskQueue,
  VisibilityChange,
} from '../../shared/task/task-queue.js';
import type { PeakMeter } from './meter.js';
import type { VirtualClock } from '../../testing/virtual-clock.js';

export interface SimMessage {
  readonly messageId: string;
  readonly body: string;
  /** The queue it is on: the priority's, or (`dead`) that priority's DLQ. */
  readonly priority: Priority;
  readonly dead: boolean;
  /** The task type it was sent with (its `kaj-type` attribute). */
  readonly type: string;
  receiveCount: number;
  receiptHandle: string | undefined;
  /** The visibility timer of a received message. */
  timer: unknown;
}

/** A FIFO of visible messages (SQS standard queues are only roughly ordered; close enough). */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;
  get length(): number {
    return this.items.length - this.head;
  }
  push(v: T): void {
    this.items.push(v);
  }
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head] as T;
    this.head += 1;
    if (this.head > 65_536 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }
}

export class SimTaskQueue implements TaskQueue {
  private readonly visible = new Map<Priority, Fifo<SimMessage>>(PRIORITIES.map((p) => [p, new Fifo()]));
  private readonly visibleDead = new Map<Priority, Fifo<SimMessage>>(PRIORITIES.map((p) => [p, new Fifo()]));
  private readonly inFlight = new Map<string, SimMessage>();
  private seq = 0;
  /** Called when messages become visible on a priority's queue (the pollers' long poll returns). */
  onVisible: (p: Priority) => void = () => {};

  constructor(
    private readonly time: VirtualClock,
    private readonly meter: PeakMeter,
    private readonly visibilityTimeoutMs = DEFAULTS.queueVisibilityTimeoutSeconds * 1000,
  ) {}

  /** ApproximateNumberOfMessagesVisible. */
  visibleCount(p: Priority): number {
    return (this.visible.get(p) as Fifo<SimMessage>).length;
  }

  async send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void> {
    this.meter.add('sqs.requests');
    this.enqueue(priority, JSON.stringify(message), options.type, options.delaySeconds);
  }

  /** SendMessageBatch: ten messages a request; nothing fails in memory. */
  async sendMany(priority: Priority, entries: readonly OutgoingMessage[]): Promise<FailedSend[]> {
    for (let i = 0; i < entries.length; i += 10) this.meter.add('sqs.requests');
    for (const e of entries) this.enqueue(priority, JSON.stringify(e.message), e.type, e.delaySeconds);
    return [];
  }

  async sendDead(letter: DeadLetter): Promise<void> {
    this.meter.add('sqs.requests');
    this.show(this.message(letter.priority, true, JSON.stringify(letter), letter.type));
  }

  async changeVisibility(priority: Priority, receiptHandle: string, seconds: number): Promise<void> {
    this.meter.add('sqs.requests');
    this.rehide(priority, receiptHandle, seconds);
  }

  /** ChangeMessageVisibilityBatch: 10 entries a request, each changed or refused on its own. */
  async changeVisibilityMany(
    priority: Priority,
    entries: readonly VisibilityChange[],
  ): Promise<FailedVisibilityChange[]> {
    const failed: FailedVisibilityChange[] = [];
    for (let i = 0; i < entries.length; i += 10) {
      this.meter.add('sqs.requests');
      for (const entry of entries.slice(i, i + 10)) {
        try {
          this.rehide(priority, entry.receiptHandle, entry.seconds);
        } catch (err) {
          failed.push({ entry, error: err as MessageGoneError });
        }
      }
    }
    return failed;
  }

  /** A message in flight on the priority's queue hidden for `seconds` from now. @throws MessageGoneError */
  private rehide(priority: Priority, receiptHandle: string, seconds: number): void {
    const m = this.inFlight.get(receiptHandle);
    // A handle is one queue's: another priority's queue (or a DLQ) does not know it.
    if (m === undefined || m.priority !== priority || m.dead) {
      throw new MessageGoneError('message is no longer in flight: ReceiptHandleIsInvalid');
    }
    this.time.cancel(m.timer);
    this.hide(m, Math.max(0, Math.ceil(seconds)) * 1000);
  }

  /**
   * ReceiveMessage: up to `max` visible messages of the priority's queue (or its DLQ), each hidden
   * for `visibilityMs` (default: the queue's visibility timeout).
   */
  receive(
    p: Priority,
    max: number,
    options: { readonly dead?: boolean; readonly visibilityMs?: number } = {},
  ): SimMessage[] {
    this.meter.who = 'poller';
    this.meter.add('sqs.requests');
    const q = (options.dead === true ? this.visibleDead : this.visible).get(p) as Fifo<SimMessage>;
    const visibilityMs = options.visibilityMs ?? this.visibilityTimeoutMs;
    const out: SimMessage[] = [];
    while (out.length < max) {
      const m = q.shift();
      if (m === undefined) break;
      m.receiveCount += 1;
      m.receiptHandle = `rh-${this.seq++}`;
      this.hide(m, visibilityMs);
      out.push(m);
    }
    return out;
  }

  /** DeleteMessageBatch by receipt handle (a stale handle deletes nothing, as on SQS). */
  delete(handles: readonly string[]): void {
    this.meter.who = 'poller';
    for (let i = 0; i < handles.length; i += 10) this.meter.add('sqs.requests');
    for (const h of handles) {
      const m = this.inFlight.get(h);
      if (m === undefined) continue;
      this.time.cancel(m.timer);
      this.inFlight.delete(h);
    }
  }

  private message(priority: Priority, dead: boolean, body: string, type: string): SimMessage {
    return {
      messageId: `m-${this.seq++}`,
      body,
      priority,
      dead,
      type,
      receiveCount: 0,
      receiptHandle: undefined,
      timer: undefined,
    };
  }

  private enqueue(p: Priority, body: string, type: string, delaySeconds: number): void {
    const m = this.message(p, false, body, type);
    const delayMs = Math.max(0, Math.min(DEFAULTS.maxSqsDelaySeconds, Math.ceil(delaySeconds))) * 1000;
    if (delayMs === 0) this.show(m);
    else this.time.at(delayMs, () => this.show(m));
  }

  /** Hides a received message for `ms` (0: visible again at once) under its current handle. */
  private hide(m: SimMessage, ms: number): void {
    const handle = m.receiptHandle as string;
    if (ms === 0) {
      this.inFlight.delete(handle);
      this.show(m);
      return;
    }
    this.inFlight.set(handle, m);
    m.timer = this.time.at(ms, () => {
      if (this.inFlight.get(handle) !== m) return;
      this.inFlight.delete(handle);
      this.show(m);
    });
  }

  private show(m: SimMessage): void {
    m.receiptHandle = undefined;
    if (m.dead) {
      (this.visibleDead.get(m.priority) as Fifo<SimMessage>).push(m);
      return;
    }
    (this.visible.get(m.priority) as Fifo<SimMessage>).push(m);
    this.onVisible(m.priority);
  }
}
