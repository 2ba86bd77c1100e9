/**
 * Lambda's SQS event source mapping, modelled on the virtual clock for one priority queue:
 * pollers receive up to `batchSize` visible messages and invoke the consumer with them, up to
 * `maxConcurrency` invocations at once; records the partial batch response does not list are
 * deleted. Scaling follows Lambda's documented behaviour for standard queues (docs/capacity.md,
 * sources 1-2): five concurrent batches to start with, then up to 300 more per minute while
 * messages keep waiting, never above the mapping's maximum concurrency; back towards five when
 * the queue has been idle for a minute.
 *
 * Each invocation runs in an execution environment of its own (one batch at a time, as on
 * Lambda), so each has its own `Kaj` — its own exclusive gate — built by `newEnvironment`.
 *
 * @module
 */
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { Priority } from '../../shared/config/resources.js';
import type { InvocationContext } from '../../shared/service/consumer/consumer.js';
import type { SimMessage, SimTaskQueue } from './sim-queue.js';
import type { VirtualClock } from '../../testing/virtual-clock.js';

export interface MappingSettings {
  readonly maxConcurrency: number;
  readonly batchSize: number;
  readonly maxBatchingWindowSeconds: number;
}

export interface ConsumerEnvironment {
  processBatch(event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse>;
}

export interface EventSourceOptions {
  readonly priority: Priority;
  readonly queueName: string;
  readonly mapping: MappingSettings;
  readonly queue: SimTaskQueue;
  readonly time: VirtualClock;
  readonly functionTimeoutMs: number;
  /** Receive-to-handler latency of each invocation (poll, invoke, runtime). */
  readonly invokeOverheadMs: number;
  readonly newEnvironment: () => ConsumerEnvironment;
  /** The consumer function's concurrency, shared by the three mappings. */
  readonly function: FunctionConcurrency;
}

/** Concurrent invocations of the consumer function, all mappings together. */
export interface FunctionConcurrency {
  busy: number;
  peak: number;
}

/** Lambda's documented SQS scaling: initial concurrent batches and the scale-up rate. */
export const INITIAL_BATCHES = 5;
export const SCALE_UP_PER_MINUTE = 300;
/** Idle time before the mapping scales back (not documented; an assumption of the model). */
const IDLE_SCALE_DOWN_MS = 60_000;

export class SimEventSource {
  /** Invocations running now. */
  busy = 0;
  /** Most invocations running at once. */
  peakBusy = 0;
  invocations = 0;
  /** Concurrency the mapping has scaled to (≤ maxConcurrency). */
  private allowed: number;
  private lastBusyAt = 0;
  private readonly idle: ConsumerEnvironment[] = [];
  private readonly arn: string;
  private windowTimer: unknown;

  constructor(private readonly o: EventSourceOptions) {
    this.allowed = Math.min(INITIAL_BATCHES, o.mapping.maxConcurrency);
    this.arn = `arn:aws:sqs:us-east-1:000000000000:${o.queueName}`;
    // Scaling decisions once a second: grow while messages wait behind busy pollers.
    o.time.every(1000, () => this.scale());
  }

  /**
   * Messages became visible: start invocations for them if there is room. With a batching
   * window, only full batches go at once; what is left goes when the window has passed (`flush`).
   */
  pump(flush = false): void {
    const { mapping, queue, priority, time } = this.o;
    const windowMs = mapping.maxBatchingWindowSeconds * 1000;
    while (this.busy < this.allowed && queue.visibleCount(priority) > 0) {
      if (!flush && windowMs > 0 && queue.visibleCount(priority) < mapping.batchSize) {
        this.windowTimer ??= time.at(windowMs, () => {
          this.windowTimer = undefined;
          this.pump(true);
        });
        return;
      }
      void this.invoke(queue.receive(priority, mapping.batchSize));
    }
  }

  private scale(): void {
    const { mapping, queue, priority, time } = this.o;
    if (this.busy > 0) this.lastBusyAt = time.now();
    const waiting = queue.visibleCount(priority) > 0;
    if (waiting && this.busy >= this.allowed) {
      this.allowed = Math.min(mapping.maxConcurrency, this.allowed + SCALE_UP_PER_MINUTE / 60);
    } else if (!waiting && time.now() - this.lastBusyAt > IDLE_SCALE_DOWN_MS) {
      this.allowed = Math.min(mapping.maxConcurrency, Math.max(INITIAL_BATCHES, this.busy));
    }
    this.pump();
  }

  private async invoke(messages: SimMessage[]): Promise<void> {
    const { time, queue } = this.o;
    const fn = this.o.function;
    this.busy += 1;
    fn.busy += 1;
    this.invocations += 1;
    if (this.busy > this.peakBusy) this.peakBusy = this.busy;
    if (fn.busy > fn.peak) fn.peak = fn.busy;
    const env = this.idle.pop() ?? this.o.newEnvironment();
    try {
      await time.sleep(this.o.invokeOverheadMs);
      const deadline = time.now() + this.o.functionTimeoutMs;
      const event: SQSEvent = { Records: messages.map((m) => this.record(m)) };
      let failed: Set<string>;
      try {
        const response = await env.processBatch(event, {
          getRemainingTimeInMillis: () => Math.max(0, deadline - time.now()),
        });
        failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      } catch {
        failed = new Set(messages.map((m) => m.messageId));
      }
      queue.delete(event.Records.filter((r) => !failed.has(r.messageId)).map((r) => r.receiptHandle));
    } finally {
      this.idle.push(env);
      this.busy -= 1;
      fn.busy -= 1;
      this.lastBusyAt = time.now();
      this.pump();
    }
  }

  private record(m: SimMessage): SQSRecord {
    const now = String(this.o.time.now());
    return {
      messageId: m.messageId,
      receiptHandle: m.receiptHandle ?? '',
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(m.sentAt),
        SenderId: 'capacity-sim',
        ApproximateFirstReceiveTimestamp: now,
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: this.arn,
      awsRegion: 'us-east-1',
    };
  }
}
