import { describe, expect, it } from 'vitest';
import type { ScheduleRecord, ScheduleSpec } from '../../../shared/schedule/model.js';
import { dueShardOf, fireAt, type PlanContext, planTick, withDue } from '../../../shared/schedule/plan.js';
import { jitterOffsetMs } from '../../../shared/schedule/timing.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (t: number) => new Date(t).toISOString();

/** A spec every 10 minutes, no jitter, forbid / skip unless told otherwise. */
function spec(o: Partial<ScheduleSpec> = {}): ScheduleSpec {
  const base: ScheduleSpec = {
    timezone: 'UTC',
    jitter_ms: 0,
    overlap: 'forbid',
    misfire: 'skip',
    catchup_window_ms: HOUR,
    task: { type: 'echo', payload: { value: 1 }, priority: 'normal' },
  };
  const when = o.cron !== undefined || o.at !== undefined || o.every_ms !== undefined ? {} : { every_ms: 10 * MINUTE };
  return { ...base, ...when, ...o };
}

/** A stored schedule whose next time is `next` (due index set as the service and the tick set it). */
function record(s: ScheduleSpec, next: number | undefined, o: Partial<ScheduleRecord> = {}): ScheduleRecord {
  const r: ScheduleRecord = {
    name: 'nightly',
    owner: 'test-owner',
    source: 'api',
    spec: s,
    spec_hash: 'hash',
    uid: 'uid-1',
    state: 'active',
    fired: 0,
    missed: 0,
    recent: [],
    version: 3,
    created_at: iso(T0 - DAY),
    updated_at: iso(T0 - DAY),
    ...(next === undefined ? {} : { next_time: next }),
    ...o,
  };
  return withDue(r, T0);
}

/** The tick's context at `now`: a 60 s tick, 150 s grace (the defaults). */
function ctx(now: number, o: Partial<PlanContext> = {}): PlanContext {
  return {
    now,
    horizon: now + MINUTE,
    tickMs: MINUTE,
    graceMs: 150 * SECOND,
    maxRuns: 60,
    recentRuns: 10,
    lastRun: 'none',
    ...o,
  };
}

describe('due index', () => {
  it('an active schedule is due at its next fire moment, in a shard of its own', () => {
    const s = spec({ jitter_ms: MINUTE });
    const r = record(s, T0 + 10 * MINUTE, { name: 'jittered' });
    expect(r.due_at).toBe(T0 + 10 * MINUTE + jitterOffsetMs('jittered', MINUTE));
    expect(r.due_pk).toBe(dueShardOf('jittered'));
  });

  it('a paused or finished schedule leaves the index; a buffered run makes it due at once', () => {
    expect(record(spec(), T0, { state: 'paused' }).due_at).toBeUndefined();
    expect(record(spec(), undefined, { state: 'finished' }).due_pk).toBeUndefined();
    expect(record(spec(), T0 + HOUR, { buffered: T0 - MINUTE }).due_at).toBe(T0);
  });
});

describe('planTick: times due', () => {
  it('a time within the horizon gives one run at the time plus the jitter offset', () => {
    const s = spec({ jitter_ms: MINUTE });
    const offset = jitterOffsetMs('jittered', MINUTE);
    expect(offset).toBeGreaterThan(0);
    const time = T0 + 10 * MINUTE;
    const r = record(s, time, { name: 'jittered' });
    // The fire moment (time + offset) is within now + one tick.
    const now = time + offset - 30 * SECOND;
    const plan = planTick(r, ctx(now));
    expect(plan.runs).toEqual([{ scheduledTime: time, runAt: time + offset, kind: 'scheduled' }]);
    expect(plan.changed).toBe(true);
    expect(plan.skipped).toBe(0);
    expect(plan.record.next_time).toBe(time + 10 * MINUTE);
    expect(plan.record.due_at).toBe(time + 10 * MINUTE + offset);
    expect(plan.record.fired).toBe(1);
    expect(plan.record.state).toBe('active');
    expect(plan.record.recent).toEqual([
      { scheduled_time: iso(time), outcome: 'created', kind: 'scheduled', at: iso(now) },
    ]);
  });

  it('a time whose nominal moment is within the horizon but whose jittered fire is not waits', () => {
    const s = spec({ jitter_ms: MINUTE });
    const offset = jitterOffsetMs('jittered', MINUTE);
    const time = T0 + 10 * MINUTE;
    const r = record(s, time, { name: 'jittered' });
    const plan = planTick(r, ctx(time + offset - MINUTE - 1));
    expect(plan.runs).toEqual([]);
    expect(plan.changed).toBe(false);
  });

  it('a future time beyond the horizon: nothing, the record unchanged (no write)', () => {
    const r = record(spec(), T0 + 10 * MINUTE);
    const plan = planTick(r, ctx(T0));
    expect(plan.runs).toEqual([]);
    expect(plan.changed).toBe(false);
    expect(plan.skipped).toBe(0);
    expect(plan.record).toEqual(r);
  });

  it('a time exactly at the horizon is handed over; one a millisecond past it is not', () => {
    const time = T0 + 10 * MINUTE;
    expect(planTick(record(spec(), time), ctx(time - MINUTE)).runs).toHaveLength(1);
    expect(planTick(record(spec(), time), ctx(time - MINUTE - 1)).runs).toHaveLength(0);
  });

  it('limit: the schedule finishes after N runs created by the clock', () => {
    let r = record(spec({ limit: 3 }), T0);
    const created: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const now = T0 + i * 10 * MINUTE;
      const plan = planTick(r, ctx(now));
      created.push(...plan.runs.map((x) => x.scheduledTime));
      r = plan.record;
    }
    expect(created).toEqual([T0, T0 + 10 * MINUTE, T0 + 20 * MINUTE]);
    expect(r.state).toBe('finished');
    expect(r.fired).toBe(3);
    expect(r.next_time).toBeUndefined();
    expect(r.due_at).toBeUndefined();
    expect(r.due_pk).toBeUndefined();
  });

  it('limit: with several times due in one tick (allow), no more than the limit are created', () => {
    const s = spec({ every_ms: MINUTE, limit: 2, overlap: 'allow', misfire: 'catch_up' });
    const plan = planTick(record(s, T0 - 10 * MINUTE), ctx(T0));
    expect(plan.runs).toHaveLength(2);
    expect(plan.record.state).toBe('finished');
    expect(plan.record.next_time).toBeUndefined();
  });

  it('end_at: the last time is created and the schedule finishes', () => {
    const end = T0 + 20 * MINUTE;
    let r = record(spec({ end_at: end }), T0 + 10 * MINUTE);
    let plan = planTick(r, ctx(T0 + 10 * MINUTE));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0 + 10 * MINUTE]);
    expect(plan.record.state).toBe('active');
    r = plan.record;
    plan = planTick(r, ctx(end));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([end]);
    expect(plan.record.state).toBe('finished');
    expect(plan.record.next_time).toBeUndefined();
    expect(plan.record.due_at).toBeUndefined();
  });

  it('at: one run, then finished', () => {
    const at = T0 + 5 * MINUTE;
    const r = record(spec({ at }), at);
    const plan = planTick(r, ctx(at - 30 * SECOND));
    expect(plan.runs).toEqual([{ scheduledTime: at, runAt: at, kind: 'scheduled' }]);
    expect(plan.record.state).toBe('finished');
    expect(plan.record.next_time).toBeUndefined();
    expect(plan.record.due_pk).toBeUndefined();
  });

  it('a paused or finished schedule is a no-op, due or not', () => {
    for (const state of ['paused', 'finished'] as const) {
      const r: ScheduleRecord = { ...record(spec(), T0 - 10 * MINUTE), state };
      const plan = planTick(r, ctx(T0));
      expect(plan).toEqual({ runs: [], record: r, changed: false, skipped: 0 });
    }
  });

  it('keeps only the newest recentRuns entries', () => {
    const s = spec({ every_ms: MINUTE, overlap: 'allow', misfire: 'catch_up' });
    const plan = planTick(record(s, T0 - 20 * MINUTE), ctx(T0, { recentRuns: 5 }));
    // T0 - 20 min … T0 + 1 min (within the horizon).
    expect(plan.runs).toHaveLength(22);
    expect(plan.record.recent).toHaveLength(5);
    expect(plan.record.recent.at(-1)?.scheduled_time).toBe(iso(T0 + MINUTE));
  });
});

describe('planTick: overlap (the latest run has not finished)', () => {
  const time = T0 + 10 * MINUTE;
  const running = { last_run: { task_id: 't_running', scheduled_time: iso(T0) } };

  it('allow: the time is created anyway', () => {
    const r = record(spec({ overlap: 'allow' }), time, running);
    const plan = planTick(r, ctx(time, { lastRun: 'active' }));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([time]);
    expect(plan.cancel).toBeUndefined();
  });

  it('forbid: the time is skipped, recorded as skipped_overlap', () => {
    const r = record(spec({ overlap: 'forbid' }), time, running);
    const plan = planTick(r, ctx(time, { lastRun: 'active' }));
    expect(plan.runs).toEqual([]);
    expect(plan.skipped).toBe(1);
    expect(plan.changed).toBe(true);
    expect(plan.record.next_time).toBe(time + 10 * MINUTE);
    expect(plan.record.fired).toBe(0);
    expect(plan.record.recent).toEqual([
      expect.objectContaining({ scheduled_time: iso(time), outcome: 'skipped_overlap', kind: 'scheduled' }),
    ]);
  });

  it('buffer_one: one time waits for the run, later ones collapse, and it runs once the run finished', () => {
    const s = spec({ overlap: 'buffer_one' });
    let r = record(s, time, running);
    // The first time falls due while the run is going: buffered, nothing recorded as skipped.
    let plan = planTick(r, ctx(time, { lastRun: 'active' }));
    expect(plan.runs).toEqual([]);
    expect(plan.skipped).toBe(0);
    expect(plan.record.buffered).toBe(time);
    expect(plan.record.next_time).toBe(time + 10 * MINUTE);
    expect(plan.record.due_at).toBe(time); // looked at again by the next tick
    r = plan.record;
    // Still going at the next tick: nothing changes (no write).
    plan = planTick(r, ctx(time + MINUTE, { lastRun: 'active' }));
    expect(plan.changed).toBe(false);
    // The next two times collapse into the buffered one.
    for (const t of [time + 10 * MINUTE, time + 20 * MINUTE]) {
      plan = planTick(r, ctx(t, { lastRun: 'active' }));
      expect(plan.runs).toEqual([]);
      expect(plan.skipped).toBe(1);
      expect(plan.record.buffered).toBe(time);
      expect(plan.record.recent.at(-1)).toEqual(
        expect.objectContaining({ scheduled_time: iso(t), outcome: 'skipped_overlap' }),
      );
      r = plan.record;
    }
    // The run finished: the buffered time is created on this tick, at its own fire moment.
    const now = time + 20 * MINUTE + MINUTE;
    plan = planTick(r, ctx(now, { lastRun: 'finished' }));
    expect(plan.runs).toEqual([{ scheduledTime: time, runAt: time, kind: 'scheduled' }]);
    expect(plan.record.buffered).toBeUndefined();
    expect(plan.record.next_time).toBe(time + 30 * MINUTE);
    expect(plan.record.due_at).toBe(time + 30 * MINUTE);
    expect(plan.record.fired).toBe(1);
    expect(plan.record.state).toBe('active');
  });

  it('buffer_one: the buffered run starts and the next time, due meanwhile, is buffered behind it', () => {
    const s = spec({ overlap: 'buffer_one' });
    const r = record(s, time + 10 * MINUTE, { ...running, buffered: time });
    const plan = planTick(r, ctx(time + 10 * MINUTE, { lastRun: 'finished' }));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([time]);
    expect(plan.record.buffered).toBe(time + 10 * MINUTE);
  });

  it('replace: the running task is cancelled and the time created', () => {
    const r = record(spec({ overlap: 'replace' }), time, running);
    const plan = planTick(r, ctx(time, { lastRun: 'active' }));
    expect(plan.cancel).toBe('t_running');
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([time]);
    expect(plan.record.next_time).toBe(time + 10 * MINUTE);
  });

  it('replace: nothing is cancelled when the last run has finished', () => {
    const r = record(spec({ overlap: 'replace' }), time, running);
    const plan = planTick(r, ctx(time, { lastRun: 'finished' }));
    expect(plan.cancel).toBeUndefined();
    expect(plan.runs).toHaveLength(1);
  });

  it('a future time with an active run is deferred: no decision until it falls due', () => {
    for (const overlap of ['forbid', 'buffer_one', 'replace'] as const) {
      const r = record(spec({ overlap }), time, running);
      const early = planTick(r, ctx(time - 30 * SECOND, { lastRun: 'active' }));
      expect(early.runs).toEqual([]);
      expect(early.cancel).toBeUndefined();
      expect(early.changed).toBe(false);
      expect(early.record).toEqual(r);
      // Once it falls due, the policy decides on what is true then: the run finished meanwhile.
      const due = planTick(r, ctx(time + 30 * SECOND, { lastRun: 'finished' }));
      expect(due.runs.map((x) => x.scheduledTime)).toEqual([time]);
      expect(due.cancel).toBeUndefined();
    }
  });

  it('allow hands a future time over early even with a run going', () => {
    const r = record(spec({ overlap: 'allow' }), time, running);
    expect(planTick(r, ctx(time - 30 * SECOND, { lastRun: 'active' })).runs).toHaveLength(1);
  });

  it('a time created in this tick counts as running for the next one due in the same tick (forbid)', () => {
    const s = spec({ every_ms: MINUTE, overlap: 'forbid' });
    // Two times due at once (both within grace): the first is created, the second overlaps it.
    const plan = planTick(record(s, T0 - MINUTE), ctx(T0));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0 - MINUTE]);
    expect(plan.record.recent.map((e) => e.outcome)).toEqual(['created', 'skipped_overlap']);
  });
});

describe('planTick: misfire (times older than now - grace)', () => {
  // Times T0, +10, +20, +30 min missed; now = T0 + 39.5 min (cutoff T0 + 37 min); T0 + 40 min due in the horizon.
  const now = T0 + 39 * MINUTE + 30 * SECOND;

  it('a time late by no more than the grace still runs (no misfire)', () => {
    const plan = planTick(record(spec(), T0), ctx(T0 + 150 * SECOND));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0]);
    expect(plan.record.missed).toBe(0);
  });

  it('skip: all missed times are dropped in one entry with a count; only the future time runs', () => {
    const plan = planTick(record(spec(), T0), ctx(now));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0 + 40 * MINUTE]);
    expect(plan.record.missed).toBe(4);
    expect(plan.skipped).toBe(4);
    const misfires = plan.record.recent.filter((e) => e.outcome === 'skipped_misfire');
    expect(misfires).toEqual([expect.objectContaining({ count: 4, scheduled_time: iso(T0 + 30 * MINUTE) })]);
    expect(plan.record.next_time).toBe(T0 + 50 * MINUTE);
  });

  it('skip with nothing due in the horizon: no runs, next time in the future', () => {
    const plan = planTick(record(spec(), T0), ctx(T0 + 35 * MINUTE));
    expect(plan.runs).toEqual([]);
    expect(plan.record.missed).toBe(4);
    expect(plan.record.next_time).toBe(T0 + 40 * MINUTE);
    expect(plan.changed).toBe(true);
  });

  it('run_once: one run for the latest missed time; the older ones dropped', () => {
    const plan = planTick(record(spec({ misfire: 'run_once', overlap: 'allow' }), T0), ctx(now));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0 + 30 * MINUTE, T0 + 40 * MINUTE]);
    expect(plan.record.missed).toBe(3);
    expect(plan.record.recent.filter((e) => e.outcome === 'skipped_misfire')).toEqual([
      expect.objectContaining({ count: 3, reason: 'misfire: run_once' }),
    ]);
  });

  it('run_once with a run going (forbid): the latest missed time waits for it, then runs', () => {
    const s = spec({ misfire: 'run_once' });
    const r = record(s, T0, { last_run: { task_id: 't_old', scheduled_time: iso(T0 - 10 * MINUTE) } });
    let plan = planTick(r, ctx(T0 + 35 * MINUTE, { lastRun: 'active' }));
    expect(plan.runs).toEqual([]);
    expect(plan.record.next_time).toBe(T0 + 30 * MINUTE);
    expect(plan.record.missed).toBe(3);
    plan = planTick(plan.record, ctx(T0 + 36 * MINUTE, { lastRun: 'finished' }));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0 + 30 * MINUTE]);
    expect(plan.record.missed).toBe(3);
    expect(plan.record.next_time).toBe(T0 + 40 * MINUTE);
  });

  it('catch_up: every missed time within the window, oldest first; older ones dropped', () => {
    const s = spec({ misfire: 'catch_up', overlap: 'allow', catchup_window_ms: 25 * MINUTE });
    const plan = planTick(record(s, T0), ctx(T0 + 35 * MINUTE));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0 + 10 * MINUTE, T0 + 20 * MINUTE, T0 + 30 * MINUTE]);
    expect(plan.record.missed).toBe(1);
    expect(plan.record.recent.map((e) => e.outcome)).toEqual(['skipped_misfire', 'created', 'created', 'created']);
    expect(plan.record.next_time).toBe(T0 + 40 * MINUTE);
  });

  it('catch_up with forbid: the caught-up times run one at a time, each after the previous finished', () => {
    const s = spec({ misfire: 'catch_up', overlap: 'forbid' });
    let r = record(s, T0);
    let at = T0 + 35 * MINUTE;
    // No run going: the oldest is created, the others wait for it.
    let plan = planTick(r, ctx(at));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0]);
    expect(plan.skipped).toBe(0);
    expect(plan.record.next_time).toBe(T0 + 10 * MINUTE);
    r = { ...plan.record, last_run: { task_id: 't_0', scheduled_time: iso(T0) } };
    // Still running: nothing (the waiting times are not skipped as overlaps).
    at += MINUTE;
    plan = planTick(r, ctx(at, { lastRun: 'active' }));
    expect(plan.runs).toEqual([]);
    expect(plan.changed).toBe(false);
    const created: number[] = [T0];
    for (let i = 0; i < 3; i += 1) {
      at += MINUTE;
      plan = planTick(r, ctx(at, { lastRun: 'finished' }));
      expect(plan.runs).toHaveLength(1);
      created.push(...plan.runs.map((x) => x.scheduledTime));
      r = plan.record;
    }
    expect(created).toEqual([T0, T0 + 10 * MINUTE, T0 + 20 * MINUTE, T0 + 30 * MINUTE]);
    expect(r.missed).toBe(0);
    expect(r.recent.some((e) => e.outcome === 'skipped_overlap')).toBe(false);
    expect(r.next_time).toBe(T0 + 40 * MINUTE);
  });

  it('catch_up beyond maxRuns continues at the next tick', () => {
    const s = spec({ every_ms: MINUTE, misfire: 'catch_up', overlap: 'allow' });
    let plan = planTick(record(s, T0), ctx(T0 + 30 * MINUTE, { maxRuns: 10 }));
    expect(plan.runs.map((x) => x.scheduledTime)).toEqual(Array.from({ length: 10 }, (_, i) => T0 + i * MINUTE));
    plan = planTick(plan.record, ctx(T0 + 31 * MINUTE, { maxRuns: 10 }));
    expect(plan.runs[0]?.scheduledTime).toBe(T0 + 10 * MINUTE);
    expect(plan.record.missed).toBe(0);
  });

  describe('a year of every-minute times missed stays bounded', () => {
    const s = (o: Partial<ScheduleSpec>) => spec({ every_ms: MINUTE, ...o });
    const start = T0 - 365 * DAY;
    const cutoff = T0 - 150 * SECOND;

    it('skip: no past time runs; the next time is in the future', () => {
      const plan = planTick(record(s({ misfire: 'skip', overlap: 'allow' }), start), ctx(T0));
      // Only the times within the grace and the horizon: T0 - 2 min … T0 + 1 min.
      expect(plan.runs.map((x) => x.scheduledTime)).toEqual([-2, -1, 0, 1].map((k) => T0 + k * MINUTE));
      expect(plan.record.next_time).toBeGreaterThanOrEqual(cutoff);
      expect(plan.record.missed).toBeGreaterThanOrEqual(100_000);
    });

    it('run_once: one run, for the latest missed time', () => {
      const plan = planTick(record(s({ misfire: 'run_once', overlap: 'forbid' }), start), ctx(T0));
      // The latest time before the cutoff (T0 - 2.5 min).
      expect(plan.runs.map((x) => x.scheduledTime)).toEqual([T0 - 3 * MINUTE]);
      expect(plan.record.missed).toBeGreaterThanOrEqual(100_000);
      expect(plan.record.next_time).toBeGreaterThanOrEqual(cutoff);
    });

    it('catch_up: at most maxRuns, all within the window, oldest first', () => {
      const plan = planTick(record(s({ misfire: 'catch_up', overlap: 'allow' }), start), ctx(T0, { maxRuns: 60 }));
      expect(plan.runs.length).toBeLessThanOrEqual(60);
      expect(plan.runs.length).toBeGreaterThan(0);
      const times = plan.runs.map((x) => x.scheduledTime);
      expect(times[0]).toBe(T0 - HOUR);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      for (const t of times) expect(t).toBeGreaterThanOrEqual(T0 - HOUR);
    });
  });
});

describe('fireAt', () => {
  it('adds the fixed offset of the name', () => {
    const r = record(spec({ jitter_ms: HOUR }), T0, { name: 'hourly' });
    expect(fireAt(r, T0)).toBe(T0 + jitterOffsetMs('hourly', HOUR));
    expect(fireAt(record(spec(), T0), T0)).toBe(T0);
  });
});
