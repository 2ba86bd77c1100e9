import { describe, expect, it } from 'vitest';
import { Pacer } from '../../../../cli/admin/pacer.js';
import { collectStats, StatusTallier } from '../../../../cli/admin/stats.js';
import { resolveLimits } from '../../../../shared/limit/spec.js';
import type { LimitItem } from '../../../../shared/limit/limit-store.js';
import { FakeClock } from '../../../../testing/doubles.js';
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
    expect(t.counts).toEqual({ queued: 2, running: 0, retrying: 1, waiting: 0, succeeded: 1, failed: 1, cancelled: 0 });
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

  it("adds each lane's queues, and each declared limit's use from the limits table", async () => {
    const now = 1_000_000;
    const asked: string[] = [];
    const snap = await collectStats(
      {
        inspector: {
          depth: async (kind, p, lane) => {
            asked.push(`${kind}:${p}:${lane ?? '-'}`);
            return { visible: lane === 'cpu' ? 7 : 0, inFlight: 0, delayed: 0 };
          },
          lanes: () => ['cpu'],
        },
        clock: new FakeClock(now),
        limits: {
          specs: resolveLimits({ email: { rate: '40/s', concurrency: 2 }, db: { concurrency: 3 } }),
          store: {
            list: async (): Promise<LimitItem[]> => [
              { pk: 'c#email', holders: { a: now + 5_000, b: now - 1 } },
              { pk: 'r#email', tat: now - 100, paused_until: now + 3_000 },
              { pk: 'c#db', holders: {}, refused: 4, refused_at: now - 1_000 },
            ],
          },
        },
      },
      { byStatus: false },
    );
    expect(asked.filter((a) => a.endsWith(':cpu'))).toEqual(['queue:high:cpu', 'queue:normal:cpu', 'queue:low:cpu']);
    expect(snap.lanes?.map((l) => [l.lane, l.priority, l.queue.visible])).toEqual([
      ['cpu', 'high', 7],
      ['cpu', 'normal', 7],
      ['cpu', 'low', 7],
    ]);
    const row = (limit: string, kind: string) => snap.limits?.find((r) => r.limit === limit && r.kind === kind);
    expect(row('email', 'concurrency')).toMatchObject({ holders: 1, expired: 1, capacity: 2 });
    expect(row('email', 'rate')).toMatchObject({ pausedUntil: now + 3_000 });
    expect(row('db', 'concurrency')).toMatchObject({ holders: 0, tokensAvailable: 3, refusedRecently: true });
  });

  it('shows no lanes or limits section when the deployment has none', async () => {
    const snap = await collectStats(
      {
        inspector: { depth: async () => ({ visible: 0, inFlight: 0, delayed: 0 }), lanes: () => [] },
        clock: new FakeClock(0),
        limits: { specs: resolveLimits({}), store: { list: async () => [] } },
      },
      { byStatus: false },
    );
    expect(snap.lanes).toBeUndefined();
    expect(snap.limits).toBeUndefined();
  });
});
