/**
 * The admission port: what a claim asks before it writes anything, and what it gets back. The
 * claim (`claim.ts`) depends on this port only. The flow-control limiter
 * (`shared/limit/limiter.ts`) answers in these terms, and the consumer's flow control
 * (`FlowControl.admissions` in `shared/service/consumer/flow-control.ts`) plugs it in: it turns a
 * task record into the limits its type uses.
 *
 * @module
 */
import type { TaskRecord } from './model.js';

/** What a task's admission took for it (see `Limiter.acquire`); give it back with `release`. */
export interface Permit {
  readonly taskId: string;
  /** When the task may start (epoch ms): `acquire` resolves at (or right after) it. */
  readonly startAt: number;
}

/** Why a task may not start now. */
export type Refusal = {
  readonly limit: string;
  readonly key?: string;
  readonly reason: 'concurrency' | 'rate' | 'paused';
  /** Earliest time worth trying again, epoch ms (rate / paused: exact; concurrency: a guess). */
  readonly retryAt: number;
};

/** What a task's limits answer before it is claimed. */
export type Admission =
  | { readonly kind: 'granted'; readonly permit: Permit }
  | { readonly kind: 'refused'; readonly refusal: Refusal };

/**
 * The consumer's flow control, as the claim sees it: asked right before a task would be claimed
 * (after every check that could drop or defer it), so a refused task costs no write.
 */
export interface Admissions {
  admit(record: TaskRecord): Promise<Admission>;
  /** Gives back what `admit` took, when the claim does not happen after all. Never throws. */
  release(permit: Permit): Promise<void>;
}
