/** The console backend's listing reads: bounded counts, and filters applied page after page. */
import { describe, expect, it } from 'vitest';
import {
  countStatus,
  FILTER_READ_BUDGET,
  FILTER_REQUESTS,
  listTasks,
  STATUS_COUNT_BOUND,
} from '../../../cli/console/backend.js';
import type { ListedTask } from '../../../shared/task/task-store.js';
import type { ListingQuery, ListingResult, TaskListing } from '../../../shared/task/listing.js';

/** `n` failed tasks, newest first, one a minute back from `top`; priorities cycle high, normal, low. */
function fakeListing(
  n: number,
  priorityOf: (i: number) => ListedTask['priority'] = (i) =>
    (['high', 'normal', 'low'] as const)[i % 3] as ListedTask['priority'],
  top = Date.parse('2026-12-02T12:00:00Z'),
) {
  const rows: ListedTask[] = Array.from({ length: n }, (_, i) => {
    const at = new Date(top - i * 60_000).toISOString();
    return {
      task_id: `t_${i}`,
      type: 'send_email',
      status: 'failed',
      priority: priorityOf(i),
      attempts: 1,
      max_attempts: 3,
      created_at: at,
      updated_at: at,
      run_at: at,
      list_sk: `${at}#t_${i}`,
    };
  });
  const calls: ListingQuery[] = [];
  const listing = {
    list: async (q: ListingQuery): Promise<ListingResult> => {
      calls.push(q);
      const from = q.cursor === undefined ? 0 : Number(q.cursor);
      const items = rows.slice(from, from + q.limit);
      return from + q.limit < rows.length ? { items, cursor: String(from + q.limit) } : { items };
    },
  };
  return { listing: listing as unknown as TaskListing, calls, rows };
}

describe('countStatus', () => {
  it('counts exactly below the bound, and stops at it ("1,000+")', async () => {
    const small = fakeListing(250);
    expect(await countStatus(small.listing, 'failed')).toEqual({ status: 'failed', count: 250, capped: false });
    const big = fakeListing(5_000);
    expect(await countStatus(big.listing, 'failed')).toEqual({
      status: 'failed',
      count: STATUS_COUNT_BOUND,
      capped: true,
    });
    expect(big.calls).toHaveLength(STATUS_COUNT_BOUND / 100);
  });
});

describe('listTasks', () => {
  it('without priority or time: one index page, as asked', async () => {
    const f = fakeListing(500);
    const page = await listTasks(f.listing, { status: 'failed', type: 'send_email', limit: 50 });
    expect(page.items).toHaveLength(50);
    expect(f.calls).toEqual([{ status: 'failed', type: 'send_email', limit: 50 }]);
  });

  it('by priority: reads on until the page is full, and its cursor continues where it stopped', async () => {
    const f = fakeListing(500);
    const page = await listTasks(f.listing, { status: 'failed', priority: 'low', limit: 20 });
    expect(page.items).toHaveLength(20);
    expect(page.items.every((t) => t.priority === 'low')).toBe(true);
    const next = await listTasks(f.listing, {
      status: 'failed',
      priority: 'low',
      limit: 20,
      cursor: page.cursor as string,
    });
    const ids = [...page.items, ...next.items].map((t) => Number(t.task_id.slice(2)));
    expect(ids).toEqual(Array.from({ length: 40 }, (_, i) => 2 + 3 * i)); // every low one, none twice, none skipped
  });

  it('by time: stops at the first row older than `since` (newest first), with no cursor', async () => {
    const f = fakeListing(500);
    const since = Date.parse('2026-12-02T12:00:00Z') - 30 * 60_000;
    const page = await listTasks(f.listing, { status: 'failed', since, limit: 100 });
    expect(page.items).toHaveLength(31);
    expect(page.cursor).toBeUndefined();
  });

  it('delayed (soonest due first, not by listed time): `since` passes rows over instead of stopping', async () => {
    // Listed times alternate old and new, as submits of different days due in one order do.
    const f = fakeListing(60);
    const rows = f.rows as { updated_at: string; list_sk: string; task_id: string }[];
    rows.forEach((r, i) => {
      const at = i % 2 === 0 ? '2026-12-01T00:00:00.000Z' : '2026-12-02T11:00:00.000Z';
      r.updated_at = at;
      r.list_sk = `${at}#${r.task_id}`;
    });
    const since = Date.parse('2026-12-02T00:00:00Z');
    const page = await listTasks(f.listing, { status: 'delayed', since, limit: 100 });
    expect(page.items.map((t) => t.task_id)).toEqual(rows.filter((_, i) => i % 2 === 1).map((r) => r.task_id));
  });

  it('a rare match: gives up within the read budget with a cursor, instead of reading the whole status', async () => {
    const f = fakeListing(10_000, (i) => (i % 700 === 5 ? 'high' : 'low'));
    const page = await listTasks(f.listing, { status: 'failed', priority: 'high', since: 0, limit: 50 });
    expect(page.items.map((t) => t.task_id)).toEqual(['t_5', 't_705']);
    const read = f.calls.reduce((n, q) => n + q.limit, 0);
    expect(read).toBeLessThanOrEqual(FILTER_READ_BUDGET + 100);
    expect(f.calls.length).toBeLessThanOrEqual(FILTER_REQUESTS);
    expect(page.cursor).toBeDefined();
  });
});
