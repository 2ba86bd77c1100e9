/**
 * Pipelines on both emulators (the embedded ones of `npm start`, and moto when installed),
 * through the HTTP API, their nodes run by a worker process (`local/worker.ts`): the example
 * `nightly_sales` end to end, and the fan-in of nodes that end at once (the store's conditional
 * writes decide it, so it runs on each). The rest of the pipeline suite, which is the same on any
 * store, runs on the embedded emulators only: `runs.test.ts`, `kill.test.ts`.
 *
 * The test pipelines and their node type `pl_probe` are in test/support/pipeline-tasks.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { testBudget } from '../../../testing/wait.js';
import { benchForSuite, nodeStates, startsByNode } from '../../support/pipeline-bench.js';
import { targets } from '../../support/targets.js';

describe.each(targets())('pipelines end to end on $name', (target) => {
  const bench = benchForSuite(target, 'pipe-e2e', { worker: {} });

  it('nightly_sales, triggered through the API: its 5 nodes succeed, the run succeeds, and every partition is of its logical date', async () => {
    const left = testBudget(60_000);
    const date = '2026-11-28';
    const listed = await bench.api('GET', '/api/v1/pipelines');
    expect((listed.body.items as { name: string }[]).map((p) => p.name)).toContain('nightly_sales');
    expect((await bench.api('GET', '/api/v1/pipelines/nightly_sales')).body).toMatchObject({
      schedule: { cron: '30 0 * * *', timezone: 'Asia/Dhaka' },
      max_active_runs: 1,
      logical_date_format: 'date',
    });
    const created = await bench.api('POST', '/api/v1/pipelines/nightly_sales/runs', { logical_date: date });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      pipeline: 'nightly_sales',
      logical_date: date,
      created: true,
      // The logical date is the start of the data interval, in Dhaka (UTC+6).
      data_interval: { start: '2026-11-27T18:30:00.000Z', end: '2026-11-28T18:30:00.000Z' },
    });
    const done = await bench.until('nightly_sales', date, ['succeeded', 'failed'], left());
    expect(done.status).toBe('succeeded');
    expect(done.run_id).toBe(created.body.run_id);
    expect(nodeStates(done)).toEqual({
      extract: 'succeeded',
      clean: 'succeeded',
      customers: 'succeeded',
      summary: 'succeeded',
      dashboard: 'succeeded',
    });
    // Each node's task wrote its own date's partition and says so.
    const tables = {
      extract: 'raw_sales',
      clean: 'sales',
      customers: 'customers',
      summary: 'summary',
      dashboard: 'dashboard',
    };
    for (const n of done.nodes) {
      const record = await bench.runtime.kaj.store.get(n.task_id ?? '');
      expect(record?.result).toMatchObject({ partition: `${tables[n.name as keyof typeof tables]}/${date}.json` });
    }
    const read = (table: string) => JSON.parse(readFileSync(join(bench.partitionsDir, table, `${date}.json`), 'utf8'));
    expect(read('raw_sales').map((r: { order: string }) => r.order.slice(0, 10))).toEqual(Array(5).fill(date));
    for (const r of read('sales')) expect(r.order.startsWith(`${date}-`)).toBe(true);
    expect(read('customers')).toEqual([{ id: 'c1' }, { id: 'c2' }]);
    const summary = read('summary');
    expect(summary).toMatchObject({ day: date, orders: read('sales').length, customers: 2 });
    expect(read('dashboard')).toEqual({ day: date, total: summary.total });
    const runs = await bench.api('GET', `/api/v1/pipelines/nightly_sales/runs?from=${date}&to=${date}`);
    expect(runs.body.items).toMatchObject([{ logical_date: date, run_id: done.run_id, status: 'succeeded' }]);
  }, 60_000);

  it("two nodes that end at once: the run goes on at once, whichever end lands while the other one's wake runs it (8 runs)", async () => {
    const left = testBudget(60_000);
    const dates = Array.from({ length: 8 }, (_, i) => `2026-07-${String(10 + i)}`);
    for (const date of dates) {
      expect((await bench.api('POST', '/api/v1/pipelines/pl_pair/runs', { logical_date: date })).status).toBe(201);
    }
    // The run woken by one node's end is run under a lazy claim (its record still `waiting`); the
    // other node's end, landing then, must still wake it (shared/task/wake.ts, childFinished). A lost
    // wake leaves the run waiting for its check timer (15 minutes): far past this test's budget.
    for (const date of dates) {
      const done = await bench.until('pl_pair', date, ['succeeded', 'failed'], left());
      expect(nodeStates(done)).toEqual({ x: 'succeeded', y: 'succeeded', z: 'succeeded' });
      expect(startsByNode(bench.nodeLog(date))).toEqual({ x: 1, y: 1, z: 1 });
    }
  }, 60_000);
});
