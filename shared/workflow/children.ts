/**
 * A workflow run's children (`wf.run`): the port the runner starts and looks them up through,
 * its implementation over the task domain (the submitter creates a child as any task is created,
 * under an id derived from the run and the call's name), and the history entry of a child's end.
 *
 * @module
 */
import type { Priority } from '../config/resources.js';
import { forEachBounded } from '../runtime/bounded.js';
import type { AnyTaskDefinition } from '../task/define.js';
import type { ErrorInfo, TaskRecord } from '../task/model.js';
import { isFinished } from '../task/state-machine.js';
import type { TaskSubmitter } from '../task/submit.js';
import type { TaskStore } from '../task/task-store.js';
import type { ChildOptions } from './define.js';
import type { ChildStatus, HistoryEntry } from './history-store.js';

/** A child as its run's lookup finds it. */
export type ChildLook =
  /** Not created: its writer died between the run's `child_start` entry and the create. */
  { readonly kind: 'missing' } | { readonly kind: 'open' } | { readonly kind: 'ended'; readonly record: TaskRecord };

/** What the runner asks of a run's children. */
export interface ChildRuns {
  /** Creates the child of the call `step` unless it exists (a replay's second ask finds the first). */
  start(step: string, def: AnyTaskDefinition, payload: unknown, options: ChildOptions): Promise<void>;
  /** Where each child stands, by id. */
  look(childIds: readonly string[]): Promise<Map<string, ChildLook>>;
}

/** The run's record fields its children inherit. */
export type ParentRecord = Pick<
  TaskRecord,
  'task_id' | 'owner' | 'tenant' | 'priority' | 'scheduled_time' | 'data_interval'
>;

/** Lookups in flight at once (eventually consistent GetItems: half a read unit each). */
const LOOK_CONCURRENCY = 16;

/** A run's children over the task domain. */
export function submitterChildRuns(submitter: TaskSubmitter, store: TaskStore, parent: ParentRecord): ChildRuns {
  return {
    async start(step, def, payload, options) {
      const tenant = options.tenant ?? parent.tenant;
      const priority: Priority = options.priority ?? parent.priority;
      await submitter.submitChild({
        parentId: parent.task_id,
        step,
        type: def.type,
        payload,
        owner: parent.owner ?? 'anonymous',
        priority,
        ...(tenant === undefined ? {} : { tenant }),
        ...(parent.scheduled_time === undefined ? {} : { scheduledTime: parent.scheduled_time }),
        ...(parent.data_interval === undefined ? {} : { dataInterval: parent.data_interval }),
        ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
        ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
      });
    },
    async look(childIds) {
      const found = new Map<string, ChildLook>();
      await forEachBounded(childIds, LOOK_CONCURRENCY, async (id) => {
        const r = await store.get(id, { consistent: false });
        found.set(
          id,
          r === undefined
            ? { kind: 'missing' }
            : isFinished(r.status)
              ? { kind: 'ended', record: r }
              : { kind: 'open' },
        );
      });
      return found;
    },
  };
}

/** What the `child#<step>` entry of a child's end records: its result, or why it has none. */
export type ChildEnd = Pick<HistoryEntry, 'key' | 'kind' | 'child_id' | 'child_status' | 'value' | 'error'>;

/** The end of a finished child, for its run's history (undefined for a task that is no finished child). */
export function childEndOf(
  child: Pick<TaskRecord, 'task_id' | 'status' | 'result' | 'last_error' | 'parent_step'>,
  step = child.parent_step,
): ChildEnd | undefined {
  if (step === undefined || !isFinished(child.status)) return undefined;
  const status = child.status as ChildStatus;
  return {
    key: `child#${step}`,
    kind: 'child',
    child_id: child.task_id,
    child_status: status,
    ...(status === 'succeeded' ? { value: child.result ?? null } : { error: endError(child) }),
  };
}

/**
 * The `child#<step>` entry of a child's end in its run's history, as the write that ended the
 * child records it (its lease token is 0: no run attempt wrote it).
 */
export function childEndEntry(
  child: Pick<TaskRecord, 'task_id' | 'status' | 'result' | 'last_error' | 'parent_id' | 'parent_step'>,
  now: number,
  retentionDays: number,
): HistoryEntry | undefined {
  const end = childEndOf(child);
  if (child.parent_id === undefined || end === undefined) return undefined;
  return {
    ...end,
    run_id: child.parent_id,
    at: now,
    lease_token: 0,
    expires_at: Math.floor(now / 1000) + retentionDays * 86_400,
  };
}

function endError(child: Pick<TaskRecord, 'status' | 'last_error'>): ErrorInfo {
  if (child.status === 'cancelled') {
    return { name: 'TaskCancelledError', message: 'the child task was cancelled', retryable: false };
  }
  return child.last_error ?? { name: 'Error', message: 'the child task failed', retryable: false };
}
