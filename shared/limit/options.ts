/**
 * The limiter's options ({@link LimiterDeps}), checked and resolved with their defaults into what
 * its parts (rate starts, slot leases, refusal notes) are built with.
 *
 * @module
 */
import { DEFAULTS } from '../config/resources.js';
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { RandomSource } from '../runtime/random.js';
import { LimitDefinitionError } from './errors.js';
import { micros } from './items.js';
import { StartLead } from './lead.js';
import type { LimitStore } from './limit-store.js';

export interface LimiterDeps {
  readonly store: LimitStore;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly logger: Logger;
  /** Lease of a concurrency slot; the task's heartbeat renews it (`renew`). */
  readonly leaseSeconds: number;
  /**
   * How long an acquire may wait in-process: for a rate start due within it, or for a slot
   * another task of this process releases. @default DEFAULTS.limitLocalWaitMs
   */
  readonly localWaitMs?: number;
  /**
   * Rate starts reserved per store call. Above 1, the unused ones wait in this process for its
   * next acquires (fewer writes; a process that gets no more tasks forfeits them). @default 1
   */
  readonly reserve?: number;
  /**
   * Rate starts are asked for at least this far ahead. A start is "now" only when the store says
   * so, and its answer comes a round trip later: a start used late sits closer than T to the next
   * one, which another worker may use on time. Asked ahead by more than the round trip, a start
   * is waited for instead, and kept exactly. The floor of the lead: the limiter asks further
   * ahead when the store's measured round trip is longer (`StartLead`). @default DEFAULTS.limitStartLeadMs
   */
  readonly leadMs?: number;
  /** Items of keyed uses expire this long after their last use. @default DEFAULTS.limitKeyTtlSeconds */
  readonly keyTtlSeconds?: number;
}

/** The options resolved: what the limiter's parts are built with. */
export interface LimiterSettings {
  readonly leaseMs: number;
  readonly localWaitMs: number;
  /** How far ahead of now a start may be taken and waited for in-process (0: only starts due now). */
  readonly horizonUs: number;
  /** How far ahead starts are asked for: the configured lead, or the store's learnt round trip if longer. */
  readonly lead: StartLead;
  readonly reserve: number;
  readonly keyTtlSeconds: number;
}

/** @throws LimitDefinitionError naming the option (`leaseSeconds`, `localWaitMs`, `leadMs`, `reserve`, `keyTtlSeconds`) */
export function limiterSettings(d: LimiterDeps): LimiterSettings {
  const leaseMs = checkPositive('leaseSeconds', d.leaseSeconds) * 1000;
  const localWaitMs = d.localWaitMs ?? DEFAULTS.limitLocalWaitMs;
  if (!(localWaitMs >= 0)) throw new LimitDefinitionError('localWaitMs', `must be >= 0, got ${localWaitMs}`);
  // Without a sleep nothing can be waited for: only starts due now are taken.
  const horizonUs = d.clock.sleep === undefined ? 0 : micros(localWaitMs);
  const leadFloorMs = d.clock.sleep === undefined ? 0 : (d.leadMs ?? DEFAULTS.limitStartLeadMs);
  const lead = new StartLead(leadFloorMs, d.clock.sleep === undefined ? 0 : Math.max(leadFloorMs, leaseMs / 4));
  const reserve = d.reserve ?? 1;
  if (!Number.isInteger(reserve) || reserve < 1) {
    throw new LimitDefinitionError('reserve', `must be an integer >= 1, got ${reserve}`);
  }
  const keyTtlSeconds = checkPositive('keyTtlSeconds', d.keyTtlSeconds ?? DEFAULTS.limitKeyTtlSeconds);
  return { leaseMs, localWaitMs, horizonUs, lead, reserve, keyTtlSeconds };
}

/** @throws LimitDefinitionError naming `field` unless `value` is a finite number > 0 */
function checkPositive(field: string, value: number): number {
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
    throw new LimitDefinitionError(field, `must be a number > 0, got ${value}`);
  }
  return value;
}
