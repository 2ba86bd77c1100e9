import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { METRICS } from '../../config/metrics.js';
import { DEFAULT_LANE } from '../../config/lanes.js';
import { PRIORITIES, type Priority } from '../../config/resources.js';
import type { Limiter } from '../../limit/limiter.js';
import { taskMessageSchema, type TaskMessage } from '../../task/message.js';
import { classifyError, type Classification } from '../../retry/classify.js';
import { redeliveryDelaySeconds } from '../../retry/decide.js';
import { PermanentError, TaskTimeoutError } from '../../retry/errors.js';
import type { Logger } from '../../runtime/logger.js';
import { StoreRejectedError } from '../../task/store-errors.js';
import {
  resolvePolicy,
  type AnyTaskDefinition,
  type ResolvedPolicy,
  type TaskContext,
  type TaskRegistry,
} from '../../task/define.js';
import { LeaseLostError } from '../../task/errors.js';
import { checkJsonValue } from '../../task/json-value.js';
import type { LifecycleDeps, TaskLifecycle } from '../../task/lifecycle.js';
import type { ClaimOutcome } from '../../task/claim.js';
import type { TaskRecord } from '../../task/model.js';
import { DEFAULTS } from '../../config/resources.js';
import { MissingLimiterError, UnprocessableMessageError } from './errors.js';
import { type ExclusiveGate, processGate } from './exclusive-gate.js';
import { FlowControl } from './flow-control.js';
import { Heartbeat } from './heartbeat.js';
import { type HeldMessage, MessageHold } from './message-hold.js';

export interface ConsumerDeps extends LifecycleDeps {
  readonly registry: TaskRegistry;
  /** Handlers of this process share it; a task that crashed a worker before runs alone. @default processGate */
  readonly gate?: ExclusiveGate;
  /** Queue name of each priority, to tell which queue a record came from. */
  readonly queueNames: Readonly<Record<Priority, string>>;
  /** Queue names of the other lanes' priorities (a lane's consumer only gets its own, but may know all). */
  readonly laneQueueNames?: Readonly<Record<string, Readonly<Record<Priority, string>>>>;
  /** The process's limiter (one per process: its tasks share it). Needed when a type `uses` a limit. */
  readonly limiter?: Limiter;
}

/** Where a record came from: the queue of a lane and priority. */
interface Source {
  readonly lane: string;
  readonly priority: Priority;
}

/** The slice of Lambda's context the consumer uses. */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  /**
   * The visibility timeout the records were received with, when the poller chose it (the local
   * event source receives with one lease). Unset on Lambda, whose mapping receives with the
   * queue's visibility timeout: the consumer then shortens it to one lease at the start.
   */
  readonly receivedVisibilitySeconds?: number;
}

/** Time kept in reserve after a task's timeout, to record its outcome before the invocation ends. */
export const RECORDING_RESERVE_MS = 5_000;

/** What happens to one SQS record: deleted by the caller (`ack`) or left on the queue (`retry`). */
type Disposition = 'ack' | 'retry';

type RunOutcome =
  | { readonly kind: 'ok'; readonly value: unknown }
  | { readonly kind: 'error'; readonly error: unknown }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'lease_lost'; readonly error: LeaseLostError };

/**
 * Processes an SQS batch the way Lambda's event source mapping delivers it, and answers with
 * a partial batch response: records not listed are deleted by the caller.
 *
 * Infrastructure failures leave the record on the queue (SQS redelivers it; no attempt is
 * counted). Task failures are recorded in the table and the record is acknowledged: retries
 * travel as new messages, dead tasks as dead letters.
 */
export class TaskConsumer {
  private readonly sourceByQueueName: Map<string, Source>;
  private readonly flow: FlowControl;

  constructor(
    private readonly d: ConsumerDeps,
    private readonly lifecycle: TaskLifecycle,
  ) {
    this.sourceByQueueName = new Map(PRIORITIES.map((p) => [d.queueNames[p], { lane: DEFAULT_LANE, priority: p }]));
    for (const [lane, names] of Object.entries(d.laneQueueNames ?? {})) {
      for (const p of PRIORITIES) this.sourceByQueueName.set(names[p], { lane, priority: p });
    }
    if (d.limiter === undefined && FlowControl.needed(d.registry)) {
      throw new MissingLimiterError(FlowControl.limitedTypes(d.registry));
    }
    this.flow = new FlowControl({
      registry: d.registry,
      ...(d.limiter === undefined ? {} : { limiter: d.limiter }),
      clock: d.clock,
      random: d.random,
      logger: d.logger,
      metrics: d.metrics,
      maxReceiveCount: d.settings.maxReceiveCount,
      deferral: { baseSeconds: DEFAULTS.limitDeferBaseSeconds, capSeconds: DEFAULTS.limitDeferCapSeconds },
    });
  }

  async processBatch(event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse> {
    // Every message of the batch is held for one lease at a time until its disposition, so a
    // consumer that dies gives them all back within about one lease (docs/reliability.md).
    const held: HeldMessage[] = [];
    for (const r of event.Records) {
      const source = this.sourceByQueueName.get(queueNameOf(r));
      if (source !== undefined) held.push({ receiptHandle: r.receiptHandle, ...source });
    }
    const hold = new MessageHold({ queue: this.d.queue, settings: this.d.settings, logger: this.d.logger }, held);
    const received = context.receivedVisibilitySeconds;
    hold.start({ shorten: received === undefined || received > this.d.settings.leaseSeconds });
    let dispositions: Disposition[];
    try {
      dispositions = await Promise.all(
        event.Records.map(async (r) => {
          const disposition = await this.processRecord(r, context, hold);
          // Left for redelivery: back when the visibility it was given (or the last lease) ends.
          // An acknowledged message stays held until the caller has deleted it.
          if (disposition === 'retry') hold.release(r.receiptHandle);
          return disposition;
        }),
      );
    } finally {
      await hold.stop();
    }
    return {
      batchItemFailures: event.Records.filter((_, i) => dispositions[i] === 'retry').map((r) => ({
        itemIdentifier: r.messageId,
      })),
    };
  }

  private async processRecord(
    sqsRecord: SQSRecord,
    context: InvocationContext,
    hold: MessageHold,
  ): Promise<Disposition> {
    const log = { message_id: sqsRecord.messageId };
    let source: Source;
    let message: TaskMessage;
    try {
      source = this.sourceOf(sqsRecord);
      message = parseMessage(sqsRecord);
    } catch (err) {
      // Not ours to interpret: leave it, and the queue's redrive policy dead-letters it.
      this.d.logger.error('unprocessable message left for the redrive policy', { ...log, error: String(err) });
      this.d.metrics.count(METRICS.consumerItemFailures, undefined);
      return 'retry';
    }
    const { priority, lane } = source;
    const held: HeldMessage = { receiptHandle: sqsRecord.receiptHandle, priority, lane };
    const fields = { ...log, task_id: message.task_id, priority };
    const receiveCount = Number(sqsRecord.attributes.ApproximateReceiveCount) || 1;
    try {
      const timeoutMs = (message.timeout_seconds ?? DEFAULTS.maxTaskTimeoutSeconds) * 1000;
      if (context.getRemainingTimeInMillis() < timeoutMs + RECORDING_RESERVE_MS) {
        // Not enough time left in this invocation: hand it back untouched, no attempt counted.
        await hold.setVisibility(held, 0);
        this.d.logger.info('released: not enough invocation time left', fields);
        return 'retry';
      }
      const claim = await this.lifecycle.claim(
        message.task_id,
        message.dispatch_id,
        { receiveCount, ...(message.sent_at === undefined ? {} : { sentAt: message.sent_at }) },
        this.flow.admissions(),
      );
      // What to do when the task is not (or, at the claim's write, no longer) the consumer's to run.
      const unclaimed = (claim: Unclaimed): Promise<Disposition> =>
        this.unclaimed(claim, { held, hold, message, receiveCount, priority, fields });
      if (claim.kind === 'claimed') return await this.run(claim, source, context, unclaimed);
      return await unclaimed(claim);
    } catch (err) {
      return this.failed(err, { held, hold, receiveCount, fields });
    }
  }

  /** Settles a message whose task this consumer does not run: dropped, deferred, or limited. */
  private async unclaimed(
    claim: Unclaimed,
    m: {
      held: HeldMessage;
      hold: MessageHold;
      message: TaskMessage;
      receiveCount: number;
      priority: Priority;
      fields: Record<string, unknown>;
    },
  ): Promise<Disposition> {
    const { held, hold, message, receiveCount, priority, fields } = m;
    switch (claim.kind) {
      case 'drop':
        this.d.metrics.count(METRICS.claimsRejected, undefined);
        this.d.logger.debug('message dropped', { ...fields, reason: claim.reason });
        return 'ack';
      case 'defer':
        await hold.setVisibility(held, claim.seconds);
        this.d.logger.debug('message deferred', { ...fields, seconds: claim.seconds, reason: claim.reason });
        return 'retry';
      case 'limited': {
        // Nothing was written: no attempt, no backoff, no claim. Only the message waits.
        const deferral = this.flow.defer(claim.refusal, claim.record, receiveCount, priority);
        if (!deferral.refresh) {
          await hold.setVisibility(held, deferral.seconds);
          return 'retry';
        }
        await this.d.queue.send(priority, message, {
          delaySeconds: deferral.seconds,
          type: claim.record.type,
          ...(claim.record.lane === undefined ? {} : { lane: claim.record.lane }),
        });
        return 'ack';
      }
      case 'crash_loop':
        return 'ack';
    }
  }

  /** A failure while handling a message: fenced off (leave it), or infrastructure (back off). */
  private async failed(
    err: unknown,
    m: { held: HeldMessage; hold: MessageHold; receiveCount: number; fields: Record<string, unknown> },
  ): Promise<Disposition> {
    const { held, hold, receiveCount, fields } = m;
    if (err instanceof LeaseLostError) {
      // Another worker owns the task now; its outcome stands. Leave our copy of the message
      // alone: deleting it could delete the message the new owner holds.
      this.d.logger.warn('write fenced off: lease lost to another worker', fields);
      return 'retry';
    }
    // Come back soon rather than after the queue's long visibility timeout, backing off with
    // the receive count (full jitter, at most 5 minutes). Best effort: SQS may be down too.
    const backoff = redeliveryDelaySeconds(receiveCount, this.d.random);
    await hold.setVisibility(held, backoff).catch(() => {});
    this.d.metrics.count(METRICS.consumerItemFailures, undefined);
    this.d.logger.error('infrastructure failure; message left for redelivery', {
      ...fields,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      cause: err instanceof Error && err.cause instanceof Error ? `${err.cause.name}: ${err.cause.message}` : undefined,
      retry_in_seconds: backoff,
    });
    return 'retry';
  }

  /** Runs a claimed task under its timeout with a heartbeat, then records the outcome. */
  private async run(
    claim: Claimed,
    source: Source,
    context: InvocationContext,
    unclaimed: (claim: Unclaimed) => Promise<Disposition>,
  ): Promise<Disposition> {
    const permit = claim.permit;
    try {
      return await this.runClaimed(claim, source, context, unclaimed);
    } finally {
      // After the outcome is written (or the attempt ended otherwise): the next task may start.
      await this.flow.release(permit);
    }
  }

  private async runClaimed(
    claim: Claimed,
    { priority }: Source,
    context: InvocationContext,
    unclaimed: (claim: Unclaimed) => Promise<Disposition>,
  ): Promise<Disposition> {
    const permit = claim.permit;
    let claimed = claim.record;
    let committed = claim.commit === undefined;
    /**
     * Writes the claim when it has a write of its own (a redelivery, a suspect, a reclaim): right
     * before the handler starts, so a worker that dies while the task waits for its turn charges
     * it nothing. Answers what to do instead when the task changed meanwhile.
     */
    const commit = async (): Promise<Disposition | undefined> => {
      if (committed || claim.commit === undefined) return undefined;
      committed = true;
      const outcome = await claim.commit();
      if (outcome.kind !== 'claimed') return unclaimed(outcome);
      claimed = outcome.record;
      return undefined;
    };
    const fields = { task_id: claimed.task_id, type: claimed.type, attempt: claimed.attempts };
    let def: AnyTaskDefinition;
    try {
      def = this.d.registry.get(claimed.type);
    } catch (err) {
      const instead = await commit();
      if (instead !== undefined) return instead;
      await this.lifecycle.attemptFailed(claimed, permanent(err), resolvePolicy({}), 0);
      return 'ack';
    }
    const policy = resolvePolicy({
      ...def,
      maxAttempts: claimed.max_attempts,
      timeoutSeconds: claimed.timeout_seconds,
    });
    const parsed = def.schema.safeParse(claimed.payload);
    if (!parsed.success) {
      const instead = await commit();
      if (instead !== undefined) return instead;
      await this.lifecycle.attemptFailed(claimed, permanent(parsed.error), policy, 0);
      return 'ack';
    }

    // The message is held for one lease at a time by the batch's MessageHold (processBatch), so a
    // dead worker's task comes back within about a lease, its claim written or not.
    const controller = new AbortController();
    const heartbeat = new Heartbeat(
      {
        lifecycle: this.lifecycle,
        settings: this.d.settings,
        logger: this.d.logger,
        renewLimits: () => this.flow.renew(permit),
        abort: (r) => controller.abort(r),
      },
      claimed,
    );
    const suspect = this.lifecycle.isSuspect(claimed);
    const gate = this.d.gate ?? processGate;
    // The gate is held until the outcome is written: a solo attempt whose handler has returned
    // is still the task's until its record says so, and a crash before then is still its own.
    const attempt = async (): Promise<Disposition> => {
      let outcome: RunOutcome;
      let durationMs: number;
      try {
        if (suspect) {
          // Waiting for the worker to empty may have used up the invocation: hand it back.
          if (context.getRemainingTimeInMillis() < claimed.timeout_seconds * 1000 + RECORDING_RESERVE_MS) {
            this.d.logger.info('released: not enough invocation time left after waiting to run alone', fields);
            return 'retry';
          }
        }
        // Its turn has come: from here a crash is on the record.
        const instead = await commit();
        if (instead !== undefined) return instead;
        heartbeat.update(claimed);
        if (suspect) {
          heartbeat.update(await this.lifecycle.markSolo(heartbeat.current));
          this.d.logger.warn('running alone: this task crashed a worker before', {
            ...fields,
            crashes: claimed.crashes ?? 0,
          });
        }
        heartbeat.starting();
        await this.flow.waitForStart(permit);
        const started = this.d.clock.now();
        outcome = await this.execute(def, parsed.data, claimed, priority, controller, heartbeat, fields);
        durationMs = this.d.clock.now() - started;
        // The handler may have settled first (rejecting on its aborted signal) after the lease was
        // lost: the lease decides, so nothing is recorded or sent for this attempt.
        const lost = heartbeat.leaseLostError;
        if (lost !== undefined) outcome = { kind: 'lease_lost', error: lost };
      } finally {
        // Wait for a beat in flight: its write (a lazy claim's claim) comes before the outcome.
        await heartbeat.stop();
      }
      return this.finish(heartbeat.current, outcome, {
        def,
        policy,
        durationMs,
        cancelRequested: heartbeat.cancelRequested,
        fields,
      });
    };
    // Until its turn comes, the heartbeat only renews the task's limit slots: no claim is written.
    heartbeat.startWaiting();
    try {
      return suspect ? await gate.runExclusive(attempt) : await gate.runShared(attempt);
    } finally {
      void heartbeat.stop();
    }
  }

  /** Records what the attempt came to. `record` is the latest view (the heartbeat extends the lease). */
  private async finish(
    record: TaskRecord,
    outcome: RunOutcome,
    o: {
      def: AnyTaskDefinition;
      policy: ResolvedPolicy;
      durationMs: number;
      cancelRequested: boolean;
      fields: Record<string, unknown>;
    },
  ): Promise<Disposition> {
    this.d.metrics.durationMs(record.type, o.durationMs);
    if (outcome.kind === 'lease_lost') throw outcome.error;
    if (o.cancelRequested) {
      await this.lifecycle.cancelledWhileRunning(record, o.durationMs);
      this.d.logger.debug('task cancelled while running', o.fields);
      return 'ack';
    }
    try {
      await this.record(record, outcome, o.def, o.policy, o.durationMs, o.fields);
    } catch (err) {
      if (!(err instanceof StoreRejectedError)) throw err;
      // The store refused the outcome itself (it can never be written): fail the task with a
      // short, storable reason instead of retrying the write forever.
      const reason = new PermanentError(`the attempt's outcome could not be stored: ${err.message}`, {
        code: 'UNSTORABLE',
      });
      await this.lifecycle.attemptFailed(record, classifyError(reason), o.policy, o.durationMs);
      this.d.logger.error('outcome refused by the store; task failed', { ...o.fields, error: err.message });
    }
    return 'ack';
  }

  /** Calls the handler, racing its timeout and the loss of the lease. */
  private async execute(
    def: AnyTaskDefinition,
    payload: unknown,
    claimed: TaskRecord,
    priority: Priority,
    controller: AbortController,
    heartbeat: Heartbeat,
    fields: Record<string, unknown>,
  ): Promise<RunOutcome> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<RunOutcome>((resolve) => {
      timer = setTimeout(() => {
        controller.abort(new TaskTimeoutError(claimed.task_id, claimed.timeout_seconds));
        resolve({ kind: 'timeout' });
      }, claimed.timeout_seconds * 1000);
    });
    const leaseLost = heartbeat.leaseLost.then((error): RunOutcome => ({ kind: 'lease_lost', error }));
    const ctx: TaskContext = {
      taskId: claimed.task_id,
      attempt: claimed.attempts,
      maxAttempts: claimed.max_attempts,
      priority,
      signal: controller.signal,
      logger: boundLogger(this.d.logger, fields),
      ...(claimed.scheduled_time === undefined ? {} : { scheduledTime: new Date(claimed.scheduled_time) }),
      ...(claimed.schedule === undefined ? {} : { schedule: claimed.schedule }),
    };
    try {
      const running = Promise.resolve()
        .then(() => def.handler(payload, ctx))
        .then(
          (value): RunOutcome => ({ kind: 'ok', value }),
          (error: unknown): RunOutcome => ({ kind: 'error', error }),
        );
      return await Promise.race([running, timedOut, leaseLost]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Records a finished attempt: success (if its result can be stored), retry or death. */
  private async record(
    record: TaskRecord,
    outcome: Exclude<RunOutcome, { kind: 'lease_lost' }>,
    def: AnyTaskDefinition,
    policy: ResolvedPolicy,
    durationMs: number,
    fields: Record<string, unknown>,
  ): Promise<void> {
    let failure: Classification;
    if (outcome.kind === 'ok') {
      const checked = checkJsonValue(outcome.value, 'result', DEFAULTS.maxResultBytes);
      if (checked.ok) {
        const done = await this.lifecycle.succeed(record, checked.value, durationMs);
        this.d.logger.debug(done.status === 'succeeded' ? 'task succeeded' : `task ${done.status}`, {
          ...fields,
          duration_ms: durationMs,
        });
        return;
      }
      // One run, one clear reason: an unstorable result is the handler's bug, not an outage.
      failure = classifyError(new PermanentError(`${checked.path}: ${checked.reason}`, { code: 'UNSTORABLE_RESULT' }));
    } else {
      failure =
        outcome.kind === 'timeout'
          ? classifyError(new TaskTimeoutError(record.task_id, record.timeout_seconds))
          : classifyError(outcome.error);
    }
    // A provider's 429 pauses its limit for every worker before this task's retry is even sent.
    await this.flow.learn(def, record, failure);
    const after = await this.lifecycle.attemptFailed(record, failure, policy, durationMs);
    this.d.logger.warn(`task attempt failed; now ${after.status}`, {
      ...fields,
      error: failure.info.name,
      code: failure.info.code,
      retryable: failure.retryable,
    });
  }

  private sourceOf(r: SQSRecord): Source {
    const s = this.sourceByQueueName.get(queueNameOf(r));
    if (s === undefined)
      throw new UnprocessableMessageError(`record from unknown queue ${r.eventSourceARN}`, r.messageId);
    return s;
  }
}

type Claimed = Extract<ClaimOutcome, { kind: 'claimed' }>;
type Unclaimed = Exclude<ClaimOutcome, { kind: 'claimed' }>;

/** The name of the queue a record came from (the last part of its ARN). */
function queueNameOf(r: SQSRecord): string {
  return r.eventSourceARN.split(':').pop() ?? '';
}

function parseMessage(r: SQSRecord): TaskMessage {
  let body: unknown;
  try {
    body = JSON.parse(r.body);
  } catch (err) {
    throw new UnprocessableMessageError('message body is not JSON', r.messageId, err);
  }
  const parsed = taskMessageSchema.safeParse(body);
  if (!parsed.success)
    throw new UnprocessableMessageError('message body is not a task message', r.messageId, parsed.error);
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
