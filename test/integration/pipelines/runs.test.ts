/**
 * Pipeline runs on the embedded emulators, through the HTTP API, their nodes run by a worker
 * process (`local/worker.ts`): one run per date, the graph's order under random node durations,
 * a failed node cleared, and the 4xx answers naming the field.
 *
 * Only on the embedded emulators: what is tested is the graph, the run's code, the pipeline
 * service and its routes, over the same store calls on any store; `end-to-end.test.ts` runs the
 * example pipeline and the fan-in of nodes that end at once on moto too.
 *
 * The test pipelines and their node type `pl_probe` are in test/support/pipeline-tasks.ts; every
 * node logs its start and end there, so the order is read from what the handlers did.
 */
import { describe, expect, it } from 'vitest';
import { testBudget } from '../../../testing/wait.js';
import { benchForSuite, nodeStates, startsByNode } from '../../support/pipeline-bench.js';
import { diamond } from '../../support/pipeline-tasks.js';
import { targetsHalf } from '../../support/targets.js';

const DIAMOND_NODES = Object.keys(diamond.pipeline.graph);

describe.each(targetsHalf('embedded'))('pipeline runs on $name', (target) => {
  // One worker for the whole file, its node durations seeded: no test here kills it.
  const bench = benchForSuite(target, 'pipe-runs', { worker: { KAJ_PIPELINE_SEED: 'runs' } });

  it('one run per date: a second trigger and a backfill over the date (reprocess none) answer the same run, and there is one task', async () => {
    const left = testBudget(60_000);
    const date = '2026-10-01';
    const first = await bench.api('POST', '/api/v1/pipelines/pl_diamond/runs', { logical_date: date });
    const second = await bench.api('POST', '/api/v1/pipelines/pl_diamond/runs', { logical_date: date });
    expect([first.status, second.status]).toEqual([201, 200]);
    expect(second.body).toMatchObject({ run_id: first.body.run_id, created: false });
    const done = await bench.until('pl_diamond', date, ['succeeded', 'failed'], left());
    expect(done.status).toBe('succeeded');
    const backfill = await bench.api('POST', '/api/v1/pipelines/pl_diamond/backfill', {
      from: date,
      to: date,
      reprocess: 'none',
    });
    expect(backfill.status).toBe(202);
    expect(backfill.body.runs).toEqual([
      { logical_date: date, action: 'skip_exists', run_id: first.body.run_id, was: 'succeeded' },
    ]);
    const runs = (await bench.records('pl_diamond')).filter((r) => r.data_interval?.start.startsWith(date));
    expect(runs.map((r) => r.task_id)).toEqual([first.body.run_id]);
    expect((await bench.view('pl_diamond', date)).status).toBe('succeeded');
    expect(startsByNode(bench.nodeLog(date))).toEqual(Object.fromEntries(DIAMOND_NODES.map((n) => [n, 1])));
  }, 60_000);
  it('the order of the graph under random node durations: in 3 runs at once, every node starts after all its upstreams have ended', async () => {
    const left = testBudget(60_000);
    const dates = ['2026-10-02', '2026-10-03', '2026-10-04'];
    for (const date of dates) {
      expect((await bench.api('POST', '/api/v1/pipelines/pl_diamond/runs', { logical_date: date })).status).toBe(201);
    }
    for (const date of dates) {
      const done = await bench.until('pl_diamond', date, ['succeeded', 'failed'], left());
      expect(Object.values(nodeStates(done))).toEqual(Array(DIAMOND_NODES.length).fill('succeeded'));
      const log = bench.nodeLog(date);
      expect(startsByNode(log)).toEqual(Object.fromEntries(DIAMOND_NODES.map((n) => [n, 1])));
      const at = (event: 'S' | 'E', n: string) => log.find((e) => e.event === event && e.node === n)?.at ?? Number.NaN;
      const early: string[] = [];
      for (const [n, def] of Object.entries(diamond.pipeline.graph)) {
        for (const up of def.after)
          if (!(at('S', n) >= at('E', up))) early.push(`${date}: ${n} started before ${up} ended`);
      }
      expect(early).toEqual([]);
    }
  }, 60_000);
  it('a node fails: what depends on it is upstream_failed and the run failed; cleared (POST …/clear), it runs again with its downstream and the run succeeds', async () => {
    const left = testBudget(60_000);
    const date = '2026-10-10';
    const fail = bench.flag('fail', 'c', date);
    fail.raise();
    await bench.api('POST', '/api/v1/pipelines/pl_diamond/runs', { logical_date: date });
    const failed = await bench.until('pl_diamond', date, ['succeeded', 'failed'], left());
    expect(failed.status).toBe('failed');
    expect(nodeStates(failed)).toEqual({
      a: 'succeeded',
      b: 'succeeded',
      c: 'failed',
      d: 'succeeded',
      e: 'upstream_failed',
      f: 'succeeded',
      g: 'upstream_failed',
      h: 'upstream_failed',
    });
    expect(failed.error).toContain('c');
    expect(startsByNode(bench.nodeLog(date))).toEqual({ a: 1, b: 1, c: 1, d: 1, f: 1 });

    fail.lower();
    const cleared = await bench.api('POST', `/api/v1/pipelines/pl_diamond/runs/${date}/clear`, {
      nodes: ['c'],
      downstream: true,
    });
    expect(cleared.status).toBe(202);
    const done = await bench.until('pl_diamond', date, ['succeeded', 'failed'], left());
    expect(done.status).toBe('succeeded');
    expect(done.run_id).toBe(failed.run_id);
    const tries = Object.fromEntries(done.nodes.map((n) => [n.name, `${n.state}/${n.try}`]));
    expect(tries).toEqual({
      a: 'succeeded/1',
      b: 'succeeded/1',
      c: 'succeeded/2',
      d: 'succeeded/1',
      e: 'succeeded/2',
      f: 'succeeded/1',
      g: 'succeeded/2',
      h: 'succeeded/2',
    });
    // Only the cleared nodes ran again; those that had run before the failure kept their ends.
    expect(startsByNode(bench.nodeLog(date))).toEqual({ a: 1, b: 1, c: 2, d: 1, e: 1, f: 1, g: 1, h: 1 });
  }, 60_000);
  it('4xx naming the field: bad dates, a date the schedule does not run on, a range over the maximum, an unknown pipeline, a clear of a running run; a dry run creates nothing', async () => {
    const left = testBudget(60_000);
    const refused = async (method: string, path: string, body: unknown, status: number, error: object) => {
      const res = await bench.api(method, path, body);
      expect({
        at: `${method} ${path} ${JSON.stringify(body)}`,
        status: res.status,
        error: res.body.error,
      }).toMatchObject({
        status,
        error,
      });
    };
    const invalid = (field: string) => ({ code: 'validation_error', field });
    for (const logical_date of ['2026-13-01', 'yesterday']) {
      await refused('POST', '/api/v1/pipelines/nightly_sales/runs', { logical_date }, 422, invalid('logical_date'));
    }
    // pl_weekly runs on Mondays: 2026-11-24 is a Tuesday.
    await refused(
      'POST',
      '/api/v1/pipelines/pl_weekly/runs',
      { logical_date: '2026-11-24' },
      422,
      invalid('logical_date'),
    );
    // 367 dates (the maximum is 366); 366 are planned.
    await refused(
      'POST',
      '/api/v1/pipelines/nightly_sales/backfill',
      { from: '2025-01-01', to: '2026-01-02', dry_run: true },
      422,
      invalid('to'),
    );
    const year = await bench.api('POST', '/api/v1/pipelines/nightly_sales/backfill', {
      from: '2025-01-01',
      to: '2026-01-01',
      dry_run: true,
    });
    expect(year.status).toBe(200);
    expect(year.body.runs).toHaveLength(366);
    await refused(
      'POST',
      '/api/v1/pipelines/pl_diamond/backfill',
      { from: '2026-09-01', to: '2026-09-03', reprocess: 'some' },
      422,
      invalid('reprocess'),
    );
    await refused('GET', '/api/v1/pipelines/no_such_pipeline', undefined, 404, { code: 'not_found' });
    await refused('POST', '/api/v1/pipelines/no_such_pipeline/runs', { logical_date: '2026-11-28' }, 404, {
      code: 'not_found',
    });
    await refused('GET', '/api/v1/pipelines/pl_diamond/runs/2026-01-01', undefined, 404, { code: 'not_found' });

    // A dry run answers the plan and creates nothing.
    const plan = await bench.api('POST', '/api/v1/pipelines/pl_diamond/backfill', {
      from: '2026-09-01',
      to: '2026-09-03',
      dry_run: true,
    });
    expect(plan.status).toBe(200);
    expect(plan.body).toMatchObject({ dry_run: true });
    expect(
      (plan.body.runs as { logical_date: string; action: string }[]).map((r) => `${r.logical_date} ${r.action}`),
    ).toEqual(['2026-09-01 create', '2026-09-02 create', '2026-09-03 create']);
    expect(
      (await bench.api('GET', '/api/v1/pipelines/pl_diamond/runs?from=2026-09-01&to=2026-09-03')).body.items,
    ).toEqual([]);
    expect((await bench.records('pl_diamond')).filter((r) => r.data_interval?.start.startsWith('2026-09-0'))).toEqual(
      [],
    );

    // A run still going cannot be cleared: node a is held until the check is done.
    const date = '2026-10-20';
    const hold = bench.flag('hold', 'a', date);
    hold.raise();
    await bench.api('POST', '/api/v1/pipelines/pl_diamond/runs', { logical_date: date });
    await bench.started('a', date, left());
    // `running` once its first invocation has suspended, waiting for its nodes (until then, under a
    // lazy claim, its record still says `queued`, and so does the view).
    await bench.until('pl_diamond', date, ['running'], left());
    await refused('POST', `/api/v1/pipelines/pl_diamond/runs/${date}/clear`, { nodes: ['a'] }, 409, {
      code: 'run_active',
    });
    hold.lower();
    expect((await bench.until('pl_diamond', date, ['succeeded', 'failed'], left())).status).toBe('succeeded');
  }, 60_000);
});
