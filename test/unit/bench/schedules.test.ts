import { describe, expect, it } from 'vitest';
import { DynamoLedger, type TableModel } from '../../../bench/lib/dynamo-accounting.js';
import { AccountingScheduleStore } from '../../../bench/lib/schedule-accounting.js';
import {
  drainTicks,
  fireSpread,
  gbSeconds,
  ioTimeMs,
  lambdaDuration,
  storedBytes,
  ticksPerMonth,
  vcpuShare,
} from '../../../bench/lib/schedule-model.js';
import { median } from '../../../bench/lib/report.js';
import type { ScheduleRecord } from '../../../shared/schedule/model.js';
import { ScheduleVersionConflictError } from '../../../shared/schedule/store-errors.js';
import { MemoryScheduleStore } from '../../../testing/memory-schedule-store.js';

const TABLE: TableModel = {
  partitionKey: 'name',
  indexes: [{ name: 'due', partitionKey: 'due_pk', sortKey: 'due_at', projection: { type: 'KEYS_ONLY' } }],
};

function record(name: string, version: number, due?: { pk: string; at: number }): ScheduleRecord {
  return {
    name,
    owner: 'o',
    source: 'api',
    spec: {
      cron: '0 0 * * *',
      timezone: 'UTC',
      jitter_ms: 0,
      overlap: 'allow',
      misfire: 'skip',
      catchup_window_ms: 3_600_000,
      task: { type: 't', payload: {}, priority: 'normal' },
    },
    spec_hash: 'h',
    uid: 'u',
    state: 'active',
    fired: 0,
    missed: 0,
    recent: [],
    version,
    created_at: '2026-12-01T00:00:00.000Z',
    updated_at: '2026-12-01T00:00:00.000Z',
    ...(due === undefined ? {} : { due_pk: due.pk, due_at: due.at }),
  };
}

describe('Function: median', () => {
  it('takes the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(() => median([])).toThrow(RangeError);
  });
});

describe('Function: fireSpread', () => {
  it('counts fires per second of the window, its busiest second and the ratio to the mean', () => {
    const start = 1_000_000;
    const s = fireSpread([start, start + 999, start + 1000, start + 3500, start + 4000], start, 4);
    expect(s.perSecond).toEqual([2, 1, 0, 1]);
    expect(s.busiest).toBe(2);
    expect(s.busiestSecond).toBe(0);
    expect(s.mean).toBe(1);
    expect(s.ratio).toBe(2);
    expect(s.emptySeconds).toBe(1);
    expect(s.outside).toBe(1);
  });

  it('refuses a window of no whole second', () => {
    expect(() => fireSpread([], 0, 0)).toThrow(RangeError);
  });
});

describe('Lambda arithmetic', () => {
  it('gives a function memory ÷ 1,769 MB of a vCPU, at most one', () => {
    expect(vcpuShare(1769)).toBe(1);
    expect(vcpuShare(3538)).toBe(1);
    expect(vcpuShare(128)).toBeCloseTo(0.0724, 4);
  });

  it('waits on the busiest shard’s pages, then on the work spread over the workers', () => {
    const io = { queryPagesOnBusiestShard: 2, dynamoRequests: 30, sqsRequests: 10, due: 10, concurrency: 32 };
    // 2 pages × 5 + (30 × 5 + 10 × 10) ÷ 10 workers
    expect(ioTimeMs(io, { dynamoMs: 5, sqsMs: 10 })).toBe(35);
    expect(ioTimeMs({ ...io, due: 0, dynamoRequests: 0, sqsRequests: 0 }, { dynamoMs: 5, sqsMs: 10 })).toBe(10);
    // More due than workers: the concurrency bounds them.
    expect(ioTimeMs({ ...io, due: 320, dynamoRequests: 320, sqsRequests: 0 }, { dynamoMs: 1, sqsMs: 0 })).toBe(12);
  });

  it('stretches the CPU time to the share and adds the waits (upper) or takes the larger (lower)', () => {
    const e = lambdaDuration(100, 50, 1769 / 2);
    expect(e.cpuMs).toBeCloseTo(200);
    expect(e.totalMs).toBeCloseTo(250);
    expect(e.lowerMs).toBeCloseTo(200);
  });

  it('bills GB-s by the ms rounded up, memory in GiB', () => {
    expect(gbSeconds(999.2, 1024)).toBe(1);
    expect(gbSeconds(10, 128)).toBeCloseTo(0.00125);
  });

  it('counts the ticks of a 30-day month', () => {
    expect(ticksPerMonth(60)).toBe(43_200);
  });
});

describe('Function: drainTicks', () => {
  const base = {
    overheadMs: 0,
    budgetMs: 45_000,
    tickMs: 60_000,
    leadMs: 30_000,
    graceMs: 150_000,
  };

  it('hands everything over in the first tick when it fits', () => {
    const d = drainTicks({ ...base, n: 100, perFireMs: 10 });
    expect(d.perTick).toEqual([100]);
    expect(d.capacity).toBe(4500);
    expect(d.missed).toBe(0);
    expect(d.lastLateMs).toBe(-30_000 + 1000);
  });

  it('spreads a herd over the ticks, and leaves what a tick past the grace would see as missed', () => {
    // 1,000 a tick; ticks start at -30, 30, 90, 150 s (150 is not past the grace), then 210 s is.
    const d = drainTicks({ ...base, n: 10_000, perFireMs: 45 });
    expect(d.capacity).toBe(1000);
    expect(d.perTick).toEqual([1000, 1000, 1000, 1000]);
    expect(d.handed).toBe(4000);
    expect(d.missed).toBe(6000);
    expect(d.lastLateMs).toBe(150_000 + 45_000);
  });
});

describe('Function: storedBytes', () => {
  it('adds 100 bytes of overhead to the item and to each index entry', () => {
    expect(storedBytes(500, [40])).toBe(740);
    expect(storedBytes(500, [])).toBe(600);
  });
});

describe('Class: AccountingScheduleStore', () => {
  it('bills reads by consistency, writes by size with the index move, and Queries by the keys returned', async () => {
    const ledger = new DynamoLedger();
    const store = new AccountingScheduleStore(new MemoryScheduleStore(), TABLE, ledger, 'due');
    await store.put(record('a', 1, { pk: 'due#0', at: 10 }), 'absent');
    await store.put(record('a', 2, { pk: 'due#0', at: 20 }), 1);
    await store.get('a');
    await store.get('a', { consistent: false });
    await store.listDue('due#0', 100, 10);
    await store.listDue('due#3', 100, 10);
    await expect(store.put(record('a', 9), 1)).rejects.toBeInstanceOf(ScheduleVersionConflictError);
    const ops = ledger.ops.map((o) => ({
      api: o.api,
      wru: o.tableWru,
      index: o.index.map((w) => `${w.change} ${w.units}`).join(),
      rru: o.rru,
      failed: o.conditionFailed,
    }));
    expect(ops).toEqual([
      { api: 'PutItem', wru: 1, index: 'put 1', rru: 0, failed: false },
      { api: 'PutItem', wru: 1, index: 'move 2', rru: 0, failed: false },
      { api: 'GetItem', wru: 0, index: '', rru: 1, failed: false },
      { api: 'GetItem', wru: 0, index: '', rru: 0.5, failed: false },
      { api: 'Query', wru: 0, index: '', rru: 0.5, failed: false },
      { api: 'Query', wru: 0, index: '', rru: 0.5, failed: false },
      { api: 'PutItem', wru: 1, index: '', rru: 0, failed: true },
    ]);
    expect(ledger.ops[4]?.items).toBe(1);
    expect(store.unbilled).toEqual({ DeleteItem: 0, Scan: 0 });
    await store.list(10);
    expect(store.unbilled.Scan).toBe(1);
  });
});
