import { describe, expect, it } from 'vitest';
import type { MisfirePolicy, OverlapPolicy } from '../../../shared/schedule/model.js';
import type { SchedulerSettings } from '../../../shared/schedule/settings.js';
import { runKeyOf, runTaskId, type TickReport } from '../../../shared/schedule/tick.js';
import { jitterOffsetMs } from '../../../shared/schedule/timing.js';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { OWNER } from '../../../testing/fixtures.js';
import { scheduleKaj } from '../../support/schedule-kaj.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const GRACE = 150 * SECOND;
const iso = (t: number) => new Date(t).toISOString();

const setup = (scheduling: Partial<SchedulerSettings> = {}, start = T0) => scheduleKaj(scheduling, start);

const sum = (reports: TickReport[], k: keyof TickReport) => reports.reduce((n, r) => n + r[k], 0);

describe('ScheduleTicker', () => {
  it('works earliest fire first across the due shards, and leaves the latest to the next tick when its budget runs out', async () => {
    const s = setup({ tickConcurrency: 1, allowSecondsField: true, minIntervalSeconds: 1 }, T0 + 30 * SECOND);
    // Names in several shards, each due at its own second within the coming minute.
    const names = Array.from({ length: 28 }, (_, i) => `herd-${i}`);
    for (const [i, name] of names.entries()) {
      await s.service.put(
        name,
        { cron: `${59 - i} 0 * * * *`, type: 'echo', payload: { value: i }, overlap: 'allow' },
        OWNER,
      );
    }
    // Due in this tick (seconds 32…59 of minute 0), earliest first.
    const byFire = names
      .filter((n) => s.stored(n).due_at! <= T0 + 90 * SECOND)
      .sort((a, b) => s.stored(a).due_at! - s.stored(b).due_at!);
    expect(byFire).toHaveLength(28);
    const order: string[] = [];
    const get = s.schedules.get.bind(s.schedules);
    s.schedules.get = async (name, options) => {
      order.push(name);
      // Each schedule takes a second of the tick's time.
      s.clock.advance(SECOND);
      return get(name, options);
    };
    const report = await s.ticker.tick(5 * SECOND);
    expect(order).toEqual(byFire.slice(0, order.length));
    expect(order.length).toBeLessThan(byFire.length);
    expect(report.deferred).toBe(byFire.length - order.length);
    expect(report.deferred).toBeGreaterThan(0);
  });

  it('a schedule fires on time: the task of its run, with the derived id, at the time plus the jitter', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('jittered', { every: '10m', jitter: '1m', type: 'echo', payload: { value: 7 } }, OWNER);
    const offset = jitterOffsetMs('jittered', MINUTE);
    expect(offset).toBeGreaterThan(0);
    const time = T0 + 10 * MINUTE;

    // Too early: the fire moment is beyond the next tick.
    let report = await s.ticker.tick();
    expect(report.created).toBe(0);
    expect(s.runs('jittered')).toEqual([]);

    // The last tick before the fire moment hands it over.
    s.clock.set(time + offset - 30 * SECOND);
    const before = s.stored('jittered');
    report = await s.ticker.tick();
    expect(report).toMatchObject({ due: 1, created: 1, replayed: 0, skipped: 0, conflicts: 0, failures: 0 });
    const taskId = runTaskId(before.owner, 'jittered', time);
    expect(runKeyOf('jittered', time)).toBe(`jittered@${iso(time)}`);
    const task = s.store.items.get(taskId);
    expect(task).toMatchObject({
      task_id: taskId,
      owner: OWNER.owner,
      type: 'echo',
      payload: { value: 7 },
      status: 'queued',
      schedule: 'jittered',
      scheduled_time: iso(time),
      run_at: iso(time + offset),
      idempotency_key: `jittered@${iso(time)}`,
    });
    expect(s.runs('jittered')).toHaveLength(1);

    const after = s.stored('jittered');
    expect(after.version).toBe(before.version + 1);
    expect(after.next_time).toBe(time + 10 * MINUTE);
    expect(after.due_at).toBe(time + 10 * MINUTE + offset);
    expect(after.fired).toBe(1);
    expect(after.last_run).toEqual({ task_id: taskId, scheduled_time: iso(time) });
    expect(after.recent).toEqual([
      {
        scheduled_time: iso(time),
        outcome: 'created',
        kind: 'scheduled',
        task_id: taskId,
        at: iso(time + offset - 30 * SECOND),
      },
    ]);

    // A tick with nothing due writes nothing.
    const writes = s.schedules.writes;
    s.clock.advance(MINUTE);
    report = await s.ticker.tick();
    expect(report.due).toBe(0);
    expect(s.schedules.writes).toBe(writes);
  });

  it('a run whose start is due now starts now (run_at is never in the past)', async () => {
    const s = setup();
    await s.service.put('now', { every: '10m', type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.advance(40 * SECOND);
    await s.ticker.tick();
    expect(s.taskOf('now', T0)?.run_at).toBe(iso(T0 + 40 * SECOND));
  });

  it('8 concurrent ticks at the same time: one task per scheduled time, the schedule advanced once', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('busy', { every: '10m', overlap: 'allow', type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    const version = s.stored('busy').version;
    const writes = s.schedules.writes;
    const reports = await Promise.all(Array.from({ length: 8 }, () => s.ticker.tick()));
    expect(s.runs('busy').map((t) => t.scheduled_time)).toEqual([iso(T0 + 10 * MINUTE)]);
    expect(sum(reports, 'created')).toBe(1);
    expect(sum(reports, 'failures')).toBe(0);
    // Every tick that planned the run and lost the write found the task created (a replay).
    expect(sum(reports, 'conflicts')).toBeGreaterThan(0);
    expect(sum(reports, 'replayed')).toBe(sum(reports, 'conflicts'));
    expect(s.schedules.writes).toBe(writes + 1);
    const after = s.stored('busy');
    expect(after.version).toBe(version + 1);
    expect(after.next_time).toBe(T0 + 20 * MINUTE);
    expect(after.fired).toBe(1);
    expect(after.recent).toHaveLength(1);
  });

  it('a tick that created its runs but died before writing the schedule: the next tick makes no second task', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('fragile', { every: '10m', type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    const version = s.stored('fragile').version;
    s.schedules.failNext.put = new StoreUnavailableError('DynamoDB is down');
    const first = await s.ticker.tick();
    expect(first).toMatchObject({ created: 1, failures: 1 });
    expect(s.stored('fragile').version).toBe(version);
    expect(s.runs('fragile')).toHaveLength(1);

    s.clock.advance(MINUTE);
    const second = await s.ticker.tick();
    expect(second).toMatchObject({ created: 0, replayed: 1, failures: 0 });
    expect(s.runs('fragile')).toHaveLength(1);
    const after = s.stored('fragile');
    expect(after.version).toBe(version + 1);
    expect(after.next_time).toBe(T0 + 20 * MINUTE);
    expect(after.last_run?.task_id).toBe(s.runs('fragile')[0]?.task_id);
  });

  it('a failing schedule does not stop the others', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('a', { every: '10m', type: 'echo', payload: { value: 1 } }, OWNER);
    await s.service.put('b', { every: '10m', type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    s.schedules.failNext.get = new StoreUnavailableError('throttled');
    const report = await s.ticker.tick();
    expect(report).toMatchObject({ due: 2, failures: 1, created: 1 });
    expect(s.runs('a').length + s.runs('b').length).toBe(1);
    expect(s.logger.entries.some((e) => e.level === 'warn')).toBe(true);
  });

  it('schedules not reached within the budget are deferred', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('a', { every: '10m', type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    const report = await s.ticker.tick(-1);
    expect(report).toMatchObject({ due: 1, deferred: 1, created: 0 });
    expect(s.runs('a')).toEqual([]);
  });

  it('a run whose payload no longer fits the type is recorded invalid, and the schedule advances', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('broken', { every: '10m', type: 'flaky', payload: { fail_times: 0 } }, OWNER);
    // The type's schema changed since (simulated: the stored payload no longer fits it).
    s.stored('broken').spec = { ...s.stored('broken').spec, task: { type: 'flaky', payload: {}, priority: 'normal' } };
    s.clock.set(T0 + 10 * MINUTE);
    const report = await s.ticker.tick();
    expect(report).toMatchObject({ created: 0, failures: 0 });
    expect(s.runs('broken')).toEqual([]);
    const after = s.stored('broken');
    expect(after.next_time).toBe(T0 + 20 * MINUTE);
    expect(after.last_run).toBeUndefined();
    expect(after.recent).toEqual([
      expect.objectContaining({ scheduled_time: iso(T0 + 10 * MINUTE), outcome: 'invalid', kind: 'scheduled' }),
    ]);
    expect(after.recent[0]?.reason).toMatch(/payload/);
    expect(after.recent[0]?.task_id).toBeUndefined();
    // Never retried: the next time is tried on its own.
    s.clock.set(T0 + 20 * MINUTE);
    await s.ticker.tick();
    expect(s.stored('broken').recent.map((e) => e.outcome)).toEqual(['invalid', 'invalid']);
  });

  it('a run of a task type that is gone is recorded invalid', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('orphan', { every: '10m', type: 'echo', payload: { value: 1 } }, OWNER);
    s.stored('orphan').spec = { ...s.stored('orphan').spec, task: { type: 'gone', payload: {}, priority: 'normal' } };
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    expect(s.stored('orphan').recent).toEqual([expect.objectContaining({ outcome: 'invalid' })]);
    expect(s.stored('orphan').next_time).toBe(T0 + 20 * MINUTE);
  });

  it('replace: the run still going is cancelled and the new one created', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('rep', { every: '10m', overlap: 'replace', type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    const first = s.taskOf('rep', T0 + 10 * MINUTE)!;
    expect(first.status).toBe('queued');
    s.clock.set(T0 + 20 * MINUTE);
    await s.ticker.tick();
    expect(s.store.items.get(first.task_id)?.status).toBe('cancelled');
    expect(s.taskOf('rep', T0 + 20 * MINUTE)?.status).toBe('queued');
    expect(s.stored('rep').last_run?.scheduled_time).toBe(iso(T0 + 20 * MINUTE));
  });

  it('forbid: a time due while the run is going is skipped', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('fb', { every: '10m', type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    s.clock.set(T0 + 20 * MINUTE);
    const report = await s.ticker.tick();
    expect(report).toMatchObject({ created: 0, skipped: 1 });
    expect(s.runs('fb')).toHaveLength(1);
    expect(s.stored('fb').recent.at(-1)).toMatchObject({
      outcome: 'skipped_overlap',
      scheduled_time: iso(T0 + 20 * MINUTE),
    });
  });

  it('buffer_one: the buffered time runs on the tick after the run finished; later ones collapse', async () => {
    const s = setup({}, T0 + MINUTE);
    await s.service.put('buf', { every: '10m', overlap: 'buffer_one', type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    const first = s.taskOf('buf', T0 + 10 * MINUTE)!;
    s.clock.set(T0 + 20 * MINUTE);
    await s.ticker.tick(); // buffered
    expect(s.stored('buf').buffered).toBe(T0 + 20 * MINUTE);
    const writes = s.schedules.writes;
    s.clock.advance(MINUTE);
    await s.ticker.tick(); // still going: nothing to write
    expect(s.schedules.writes).toBe(writes);
    s.clock.set(T0 + 30 * MINUTE);
    const collapsed = await s.ticker.tick();
    expect(collapsed.skipped).toBe(1);
    expect(s.runs('buf')).toHaveLength(1);

    s.finish(first.task_id);
    s.clock.advance(MINUTE);
    const report = await s.ticker.tick();
    expect(report.created).toBe(1);
    expect(s.runs('buf').map((t) => t.scheduled_time)).toEqual([iso(T0 + 10 * MINUTE), iso(T0 + 20 * MINUTE)]);
    const after = s.stored('buf');
    expect(after.buffered).toBeUndefined();
    expect(after.next_time).toBe(T0 + 40 * MINUTE);
    expect(after.last_run?.scheduled_time).toBe(iso(T0 + 20 * MINUTE));
  });

  it('catch_up with forbid: each caught-up time waits for the run before it to finish', async () => {
    const s = setup();
    await s.service.put('cu', { every: '5m', misfire: 'catch_up', type: 'echo', payload: { value: 1 } }, OWNER);
    await s.ticker.tick();
    s.finish(s.taskOf('cu', T0)!.task_id);
    s.clock.advance(3 * 5 * MINUTE + GRACE + 1);
    const seen: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      await s.ticker.tick();
      const last = s.stored('cu').last_run!;
      if (!seen.includes(last.scheduled_time)) seen.push(last.scheduled_time);
      // Every other tick the run is still going: nothing is created, nothing skipped.
      if (i % 2 === 1) s.finish(last.task_id);
      s.clock.advance(10 * SECOND);
    }
    expect(seen).toEqual([5, 10, 15].map((m) => iso(T0 + m * MINUTE)));
    expect(s.stored('cu').recent.some((e) => e.outcome !== 'created')).toBe(false);
    expect(s.stored('cu').next_time).toBe(T0 + 20 * MINUTE);
  });

  describe('a runtime stopped across three fire times (3 intervals + grace, one tick)', () => {
    const cases: { misfire: MisfirePolicy; overlap: OverlapPolicy; created: number[]; missed: number; next: number }[] =
      [
        { misfire: 'skip', overlap: 'forbid', created: [], missed: 3, next: 20 },
        { misfire: 'run_once', overlap: 'forbid', created: [15], missed: 2, next: 20 },
        { misfire: 'catch_up', overlap: 'allow', created: [5, 10, 15], missed: 0, next: 20 },
        { misfire: 'catch_up', overlap: 'forbid', created: [5], missed: 0, next: 10 },
      ];
    it.each(cases)('$misfire / $overlap', async ({ misfire, overlap, created, missed, next }) => {
      const s = setup();
      await s.service.put('down', { every: '5m', misfire, overlap, type: 'echo', payload: { value: 1 } }, OWNER);
      await s.ticker.tick();
      const first = s.taskOf('down', T0)!;
      expect(first).toBeDefined();
      s.finish(first.task_id);
      const writes = s.schedules.writes;

      s.clock.advance(3 * 5 * MINUTE + GRACE + 1);
      const report = await s.ticker.tick();
      const times = s
        .runs('down')
        .map((t) => Date.parse(t.scheduled_time ?? ''))
        .filter((t) => t > T0);
      expect(times).toEqual(created.map((m) => T0 + m * MINUTE));
      expect(report.created).toBe(created.length);
      const after = s.stored('down');
      expect(after.missed).toBe(missed);
      expect(after.next_time).toBe(T0 + next * MINUTE);
      expect(s.schedules.writes).toBe(writes + 1);
      if (missed > 1) {
        expect(after.recent.filter((e) => e.outcome === 'skipped_misfire')).toEqual([
          expect.objectContaining({ count: missed }),
        ]);
      }
    });
  });
});
