import { defineLimits } from '../shared/task/define.js';

/**
 * This deployment's flow-control limits, shared by every worker on every Lambda instance
 * (enforced in the `<stack>-limits` table). A task type takes part with `defineTask({ uses })`.
 * A task that cannot start under its limits is deferred (its message comes back later), not
 * failed. See docs/flow-control.md, "Declaring lanes and limits".
 */
export const limits = defineLimits({
  // The mail provider's account limit. A 429 with Retry-After pauses every worker (learnRetryAfter).
  email_provider: { rate: '50/s', concurrency: 20, learnRetryAfter: true },
});
