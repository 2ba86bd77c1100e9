import { IllegalTransitionError } from './errors.js';
import { TASK_STATUSES, type TaskStatus } from './model.js';

/** What can happen to a task. */
export type TaskEvent =
  | 'claim' // a consumer takes it (from running: only once the previous lease expired)
  | 'succeed'
  | 'retry' // a retryable failure with attempts left
  | 'fail' // permanent failure, attempts exhausted, crash loop: dead-lettered
  | 'cancel' // DELETE before start, or a running task acknowledging a cancel request
  | 'redrive' // an operator replays a dead task
  | 'reopen' // an operator reopens a finished workflow run (a pipeline's clear)
  | 'suspend'; // a workflow run waits for a timer; its message comes back then

/**
 * The whole lifecycle in one table. Every status change in Kaj goes through `transition`,
 * and the storage conditions are derived from it (`statusesAllowing`).
 */
export const TRANSITIONS: Readonly<Record<TaskStatus, Readonly<Partial<Record<TaskEvent, TaskStatus>>>>> = {
  queued: { claim: 'running', cancel: 'cancelled', fail: 'failed' },
  retrying: { claim: 'running', cancel: 'cancelled', fail: 'failed' },
  running: {
    claim: 'running',
    succeed: 'succeeded',
    retry: 'retrying',
    suspend: 'waiting',
    fail: 'failed',
    cancel: 'cancelled',
  },
  waiting: { claim: 'running', cancel: 'cancelled', fail: 'failed' },
  succeeded: { reopen: 'queued' },
  failed: { redrive: 'queued', reopen: 'queued' },
  cancelled: { reopen: 'queued' },
};

export function transition(from: TaskStatus, event: TaskEvent, taskId?: string): TaskStatus {
  const to = TRANSITIONS[from][event];
  if (to === undefined) throw new IllegalTransitionError(from, event, taskId);
  return to;
}

/** Statuses from which `event` is legal. */
export function statusesAllowing(event: TaskEvent): TaskStatus[] {
  return TASK_STATUSES.filter((s) => TRANSITIONS[s][event] !== undefined);
}

/** No further change happens to a task in these statuses except an operator's redrive or reopen. */
export function isFinished(status: TaskStatus): boolean {
  return status === 'succeeded' || status === 'failed' || status === 'cancelled';
}
