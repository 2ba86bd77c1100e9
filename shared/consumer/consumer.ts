import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { METRICS } from '../config/metrics.js';
import { PRIORITIES, type Priority } from '../config/resources.js';
import { MessageGoneError } from '../queue/errors.js';
import { taskMessageSchema, type TaskMessage } from '../queue/message.js';
import { classifyError, type Classification } from '../retry/classify.js';
import { PermanentError, TaskTimeoutError } from '../retry/errors.js';
import type { Logger } from '../runtime/logger.js';
import { resolvePolicy, type AnyTaskDefinition, type TaskContext, type TaskRegistry } from '../task/define.js';
import { LeaseLostError, TaskCancelledError } from '../task/errors.js';
import type { LifecycleDeps, TaskLifecycle } from '../task/lifecycle.js';
import type { TaskRecord } from '../task/model.js';
import { DEFAULTS } from '../config/resources.js';
import { UnprocessableMessageError } from './errors.js';

export interface ConsumerDeps extends LifecycleDeps {
  readonly registry: TaskRegistry;
  /** Queue name of each priority, to tell which queue a record came from. */
  readonly queueNames: Readonly<Record<Priority, string>>;
}

/** The slice of Lambda's context the consumer uses. */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
}

/** Time kept in reserve after a task's timeout, to record its outcome before the invocation ends. */
export const RECORDING_RESERVE_MS = 5_000;

/** What happens to one SQS record: deleted by the caller (`ack`) or left on the queue (`retry`). */
type Disposition = 'ack' | 'retry';

type RunOutcome =
  | { kind: 'ok'; value: unknown }
  | { kind: 'error'; error: unknown }
  | { kind: 'timeout' }
  | { kind: 'lease_lost'; error: LeaseLostError };

/**
 * Processes an SQS batch the way Lambda's event source mapping delivers it, and answers with
 * a partial batch response: records not listed are deleted by the caller.
 *
 * Infrastructure failures leave the record on the queue (SQS redelivers it; no attempt is
 * counted). Task failures are recorded in the table and the record is acknowledged: retries
 * travel as new messages, dead tasks as dead letters.
 */
export class TaskConsumer {
  private readonly priorityByQueueName: Map<string, Priority>;

  constructor(
    private readonly d: ConsumerDeps,
    private readonly lifecycle: TaskLifecycle,
  ) {
    this.priorityByQueueName = new Map(PRIORITIES.map((p) => [d.queueNames[p], p]));
  }

  async processBatch(event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse> {
    const dispositions = await Promise.all(event.Records.map((r) => this.processRecord(r, context)));
    return {
      batchItemFailures: event.Records.filter((_, i) => dispositions[i] === 'retry').map((r) => ({
        itemIdentifier: r.messageId,
      })),
    };
  }

  private async processRecord(sqsRecord: SQSRecord, context: InvocationContext): Promise<Disposition> {
    const log = { message_id: sqsRecord.messageId };
    let priority: Priority;
    let message: TaskMessage;
    try {
      priority = this.priorityOf(sqsRecord);
      message = parseMessage(sqsRecord);
    } catch (err) {
      // Not ours to interpret: leave it, and the queue's redrive policy dead-letters it.
      this.d.logger.error('unprocessable message left for the redrive policy', { ...log, error: String(err) });
      return 'retry';
    }
    const fields = { ...log, task_id: message.task_id, priority };
    try {
      const timeoutMs = (message.timeout_seconds ?? DEFAULTS.maxTaskTimeoutSeconds) * 1000;
      if (context.getRemainingTimeInMillis() < timeoutMs + RECORDING_RESERVE_MS) {
        // Not enough time left in this invocation: hand it back untouched, no attempt counted.
        await this.d.queue.changeVisibility(priority, sqsRecord.receiptHandle, 0);
        this.d.logger.info('released: not enough invocation time left', fields);
        return 'retry';
      }
      const claim = await this.lifecycle.claim(message.task_id, message.dispatch_id);
      switch (claim.kind) {
        case 'drop':
          this.d.metrics.count(METRICS.claimsRejected, undefined);
          this.d.logger.info('message dropped', { ...fields, reason: claim.reason });
          return 'ack';
        case 'defer':
          await this.d.queue.changeVisibility(priority, sqsRecord.receiptHandle, claim.seconds);
          this.d.logger.info('deferred: task held by another worker', { ...fields, seconds: claim.seconds });
          return 'retry';
        case 'crash_loop':
          return 'ack';
        case 'claimed':
          return await this.run(claim.record, priority, sqsRecord.receiptHandle);
      }
    } catch (err) {
      if (err instanceof LeaseLostError) {
        // Another worker owns the task now; its outcome stands. Leave our copy of the message
        // alone: deleting it could delete the message the new owner holds.
        this.d.logger.warn('write fenced off: lease lost to another worker', fields);
        return 'retry';
      }
      // Come back soon rather than after the queue's long visibility timeout, backing off with
      // the receive count (full jitter, at most 5 minutes). Best effort: SQS may be down too.
      const receives = Number(sqsRecord.attributes.ApproximateReceiveCount) || 1;
      const backoff = 1 + Math.floor(this.d.random.next() * Math.min(300, 5 * 2 ** (receives - 1)));
      await this.d.queue.changeVisibility(priority, sqsRecord.receiptHandle, backoff).catch(() => {});
      this.d.logger.error('infrastructure failure; message left for redelivery', {
        ...fields,
        error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        cause: err instanceof Error && err.cause instanceof Error ? `${err.cause.name}: ${err.cause.message}` : undefined,
        retry_in_seconds: backoff,
      });
      return 'retry';
    }
  }

  /** Runs a claimed task under its timeout with a heartbeat, then records the outcome. */
  private async run(claimed: TaskRecord, priority: Priority, receiptHandle: string): Promise<Disposition> {
    const { settings, clock } = this.d;
    const fields = { task_id: claimed.task_id, type: claimed.type, attempt: claimed.attempts };
    let def: AnyTaskDefinition;
    try {
      def = this.d.registry.get(claimed.type);
    } catch (err) {
      await this.lifecycle.attemptFailed(claimed, permanent(err), resolvePolicy({}), 0);
      return 'ack';
    }
    const policy = resolvePolicy({ ...def, maxAttempts: claimed.max_attempts, timeoutSeconds: claimed.timeout_seconds });
    const parsed = def.schema.safeParse(claimed.payload);
    if (!parsed.success) {
      await this.lifecycle.attemptFailed(claimed, permanent(parsed.error), policy, 0);
      return 'ack';
    }

    // Hold the message for one lease (not the queue's long visibility), so a dead worker's
    // task comes back within a lease.
    await this.holdMessage(priority, receiptHandle, claimed.task_id);

    const controller = new AbortController();
    let current = claimed;
    let cancelRequested = claimed.cancel_requested === true;
    let onLeaseLost: (e: LeaseLostError) => void = () => {};
    const leaseLost = new Promise<RunOutcome>((resolve) => {
      onLeaseLost = (error) => resolve({ kind: 'lease_lost', error });
    });
    let beating = false;
    const heartbeat = setInterval(() => {
      if (beating) return;
      beating = true;
      void (async () => {
        try {
          await this.holdMessage(priority, receiptHandle, claimed.task_id);
          current = await this.lifecycle.heartbeat(current);
          if (current.cancel_requested && !cancelRequested) {
            cancelRequested = true;
            controller.abort(new TaskCancelledError(claimed.task_id));
          }
        } catch (err) {
          if (err instanceof LeaseLostError) {
            controller.abort(err);
            onLeaseLost(err);
          } else {
            this.d.logger.warn('heartbeat failed; will try again', { ...fields, error: String(err) });
          }
        } finally {
          beating = false;
        }
      })();
    }, settings.heartbeatSeconds * 1000);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<RunOutcome>((resolve) => {
      timer = setTimeout(() => {
        controller.abort(new TaskTimeoutError(claimed.task_id, claimed.timeout_seconds));
        resolve({ kind: 'timeout' });
      }, claimed.timeout_seconds * 1000);
    });
    if (cancelRequested) controller.abort(new TaskCancelledError(claimed.task_id));

    const started = clock.now();
    const ctx: TaskContext = {
      taskId: claimed.task_id,
      attempt: claimed.attempts,
      maxAttempts: claimed.max_attempts,
      priority,
      signal: controller.signal,
      logger: boundLogger(this.d.logger, fields),
    };
    let outcome: RunOutcome;
    try {
      const running = Promise.resolve()
        .then(() => def.handler(parsed.data, ctx))
        .then(
          (value): RunOutcome => ({ kind: 'ok', value }),
          (error: unknown): RunOutcome => ({ kind: 'error', error }),
        );
      outcome = await Promise.race([running, timedOut, leaseLost]);
    } finally {
      clearInterval(heartbeat);
      clearTimeout(timer);
    }
    const durationMs = clock.now() - started;
    this.d.metrics.durationMs(claimed.type, durationMs);
    // Write with the latest view of the task (the heartbeat may have refreshed it).
    const record = { ...claimed, lease_until: current.lease_until };

    if (outcome.kind === 'lease_lost') throw outcome.error;
    if (cancelRequested) {
      await this.lifecycle.cancelledWhileRunning(record, durationMs);
      this.d.logger.info('task cancelled while running', fields);
      return 'ack';
    }
    if (outcome.kind === 'ok') {
      const size = Buffer.byteLength(JSON.stringify(outcome.value ?? null));
      if (size > DEFAULTS.maxResultBytes) {
        const tooBig = new PermanentError(`result of ${size} bytes exceeds the limit of ${DEFAULTS.maxResultBytes}`);
        await this.lifecycle.attemptFailed(record, classifyError(tooBig), policy, durationMs);
        return 'ack';
      }
      await this.lifecycle.succeed(record, outcome.value, durationMs);
      this.d.logger.info('task succeeded', { ...fields, duration_ms: durationMs });
      return 'ack';
    }
    const failure =
      outcome.kind === 'timeout'
        ? classifyError(new TaskTimeoutError(claimed.task_id, claimed.timeout_seconds))
        : classifyError(outcome.error);
    const after = await this.lifecycle.attemptFailed(record, failure, policy, durationMs);
    this.d.logger.warn(`task attempt failed; now ${after.status}`, {
      ...fields,
      error: failure.info.name,
      code: failure.info.code,
      retryable: failure.retryable,
    });
    return 'ack';
  }

  private async holdMessage(priority: Priority, receiptHandle: string, taskId: string): Promise<void> {
    try {
      await this.d.queue.changeVisibility(priority, receiptHandle, this.d.settings.leaseSeconds);
    } catch (err) {
      // The table's lease is the truth; visibility only speeds up recovery after a crash.
      const level = err instanceof MessageGoneError ? 'info' : 'warn';
      this.d.logger[level]('could not extend message visibility', { task_id: taskId, error: String(err) });
    }
  }

  private priorityOf(r: SQSRecord): Priority {
    const name = r.eventSourceARN.split(':').pop() ?? '';
    const p = this.priorityByQueueName.get(name);
    if (p === undefined) throw new UnprocessableMessageError(`record from unknown queue ${r.eventSourceARN}`, r.messageId);
    return p;
  }
}

function parseMessage(r: SQSRecord): TaskMessage {
  let body: unknown;
  try {
    body = JSON.parse(r.body);
  } catch (err) {
    throw new UnprocessableMessageError('message body is not JSON', r.messageId, err);
  }
  const parsed = taskMessageSchema.safeParse(body);
  if (!parsed.success) throw new UnprocessableMessageError('message body is not a task message', r.messageId, parsed.error);
  return parsed.data;
}

function permanent(err: unknown): Classification {
  const e = err instanceof Error ? err : new Error(String(err));
  return classifyError(new PermanentError(`${e.name}: ${e.message}`, { cause: err }));
}

function boundLogger(logger: Logger, fields: Record<string, unknown>): Logger {
  return {
    debug: (m, f) => logger.debug(m, { ...fields, ...f }),
    info: (m, f) => logger.info(m, { ...fields, ...f }),
    warn: (m, f) => logger.warn(m, { ...fields, ...f }),
    error: (m, f) => logger.error(m, { ...fields, ...f }),
  };
}
