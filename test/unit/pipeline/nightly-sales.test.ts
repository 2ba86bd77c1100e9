/**
 * The example pipeline (`tasks/nightly-sales.ts`) through the API and the consumer on the
 * in-memory fakes: a run end to end, one run per date, a failure with its downstream
 * `upstream_failed`, a clear that completes the run, and a backfill's dry run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { examplePipelineSetting } from '../../support/example-pipeline.js';
import { registry } from '../../../tasks/index.js';
import { drivenKaj } from '../../../testing/queue-drain.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';
import { MemoryScheduleStore } from '../../../testing/memory-schedule-store.js';

function setup() {
  const u = drivenKaj(registry, {
    history: new MemoryHistoryStore(),
    limits: new MemoryLimitStore(),
    schedules: new MemoryScheduleStore(),
  });
  return { ...u, drain: () => u.drain({ advance: (ms) => vi.advanceTimersByTimeAsync(ms) }) };
}

describe('the nightly_sales pipeline', () => {
  const setting = examplePipelineSetting();

  it('runs every node for its logical date, upstreams first, and one run per date', async () => {
    const u = setup();
    const created = await u.api('POST', '/api/v1/pipelines/nightly_sales/runs', { logical_date: '2026-11-28' });
    expect(created.status).toBe(201);
    expect(created.json.data_interval).toEqual({ start: '2026-11-27T18:30:00.000Z', end: '2026-11-28T18:30:00.000Z' });
    const again = await u.api('POST', '/api/v1/pipelines/nightly_sales/runs', { logical_date: '2026-11-28' });
    expect(again.status).toBe(200);
    expect(again.json.run_id).toBe(created.json.run_id);
    await u.drain();
    const run = await u.api('GET', '/api/v1/pipelines/nightly_sales/runs/2026-11-28');
    expect(run.json.status).toBe('succeeded');
    expect(Object.fromEntries(run.json.nodes.map((n: any) => [n.name, n.state]))).toEqual({
      extract: 'succeeded',
      clean: 'succeeded',
      customers: 'succeeded',
      summary: 'succeeded',
      dashboard: 'succeeded',
    });
    const summary = JSON.parse(readFileSync(join(setting.dir(), 'summary', '2026-11-28.json'), 'utf8'));
    expect(summary.day).toBe('2026-11-28');
    const dashboard = JSON.parse(readFileSync(join(setting.dir(), 'dashboard', '2026-11-28.json'), 'utf8'));
    expect(dashboard).toEqual({ day: '2026-11-28', total: summary.total });
  });

  it('a failed node: its downstream is upstream_failed and the run failed; clearing it completes the run', async () => {
    const u = setup();
    vi.stubEnv('KAJ_NIGHTLY_SALES_FAIL', 'clean');
    await u.api('POST', '/api/v1/pipelines/nightly_sales/runs', { logical_date: '2026-11-28' });
    await u.drain();
    const failed = await u.api('GET', '/api/v1/pipelines/nightly_sales/runs/2026-11-28');
    expect(failed.json.status).toBe('failed');
    const states = Object.fromEntries(failed.json.nodes.map((n: any) => [n.name, n.state]));
    expect(states).toEqual({
      extract: 'succeeded',
      clean: 'failed',
      customers: 'succeeded',
      summary: 'upstream_failed',
      dashboard: 'upstream_failed',
    });
    vi.stubEnv('KAJ_NIGHTLY_SALES_FAIL', '');
    const cleared = await u.api('POST', '/api/v1/pipelines/nightly_sales/runs/2026-11-28/clear', {
      nodes: ['clean'],
      downstream: true,
    });
    expect(cleared.status).toBe(202);
    await u.drain();
    const done = await u.api('GET', '/api/v1/pipelines/nightly_sales/runs/2026-11-28');
    expect(done.json.status).toBe('succeeded');
    const clean = done.json.nodes.find((n: any) => n.name === 'clean');
    expect(clean).toMatchObject({ state: 'succeeded', try: 2 });
    expect(done.json.nodes.find((n: any) => n.name === 'extract')).toMatchObject({ try: 1 });
  });

  it('its schedule creates the run of the day before, the same run a manual start of that date finds', async () => {
    const u = setup();
    vi.setSystemTime(Date.parse('2026-11-28T12:00:00Z'));
    await u.kaj.schedules?.syncDeclared(registry.declaredSchedules());
    // 00:30 in Dhaka (UTC+6) on the 29th: the run of the 28th.
    vi.setSystemTime(Date.parse('2026-11-28T18:30:01Z'));
    await u.kaj.ticker?.tick();
    const runs = new Set(u.queue.sent.filter((m) => m.type === 'nightly_sales').map((m) => m.message.task_id));
    expect(runs.size).toBe(1);
    const manual = await u.api('POST', '/api/v1/pipelines/nightly_sales/runs', { logical_date: '2026-11-28' });
    expect(manual.status).toBe(200);
    expect(manual.json.run_id).toBe([...runs][0]);
    const record = await u.store.get(manual.json.run_id);
    expect(record).toMatchObject({
      schedule: 'nightly_sales',
      idempotency_key: 'nightly_sales@2026-11-28',
      data_interval: { start: '2026-11-27T18:30:00.000Z', end: '2026-11-28T18:30:00.000Z' },
    });
    await u.drain();
    expect((await u.api('GET', '/api/v1/pipelines/nightly_sales/runs/2026-11-28')).json.status).toBe('succeeded');
  });

  it('a backfill dry run lists the dates and changes nothing', async () => {
    const u = setup();
    const before = u.queue.sent.length;
    const plan = await u.api('POST', '/api/v1/pipelines/nightly_sales/backfill', {
      from: '2026-11-01',
      to: '2026-11-03',
      dry_run: true,
    });
    expect(plan.status).toBe(200);
    expect(plan.json.runs.map((r: any) => `${r.logical_date}:${r.action}`)).toEqual([
      '2026-11-01:create',
      '2026-11-02:create',
      '2026-11-03:create',
    ]);
    expect(u.queue.sent.length).toBe(before);
    expect(
      (await u.api('GET', '/api/v1/pipelines/nightly_sales/runs?from=2026-11-01&to=2026-11-03')).json.items,
    ).toEqual([]);
  });
});
