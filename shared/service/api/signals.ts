/**
 * `POST /api/v1/tasks/{id}/signals/{name}`: a signal for a workflow run. Recorded in the run's
 * history (the first write of the name wins), then the run is woken if it waits
 * (`TaskLifecycle.wakes`). A signal sent before the run waits for it is kept for that wait.
 *
 * @module
 */
import { DEFAULTS } from '../../config/resources.js';
import type { TaskRegistry } from '../../task/define.js';
import { TaskNotFoundError, ValidationError } from '../../task/errors.js';
import { checkJsonValue } from '../../task/json-value.js';
import type { TaskLifecycle } from '../../task/lifecycle.js';
import { TASK_ID_PATTERN } from '../../task/model.js';
import { isFinished } from '../../task/state-machine.js';
import { isWorkflowType, SIGNAL_NAME } from '../../workflow/define.js';
import type { HistoryStore } from '../../workflow/history-store.js';
import { HttpError } from './errors.js';

export interface SignalDeps {
  readonly lifecycle: TaskLifecycle;
  readonly registry: TaskRegistry;
  readonly history?: HistoryStore;
  readonly now: () => number;
  /** How long a history entry is kept (its TTL), in days. */
  readonly historyRetentionDays: number;
}

/** Records the signal and wakes the run: 202, or 404 / 409 / 4xx naming the field. */
export async function signalRoute(
  id: string,
  name: string,
  payload: unknown,
  d: SignalDeps,
  /** The caller; none for an operator (`kaj task signal`), who may signal any run. */
  owner: string | undefined,
): Promise<{ status: number; body: Record<string, unknown> }> {
  if (!SIGNAL_NAME.test(name)) {
    throw new ValidationError('name', `name: a signal name is lower snake case, 1-64 characters (${SIGNAL_NAME})`);
  }
  if (!TASK_ID_PATTERN.test(id)) throw new TaskNotFoundError(id);
  const checked = checkJsonValue(payload, 'body', DEFAULTS.maxResultBytes);
  if (!checked.ok) throw new ValidationError(checked.path, `${checked.path}: ${checked.reason}`);
  const record = await d.lifecycle.requests.find(id, owner);
  if (d.history === undefined || !isWorkflowType(d.registry, record.type)) {
    throw new HttpError(
      409,
      'not_a_workflow',
      `task ${id} is a ${record.type} task, not a workflow run: it takes no signals`,
    );
  }
  if (isFinished(record.status)) {
    throw new HttpError(409, 'run_finished', `the run is ${record.status}: it takes no more signals`);
  }
  const now = d.now();
  const stored = await d.history.append({
    run_id: id,
    key: `signal#${name}`,
    kind: 'signal',
    at: now,
    lease_token: 0,
    value: checked.value === undefined ? null : checked.value,
    expires_at: Math.floor(now / 1000) + d.historyRetentionDays * 86_400,
  });
  if (!stored.written) {
    throw stored.entry.value === undefined
      ? new HttpError(
          409,
          'signal_wait_ended',
          `the run stopped waiting for "${name}" (its timeout passed) before it came`,
        )
      : new HttpError(
          409,
          'signal_already_received',
          `the run has received "${name}" already (one signal per name and run)`,
        );
  }
  const wake = await d.lifecycle.wakes.signalled(id);
  return {
    status: 202,
    body: { task_id: id, signal: name, accepted_at: new Date(now).toISOString(), woken: wake === 'woken' },
  };
}
