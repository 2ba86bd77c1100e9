/**
 * One lane's SQS queue in the payroll simulation: a min-heap of messages by the time they become
 * visible (then by send order). A message received is out of the heap (in flight) until the
 * consumer deletes it, or changes its visibility (a deferral: back in the heap, visible later).
 * Standard queues are only roughly ordered; visibility order is close enough.
 *
 * @module
 */
import { MinHeap } from '../../testing/min-heap.js';

export interface QueuedMessage {
  /** When the message is (again) visible, epoch ms. */
  visibleAt: number;
  /** Send order, to keep equal times FIFO (renewed when a deferral puts it back). */
  seq: number;
}

export class MessageHeap<M extends QueuedMessage> {
  private readonly heap = new MinHeap<M>(earlier);
  private seq = 0;

  get size(): number {
    return this.heap.size;
  }

  peek(): M | undefined {
    return this.heap.peek();
  }

  /** Puts `m` in the queue, visible from `visibleAt`. */
  push(m: M, visibleAt: number): void {
    m.visibleAt = visibleAt;
    m.seq = this.seq++;
    this.heap.push(m);
  }

  pop(): M | undefined {
    return this.heap.pop();
  }
}

function earlier(a: QueuedMessage, b: QueuedMessage): boolean {
  return a.visibleAt < b.visibleAt || (a.visibleAt === b.visibleAt && a.seq < b.seq);
}
