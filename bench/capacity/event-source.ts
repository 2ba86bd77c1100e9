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
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { KajConfig } from '../../infra/config.js';
import { type Priority, resourceNames } from '../../shared/config/resources.js';
import type { InvocationContext } from '../../shared/service/consumer/consumer.js';
import { lambdaSqsRecord } from '../../testing/fixtures.js';
import type { VirtualClock } from '../../testing/virtual-clock.js';
import type { SimMessage, SimTaskQueue } from './sim-queue.js';

/** An execution environment's consumer. */
export type ProcessBatch = (event: SQSEvent, context: InvocationContext) => Promise<SQSBatchResponse>;

/** Concurrent invocations of the consumer function, all mappings together. */
export interface FunctionConcurrency {
  busy: number;
  peak: number;
}

/** Lambda's documented SQS scaling: initial concurrent batches and the scale-up rate. */
const INITIAL_BATCHES = 5;
const SCALE_UP_PER_MINUTE = 300;
/** Idle time before the mapping scales back (not documented; an assumption of the model). */
const IDLE_SCALE_DOWN_MS = 60_000;
/** Receive-to-handler latency of each invocation (poll, invoke, runtime). */
const INVOKE_OVERHEAD_MS = 25;

export class SimEventSource {
  /** Invocations running now. */
  busy = 0;
  /** Most invocations running at once. */
  peakBusy = 0;
  invocations = 0;
  /** Concurrency the mapping has scaled to (≤ maxConcurrency). */
  private allowed: number;
  private lastBusyAt = 0;
  private readonly idle: ProcessBatch[] = [];
  private readonly arn: string;
  private windowTimer: unknown;

  constructor(
    private readonly priority: Priority,
    private readonly config: KajConfig,
    private readonly queue: SimTaskQueue,
    private readonly time: VirtualClock,
    /** The consumer function's concurrency, shared by the three mappings. */
    private readonly fn: FunctionConcurrency,
    private readonly newEnvironment: () => ProcessBatch,
  ) {
    this.allowed = Math.min(INITIAL_BATCHES, config.concurrency[priority]);
    this.arn = `arn:aws:sqs:us-east-1:000000000000:${resourceNames(config.stackName).queues[priority]}`;
    // Scaling decisions once a second: grow while messages wait behind busy pollers.
    time.every(1000, () => this.scale());
  }

  /**
   * Messages became visible: start invocations for them if there is room. With a batching
   * window, only full batches go at once; what is left goes when the window has passed (`flush`).
   */
  pump(flush = false): void {
    const { queue, priority, time } = this;
    const batchSize = this.config.batchSize[priority];
    const windowMs = this.config.maxBatchingWindowSeconds[priority] * 1000;
    while (this.busy < this.allowed && queue.visibleCount(priority) > 0) {
      if (!flush && windowMs > 0 && queue.visibleCount(priority) < batchSize) {
        this.windowTimer ??= time.at(windowMs, () => {
          this.windowTimer = undefined;
          this.pump(true);
        });
        return;
      }
      void this.invoke(queue.receive(priority, batchSize));
    }
  }

  private scale(): void {
    const { queue, priority, time } = this;
    const maxConcurrency = this.config.concurrency[priority];
    if (this.busy > 0) this.lastBusyAt = time.now();
    const waiting = queue.visibleCount(priority) > 0;
    if (waiting && this.busy >= this.allowed) {
      this.allowed = Math.min(maxConcurrency, this.allowed + SCALE_UP_PER_MINUTE / 60);
    } else if (!waiting && time.now() - this.lastBusyAt > IDLE_SCALE_DOWN_MS) {
      this.allowed = Math.min(maxConcurrency, Math.max(INITIAL_BATCHES, this.busy));
    }
    this.pump();
  }

  private async invoke(messages: SimMessage[]): Promise<void> {
    const { time, fn } = this;
    this.busy += 1;
    fn.busy += 1;
    this.invocations += 1;
    if (this.busy > this.peakBusy) this.peakBusy = this.busy;
    if (fn.busy > fn.peak) fn.peak = fn.busy;
    const processBatch = this.idle.pop() ?? this.newEnvironment();
    try {
      await time.sleep(INVOKE_OVERHEAD_MS);
      const deadline = time.now() + this.config.consumerTimeoutSeconds * 1000;
      const event: SQSEvent = {
        Records: messages.map((m) =>
          lambdaSqsRecord({ ...m, receiptHandle: m.receiptHandle ?? '', eventSourceARN: this.arn }),
        ),
      };
      let failed: Set<string>;
      try {
        const response = await processBatch(event, {
          getRemainingTimeInMillis: () => Math.max(0, deadline - time.now()),
        });
        failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      } catch {
        failed = new Set(messages.map((m) => m.messageId));
      }
      this.queue.delete(event.Records.filter((r) => !failed.has(r.messageId)).map((r) => r.receiptHandle));
    } finally {
      this.idle.push(processBatch);
      this.busy -= 1;
      fn.busy -= 1;
      this.lastBusyAt = time.now();
      this.pump();
    }
  }
}
