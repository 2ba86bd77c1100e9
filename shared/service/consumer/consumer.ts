import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { METRICS } from '../../config/metrics.js';
import { DEFAULT_LANE } from '../../config/lanes.js';
import { PRIORITIES, type Priority } from '../../config/resources.js';
import type { Limiter } from '../../limit/limiter.js';
import { taskMessageSchema, type TaskMessage } from '../../task/message.js';
import { redeliveryDelaySeconds } from '../../retry/decide.js';
import type { TaskRegistry } from '../../task/define.js';
import { LeaseLostError } from '../../task/errors.js';
import type { LifecycleDeps, TaskLifecycle } from '../../task/lifecycle.js';
import { DEFAULTS } from '../../config/resources.js';
import { type AttemptDeps, type Disposition, RECORDING_RESERVE_MS, runAttempt, type Unclaimed } from './attempt.js';
import { MissingHistoryStoreError, MissingLimiterError, UnprocessableMessageError } from './errors.js';
import { type ExclusiveGate, GateTurn, processGate } from './exclusive-gate.js';
import { FlowControl } from './flow-control.js';
import { type HistoryStore, historyRetentionDays } from '../../workflow/history-store.js';
import { hasWorkflows, workflowTypes } from '../../workflow/define.js';
import { submitterChildRuns } from '../../workflow/children.js';
import { TaskSubmitter } from '../../task/submit.js';
import type { TaskRecord } from '../../task/model.js';
import { type HeldMessage, MessageHold } from './message-hold.js';
import type { LimitStore } from '../../limit/limit-store.js';
import { limitStoreActiveRuns } from '../../workflow/active-runs.js';

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
  /** Workflow histories (the history table). Needed when a type is a workflow. */
  readonly history?: HistoryStore;
  /** How long after a child started its waiting run first looks it up. @default DEFAULTS.childCheckMs */
  readonly childCheckMs?: number;
  /** The limits table: holds the active-run slots of workflow types with `maxActiveRuns` (pipelines). */
  readonly limitStore?: LimitStore;
  /** How often a run waiting for an active-run slot looks again. @default DEFAULTS.admitPollMs */
  readonly admitPollMs?: number;
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
  /** What an attempt of a claimed task works with (attempt.ts). */
  private readonly attempt: AttemptDeps;

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
    if (d.history === undefined && hasWorkflows(d.registry)) {
      throw new MissingHistoryStoreError(workflowTypes(d.registry));
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
    const submitter = new TaskSubmitter(d, lifecycle);
    this.attempt = {
      lifecycle,
      flow: this.flow,
      registry: d.registry,
      ...(d.gate === undefined ? {} : { gate: d.gate }),
      settings: d.settings,
      logger: d.logger,
      metrics: d.metrics,
      clock: d.clock,
      ...(d.history === undefined
        ? {}
        : {
            workflows: {
              history: d.history,
              clock: d.clock,
              random: d.random,
              historyRetentionDays: historyRetentionDays(d.settings, d.registry),
              ...(d.childCheckMs === undefined ? {} : { childCheckMs: d.childCheckMs }),
              ...(d.admitPollMs === undefined ? {} : { admitPollMs: d.admitPollMs }),
              ...(d.limitStore === undefined
                ? {}
                : { activeRuns: limitStoreActiveRuns(d.limitStore, d.store, d.clock) }),
              // A run's children are created as any task is, by the task domain's submitter.
              childRuns: (run: TaskRecord) => submitterChildRuns(submitter, d.store, run),
            },
          }),
    };
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
    // Its place in the process's gate, taken before its limits (GateTurn), given back at the end.
    const turn = new GateTurn(this.d.gate ?? processGate);
    try {
      const timeoutMs = (message.timeout_seconds ?? DEFAULTS.maxTaskTimeoutSeconds) * 1000;
      if (context.getRemainingTimeInMillis() < timeoutMs + RECORDING_RESERVE_MS) {
        // Not enough time left in this invocation: hand it back untouched, no attempt counted.
        await hold.setVisibility(held, 0);
        this.d.logger.info('released: not enough invocation time left', fields);
        return 'retry';
      }
      const claim = await this.lifecycle.claims.claim(
        message.task_id,
        message.dispatch_id,
        { receiveCount, ...(message.sent_at === undefined ? {} : { sentAt: message.sent_at }) },
        turn.before(this.flow.admissions()),
      );
      // What to do when the task is not (or, at the claim's write, no longer) the consumer's to run.
      const unclaimed = (claim: Unclaimed): Promise<Disposition> =>
        this.unclaimed(claim, { held, hold, message, receiveCount, priority, fields });
      if (claim.kind === 'claimed') {
        return await runAttempt(this.attempt, claim, {
          priority,
          remainingMs: () => context.getRemainingTimeInMillis(),
          unclaimed,
          turn,
        });
      }
      return await unclaimed(claim);
    } catch (err) {
      return this.failed(err, { held, hold, receiveCount, fields });
    } finally {
      turn.giveBack();
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
        // What follows a task's end, again (a worker may have died before it was done): a
        // workflow's child's run still hears of it; a cancelled run's children are still stopped.
        if (claim.finished !== undefined) await this.lifecycle.followEndAgain(claim.finished);
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

  private sourceOf(r: SQSRecord): Source {
    const s = this.sourceByQueueName.get(queueNameOf(r));
    if (s === undefined)
      throw new UnprocessableMessageError(`record from unknown queue ${r.eventSourceARN}`, r.messageId);
    return s;
  }
}

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
