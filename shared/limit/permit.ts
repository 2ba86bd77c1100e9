/**
 * The permit a limiter hands out, with what it holds. Its owner is typed `object` on purpose: a
 * `Limiter` type here would make limiter.ts and permit.ts import each other (the rate and slot
 * parts need the permit too), a cycle the dependency rules reject.
 *
 * @module
 */
import type { Permit } from '../task/admission.js';
import type { PlannedUse, Slot } from './items.js';

export class HeldPermit implements Permit {
  released = false;
  renewing: Promise<void> | undefined;
  constructor(
    /** The limiter that gave it: only that one renews or releases it. */
    readonly owner: object,
    readonly taskId: string,
    public startAt: number,
    public slots: Slot[],
    /** The rate uses the start was taken for (a start missed is taken again for them). */
    readonly rates: readonly PlannedUse[],
  ) {}
}
