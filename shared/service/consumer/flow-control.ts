import type { Priority } from '../../config/resources.js';
import { METRICS } from '../../config/metrics.js';
import { type DeferralSettings, deferralSeconds, RefusalStreak } from '../../limit/deferral.js';
import type { Limiter } from '../../limit/limiter.js';
import type { LimitUse } from '../../limit/spec.js';
import type { Classification } from '../../retry/classify.js';
import type { Clock } from '../../runtime/clock.js';
import type { Logger, Metrics } from '../../runtime/logger.js';
import type { RandomSource } from '../../runtime/random.js';
import type { AnyTaskDefinition, TaskRegistry } from '../../task/define.js';
import type { Admissions, Permit, Refusal } from '../../task/admission.js';
import type { TaskRecord } from '../../task/model.js';

export interface FlowControlDeps {
  readonly registry: TaskRegistry;
  /** The process's limiter; without it no type may use a limit (checked at start: `checkLimiter`). */
  readonly limiter?: Limiter;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The queues' redrive maxReceiveCount: deferrals must never bring a message to it. */
  readonly maxReceiveCount: number;
  readonly deferral: DeferralSettings;
}

/** How a refused task's message comes back. */
export interface Deferral {
  /** Whole seconds until the message is visible again. */
  readonly seconds: number;
  /**
   * Send a fresh copy (delayed) and acknowledge this one, instead of changing its visibility:
   * SQS counts every receive towards the redrive policy's maxReceiveCount, deferrals included, so
   * a message near it starts over as a new one. A task may wait behind a limit for hours.
   */
  readonly refresh: boolean;
}

/**
 * The receive count from which a deferred message is re-sent as a fresh copy instead of being
 * made visible later: half of `maxReceiveCount` (at least 2, at most `maxReceiveCount`). Not `maxReceiveCount − 1`: a receive
 * the consumer never sees — a worker killed, or an invocation that timed out, while holding the
 * message — counts too, and several can come in a row after a deploy or a run of kills; from
 * half-way, the message reaches the DLQ only if the rest of its receives are all lost that way
 * (5 in a row at the default 10). The price: one `SendMessage` every few deferrals instead of
 * every nine (docs/flow-control.md §5).
 */
export function refreshAtReceive(maxReceiveCount: number): number {
  return Math.min(maxReceiveCount, Math.max(2, Math.ceil(maxReceiveCount / 2)));
}

/**
 * The consumer's side of the flow-control limits (`shared/limit/`): which limits a task holds
 * (its type's `uses`, keyed by its payload or tenant), asking the process's limiter for them
 * right before the claim, how long a refused task waits, giving the limits back when the
 * attempt ends, and learning a provider's Retry-After.
 */
export class FlowControl {
  /** Refusals in a row per limit, in this process: the deferral grows while a limit stays saturated. */
  private readonly streak: RefusalStreak;

  constructor(private readonly d: FlowControlDeps) {
    this.streak = new RefusalStreak(d.deferral.baseSeconds * 1000);
  }

  /** The types that use a limit. */
  static limitedTypes(registry: TaskRegistry): string[] {
    return registry.types().filter((t) => (registry.get(t).uses ?? []).length > 0);
  }

  /** True when some type uses a limit (so a limiter is needed). */
  static needed(registry: TaskRegistry): boolean {
    return FlowControl.limitedTypes(registry).length > 0;
  }

  /** The claim's admission for a task: its limits, asked for once it would otherwise be claimed. */
  admissions(): Admissions | undefined {
    const limiter = this.d.limiter;
    if (limiter === undefined) return undefined;
    return {
      admit: async (record) => {
        const uses = this.usesOf(record);
        if (uses === undefined || uses.length === 0) return limiter.acquire([], record.task_id);
        const admission = await limiter.acquire(uses, record.task_id, { waitForStart: false });
        if (admission.kind === 'granted') for (const u of uses) this.streak.granted(u.spec.name);
        return admission;
      },
      release: (permit) => limiter.release(permit),
    };
  }

  /** How the message of a refused task comes back, and the metric and log of it. */
  defer(refusal: Refusal, record: TaskRecord, receiveCount: number, priority: Priority): Deferral {
    const streak = this.streak.refused(refusal.limit, this.d.clock.now());
    const seconds = deferralSeconds(refusal, this.d.clock.now(), streak, this.d.random, this.d.deferral);
    this.d.metrics.count(METRICS.limitDeferrals, record.type);
    this.d.logger.debug('deferred: a limit is saturated', {
      task_id: record.task_id,
      type: record.type,
      priority,
      limit: refusal.limit,
      reason: refusal.reason,
      seconds,
    });
    return { seconds, refresh: receiveCount >= refreshAtReceive(this.d.maxReceiveCount) };
  }

  /**
   * Waits for the permit's start (a rate start granted ahead, up to `limitLocalWaitMs`): called
   * right before the handler, after the claim write and the message hold, so the provider sees
   * the call as close to its start as the timer allows. A start the claim made this process miss
   * is taken again, never used late (`Limiter.waitForStart`).
   */
  async waitForStart(permit: Permit | undefined): Promise<void> {
    if (permit === undefined || this.d.limiter === undefined) return;
    await this.d.limiter.waitForStart(permit);
  }

  /** Extends the leases of a running task's concurrency slots (at its heartbeat). */
  async renew(permit: Permit | undefined): Promise<void> {
    if (permit !== undefined && this.d.limiter !== undefined) await this.d.limiter.renew(permit);
  }

  /** Gives the limits back once the attempt's outcome is written (or it ended otherwise). */
  async release(permit: Permit | undefined): Promise<void> {
    if (permit !== undefined && this.d.limiter !== undefined) await this.d.limiter.release(permit);
  }

  /**
   * A provider's `429` with Retry-After (`RetryableError({ retryAfterSeconds })`) pauses the rate
   * of the limits that learn from it, for every worker: one 429 does not become one per worker.
   */
  async learn(def: AnyTaskDefinition, record: TaskRecord, failure: Classification): Promise<void> {
    const seconds = failure.retryAfterSeconds;
    if (this.d.limiter === undefined || !failure.retryable || seconds === undefined || seconds <= 0) return;
    const uses = (this.usesOf(record, def) ?? []).filter((u) => u.spec.learnRetryAfter && u.spec.rate !== undefined);
    if (uses.length === 0) return;
    try {
      await this.d.limiter.pause(uses, seconds);
      this.d.metrics.count(METRICS.limitPauses, record.type);
      this.d.logger.warn('a provider asked to slow down: limit paused for every worker', {
        task_id: record.task_id,
        limits: uses.map((u) => u.spec.name).join(','),
        seconds,
      });
    } catch (err) {
      this.d.logger.warn('could not pause the limit', { task_id: record.task_id, error: String(err) });
    }
  }

  /** The limits a task holds; undefined for a type this process does not know (it fails at run). */
  private usesOf(record: TaskRecord, known?: AnyTaskDefinition): LimitUse[] | undefined {
    const def = known ?? (this.d.registry.has(record.type) ? this.d.registry.get(record.type) : undefined);
    if (def === undefined || (def.uses ?? []).length === 0) return undefined;
    // Keys are computed from the payload as the handler will get it; a payload its schema refuses
    // fails at run (permanently), so it holds no limit on the way.
    const parsed = def.schema.safeParse(record.payload);
    if (!parsed.success) return undefined;
    return this.d.registry.limitUses(def, parsed.data, record.tenant === undefined ? {} : { tenant: record.tenant });
  }
}
