/**
 * Refusal counts, noted in the limits store for the stats (`kaj stats`, the console), at most every
 * 10 s per item and best effort.
 *
 * @module
 */
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/logger.js';
import type { Admission, Refusal } from '../task/admission.js';
import { expiresAt, type PlannedUse, remember } from './items.js';
import type { LimitStore } from './limit-store.js';

/** Refusals are noted in the store at most this often per item (stats only). */
const REFUSAL_NOTE_MS = 10_000;

export interface RefusalNotesDeps {
  readonly store: LimitStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly keyTtlSeconds: number;
}

export class RefusalNotes {
  private readonly store: LimitStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly keyTtlSeconds: number;
  private readonly refusals = new Map<string, { pending: number; notedAt: number }>();

  constructor(d: RefusalNotesDeps) {
    this.store = d.store;
    this.clock = d.clock;
    this.logger = d.logger;
    this.keyTtlSeconds = d.keyTtlSeconds;
  }

  /** Counts a refusal and notes the count in the store at most every 10 s per item (best effort). */
  async note(refusal: Refusal, use: PlannedUse): Promise<Admission> {
    const now = this.clock.now();
    const state = this.refusals.get(use.pk) ?? { pending: 0, notedAt: Number.NEGATIVE_INFINITY };
    state.pending += 1;
    remember(this.refusals, use.pk, state);
    if (now - state.notedAt >= REFUSAL_NOTE_MS) {
      const count = state.pending;
      state.pending = 0;
      state.notedAt = now;
      try {
        await this.store.noteRefusals(use.pk, count, now, expiresAt(use, now, this.keyTtlSeconds));
      } catch (err) {
        this.logger.debug('could not note limit refusals', { limit: use.spec.name, error: String(err) });
      }
    }
    return { kind: 'refused', refusal };
  }
}
