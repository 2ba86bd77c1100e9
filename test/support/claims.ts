import type { ClaimOutcome, TaskClaims } from '../../shared/task/claim.js';
import type { TaskLifecycle } from '../../shared/task/lifecycle.js';

/**
 * Claims as the consumer does when the handler starts at once: a claim with a write of its own
 * (a redelivery, a suspect, a reclaim) is committed right away; a lazy claim is returned as is.
 */
export async function claimAndStart(
  lifecycle: Pick<TaskLifecycle, 'claims'>,
  ...args: Parameters<TaskClaims['claim']>
): Promise<ClaimOutcome> {
  const outcome = await lifecycle.claims.claim(...args);
  return outcome.kind === 'claimed' && outcome.commit !== undefined ? outcome.commit() : outcome;
}
