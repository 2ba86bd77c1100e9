/**
 * Kaj with schedules over in-memory fakes, for the unit tests of the schedule service and the
 * ticker: the test task types, a fake clock, and the helpers both read runs with.
 *
 * @module
 */
import type { ScheduleRecord } from '../../shared/schedule/model.js';
import type { SchedulerSettings } from '../../shared/schedule/settings.js';
import { runTaskId } from '../../shared/schedule/tick.js';
import type { TaskRecord } from '../../shared/task/model.js';
import { FakeClock, sequenceRandom } from '../../testing/doubles.js';
import { unitKaj } from '../../testing/fixtures.js';
import { MemoryScheduleStore } from '../../testing/memory-schedule-store.js';
import { TaskProbe, testRegistry } from './test-tasks.js';

/** Kaj at `start` with a schedules store, its schedule service and ticker, and helpers on its runs. */
export function scheduleKaj(scheduling: Partial<SchedulerSettings>, start: number) {
  const clock = new FakeClock(start);
  const schedules = new MemoryScheduleStore();
  const u = unitKaj(testRegistry(new TaskProbe()), sequenceRandom([0.5]), clock, { schedules, scheduling });
  const service = u.kaj.schedules!;
  const ticker = u.kaj.ticker!;
  const stored = (name: string): ScheduleRecord => {
    const r = schedules.items.get(name);
    if (r === undefined) throw new Error(`no schedule ${name}`);
    return r;
  };
  /** Tasks of runs of `name`, by scheduled time. */
  const runs = (name: string): TaskRecord[] =>
    [...u.store.items.values()]
      .filter((t) => t.schedule === name)
      .sort((a, b) => (a.scheduled_time ?? '').localeCompare(b.scheduled_time ?? ''));
  const runTimes = (name: string) => runs(name).map((t) => t.scheduled_time);
  const taskOf = (name: string, time: number): TaskRecord | undefined =>
    u.store.items.get(runTaskId(stored(name).owner, name, time));
  /** Ends a run's task as if its worker had finished it. */
  const finish = (taskId: string): void => {
    const t = u.store.items.get(taskId);
    if (t === undefined) throw new Error(`no task ${taskId}`);
    t.status = 'succeeded';
  };
  return { ...u, schedules, service, ticker, stored, runs, runTimes, taskOf, finish };
}
