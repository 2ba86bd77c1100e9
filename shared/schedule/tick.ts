/**
 * The scheduler's tick: every `tickSeconds` (an EventBridge rule on AWS, a timer on `npm start`),
 * find the schedules due before the next tick in the sparse `due` index (a Query per shard, no
 * Scan), and for each one carry out its plan (`plan.ts`): create its runs as ordinary tasks,
 * then write the schedule conditioned on the version read.
 *
 * Exactly one task per scheduled time, however many ticks run at once: a run's task id is
 * derived from the schedule's owner, name and scheduled time ({@link runTaskId}), and the task
 * store's create is conditional, so a second tick's create is a replay; the second tick's
 * schedule write then fails its version condition and changes nothing. A tick that dies between
 * the two leaves the schedule as it was: the next tick plans the same runs and finds them
 * created. The id does not depend on the schedule's instance, so a schedule deleted and created
 * again under the same name and owner finds the runs of its earlier instance: a time that ran
 * once never runs again (backfill, the ticker, a misfire policy).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { METRICS } from '../config/metrics.js';
import type { Clock } from '../runtime/clock.js';
import type { Logger, Metrics } from '../runtime/logger.js';
import { ScheduleVersionConflictError } from './store-errors.js';
import type { ScheduleStore } from './schedule-store.js';
import { TaskNotCancellableError, TaskNotFoundError, UnknownTaskTypeError, ValidationError } from '../task/errors.js';
import type { TaskLifecycle } from '../task/lifecycle.js';
import type { TaskSubmitter } from '../task/submit.js';
import { isFinished } from '../task/state-machine.js';
import type { RunEntry, RunKind, ScheduleRecord } from './model.js';
import { duePartitions, type LastRunState, type PlannedRun, planTick } from './plan.js';
import type { SchedulerSettings } from './settings.js';

export interface SchedulerDeps {
  readonly schedules: ScheduleStore;
  readonly submitter: TaskSubmitter;
  readonly lifecycle: TaskLifecycle;
  readonly scheduling: SchedulerSettings;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** What one tick did, for the function's log line and the tests. */
export interface TickReport {
  /** Schedules the due index returned. */
  due: number;
  /** Tasks created (runs). */
  created: number;
  /** Runs whose task existed already (another tick, or an earlier try of this one). */
  replayed: number;
  /** Times skipped by the overlap or misfire policy. */
  skipped: number;
  /** Schedule writes that lost to another writer (a concurrent tick, an API change). */
  conflicts: number;
  /** Schedules that failed (store or queue unavailable); the next tick tries again. */
  failures: number;
  /** Schedules not reached within the budget. */
  deferred: number;
}

/** `schedule-name@scheduled-time`: unique per scheduled time. */
export function runKeyOf(name: string, scheduledTime: number): string {
  return `${name}@${new Date(scheduledTime).toISOString()}`;
}

/**
 * The task id of a run: from the schedule's owner, name and scheduled time only, so one scheduled
 * time of one schedule is one task whatever instance of the schedule asks (never two tasks for one
 * run, even after DELETE and PUT again).
 */
export function runTaskId(owner: string, name: string, scheduledTime: number): string {
  const key = `run\n${owner}\n${runKeyOf(name, scheduledTime)}`;
  return `t_${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/**
 * The task id earlier versions gave a run: from the schedule's random `uid` (kept on the schedules
 * they created) and the run key.
 */
export function legacyRunTaskId(uid: string, runKey: string): string {
  return `t_${createHash('sha256').update(`${uid}\n${runKey}`).digest('hex').slice(0, 32)}`;
}

/**
 * How long after the first tick of this version the runs of a schedule created by an earlier
 * version are still looked up under their earlier id: one tick, plus Lambda's longest run (15
 * minutes), for a tick of the earlier version still running during the upgrade.
 */
export const LEGACY_RUN_MARGIN_MS = 15 * 60 * 1000;

export class ScheduleTicker {
  constructor(private readonly d: SchedulerDeps) {}

  /** One tick. @param budgetMs stop starting new schedules after this long */
  async tick(budgetMs = Number.POSITIVE_INFINITY): Promise<TickReport> {
    const started = this.d.clock.now();
    const horizon = started + this.d.scheduling.tickSeconds * 1000;
    const report: TickReport = { due: 0, created: 0, replayed: 0, skipped: 0, conflicts: 0, failures: 0, deferred: 0 };
    const due: { name: string; due_at: number }[] = [];
    await Promise.all(
      duePartitions().map(async (partition) => {
        let cursor: string | undefined;
        do {
          const page = await this.d.schedules.listDue(partition, horizon, 200, cursor);
          for (const item of page.items) due.push(item);
          cursor = page.cursor;
        } while (cursor !== undefined);
      }),
    );
    // Earliest first across the shards: when a tick is long (a herd due in one minute), the runs
    // due soonest are handed over first, and those left to the budget are the latest.
    const names = due.sort((a, b) => a.due_at - b.due_at).map((e) => e.name);
    report.due = names.length;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < names.length) {
        const name = names[next++] as string;
        if (this.d.clock.now() - started > budgetMs) {
          report.deferred += 1;
          continue;
        }
        try {
          await this.advance(name, report);
        } catch (err) {
          report.failures += 1;
          this.d.metrics.count(METRICS.schedulerItemFailures, undefined);
          this.d.logger.warn('schedule not advanced; the next tick tries again', {
            schedule: name,
            error: err instanceof Error ? err.message : String(err),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.d.scheduling.tickConcurrency, names.length) }, worker));
    return report;
  }

  /** Carries out one schedule's plan for this tick. */
  private async advance(name: string, report: TickReport): Promise<void> {
    const record = await this.d.schedules.get(name);
    const now = this.d.clock.now();
    const horizon = now + this.d.scheduling.tickSeconds * 1000;
    // The index may lag the item: act on the item as read.
    if (record === undefined || record.due_at === undefined || record.due_at > horizon) return;
    const lastRun = await this.lastRunState(record);
    const plan = planTick(record, {
      now,
      horizon,
      tickMs: this.d.scheduling.tickSeconds * 1000,
      graceMs: this.d.scheduling.misfireGraceSeconds * 1000,
      maxRuns: this.d.scheduling.maxRunsPerTick,
      recentRuns: this.d.scheduling.recentRuns,
      lastRun,
    });
    if (!plan.changed) return;
    if (plan.cancel !== undefined) await this.cancelQuietly(plan.cancel, name);
    let out = plan.record;
    if (record.uid !== undefined && record.legacy_runs_until === undefined) {
      out = { ...out, legacy_runs_until: now + this.d.scheduling.tickSeconds * 1000 + LEGACY_RUN_MARGIN_MS };
    }
    for (const run of plan.runs) {
      const made = await createRun(this.d, record, run);
      if (made.kind === 'invalid') {
        out = { ...out, recent: replaceEntry(out.recent, run, made.entry) };
        continue;
      }
      if (made.replayed) report.replayed += 1;
      else {
        report.created += 1;
        this.d.metrics.count(METRICS.scheduledRunsCreated, record.spec.task.type);
      }
      out = {
        ...out,
        recent: withTaskId(out.recent, run, made.taskId),
        last_run: { task_id: made.taskId, scheduled_time: new Date(run.scheduledTime).toISOString() },
      };
    }
    report.skipped += plan.skipped;
    try {
      await this.d.schedules.put(
        { ...out, version: record.version + 1, updated_at: new Date(now).toISOString() },
        record.version,
      );
    } catch (err) {
      if (!(err instanceof ScheduleVersionConflictError)) throw err;
      report.conflicts += 1;
    }
  }

  private async lastRunState(record: ScheduleRecord): Promise<LastRunState> {
    if (record.last_run === undefined || record.spec.overlap === 'allow') {
      return record.last_run === undefined ? 'none' : 'finished';
    }
    const task = await this.d.lifecycle.requests.find(record.last_run.task_id).catch((err: unknown) => {
      if (err instanceof TaskNotFoundError) return undefined;
      throw err;
    });
    return task === undefined || isFinished(task.status) ? 'finished' : 'active';
  }

  private async cancelQuietly(taskId: string, schedule: string): Promise<void> {
    try {
      await this.d.lifecycle.requests.cancel(taskId);
    } catch (err) {
      if (err instanceof TaskNotFoundError || err instanceof TaskNotCancellableError) return;
      throw err;
    }
    this.d.logger.info('run replaced: cancelled the one still going', { schedule, task_id: taskId });
  }
}

/** The result of creating one run. */
export type CreatedRun =
  | { readonly kind: 'created'; readonly taskId: string; readonly replayed: boolean }
  | { readonly kind: 'invalid'; readonly taskId: string; readonly entry: RunEntry };

/**
 * Creates one run's task (any kind). A run the task domain refuses for good (the payload no longer
 * fits the type, the type is gone) is `invalid`, recorded, and never retried; anything else that
 * fails is thrown (the caller retries: the id is the same).
 *
 * A schedule created by an earlier version (it has a `uid`) may have run this time under the id
 * that version gave it: for times up to `legacy_runs_until` (all times, until the first tick of
 * this version sets it) that id is read first, and a task found there is this run (a replay).
 */
export async function createRun(
  d: Pick<SchedulerDeps, 'submitter' | 'clock' | 'lifecycle'>,
  record: ScheduleRecord,
  run: PlannedRun,
): Promise<CreatedRun> {
  const runKey = runKeyOf(record.name, run.scheduledTime);
  const taskId = runTaskId(record.owner, record.name, run.scheduledTime);
  const t = record.spec.task;
  if (record.uid !== undefined && run.scheduledTime <= (record.legacy_runs_until ?? Number.POSITIVE_INFINITY)) {
    const legacyId = legacyRunTaskId(record.uid, runKey);
    const earlier = await d.lifecycle.requests.find(legacyId).catch((err: unknown) => {
      if (err instanceof TaskNotFoundError) return undefined;
      throw err;
    });
    if (earlier !== undefined) return { kind: 'created', taskId: legacyId, replayed: true };
  }
  try {
    const { replayed, record: created } = await d.submitter.submitRun({
      taskId,
      runKey,
      schedule: record.name,
      owner: record.owner,
      scheduledTime: run.scheduledTime,
      runAt: run.runAt,
      type: t.type,
      payload: t.payload,
      priority: t.priority,
      ...(t.max_attempts === undefined ? {} : { max_attempts: t.max_attempts }),
      ...(t.timeout_seconds === undefined ? {} : { timeout_seconds: t.timeout_seconds }),
    });
    // A type that identifies its runs (a pipeline) chose the id: the schedule lists that one.
    return { kind: 'created', taskId: created.task_id, replayed };
  } catch (err) {
    if (!(err instanceof ValidationError || err instanceof UnknownTaskTypeError)) throw err;
    return {
      kind: 'invalid',
      taskId,
      entry: {
        scheduled_time: new Date(run.scheduledTime).toISOString(),
        outcome: 'invalid',
        kind: run.kind,
        at: new Date(d.clock.now()).toISOString(),
        reason: err.message,
      },
    };
  }
}

/** Replaces the `created` entry of a run by what became of it. */
function replaceEntry(recent: readonly RunEntry[], run: PlannedRun, entry: RunEntry): RunEntry[] {
  const time = new Date(run.scheduledTime).toISOString();
  const i = recent.findLastIndex((e) => e.scheduled_time === time && e.outcome === 'created');
  if (i < 0) return [...recent, entry];
  const out = [...recent];
  out[i] = entry;
  return out;
}

/** The `created` entry of a run, with its task's id (which the plan does not know). */
function withTaskId(recent: readonly RunEntry[], run: PlannedRun, taskId: string): RunEntry[] {
  const time = new Date(run.scheduledTime).toISOString();
  const i = recent.findLastIndex(
    (e) => e.scheduled_time === time && e.outcome === 'created' && e.task_id === undefined,
  );
  const out = [...recent];
  if (i >= 0) out[i] = { ...(recent[i] as RunEntry), task_id: taskId };
  return out;
}

export type { RunKind };
