/**
 * The pipeline routes' answers on the in-memory fakes: the listing, one run per date, and every
 * refusal a 4xx naming the field (never a 5xx).
 */
import { describe, expect, it, vi } from 'vitest';
import { examplePipelineSetting } from '../../support/example-pipeline.js';
import { registry } from '../../../tasks/index.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';
import { drivenKaj } from '../../../testing/queue-drain.js';

const BASE = '/api/v1/pipelines/nightly_sales';

function setup() {
  const u = drivenKaj(registry, { history: new MemoryHistoryStore(), limits: new MemoryLimitStore() });
  return { ...u, drain: () => u.drain({ advance: (ms) => vi.advanceTimersByTimeAsync(ms) }) };
}

describe('the pipeline routes', () => {
  examplePipelineSetting();

  it('lists the pipelines with their schedule and graph', async () => {
    const u = setup();
    const list = await u.api('GET', '/api/v1/pipelines');
    expect(list.status).toBe(200);
    const p = list.json.items.find((i: any) => i.name === 'nightly_sales');
    expect(p).toMatchObject({
      schedule: { cron: '30 0 * * *', timezone: 'Asia/Dhaka', catchup: true },
      max_active_runs: 1,
      logical_date_format: 'date',
    });
    expect(p.nodes.map((n: any) => `${n.name}<${n.after.join(',')}`)).toEqual([
      'extract<',
      'clean<extract',
      'customers<',
      'summary<clean,customers',
      'dashboard<summary',
    ]);
    expect((await u.api('GET', BASE)).json.name).toBe('nightly_sales');
  });

  it.each([
    ['POST', `${BASE}/runs`, { logical_date: '2026-13-01' }, 422, 'logical_date'],
    ['POST', `${BASE}/runs`, { logical_date: 'yesterday' }, 422, 'logical_date'],
    ['POST', `${BASE}/runs`, {}, 422, 'logical_date'],
    ['POST', `${BASE}/runs`, { logical_date: '2026-12-02' }, 422, 'logical_date'],
    ['POST', `${BASE}/backfill`, { from: '2026-11-28', to: '2026-12-05' }, 422, 'to'],
    ['POST', `${BASE}/runs`, { logical_date: '2026-11-28', extra: 1 }, 422, 'body'],
    ['GET', `${BASE}/runs?from=soon`, undefined, 422, 'from'],
    ['POST', `${BASE}/backfill`, { from: '2025-01-01', to: '2026-11-28' }, 422, 'to'],
    ['POST', `${BASE}/backfill`, { from: '2026-11-28', to: '2026-11-01' }, 422, 'to'],
    ['POST', `${BASE}/backfill`, { from: '2026-11-01', to: '2026-11-02', reprocess: 'some' }, 422, 'reprocess'],
    ['POST', `${BASE}/backfill`, { from: '2026-11-01', to: '2026-11-02', max_active_runs: 2 }, 422, 'max_active_runs'],
    ['GET', `${BASE}/runs/2026-02-30`, undefined, 422, 'logical_date'],
    ['GET', `${BASE}/runs/2026-11-28`, undefined, 404, undefined],
    ['GET', '/api/v1/pipelines/nope', undefined, 404, undefined],
    ['POST', '/api/v1/pipelines/nope/runs', { logical_date: '2026-11-28' }, 404, undefined],
    ['POST', `${BASE}/runs/2026-11-28/clear`, { nodes: ['clean'] }, 404, undefined],
  ])('%s %s %j → %i naming %s', async (method, path, body, status, field) => {
    const u = setup();
    const r = await u.api(method, path, body);
    expect(r.status).toBe(status);
    if (field !== undefined) expect(r.json.error.field).toBe(field);
  });

  it('clear: 409 while the run goes, 422 for a node it does not have, then reopens it once ended', async () => {
    const u = setup();
    await u.api('POST', `${BASE}/runs`, { logical_date: '2026-11-28' });
    const early = await u.api('POST', `${BASE}/runs/2026-11-28/clear`, { nodes: ['clean'] });
    expect(early.status).toBe(409);
    expect(early.json.error.code).toBe('run_active');
    await u.drain();
    const bad = await u.api('POST', `${BASE}/runs/2026-11-28/clear`, { nodes: ['cleanup'] });
    expect(bad.status).toBe(422);
    expect(bad.json.error.field).toBe('nodes');
    const none = await u.api('POST', `${BASE}/runs/2026-11-28/clear`, { failed: true });
    expect(none.status).toBe(409);
    expect(none.json.error.code).toBe('nothing_to_clear');
    const ok = await u.api('POST', `${BASE}/runs/2026-11-28/clear`, { nodes: ['summary'], downstream: true });
    expect(ok.status).toBe(202);
    expect(ok.json.status).toBe('queued');
    await u.drain();
    const run = await u.api('GET', `${BASE}/runs/2026-11-28`);
    expect(run.json.nodes.map((n: any) => `${n.name}:${n.try}`)).toEqual([
      'extract:1',
      'clean:1',
      'customers:1',
      'summary:2',
      'dashboard:2',
    ]);
    expect(run.json.status).toBe('succeeded');
  });

  it('backfill: one run per date however often it is asked, newest first with backwards, failed dates rerun', async () => {
    const u = setup();
    const first = await u.api('POST', `${BASE}/backfill`, { from: '2026-11-01', to: '2026-11-03', backwards: true });
    expect(first.status).toBe(202);
    expect(first.json.runs.map((r: any) => `${r.logical_date}:${r.action}`)).toEqual([
      '2026-11-03:create',
      '2026-11-02:create',
      '2026-11-01:create',
    ]);
    const again = await u.api('POST', `${BASE}/backfill`, { from: '2026-11-01', to: '2026-11-03', dry_run: true });
    expect(again.json.runs.map((r: any) => r.action)).toEqual(['skip_active', 'skip_active', 'skip_active']);
    vi.stubEnv('KAJ_NIGHTLY_SALES_FAIL', 'dashboard');
    await u.drain();
    vi.stubEnv('KAJ_NIGHTLY_SALES_FAIL', '');
    const rerun = await u.api('POST', `${BASE}/backfill`, {
      from: '2026-11-02',
      to: '2026-11-03',
      reprocess: 'failed',
    });
    expect(rerun.json.runs.map((r: any) => `${r.action}:${r.was}`)).toEqual([
      'rerun_failed:failed',
      'rerun_failed:failed',
    ]);
    await u.drain();
    const runs = await u.api('GET', `${BASE}/runs?from=2026-11-01&to=2026-11-03`);
    expect(runs.json.items.map((r: any) => `${r.logical_date}:${r.status}`)).toEqual([
      '2026-11-03:succeeded',
      '2026-11-02:succeeded',
      '2026-11-01:failed',
    ]);
    expect(new Set(u.queue.sent.filter((m) => m.type === 'nightly_sales').map((m) => m.message.task_id)).size).toBe(3);
  });

  it('DELETE cancels a run and its nodes', async () => {
    const u = setup();
    await u.api('POST', `${BASE}/runs`, { logical_date: '2026-11-28' });
    await u.drain();
    await u.api('POST', `${BASE}/runs`, { logical_date: '2026-11-29' });
    const cancelled = await u.api('DELETE', `${BASE}/runs/2026-11-29`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.json.status).toBe('cancelled');
    const ended = await u.api('DELETE', `${BASE}/runs/2026-11-28`);
    expect(ended.status).toBe(409);
  });
});
