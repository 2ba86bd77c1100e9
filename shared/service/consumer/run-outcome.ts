import type { LeaseLostError } from '../../task/errors.js';

/** How the run of one attempt ended, before its outcome is written. */
export type RunOutcome =
  | { readonly kind: 'ok'; readonly value: unknown }
  | { readonly kind: 'error'; readonly error: unknown }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'lease_lost'; readonly error: LeaseLostError }
  /** A workflow run with nothing to do before `wakeAt` (epoch ms). */
  | { readonly kind: 'suspend'; readonly wakeAt: number; readonly childrenOpen: number };
