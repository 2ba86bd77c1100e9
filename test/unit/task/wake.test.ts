/**
 * `RunWakes.childFinished`: a child's end reaches its waiting run however the run stands — never
 * left for the run's check timer (15 minutes) while the run could have gone on.
 */
import { describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../../shared/task/model.js';
import { deadTaskRecord, memoryLifecycle } from '../../../testing/fixtures.js';

function setup() {
  const { clock, store, queue, lifecycle } = memoryLifecycle();
  /** A waiting run as stored. */
  const run = async (extra: Partial<TaskRecord>) => {
    const r = deadTaskRecord(
      't_run',
      clock.now(),
      { name: 'E', message: 'x', retryable: false },
      {
        status: 'waiting',
        finished_at: undefined,
        last_error: undefined,
        dispatch_id: 'd_1',
        ...extra,
      },
    );
    await store.create(r);
    return r;
  };
  return { clock, store, queue, wakes: lifecycle.wakes, run };
}

describe('RunWakes.childFinished', () => {
  it('counts down while others are open; the last one wakes the run (its next message sent now)', async () => {
    const s = setup();
    await s.run({ children_open: 2, run_at: new Date(s.clock.now() + 900_000).toISOString() });
    expect(await s.wakes.childFinished('t_run')).toBe('counted');
    expect((await s.store.get('t_run'))?.children_open).toBe(1);
    expect(await s.wakes.childFinished('t_run')).toBe('woken');
    const woken = await s.store.get('t_run');
    expect(woken?.children_open).toBeUndefined();
    expect(Date.parse(woken?.run_at ?? '')).toBe(s.clock.now());
    expect(s.queue.sent.at(-1)?.message.task_id).toBe('t_run');
  });

  it('a run woken and due (perhaps being run under a lazy claim, so still waiting) gets a wake request', async () => {
    const s = setup();
    await s.run({ run_at: new Date(s.clock.now()).toISOString() });
    expect(await s.wakes.childFinished('t_run')).toBe('requested');
    expect((await s.store.get('t_run'))?.wake_requested).toBe(true);
  });

  it('a run waiting for a time to come and for no child is left alone: its code reads the end then', async () => {
    const s = setup();
    await s.run({ run_at: new Date(s.clock.now() + 60_000).toISOString() });
    expect(await s.wakes.childFinished('t_run')).toBe('ignored');
    expect((await s.store.get('t_run'))?.wake_requested).toBeUndefined();
  });

  it('a running run gets a request; a finished one nothing', async () => {
    const s = setup();
    await s.run({ status: 'running', run_at: new Date(s.clock.now()).toISOString() });
    expect(await s.wakes.childFinished('t_run')).toBe('requested');
    const ended = setup();
    await ended.run({ status: 'succeeded' });
    expect(await ended.wakes.childFinished('t_run')).toBe('finished');
  });
});
