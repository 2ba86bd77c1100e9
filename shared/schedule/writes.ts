/**
 * The schedule service's writes: every change is a whole-record put conditioned on the version
 * read (two writers never both win; the loser re-reads, up to `WRITE_ROUNDS` times), and who may
 * read or change a schedule.
 *
 * @module
 */
import type { TaskRegistry } from '../task/define.js';
import {
  ScheduleConflictError,
  ScheduleLimitReachedError,
  ScheduleNotFoundError,
  ScheduleValidationError,
} from './errors.js';
import type { RunEntry, RunKind, ScheduleRecord, ScheduleSpec } from './model.js';
import { withDue, withRecent } from './plan.js';
import { OwnerScheduleLimitError, ScheduleVersionConflictError } from './store-errors.js';
import { createRun, type SchedulerDeps } from './tick.js';
import { nextTimeAfter } from './timing.js';
import { type ScheduleView, scheduleView } from './views.js';

export interface ScheduleServiceDeps extends SchedulerDeps {
  readonly registry: TaskRegistry;
  /**
   * The deployment's id secret: the listing's cursors are signed under a key derived from it
   * (`shared/task/cursor.ts`), as the task listing's are. Without one (the scheduler function,
   * which never lists) `list` refuses to run.
   */
  readonly idSecret?: string;
}

/** Who asks: an API caller (owner), or an operator (`undefined`: the CLI, the code sync). */
export type ScheduleCaller = { readonly owner: string } | undefined;

export interface PutResult {
  readonly view: ScheduleView;
  readonly created: boolean;
  /** False when the body matched the stored spec (an idempotent replay). */
  readonly changed: boolean;
}

export interface RunResult {
  readonly run_key: string;
  readonly scheduled_time: string;
  readonly task_id: string;
  /** False when the run's task existed already. */
  readonly created: boolean;
  readonly invalid?: string;
}

/** How many times a write re-reads after losing to another writer before it gives up (409). */
const WRITE_ROUNDS = 5;

/** The schedule as shown, its recent runs' tasks looked up in the task table. */
export function viewOf(d: ScheduleServiceDeps, r: ScheduleRecord): Promise<ScheduleView> {
  return scheduleView(r, (taskId) => d.lifecycle.requests.find(taskId));
}

/** Creates or replaces the schedule `name` with `spec` (nothing is written when `hash` is the stored one). */
export async function upsert(
  d: ScheduleServiceDeps,
  name: string,
  spec: ScheduleSpec,
  hash: string,
  owner: string,
  source: ScheduleRecord['source'],
  counted = false,
): Promise<PutResult> {
  for (let round = 0; round < WRITE_ROUNDS; round += 1) {
    const existing = await d.schedules.get(name);
    const now = d.clock.now();
    const iso = new Date(now).toISOString();
    if (existing !== undefined) {
      if (existing.source !== source) {
        throw existing.source === 'code'
          ? new ScheduleConflictError(
              name,
              'declared_in_code',
              `schedule "${name}" is declared in code; change it there`,
            )
          : new ScheduleConflictError(name, 'name_taken', `schedule "${name}" exists already (made through the API)`);
      }
      if (source === 'api' && owner !== 'operator' && existing.owner !== owner) {
        throw new ScheduleConflictError(name, 'name_taken', `the name "${name}" is taken`);
      }
      if (existing.spec_hash === hash) return { view: await viewOf(d, existing), created: false, changed: false };
      checkAt(d, name, spec, source, existing.spec.at, now);
      // A changed spec takes effect from the next time not yet handled (or now).
      const from = existing.next_time === undefined ? now : Math.min(existing.next_time, now);
      const next = nextTimeAfter(spec, from - 1);
      const replaced: ScheduleRecord = {
        ...existing,
        spec,
        spec_hash: hash,
        state: existing.state === 'paused' ? 'paused' : next === undefined ? 'finished' : 'active',
        version: existing.version + 1,
        updated_at: iso,
      };
      if (next === undefined) delete replaced.next_time;
      else replaced.next_time = next;
      if (spec.limit !== undefined && replaced.fired >= spec.limit) {
        replaced.state = 'finished';
        delete replaced.next_time;
      }
      try {
        const written = withDue(replaced, now);
        await d.schedules.put(written, existing.version);
        return { view: await viewOf(d, written), created: false, changed: true };
      } catch (err) {
        if (!(err instanceof ScheduleVersionConflictError)) throw err;
        continue;
      }
    }
    checkAt(d, name, spec, source, undefined, now);
    const next = nextTimeAfter(spec, now - 1);
    const record: ScheduleRecord = {
      name,
      owner,
      source,
      spec,
      spec_hash: hash,
      state: next === undefined ? 'finished' : 'active',
      fired: 0,
      missed: 0,
      recent: [],
      version: 1,
      created_at: iso,
      updated_at: iso,
      ...(next === undefined ? {} : { next_time: next }),
      ...(counted ? { counted: true as const } : {}),
    };
    try {
      const written = withDue(record, now);
      const max = d.scheduling.maxPerOwner;
      await d.schedules.put(written, 'absent', counted ? { owner, max } : undefined);
      return { view: await viewOf(d, written), created: true, changed: true };
    } catch (err) {
      if (err instanceof OwnerScheduleLimitError) throw new ScheduleLimitReachedError(name, err.max, { cause: err });
      if (!(err instanceof ScheduleVersionConflictError)) throw err;
    }
  }
  throw new ScheduleConflictError(name, 'concurrent_change', `schedule "${name}" is being changed by others; retry`);
}

/**
 * A one-time schedule whose `at` has passed would never run: refused through the API (422
 * naming `at`) when the schedule is new or its `at` changes. Declared in code, it is stored
 * finished, with a warning (a declaration is synced at every start; refusing it would stop the
 * deployment once the time has passed).
 */
function checkAt(
  d: ScheduleServiceDeps,
  name: string,
  spec: ScheduleSpec,
  source: ScheduleRecord['source'],
  storedAt: number | undefined,
  now: number,
): void {
  if (spec.at === undefined || spec.at > now || spec.at === storedAt) return;
  if (source === 'code') {
    d.logger.warn('schedule declared in code has an at time in the past: it will not run', {
      schedule: name,
      at: new Date(spec.at).toISOString(),
    });
    return;
  }
  throw new ScheduleValidationError(
    'at',
    `at: ${new Date(spec.at).toISOString()} has passed; give a future time (to run the task now, POST /api/v1/tasks)`,
    { schedule: name },
  );
}

/** Read-modify-write with the version condition; `apply` returns the new record or `'delete'`. */
export async function change(
  d: ScheduleServiceDeps,
  name: string,
  caller: ScheduleCaller,
  action: string,
  apply: (r: ScheduleRecord) => ScheduleRecord | 'delete',
): Promise<ScheduleRecord> {
  for (let round = 0; round < WRITE_ROUNDS; round += 1) {
    const r = await writable(d, name, caller, action);
    const out = apply(r);
    try {
      if (out === 'delete') {
        await d.schedules.delete(name, r.version, r.counted === true ? r.owner : undefined);
        return r;
      }
      if (out === r) return r;
      const now = d.clock.now();
      const written = withDue({ ...out, version: r.version + 1, updated_at: new Date(now).toISOString() }, now);
      await d.schedules.put(written, r.version);
      return written;
    } catch (err) {
      if (!(err instanceof ScheduleVersionConflictError)) throw err;
    }
  }
  throw new ScheduleConflictError(name, 'concurrent_change', `schedule "${name}" is being changed by others; retry`);
}

/** Creates the runs of `times` (trigger, backfill) and records them on the schedule. */
export async function runTimes(
  d: ScheduleServiceDeps,
  record: ScheduleRecord,
  times: readonly number[],
  kind: RunKind,
): Promise<RunResult[]> {
  const now = d.clock.now();
  const results: RunResult[] = [];
  const entries: RunEntry[] = [];
  for (const time of times) {
    const runAt = kind === 'backfill' ? now : Math.max(now, time);
    const made = await createRun(d, record, { scheduledTime: time, runAt, kind });
    const scheduled_time = new Date(time).toISOString();
    const run_key = `${record.name}@${scheduled_time}`;
    if (made.kind === 'invalid') {
      results.push({
        run_key,
        scheduled_time,
        task_id: made.taskId,
        created: false,
        invalid: made.entry.reason ?? '',
      });
      entries.push(made.entry);
      continue;
    }
    results.push({ run_key, scheduled_time, task_id: made.taskId, created: !made.replayed });
    if (!made.replayed) {
      entries.push({
        scheduled_time,
        outcome: 'created',
        kind,
        task_id: made.taskId,
        at: new Date(now).toISOString(),
      });
    }
  }
  const last = results.filter((r) => r.invalid === undefined).at(-1);
  if (entries.length > 0 || last !== undefined) {
    await change(d, record.name, undefined, kind, (r) => ({
      ...r,
      recent: withRecent(r.recent, entries, d.scheduling.recentRuns),
      ...(last === undefined ? {} : { last_run: { task_id: last.task_id, scheduled_time: last.scheduled_time } }),
    })).catch((err: unknown) => {
      // The runs exist; only their mention on the schedule is lost.
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    });
  }
  return results;
}

/** The schedule, if the caller may see it (else a `ScheduleNotFoundError`). */
export async function readable(d: ScheduleServiceDeps, name: string, caller: ScheduleCaller): Promise<ScheduleRecord> {
  const r = await d.schedules.get(name);
  if (r === undefined || !visible(r, caller)) throw new ScheduleNotFoundError(name);
  return r;
}

/** The schedule, if the caller may `action` it: a caller cannot change a schedule declared in code. */
export async function writable(
  d: ScheduleServiceDeps,
  name: string,
  caller: ScheduleCaller,
  action: string,
): Promise<ScheduleRecord> {
  const r = await readable(d, name, caller);
  if (caller !== undefined && r.source === 'code') {
    throw new ScheduleConflictError(
      name,
      'declared_in_code',
      `schedule "${name}" is declared in code: ${action} it with the CLI (kaj schedules ${action})`,
    );
  }
  return r;
}

/** An operator sees every schedule; a caller its own and those declared in code. */
export function visible(r: ScheduleRecord, caller: ScheduleCaller): boolean {
  return caller === undefined || r.owner === caller.owner || r.source === 'code';
}
