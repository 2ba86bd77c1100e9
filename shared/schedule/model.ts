import { DEFAULTS, type Priority } from '../config/resources.js';

/**
 * What the scheduler does when a time falls due while the schedule's previous run has not
 * finished. Default `forbid` (Kubernetes' default `Allow` is the unsafe one).
 * - `allow`: start it anyway.
 * - `forbid`: skip this time, recorded as `skipped_overlap`.
 * - `buffer_one`: start it once the current run finishes; later times collapse into it.
 * - `replace`: cancel the current run (the ordinary cancel path), then start. The two overlap:
 *   the new run starts at once, and the old one's worker sees the cancel at its next cancel
 *   poll (`cancelPollSeconds`, 5 s; the heartbeat, lease/3, where that is shorter), one eventually
 *   consistent read later; its handler's `signal` aborts then, and the run ends when the handler
 *   returns. So the window is up to 5 s plus one read plus however long the handler takes to stop
 *   after its signal. A handler that must never overlap itself uses `forbid` or `buffer_one`.
 */
export const OVERLAP_POLICIES = ['allow', 'forbid', 'buffer_one', 'replace'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** What each overlap policy does, as the console and the CLI tell a user (the TSDoc above, shorter). */
export const OVERLAP_DESCRIPTIONS: Readonly<Record<OverlapPolicy, string>> = {
  allow: 'a time whose previous run is still going starts anyway',
  forbid: 'a time whose previous run is still going is skipped (recorded skipped_overlap)',
  buffer_one: 'a time whose previous run is still going runs once that run finishes; later times collapse into it',
  replace:
    'a time whose previous run is still going cancels that run and starts at once. The two overlap: the old ' +
    `handler's signal aborts within the cancel poll (${DEFAULTS.cancelPollSeconds} s, or lease/3 if shorter) plus ` +
    'one eventually consistent read, and the old run ends when its handler returns. Use forbid or buffer_one ' +
    'for a handler that must never overlap itself.',
};

/**
 * What the scheduler does with times it missed (it was down, the schedule was paused, a tick
 * failed). Default `skip`.
 * - `skip`: only future times run; missed ones are counted.
 * - `run_once`: one run for everything missed, with the latest missed time.
 * - `catch_up`: every missed time within `catchup_window`, oldest first.
 */
export const MISFIRE_POLICIES = ['skip', 'run_once', 'catch_up'] as const;
export type MisfirePolicy = (typeof MISFIRE_POLICIES)[number];

/** A schedule as declared (validated and normalised; durations in ms, times in epoch ms). */
export interface ScheduleSpec {
  /** Exactly one of `cron`, `every_ms`, `at` is set. */
  readonly cron?: string;
  /** Fixed interval, aligned to `start_at` when given, else to the Unix epoch (so PUT twice gives the same times). */
  readonly every_ms?: number;
  /** One time (epoch ms). */
  readonly at?: number;
  /** IANA zone the cron is evaluated in. @default 'UTC' */
  readonly timezone: string;
  readonly start_at?: number;
  readonly end_at?: number;
  /** Times the clock fires at most (`trigger` and `backfill` runs are not counted). */
  readonly limit?: number;
  /** Herd spreading: each time fires at a fixed offset in [0, jitter_ms) derived from the name. */
  readonly jitter_ms: number;
  readonly overlap: OverlapPolicy;
  readonly misfire: MisfirePolicy;
  /** `catch_up` runs missed times no older than this. @default 1 h */
  readonly catchup_window_ms: number;
  /** The task each run creates. */
  readonly task: ScheduleTaskTemplate;
  readonly description?: string;
}

export interface ScheduleTaskTemplate {
  readonly type: string;
  readonly payload: unknown;
  readonly priority: Priority;
  readonly max_attempts?: number;
  readonly timeout_seconds?: number;
}

export type ScheduleState = 'active' | 'paused' | 'finished';

/** Where a schedule was declared: in code next to its task type, or through the API / CLI. */
export type ScheduleSource = 'code' | 'api';

/** What became of one scheduled time. */
export type RunOutcome =
  /** A task was created for it. */
  | 'created'
  /** Its previous run was still going (`forbid`), or a later time collapsed into a buffered one (`buffer_one`). */
  | 'skipped_overlap'
  /** Missed and dropped by the misfire policy (`skip`, the older times of `run_once`, beyond `catchup_window`). */
  | 'skipped_misfire'
  /** The task could not be created (its payload no longer fits the type, an unknown type): never retried. */
  | 'invalid';

export type RunKind = 'scheduled' | 'trigger' | 'backfill';

/** One entry of a schedule's recent runs (newest last). */
export interface RunEntry {
  /** The logical date: the nominal scheduled time (ISO, UTC), before jitter. */
  readonly scheduled_time: string;
  readonly outcome: RunOutcome;
  readonly kind: RunKind;
  /** Present when a task was created. */
  readonly task_id?: string;
  /** When the scheduler decided (ISO). */
  readonly at: string;
  /** Why, for skips and invalid runs; a count when several times were dropped at once. */
  readonly reason?: string;
  readonly count?: number;
}

/** A schedule as stored: its spec and the scheduler's state for it. */
export interface ScheduleRecord {
  /** The schedule's name: unique per deployment, `^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`. */
  name: string;
  /** Who declared it (the API caller's principal; `kaj:code` for schedules declared in code). */
  owner: string;
  source: ScheduleSource;
  /**
   * Created by an API caller under the per-owner cap: it holds one of its owner's slots, which
   * its delete gives back. Absent on schedules declared in code, made by an operator (CLI,
   * console) or created before the cap was enforced: those take no slot.
   */
  counted?: true;
  spec: ScheduleSpec;
  /** Hash of the spec as declared: a PUT with the same body changes nothing. */
  spec_hash: string;
  /**
   * Present only on schedules created by earlier versions, whose runs' task ids were derived from
   * it (random per creation). Runs' ids now derive from the owner, the name and the scheduled time.
   */
  uid?: string;
  /**
   * With `uid`: runs at or before this time (epoch ms) may exist under their earlier id, which
   * is looked up before a run is created. Set by the first tick of this version.
   */
  legacy_runs_until?: number;
  state: ScheduleState;
  pause_note?: string;
  paused_at?: string;
  /** The next nominal time not yet handled (epoch ms); absent when no time is left. */
  next_time?: number;
  /**
   * Times the clock fired so far, for `limit`: runs created, and runs found invalid (a payload that
   * no longer fits the type is recorded `invalid` and counts, so a broken schedule ends).
   */
  fired: number;
  /** `buffer_one`: a time waiting for the current run to finish (epoch ms). */
  buffered?: number;
  /** The latest run created (any kind): what overlap checks look at. */
  last_run?: { readonly task_id: string; readonly scheduled_time: string };
  /** Times dropped by the misfire policy, in all. */
  missed: number;
  /** The last `DEFAULTS.scheduleRecentRuns` entries, newest last. */
  recent: RunEntry[];
  /**
   * Due index (sparse, sharded): present while the tick has something to do for the schedule.
   * `due_pk` = `due#<shard>`, `due_at` = epoch ms at which the tick should act (the next time
   * plus its jitter offset, or a re-check of a buffered run).
   */
  due_pk?: string;
  due_at?: number;
  /** Optimistic concurrency: every write is conditioned on the version it read. */
  version: number;
  created_at: string;
  updated_at: string;
}

/** The owner of schedules declared in code. */
export const CODE_OWNER = 'kaj:code';
