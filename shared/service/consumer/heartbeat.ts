import type { RuntimeSettings } from '../../config/settings.js';
import type { Logger } from '../../runtime/logger.js';
import { LeaseLostError, TaskCancelledError } from '../../task/errors.js';
import { claimWritten } from '../../task/lease.js';
import type { TaskLifecycle } from '../../task/lifecycle.js';
import type { TaskRecord } from '../../task/model.js';

export interface HeartbeatDeps {
  readonly lifecycle: Pick<TaskLifecycle, 'leases'>;
  readonly settings: Pick<RuntimeSettings, 'heartbeatSeconds' | 'cancelPollSeconds'>;
  readonly logger: Logger;
  /** Extends the leases of the task's concurrency slots (flow control); best effort, never throws. */
  readonly renewLimits?: () => Promise<void>;
  /** Called once when the task must stop: a cancel request, or the lease lost to another worker. */
  readonly abort: (reason: TaskCancelledError | LeaseLostError) => void;
}

/**
 * Keeps one running attempt alive and listening, from `start()` until `stop()` (always called
 * in a `finally`, as sqs-consumer clears its heartbeat):
 * - every lease/3 it extends the task's lease (a fenced write that also returns the task, so a
 *   cancel request is seen there); the first beat of a lazy claim writes the claim itself
 *   (`running`, with a lease). The message's visibility is the batch's `MessageHold`'s to keep;
 * - every `cancelPollSeconds` it reads the task (eventually consistent) for a cancel request, so
 *   a cancel reaches the handler's signal within seconds rather than at the next heartbeat.
 * A lease lost to another worker aborts the attempt; any other failure is retried next beat.
 */
export class Heartbeat {
  private record: TaskRecord;
  private beatTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private busy = false;
  /** The beat or poll now running, if any (its promise never rejects). */
  private inFlight: Promise<void> | undefined;
  private stopped = false;
  /** False while the attempt waits for its turn: beats then only renew its limit slots. */
  private running = true;
  private cancelSeen: boolean;
  private lost: LeaseLostError | undefined;
  private onLost: ((e: LeaseLostError) => void) | undefined;
  /** Resolves if the lease is lost (never resolves otherwise). */
  readonly leaseLost: Promise<LeaseLostError>;

  constructor(
    private readonly d: HeartbeatDeps,
    claimed: TaskRecord,
  ) {
    this.record = claimed;
    this.cancelSeen = claimed.cancel_requested === true;
    this.leaseLost = new Promise((resolve) => {
      this.onLost = resolve;
    });
  }

  /** The task as last written by this attempt (the lease as extended). */
  get current(): TaskRecord {
    return this.record;
  }

  get cancelRequested(): boolean {
    return this.cancelSeen;
  }

  get leaseLostError(): LeaseLostError | undefined {
    return this.lost;
  }

  start(): void {
    if (this.cancelSeen) this.d.abort(new TaskCancelledError(this.record.task_id));
    this.beatTimer = setInterval(() => void this.tick(() => this.beat()), this.d.settings.heartbeatSeconds * 1000);
    const poll = this.d.settings.cancelPollSeconds;
    if (poll > 0 && poll < this.d.settings.heartbeatSeconds) {
      this.pollTimer = setInterval(() => void this.tick(() => this.poll()), poll * 1000);
    }
  }

  /**
   * Starts while the attempt still waits for its turn (to run alone, or beside one that does):
   * beats renew only its limit slots and the cancel poll listens; nothing is written to the task
   * until `starting()`, so a worker that dies meanwhile leaves the task as it was.
   */
  startWaiting(): void {
    this.running = false;
    this.start();
  }

  /**
   * The handler is about to start: beats from now on extend the lease (or, for a lazy claim,
   * write it), the first one a full period from now.
   */
  starting(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    clearInterval(this.beatTimer);
    this.beatTimer = setInterval(() => void this.tick(() => this.beat()), this.d.settings.heartbeatSeconds * 1000);
  }

  /** Replaces the record after a write made outside the heartbeat (e.g. `markSolo`). */
  update(record: TaskRecord): void {
    this.record = record;
  }

  /**
   * Stops beating. Resolves once a beat or poll already in flight has settled, so that the
   * outcome is written after it — above all after a lazy claim's own claim write, which the
   * outcome must see (otherwise it would find the task `running` and take itself for fenced off).
   */
  stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.beatTimer);
    clearInterval(this.pollTimer);
    return this.inFlight ?? Promise.resolve();
  }

  /** One request at a time: a slow beat is not overtaken by the next (or by a poll). */
  private tick(work: () => Promise<void>): Promise<void> {
    if (this.busy || this.stopped || this.lost !== undefined) return Promise.resolve();
    this.busy = true;
    const running = this.run(work);
    this.inFlight = running;
    return running;
  }

  private async run(work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      if (err instanceof LeaseLostError) {
        this.lost = err;
        this.d.abort(err);
        this.onLost?.(err);
      } else {
        this.d.logger.warn('heartbeat failed; will try again', { task_id: this.record.task_id, error: String(err) });
      }
    } finally {
      this.busy = false;
    }
  }

  private async beat(): Promise<void> {
    if (!this.running) {
      await this.d.renewLimits?.();
      return;
    }
    // DELETE ended the task before this attempt's (lazy) claim was written: nothing to write.
    if (this.cancelSeen && !claimWritten(this.record)) return;
    const stored = await this.d.lifecycle.leases.heartbeat(this.record);
    if (stored.status === 'cancelled') {
      // The claim was refused because DELETE ended the task: keep the attempt's own view (its
      // outcome adds the attempt to the history) and stop it.
      this.cancelled();
      return;
    }
    this.record = stored;
    if (stored.cancel_requested === true) this.cancelled();
    await this.d.renewLimits?.();
  }

  private async poll(): Promise<void> {
    if (this.cancelSeen) return;
    if (await this.d.lifecycle.leases.cancelRequested(this.record)) this.cancelled();
  }

  private cancelled(): void {
    if (this.cancelSeen) return;
    this.cancelSeen = true;
    this.d.abort(new TaskCancelledError(this.record.task_id));
  }
}
