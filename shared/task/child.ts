/**
 * A workflow run's child task (`wf.run`): its id, derived from the run and the call's name (a
 * replay that starts it again finds it), and its record, which inherits the run's owner, tenant,
 * priority and logical date unless the call overrides them.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { Priority } from '../config/resources.js';

/** What a run asks for when it starts a child. */
export interface ChildRequest {
  readonly parentId: string;
  /** The call's name: unique in the run. */
  readonly step: string;
  readonly type: string;
  readonly payload: unknown;
  /** The run's owner: the child is theirs (GET, DELETE, listings). */
  readonly owner: string;
  readonly priority: Priority;
  readonly tenant?: string;
  /** The run's logical date (ISO), passed down. */
  readonly scheduledTime?: string;
  /** The run's data interval (a pipeline's node), passed down. */
  readonly dataInterval?: { readonly start: string; readonly end: string };
  readonly maxAttempts?: number;
  readonly timeoutSeconds?: number;
}

/**
 * The child's id: a hash of the run's id and the call's name, in the shape of every task id. Not
 * secret (a run's id is not guessable, and GET checks the owner).
 */
export function childTaskId(parentId: string, step: string): string {
  return `t_${createHash('sha256').update(`child\n${parentId}\n${step}`).digest('hex').slice(0, 32)}`;
}
