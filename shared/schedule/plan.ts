/**
 * What one tick does for one schedule: a pure function of the schedule, the time and the state of
 * its latest run. The ticker (`tick.ts`) reads what this needs, carries out the runs and the
 * cancel it returns, and writes the schedule as returned (conditioned on the version it read).
 *
 * The rules (docs/schedules.md, "The spec"):
 * - A time is handed to SQS by the last tick before it falls due (`horizon` = now + one tick),
 *   with `DelaySeconds` for its exact second; the run starts at the time plus the schedule's
 *   jitter offset.
 * - A time the tick sees more than `graceMs` after it fell due was missed: the misfire policy
 *   decides (`skip`, `run_once`, `catch_up` within `catchup_window`, oldest first).
 * - Overlap (the latest run has not finished): `allow` starts anyway; `forbid` skips the time;
 *   `buffer_one` keeps one time until the run finishes (later ones collapse into it); `replace`
 *   cancels the running one and starts. A future time whose previous run is still going is
 *   decided when it falls due (the next tick), on what is true then. Caught-up times wait for the
 *   run before them (one at a time), unless overlap is `allow`.
 * - `limit` counts runs the clock created; `end_at` and `at` end the schedule (`finished`).
 *
 * @module
 */
import { SCHEDULE_TABLE_SCHEMA } from '../config/resources.js';
import type { RunEntry, RunKind, RunOutcome, ScheduleRecord } from './model.js';
import { jitterOffsetMs, nextTimeAfter } from './timing.js';

/** What the ticker learnt of the schedule's latest run. */
export type LastRunState = 'none' | 'active' | 'finished';

export interface PlanContext {
  readonly now: number;
  /** The tick hands over every time whose fire moment is at or before this (now + one tick). */
  readonly horizon: number;
  /** The tick period: a buffered run is looked at again after it. */
  readonly tickMs: number;
  readonly graceMs: number;
  /** Runs created for one schedule in one tick at most. */
  readonly maxRuns: number;
  readonly recentRuns: number;
  readonly lastRun: LastRunState;
}

/** A run to create: its logical date and when it should start. */
export interface PlannedRun {
  readonly scheduledTime: number;
  readonly runAt: number;
  readonly kind: RunKind;
}

export interface TickPlan {
  /** Runs to create, in order (each is a task with an id derived from its run key). */
  readonly runs: readonly PlannedRun[];
  /** The running task to cancel before the runs are created (`replace`). */
  readonly cancel?: string;
  /** The schedule as it should be written (version and updated_at not yet bumped). */
  readonly record: ScheduleRecord;
  /** Whether anything changed (a tick that finds nothing to do writes nothing). */
  readonly changed: boolean;
  /** Times skipped by the overlap or misfire policy in this tick. */
  readonly skipped: number;
}

/** How many missed times are looked at, at most, to count and drop them (a schedule down for a year). */
const MISSED_SCAN_LIMIT = 100_000;

/** The due shard of a schedule: from its name, so it never moves. */
export function dueShardOf(name: string): string {
  let h = 0;
  for (let i = 0; i < name.length; i += 1) h = (h * 31 + name.charCodeAt(i)) | 0;
  return `due#${Math.abs(h) % SCHEDULE_TABLE_SCHEMA.dueIndex.shards}`;
}

/** Every due partition the tick queries. */
export function duePartitions(): string[] {
  return Array.from({ length: SCHEDULE_TABLE_SCHEMA.dueIndex.shards }, (_, i) => `due#${i}`);
}

/** The moment a nominal time fires: the time plus the schedule's fixed jitter offset. */
export function fireAt(record: Pick<ScheduleRecord, 'name' | 'spec'>, time: number): number {
  return time + jitterOffsetMs(record.name, record.spec.jitter_ms);
}

/**
 * Sets the due index fields from the schedule's state: an active schedule with a time left is
 * due at that time's fire moment (a buffered run makes it due at once, to look at its run
 * again); anything else leaves the index.
 */
export function withDue(record: ScheduleRecord, now: number): ScheduleRecord {
  const r = { ...record };
  let due: number | undefined;
  if (r.state === 'active') {
    if (r.next_time !== undefined) due = fireAt(r, r.next_time);
    // Kept where it is if already due (a tick that only re-checks a buffered run writes nothing).
    if (r.buffered !== undefined) due = Math.min(due ?? now, now, r.due_at ?? now);
  }
  if (due === undefined) {
    delete r.due_pk;
    delete r.due_at;
  } else {
    r.due_pk = dueShardOf(r.name);
    r.due_at = due;
  }
  return r;
}

/** Appends entries to the recent runs, keeping the newest `keep`. */
export function withRecent(recent: readonly RunEntry[], entries: readonly RunEntry[], keep: number): RunEntry[] {
  return [...recent, ...entries].slice(-keep);
}

/** Plans one tick for one schedule. */
export function planTick(record: ScheduleRecord, c: PlanContext): TickPlan {
  const unchanged: TickPlan = { runs: [], record, changed: false, skipped: 0 };
  if (record.state !== 'active') return unchanged;
  const s: TickState = {
    at: new Date(c.now).toISOString(),
    entries: [],
    runs: [],
    cancel: undefined,
    next: record.next_time,
    fired: record.fired,
    missed: record.missed,
    buffered: record.buffered,
    active: c.lastRun === 'active',
  };
  startBuffered(s, record);
  applyMisfire(s, record, c);
  createDue(s, record, c);
  return settle(s, record, c);
}

/** One tick's work on one schedule, carried from step to step (`planTick`). */
interface TickState {
  /** The tick's time, as the entries record it. */
  readonly at: string;
  /** The recent-run entries this tick adds. */
  readonly entries: RunEntry[];
  readonly runs: PlannedRun[];
  cancel: string | undefined;
  next: number | undefined;
  fired: number;
  missed: number;
  buffered: number | undefined;
  /** Whether a run of this schedule is (or will be, having just been created) going. */
  active: boolean;
}

/** The missed times a tick found (`applyMisfire`). */
interface MissedScan {
  /** The missed times looked at, oldest first (`MISSED_SCAN_LIMIT` at most). */
  readonly times: readonly number[];
  /** The first time the scan did not take: not missed, beyond the scan limit, or none. */
  readonly end: number | undefined;
  /** `end` when it was missed too (the scan limit stopped the scan). */
  readonly overflow: number | undefined;
  /** A time before this one was missed. */
  readonly cutoff: number;
}

function entryOf(time: number, outcome: RunOutcome, at: string, extra: Partial<RunEntry> = {}): RunEntry {
  return {
    scheduled_time: new Date(time).toISOString(),
    outcome,
    kind: 'scheduled',
    at,
    ...extra,
  };
}

function create(s: TickState, record: ScheduleRecord, time: number): void {
  s.runs.push({ scheduledTime: time, runAt: fireAt(record, time), kind: 'scheduled' });
  s.entries.push(entryOf(time, 'created', s.at));
  s.fired += 1;
  s.active = true;
}

function limitReached(s: TickState, spec: ScheduleRecord['spec']): boolean {
  return spec.limit !== undefined && s.fired >= spec.limit;
}

/** 1. A buffered run starts once the run before it has finished. */
function startBuffered(s: TickState, record: ScheduleRecord): void {
  if (s.buffered !== undefined && !s.active) {
    create(s, record, s.buffered);
    s.buffered = undefined;
  }
}

/** 2. Missed times: the misfire policy. */
function applyMisfire(s: TickState, record: ScheduleRecord, c: PlanContext): void {
  const spec = record.spec;
  const next = s.next;
  const misfired = next !== undefined && fireAt(record, next) < c.now - c.graceMs && !limitReached(s, spec);
  if (!misfired) return;
  const cutoff = c.now - c.graceMs - jitterOffsetMs(record.name, spec.jitter_ms);
  const missedTimes: number[] = [];
  let t: number | undefined = next;
  while (t !== undefined && t < cutoff && missedTimes.length < MISSED_SCAN_LIMIT) {
    missedTimes.push(t);
    t = nextTimeAfter(spec, t);
  }
  // More missed times than the scan looks at: the rest are jumped over (dropped, not counted),
  // never left for the loop of `createDue`, which would run them as if they were due.
  const overflow = t !== undefined && t < cutoff ? t : undefined;
  const scan: MissedScan = { times: missedTimes, end: t, overflow, cutoff };
  if (spec.misfire === 'catch_up') catchUp(s, spec, c, scan);
  else runOnceOrSkip(s, record, scan);
}

/** `catch_up`: times older than the window are dropped; the rest are left to `createDue`. */
function catchUp(s: TickState, spec: ScheduleRecord['spec'], c: PlanContext, scan: MissedScan): void {
  const { times: missedTimes, end: t, overflow } = scan;
  const oldest = c.now - spec.catchup_window_ms;
  const dropped = missedTimes.filter((m) => m < oldest);
  if (dropped.length > 0) {
    s.entries.push(skippedMisfire(dropped, 'older than catchup_window', s.at));
    s.missed += dropped.length;
  }
  s.next =
    missedTimes.find((m) => m >= oldest) ??
    (overflow !== undefined && overflow < oldest ? nextTimeAfter(spec, oldest - 1) : t);
  // The caught-up times themselves are handled by `createDue`, as times due now, oldest first.
}

/** `run_once` (one run, with the latest missed time) and `skip`: the missed times are dropped. */
function runOnceOrSkip(s: TickState, record: ScheduleRecord, scan: MissedScan): void {
  const spec = record.spec;
  const { times: missedTimes, end: t, overflow, cutoff } = scan;
  const last = overflow === undefined ? missedTimes[missedTimes.length - 1] : latestBefore(spec, overflow, cutoff);
  const dropped = spec.misfire === 'run_once' && overflow === undefined ? missedTimes.slice(0, -1) : missedTimes;
  if (dropped.length > 0) {
    s.entries.push(skippedMisfire(dropped, spec.misfire === 'skip' ? 'misfire: skip' : 'misfire: run_once', s.at));
    s.missed += dropped.length;
  }
  const after = overflow === undefined ? t : nextTimeAfter(spec, cutoff - 1);
  if (spec.misfire === 'run_once' && last !== undefined) {
    if (s.active && spec.overlap !== 'allow') {
      // It waits for the run before it, like a caught-up time (`createDue`).
      s.next = last;
    } else {
      create(s, record, last);
      s.next = after;
    }
  } else {
    s.next = after;
  }
}

/** 3. Times due before the next tick, in order. */
function createDue(s: TickState, record: ScheduleRecord, c: PlanContext): void {
  const spec = record.spec;
  while (s.next !== undefined && s.runs.length < c.maxRuns && !limitReached(s, spec)) {
    const fire = fireAt(record, s.next);
    if (fire > c.horizon) break;
    const late = fire < c.now - c.graceMs; // only caught-up times are still late here
    if (s.active && spec.overlap !== 'allow') {
      if (fire > c.now || late) break; // decided when it falls due / waits for the run before it
      if (spec.overlap === 'forbid') {
        s.entries.push(entryOf(s.next, 'skipped_overlap', s.at, { reason: 'previous run still going (forbid)' }));
      } else if (spec.overlap === 'buffer_one') {
        if (s.buffered === undefined) s.buffered = s.next;
        else {
          s.entries.push(
            entryOf(s.next, 'skipped_overlap', s.at, { reason: 'collapsed into the buffered run (buffer_one)' }),
          );
        }
      } else {
        // replace: the run going now is cancelled first (only one that existed before this tick).
        if (c.lastRun === 'active' && s.runs.length === 0 && record.last_run !== undefined) {
          s.cancel = record.last_run.task_id;
        }
        create(s, record, s.next);
      }
      s.next = nextTimeAfter(spec, s.next);
      continue;
    }
    create(s, record, s.next);
    s.next = nextTimeAfter(spec, s.next);
  }
}

/** The tick's plan: the schedule as it ends the tick (finished?, next time, buffered run, due), what changed. */
function settle(s: TickState, record: ScheduleRecord, c: PlanContext): TickPlan {
  const { next, fired, missed, buffered, entries, runs, cancel } = s;
  const finished = (next === undefined || limitReached(s, record.spec)) && buffered === undefined;
  const out: ScheduleRecord = {
    ...record,
    fired,
    missed,
    recent: withRecent(record.recent, entries, c.recentRuns),
    state: finished ? 'finished' : 'active',
  };
  if (next === undefined || limitReached(s, record.spec)) delete out.next_time;
  else out.next_time = next;
  if (buffered === undefined) delete out.buffered;
  else out.buffered = buffered;
  const written = withDue(out, c.now);
  const changed =
    runs.length > 0 ||
    entries.length > 0 ||
    written.state !== record.state ||
    written.next_time !== record.next_time ||
    written.buffered !== record.buffered ||
    written.due_at !== record.due_at;
  const skipped = entries.reduce((n, e) => n + (e.outcome.startsWith('skipped') ? (e.count ?? 1) : 0), 0);
  return { runs, ...(cancel === undefined ? {} : { cancel }), record: written, changed, skipped };
}

/**
 * The latest nominal time before `before`, `from` being one: looked for in a window widened back
 * from `before`, so it costs a few steps however many times lie between.
 */
function latestBefore(spec: ScheduleRecord['spec'], from: number, before: number): number {
  for (let width = 1000; ; width *= 2) {
    const lo = Math.max(from, before - width);
    let found = nextTimeAfter(spec, lo - 1);
    if (found !== undefined && found < before) {
      for (let t = nextTimeAfter(spec, found); t !== undefined && t < before; t = nextTimeAfter(spec, t)) found = t;
      return found;
    }
    if (lo === from) return from;
  }
}

function skippedMisfire(times: readonly number[], reason: string, at: string): RunEntry {
  const last = times[times.length - 1] as number;
  return {
    scheduled_time: new Date(last).toISOString(),
    outcome: 'skipped_misfire',
    kind: 'scheduled',
    at,
    reason,
    ...(times.length > 1 ? { count: times.length } : {}),
  };
}
