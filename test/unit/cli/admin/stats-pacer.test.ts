import { describe, expect, it } from 'vitest';
import { Pacer } from '../../../../cli/admin/pacer.js';
import { collectStats, StatusTallier } from '../../../../cli/admin/stats.js';
import { FakeClock } from '../../../support/doubles.js';
import { clockSleep } from './fakes.js';

describe('Pacer', () => {
  it('spaces takes 1/rate apart, shared by concurrent callers, without bursts', async () => {
    const clock = new FakeClock(0);
    const sleeps: number[] = [];
    const pacer = new Pacer(4, clock, async (ms) => void sleeps.push(ms));
    await Promise.all([pacer.take(), pacer.take(), pacer.take()]);
    expect(sleeps).toEqual([250, 500]);
  });
  it('does not wait when no rate is given', async () => {
    const clock = new FakeClock(0);
    const sleeps: number[] = [];
    const pacer = new Pacer(undefined, clock, clockSleep(clock, sleeps));
    for (let i = 0; i < 5; i += 1) await pacer.take();
    expect(sleeps).toEqual([]);
  });
  it('rejects a rate ≤ 0', () => {
    expect(() => new Pacer(0, new FakeClock(), async () => {})).toThrow(RangeError);
  });
});

describe('stats', () => {
  it('tallies statuses and finds the task waiting longest past its run time', () => {
    const now = Date.parse('2026-01-01T01:00:00Z');
    const tallier = new StatusTallier(now);
    tallier.add([
      { task_id: 'a', status: 'queued', run_at: '2026-01-01T00:50:00Z' },
      { task_id: 'b', status: 'retrying', run_at: '2026-01-01T00:40:00Z' },
      { task_id: 'c', status: 'queued', run_at: '2026-01-01T02:00:00Z' }, // not due yet
    ]);
    tallier.add([
      { task_id: 'd', status: 'failed', discarded_at: 'x' },
      { task_id: 'e', status: 'succeeded' },
    ]);
    const t = tallier.result();
    expect(t.counts).toEqual({ queued: 2, running: 0, retrying: 1, succeeded: 1, failed: 1, cancelled: 0 });
    expect(t).toMatchObject({ total: 5, discarded: 1, oldestWaiting: { task_id: 'b', age_seconds: 1200 } });
  });

  it('collects depths per priority and only scans when asked', async () => {
    let scans = 0;
    const snap = await collectStats(
      {
        inspector: { depth: async (kind, p) => ({ visible: kind === 'dlq' ? 1 : p.length, inFlight: 2, delayed: 3 }) },
        statuses: {
          async *scanStatuses() {
            scans += 1;
            yield [{ task_id: 'x', status: 'running' as const }];
          },
        },
        clock: new FakeClock(0),
      },
      { byStatus: false },
    );
    expect(scans).toBe(0);
    expect(snap.queues.map((q) => [q.priority, q.queue.visible, q.queue.oldestAgeSeconds, q.dlq.visible])).toEqual([
      ['high', 4, null, 1],
      ['normal', 6, null, 1],
      ['low', 3, null, 1],
    ]);
    expect(snap.byStatus).toBeUndefined();
  });
});
