/**
 * How a schedule is shown by the API, the CLI and the console: the whole schedule with its next
 * times and recent runs, and one line of a listing.
 *
 * @module
 */
import type { TaskStatus } from '../task/model.js';
import type { RunEntry, ScheduleRecord } from './model.js';
import { fireAt } from './plan.js';
import { renderSpec } from './spec.js';
import { jitterOffsetMs, upcoming } from './timing.js';

/** A recent run as shown: what the schedule recorded, and its task's status now. */
export interface RunView extends RunEntry {
  readonly task_status?: TaskStatus | 'expired';
}

/** A schedule as the API and the CLI show it. */
export interface ScheduleView {
  readonly name: string;
  readonly owner: string;
  readonly source: ScheduleRecord['source'];
  readonly state: ScheduleRecord['state'];
  readonly pause_note?: string;
  readonly paused_at?: string;
  readonly spec: Record<string, unknown>;
  /** The next nominal times (the logical dates, UTC ISO). */
  readonly next_times: string[];
  /** When each of them fires: the time plus the schedule's jitter offset. */
  readonly next_fire_times: string[];
  readonly jitter_offset_seconds: number;
  readonly buffered?: string;
  readonly fired: number;
  readonly missed: number;
  readonly last_run?: ScheduleRecord['last_run'];
  readonly recent_runs: RunView[];
  readonly created_at: string;
  readonly updated_at: string;
}

/** One line of a listing. */
export interface ScheduleSummary {
  readonly name: string;
  readonly owner: string;
  readonly source: ScheduleRecord['source'];
  readonly state: ScheduleRecord['state'];
  readonly type: string;
  readonly when: string;
  readonly timezone: string;
  readonly next_fire_time?: string;
  readonly last_run?: ScheduleRecord['last_run'];
  readonly last_outcome?: RunEntry['outcome'];
}

/** Next times shown. */
const UPCOMING = 5;

/**
 * The schedule as shown, each recent run with its task's status now (`findTask` rejects for a
 * task that is gone: `'expired'`).
 */
export async function scheduleView(
  r: ScheduleRecord,
  findTask: (taskId: string) => Promise<{ readonly status: TaskStatus }>,
): Promise<ScheduleView> {
  const offset = jitterOffsetMs(r.name, r.spec.jitter_ms);
  const after = r.next_time === undefined ? undefined : r.next_time - 1;
  const next = r.state === 'finished' || after === undefined ? [] : upcoming(r.spec, after, UPCOMING);
  const recent_runs = await Promise.all(
    r.recent.map(async (e): Promise<RunView> => {
      if (e.task_id === undefined) return e;
      const task = await findTask(e.task_id).catch(() => undefined);
      return { ...e, task_status: task === undefined ? 'expired' : task.status };
    }),
  );
  return {
    name: r.name,
    owner: r.owner,
    source: r.source,
    state: r.state,
    ...(r.pause_note === undefined ? {} : { pause_note: r.pause_note }),
    ...(r.paused_at === undefined ? {} : { paused_at: r.paused_at }),
    spec: renderSpec(r.spec),
    next_times: next.map((t) => new Date(t).toISOString()),
    next_fire_times: next.map((t) => new Date(fireAt(r, t)).toISOString()),
    jitter_offset_seconds: offset / 1000,
    ...(r.buffered === undefined ? {} : { buffered: new Date(r.buffered).toISOString() }),
    fired: r.fired,
    missed: r.missed,
    ...(r.last_run === undefined ? {} : { last_run: r.last_run }),
    recent_runs,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** The schedule as one line of a listing. */
export function scheduleSummary(r: ScheduleRecord): ScheduleSummary {
  const s = r.spec;
  const when =
    s.cron !== undefined
      ? `cron ${s.cron}`
      : s.every_ms !== undefined
        ? `every ${String(renderSpec(s).every)}`
        : `at ${new Date(s.at ?? 0).toISOString()}`;
  const last = r.recent.at(-1);
  return {
    name: r.name,
    owner: r.owner,
    source: r.source,
    state: r.state,
    type: s.task.type,
    when,
    timezone: s.timezone,
    ...(r.state === 'active' && r.next_time !== undefined
      ? { next_fire_time: new Date(fireAt(r, r.next_time)).toISOString() }
      : {}),
    ...(r.last_run === undefined ? {} : { last_run: r.last_run }),
    ...(last === undefined ? {} : { last_outcome: last.outcome }),
  };
}
