/**
 * One attempt of a claimed task, in four steps:
 * - parse: its type and payload (an unknown type or a payload its schema refuses fails the task
 *   as permanent, once the claim is written);
 * - claim: the claim's own write (a redelivery, a suspect, a reclaim), made right before the
 *   handler starts, so a worker that dies while the task waits for its turn charges it nothing;
 * - run: under the process's gate (alone if it crashed a worker before), with a heartbeat, once
 *   its limits let it start, under its timeout;
 * - settle: the outcome written (success, retry, death, cancel), then its limit slots released.
 *
 * The consumer (`consumer.ts`) reads the message, claims the task and hands the claim here.
 *
 * @module
 */
import type { RuntimeSettings } from '../../config/settings.js';
import type { Priority } from '../../config/resources.js';
import { DEFAULTS } from '../../config/resources.js';
import { classifyError, type Classification } from '../../retry/classify.js';
import { PermanentError, TaskTimeoutError } from '../../retry/errors.js';
import type { Clock } from '../../runtime/clock.js';
import type { Logger, Metrics } from '../../runtime/logger.js';
import type { ClaimOutcome } from '../../task/claim.js';
import { resolvePolicy, type AnyTaskDefinition, type ResolvedPolicy, type TaskRegistry } from '../../task/define.js';
import { checkJsonValue } from '../../task/json-value.js';
import type { TaskLifecycle } from '../../task/lifecycle.js';
import type { TaskRecord } from '../../task/model.js';
import { StoreRejectedError } from '../../task/store-errors.js';
import type { WorkflowDeps } from './workflow-attempt.js';
import { type ExclusiveGate, type GateTurn, processGate } from './exclusive-gate.js';
import type { FlowControl } from './flow-control.js';
import { Heartbeat } from './heartbeat.js';
import type { RunOutcome } from './run-outcome.js';

import { execute, RECORDING_RESERVE_MS } from './execute.js';

export { RECORDING_RESERVE_MS };

/** What happens to one SQS record: deleted by the caller (`ack`) or left on the queue (`retry`). */
export type Disposition = 'ack' | 'retry';

export type Claimed = Extract<ClaimOutcome, { kind: 'claimed' }>;
export type Unclaimed = Exclude<ClaimOutcome, { kind: 'claimed' }>;

export interface AttemptDeps {
  readonly lifecycle: TaskLifecycle;
  /** The consumer's flow control: the task's limit slots (waited for, renewed, released) and what a failure teaches them. */
  readonly flow: FlowControl;
  readonly registry: TaskRegistry;
  /** Handlers of this process share it; a task that crashed a worker before runs alone. @default processGate */
  readonly gate?: ExclusiveGate;
  readonly settings: RuntimeSettings;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly clock: Clock;
  /** What workflow runs need (their history): present when the registry has workflows. */
  readonly workflows?: WorkflowDeps;
}

export interface AttemptOptions {
  /** The priority of the queue the message came from (the handler's `ctx.priority`). */
  readonly priority: Priority;
  /** Time left in the invocation, in milliseconds. */
  readonly remainingMs: () => number;
  /** What to do when the task is, at the claim's write, no longer the consumer's to run. */
  readonly unclaimed: (claim: Unclaimed) => Promise<Disposition>;
  /** The message's place in the gate, when its admission took one (given back once the attempt ends). */
  readonly turn?: GateTurn;
}

/** The claim as the attempt sees it: the task's latest record, and the claim's write still to make. */
interface ClaimWrite {
  /** The claim's view of the task, then the record its write returned. */
  readonly record: TaskRecord;
  /**
   * Writes the claim when it has a write of its own (a redelivery, a suspect, a reclaim): right
   * before the handler starts, so a worker that dies while the task waits for its turn charges
   * it nothing. Answers what to do instead when the task changed meanwhile.
   */
  commit(): Promise<Disposition | undefined>;
}

/** The task's definition, policy and parsed payload. */
interface ParsedTask {
  readonly kind: 'parsed';
  readonly def: AnyTaskDefinition;
  readonly policy: ResolvedPolicy;
  readonly payload: unknown;
}

/** A task that can never run: its type is unknown here, or its payload fails the type's schema. */
interface UnusableTask {
  readonly kind: 'unusable';
  readonly error: unknown;
  /** The policy its failure is recorded under (the defaults when the type is unknown). */
  readonly policy: ResolvedPolicy;
}

/** Runs a claimed task under its timeout with a heartbeat, then records the outcome. */
export async function runAttempt(d: AttemptDeps, claim: Claimed, o: AttemptOptions): Promise<Disposition> {
  const permit = claim.permit;
  try {
    const claimed = claimWrite(claim, o.unclaimed);
    const task = parse(d.registry, claimed.record);
    if (task.kind === 'unusable') {
      // It can never run: failed as permanent, once the claim is written.
      const instead = await claimed.commit();
      if (instead !== undefined) return instead;
      await d.lifecycle.outcomes.attemptFailed(claimed.record, permanent(task.error), task.policy, 0);
      return 'ack';
    }
    return await run(d, permit, claimed, task, o);
  } finally {
    // After the outcome is written (or the attempt ended otherwise): the next task may start.
    await d.flow.release(permit);
    o.turn?.giveBack();
  }
}

/** Parse: the task's definition (from its type), its policy, and its payload checked by the type's schema. */
function parse(registry: TaskRegistry, claimed: TaskRecord): ParsedTask | UnusableTask {
  let def: AnyTaskDefinition;
  try {
    def = registry.get(claimed.type);
  } catch (err) {
    return { kind: 'unusable', error: err, policy: resolvePolicy({}) };
  }
  const policy = resolvePolicy({
    ...def,
    maxAttempts: claimed.max_attempts,
    timeoutSeconds: claimed.timeout_seconds,
  });
  const parsed = def.schema.safeParse(claimed.payload);
  if (!parsed.success) return { kind: 'unusable', error: parsed.error, policy };
  return { kind: 'parsed', def, policy, payload: parsed.data };
}

/** Claim: the claim's own write, made at most once (`commit`); `record` follows it. */
function claimWrite(claim: Claimed, unclaimed: (claim: Unclaimed) => Promise<Disposition>): ClaimWrite {
  let claimed = claim.record;
  let committed = claim.commit === undefined;
  return {
    get record(): TaskRecord {
      return claimed;
    },
    async commit(): Promise<Disposition | undefined> {
      if (committed || claim.commit === undefined) return undefined;
      committed = true;
      const outcome = await claim.commit();
      if (outcome.kind !== 'claimed') return unclaimed(outcome);
      claimed = outcome.record;
      return undefined;
    },
  };
}

/** Run: the handler under the gate, with a heartbeat, once its limits let it start; then settle. */
async function run(
  d: AttemptDeps,
  permit: Claimed['permit'],
  claimed: ClaimWrite,
  { def, policy, payload }: ParsedTask,
  { priority, remainingMs, turn }: AttemptOptions,
): Promise<Disposition> {
  const fields = { task_id: claimed.record.task_id, type: claimed.record.type, attempt: claimed.record.attempts };
  // The message is held for one lease at a time by the batch's MessageHold (processBatch), so a
  // dead worker's task comes back within about a lease, its claim written or not.
  const controller = new AbortController();
  const heartbeat = new Heartbeat(
    {
      lifecycle: d.lifecycle,
      settings: d.settings,
      logger: d.logger,
      renewLimits: () => d.flow.renew(permit),
      abort: (r) => controller.abort(r),
    },
    claimed.record,
  );
  const suspect = d.lifecycle.leases.isSuspect(claimed.record);
  const gate = d.gate ?? processGate;
  // The gate is held until the outcome is written: a solo attempt whose handler has returned
  // is still the task's until its record says so, and a crash before then is still its own.
  const attempt = async (): Promise<Disposition> => {
    let outcome: RunOutcome;
    let durationMs: number;
    try {
      // Waiting — for the worker to empty (a suspect runs alone), for a dead owner's lease to
      // lapse or for its limits to admit it (the claim) — may have used up the invocation: hand it back.
      if (remainingMs() < claimed.record.timeout_seconds * 1000 + RECORDING_RESERVE_MS) {
        d.logger.info('released: not enough invocation time left after waiting', fields);
        return 'retry';
      }
      // Its turn has come: from here a crash is on the record.
      const instead = await claimed.commit();
      if (instead !== undefined) return instead;
      heartbeat.update(claimed.record);
      if (suspect) {
        heartbeat.update(await d.lifecycle.leases.markSolo(heartbeat.current));
        d.logger.warn('running alone: this task crashed a worker before', {
          ...fields,
          crashes: claimed.record.crashes ?? 0,
        });
      }
      heartbeat.starting();
      await d.flow.waitForStart(permit);
      const started = d.clock.now();
      outcome = await execute(
        d,
        def,
        payload,
        claimed.record,
        { priority, remainingMs },
        controller,
        heartbeat,
        fields,
      );
      durationMs = d.clock.now() - started;
      // The handler may have settled first (rejecting on its aborted signal) after the lease was
      // lost: the lease decides, so nothing is recorded or sent for this attempt.
      const lost = heartbeat.leaseLostError;
      if (lost !== undefined) outcome = { kind: 'lease_lost', error: lost };
    } finally {
      // Wait for a beat in flight: its write (a lazy claim's claim) comes before the outcome.
      await heartbeat.stop();
    }
    return settle(d, heartbeat.current, outcome, {
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
    if (suspect) {
      // Found a suspect only at its claim (a reclaim): its shared turn is given back first.
      turn?.giveBack();
      return await gate.runExclusive(attempt);
    }
    // Its admission took its turn already (before its limits): it holds the gate until settled.
    if (turn?.held) return await attempt();
    return await gate.runShared(attempt);
  } finally {
    void heartbeat.stop();
  }
}

/**
 * Settle: records what the attempt came to. `record` is the latest view (the heartbeat extends
 * the lease). A lost lease is thrown: the consumer leaves the message to the new owner.
 */
async function settle(
  d: AttemptDeps,
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
  d.metrics.durationMs(record.type, o.durationMs);
  if (outcome.kind === 'lease_lost') throw outcome.error;
  if (o.cancelRequested) {
    await d.lifecycle.outcomes.cancelledWhileRunning(record, o.durationMs);
    d.logger.debug('task cancelled while running', o.fields);
    return 'ack';
  }
  if (outcome.kind === 'suspend') {
    const after = await d.lifecycle.outcomes.suspend(record, outcome.wakeAt, o.durationMs, outcome.childrenOpen);
    d.logger.debug(`workflow run ${after.status}`, { ...o.fields, wake_at: after.run_at });
    return 'ack';
  }
  try {
    await recordOutcome(d, record, outcome, o.def, o.policy, o.durationMs, o.fields);
  } catch (err) {
    if (!(err instanceof StoreRejectedError)) throw err;
    // The store refused the outcome itself (it can never be written): fail the task with a
    // short, storable reason instead of retrying the write forever.
    const reason = new PermanentError(`the attempt's outcome could not be stored: ${err.message}`, {
      code: 'UNSTORABLE',
    });
    await d.lifecycle.outcomes.attemptFailed(record, classifyError(reason), o.policy, o.durationMs);
    d.logger.error('outcome refused by the store; task failed', { ...o.fields, error: err.message });
  }
  return 'ack';
}

/** Records a finished attempt: success (if its result can be stored), retry or death. */
async function recordOutcome(
  d: AttemptDeps,
  record: TaskRecord,
  outcome: Exclude<RunOutcome, { kind: 'lease_lost' } | { kind: 'suspend' }>,
  def: AnyTaskDefinition,
  policy: ResolvedPolicy,
  durationMs: number,
  fields: Record<string, unknown>,
): Promise<void> {
  let failure: Classification;
  if (outcome.kind === 'ok') {
    const checked = checkJsonValue(outcome.value, 'result', DEFAULTS.maxResultBytes);
    if (checked.ok) {
      const done = await d.lifecycle.outcomes.succeed(record, checked.value, durationMs);
      d.logger.debug(done.status === 'succeeded' ? 'task succeeded' : `task ${done.status}`, {
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
  await d.flow.learn(def, record, failure);
  const after = await d.lifecycle.outcomes.attemptFailed(record, failure, policy, durationMs);
  d.logger.warn(`task attempt failed; now ${after.status}`, {
    ...fields,
    error: failure.info.name,
    code: failure.info.code,
    retryable: failure.retryable,
  });
}

function permanent(err: unknown): Classification {
  const e = err instanceof Error ? err : new Error(String(err));
  return classifyError(new PermanentError(`${e.name}: ${e.message}`, { cause: err }));
}
