/**
 * The console's pipeline pages over runs of the example pipeline (`nightly_sales`) on the
 * in-memory fakes: the list, the grid (a cell per node and date coloured by its state), a run's
 * page (its graph as SVG, its nodes' table), and the trigger and clear actions with their
 * refusals, each a 4xx page saying why; escaping; and no page without the pipeline service.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { ConsoleApp, type ConsoleRequest, type ConsoleResponse } from '../../../console/app.js';
import type { PageContext } from '../../../console/layout.js';
import type { ConsoleBackend } from '../../../console/model.js';
import { graphSvg, gridTable, pipelinesPage, runPage } from '../../../console/pipelines.js';
import { PipelineService, type PipelineSummary } from '../../../shared/pipeline/service.js';
import type { NodeView, RunView } from '../../../shared/pipeline/view.js';
import { registry } from '../../../tasks/index.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';
import { drivenKaj } from '../../../testing/queue-drain.js';

const TOKEN = 'tok-pipelines';
const PORT = 3000;
const PIPELINE = '/pipelines/nightly_sales';
const NODES = ['extract', 'clean', 'customers', 'summary', 'dashboard'];

const notRead = async (): Promise<never> => {
  throw new Error('not read by the pipeline pages');
};
const backend = {
  label: 'unit',
  ...Object.fromEntries(
    ['overview', 'listTasks', 'getTask', 'cancelTask', 'deadLetters', 'redrive', 'purge'].map((k) => [k, notRead]),
  ),
} as unknown as ConsoleBackend;

/**
 * Kaj on the fakes with the example tasks, its pipeline service, and consoles over it. The nodes
 * write their partitions under a folder of the test's own, removed (and the env restored) after it.
 */
function setup() {
  const partitions = mkdtempSync(join(tmpdir(), 'kaj-console-partitions-'));
  vi.stubEnv('KAJ_PARTITIONS_DIR', partitions);
  onTestFinished(() => {
    vi.unstubAllEnvs();
    rmSync(partitions, { recursive: true, force: true });
  });
  const history = new MemoryHistoryStore();
  const u = drivenKaj(registry, { history, limits: new MemoryLimitStore(), admitPollMs: 5_000 });
  const { submitter, lifecycle } = u.kaj;
  const service = new PipelineService({ registry, store: u.store, submitter, lifecycle, history, clock: u.clock });
  const fixed = { backend, token: TOKEN, port: () => PORT, actor: 'alice', clock: u.clock, newId: () => 'id' };
  const consoleOf = (o: { actions?: boolean; pipelines?: boolean } = {}) =>
    new ConsoleApp({
      ...fixed,
      actionsAllowed: o.actions ?? true,
      ...(o.pipelines === false ? {} : { pipelines: service }),
    });
  const drain = () => u.drain({ advance: (ms) => vi.advanceTimersByTimeAsync(ms) });
  return { ...u, service, app: consoleOf(), consoleOf, drain };
}
type Unit = ReturnType<typeof setup>;

function request(method: 'GET' | 'POST', path: string, form: Record<string, string> = {}): ConsoleRequest {
  const url = new URL(path, 'http://console');
  const query = Object.fromEntries(url.searchParams);
  return { method, path: url.pathname, query, headers: { host: `127.0.0.1:${PORT}` }, form };
}

const body = (r: ConsoleResponse) => String(r.body);

async function show(app: ConsoleApp, path: string, status = 200): Promise<string> {
  const r = await app.handle(request('GET', path));
  expect(r.status, body(r).slice(0, 2000)).toBe(status);
  return body(r);
}

/** Triggers a date from the pipeline page's form, then runs everything. */
async function runDate(u: Unit, date: string): Promise<void> {
  const r = await u.app.handle(request('POST', `${PIPELINE}/runs`, { _token: TOKEN, logical_date: date }));
  expect(r.status).toBe(303);
  expect(r.headers.location).toBe(`${PIPELINE}/runs/${date}?msg=triggered`);
  await u.drain();
}

/** 2026-11-27 succeeded; 2026-11-28 failed at `clean` (its downstream upstream_failed). */
async function twoRuns(u: Unit): Promise<void> {
  await runDate(u, '2026-11-27');
  vi.stubEnv('KAJ_NIGHTLY_SALES_FAIL', 'clean');
  await runDate(u, '2026-11-28');
  vi.stubEnv('KAJ_NIGHTLY_SALES_FAIL', '');
}

/** The grid's cells: row (node, or "" for the run's row) → date → state. */
function gridOf(page: string): Map<string, Map<string, string>> {
  const rows = new Map<string, Map<string, string>>();
  for (const [, node, cells] of page.matchAll(/<tr(?: class="run")? data-node="(\w*)">([\s\S]*?)<\/tr>/g)) {
    const states = new Map<string, string>();
    for (const [, state, date] of (cells ?? '').matchAll(/class="cell ns-(\w+)" data-date="([^"]+)"/g)) {
      states.set(date as string, state as string);
    }
    rows.set(node as string, states);
  }
  return rows;
}

/** The flash a refusal shows. */
const flash = (page: string) => /<p class="flash bad" role="status">([\s\S]*?)<\/p>/.exec(page)?.[1];

const NOW = Date.parse('2026-12-01T00:00:00Z');

beforeEach(() => {
  vi.useFakeTimers({ now: NOW, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('console: pipeline pages', () => {
  it('lists the pipelines with their schedule and node count, linked from the navigation', async () => {
    const u = setup();
    const page = await show(u.app, '/pipelines');
    expect(page).toContain('<a href="/pipelines" aria-current="page">Pipelines</a>');
    expect(page).toContain(
      '<tr><td><a href="/pipelines/nightly_sales">nightly_sales</a></td><td><code>30 0 * * *</code> Asia/Dhaka · catch-up</td><td class="n">5</td><td class="n">1</td>',
    );
    expect(await show(u.app, '/pipelines/nope', 404)).toContain('<a href="/pipelines">Pipelines</a>');
  });

  it('the grid: a column per date up to the latest due, a row per node in graph order, each cell coloured by its state', async () => {
    const u = setup();
    await twoRuns(u);
    const page = await show(u.app, PIPELINE);
    const grid = gridOf(page);
    expect([...grid.keys()]).toEqual(['', ...NODES]);
    // 1 Dec 06:00 in Dhaka: the latest run due is 30 Nov's (created at 00:30); 14 dates up to it.
    const dates = [...(grid.get('')?.keys() ?? [])];
    expect(dates).toHaveLength(14);
    expect([dates[0], dates.at(-1)]).toEqual(['2026-11-17', '2026-11-30']);
    const at = (date: string) => Object.fromEntries([...grid].map(([row, states]) => [row, states.get(date)]));
    expect(at('2026-11-27')).toEqual(Object.fromEntries(['', ...NODES].map((row) => [row, 'succeeded'])));
    expect(at('2026-11-28')).toEqual({
      '': 'failed',
      extract: 'succeeded',
      clean: 'failed',
      customers: 'succeeded',
      summary: 'upstream_failed',
      dashboard: 'upstream_failed',
    });
    // A date without a run: an empty cell in every row, linking nowhere.
    expect(new Set(Object.values(at('2026-11-26')))).toEqual(new Set(['none']));
    expect(page).toContain(
      '<a class="cell ns-failed" data-date="2026-11-28" href="/pipelines/nightly_sales/runs/2026-11-28#node-clean"',
    );
    expect(page).not.toMatch(/<a class="cell ns-none"/);
    // Each node name shows its upstreams on hover; the legend names every colour.
    expect(page).toContain(
      '<th scope="row" title="build_daily_summary · after clean, customers (all_success)">summary</th>',
    );
    expect(page).toContain('<th scope="row" title="extract_sales · a root (no upstream)">extract</th>');
    for (const state of ['succeeded', 'failed', 'upstream_failed', 'skipped', 'running', 'queued', 'pending']) {
      expect(page).toContain(`<i class="sw ns-${state}"></i>`);
    }
  });

  it('moves the window with ?to= and ?from=, and links to the dates before and after', async () => {
    const u = setup();
    await twoRuns(u);
    const earlier = await show(u.app, `${PIPELINE}?to=2026-11-20`);
    const dates = [...(gridOf(earlier).get('')?.keys() ?? [])];
    expect([dates.length, dates[0], dates.at(-1)]).toEqual([14, '2026-11-07', '2026-11-20']);
    expect(earlier).toContain(`href="${PIPELINE}?to=2026-11-06">← Earlier</a>`);
    expect(earlier).toContain(`href="${PIPELINE}?to=2026-11-30">Later →</a>`);
    const latest = await show(u.app, PIPELINE);
    expect(latest).not.toContain('Later →');
    const range = gridOf(await show(u.app, `${PIPELINE}?from=2026-11-27&to=2026-11-29`)).get('');
    expect([...(range ?? [])].join()).toBe('2026-11-27,succeeded,2026-11-28,failed,2026-11-29,none');
  });

  it('a run’s page: its state, interval and error, its graph as SVG (a node per graph node, an edge per dependency), its nodes', async () => {
    const u = setup();
    await twoRuns(u);
    const page = await show(u.app, `${PIPELINE}/runs/2026-11-28`);
    const run = await u.service.run('nightly_sales', '2026-11-28');
    expect(page).toContain('<dt>Status</dt><dd><span class="st st-failed">failed</span></dd>');
    expect(page).toContain('<time datetime="2026-11-27T18:30:00.000Z"');
    expect(page).toContain('<time datetime="2026-11-28T18:30:00.000Z"');
    expect(page).toContain('<dt>Error</dt><dd>nodes failed: clean; not run (upstream failed): summary, dashboard</dd>');
    expect(page).toContain(`<a class="mono" href="/tasks/${run.run_id}">${run.run_id}</a>`);
    const svg = /<svg class="pgraph"[\s\S]*?<\/svg>/.exec(page)?.[0] ?? '';
    const drawn = [...svg.matchAll(/<g class="node ns-(\w+)" data-node="(\w+)">/g)].map(([, s, n]) => `${n}:${s}`);
    expect(drawn).toEqual(run.nodes.map((n) => `${n.name}:${n.state}`));
    expect(drawn).toHaveLength(5);
    const edges = [...svg.matchAll(/<path class="edge" data-from="(\w+)" data-to="(\w+)"/g)].map(
      ([, a, b]) => `${a}>${b}`,
    );
    expect(edges.sort()).toEqual(run.nodes.flatMap((n) => n.after.map((a) => `${a}>${n.name}`)).sort());
    expect(edges).toHaveLength(4);
    // A node that ran links to its task; one that never ran has no task to link to.
    const clean = run.nodes.find((n) => n.name === 'clean') as NodeView;
    expect(clean.task_id).toBeDefined();
    expect(svg).toContain(`<a href="/tasks/${clean.task_id}" aria-label="clean: failed"><g class="node ns-failed"`);
    expect(svg).not.toMatch(/<a [^>]*><g class="node ns-upstream_failed"/);
    // The table: a row per node with its state, try and task.
    expect(page).toContain(
      `<tr id="node-clean"><td><strong>clean</strong></td><td>clean_sales</td><td><span class="st st-failed">failed</span></td><td>all_success</td><td>extract</td>`,
    );
    expect(page).toContain(`<td class="n">1</td><td><a class="mono" href="/tasks/${clean.task_id}">`);
    expect(page.match(/<tr id="node-/g)).toHaveLength(5);
    // No inline script, style or handler: the CSP forbids them.
    expect(page).not.toMatch(/<script(?![^>]*\ssrc=)/);
    expect(page).not.toMatch(/\s(style|on\w+)=/);
  });

  it('clearing the failed nodes reopens the run; once drained it succeeds with the cleared nodes’ try 2', async () => {
    const u = setup();
    await twoRuns(u);
    const failed = await show(u.app, `${PIPELINE}/runs/2026-11-28`);
    expect(failed).toContain(
      `<form method="post" action="${PIPELINE}/runs/2026-11-28/clear" class="filters" hx-boost="false">`,
    );
    expect(failed).toContain(
      `<input type="hidden" name="_token" value="${TOKEN}"><input type="hidden" name="failed" value="true">`,
    );
    const r = await u.app.handle(
      request('POST', `${PIPELINE}/runs/2026-11-28/clear`, { _token: TOKEN, failed: 'true' }),
    );
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe(`${PIPELINE}/runs/2026-11-28?msg=cleared`);
    const run = await u.service.run('nightly_sales', '2026-11-28');
    expect((await u.store.get(run.run_id))?.status).toBe('queued');
    const reopened = await show(u.app, r.headers.location as string);
    expect(reopened).toContain('<p class="flash ok" role="status">Cleared: the run is reopened');
    expect(reopened).toContain('<span class="st st-queued">queued</span>');
    expect(reopened).not.toContain('/clear"');
    await u.drain();
    const done = await u.service.run('nightly_sales', '2026-11-28');
    expect(done.status).toBe('succeeded');
    const tries = done.nodes.map((n) => `${n.name}:${n.try}`);
    expect(tries).toEqual(['extract:1', 'clean:2', 'customers:1', 'summary:2', 'dashboard:2']);
    const page = await show(u.app, `${PIPELINE}/runs/2026-11-28`);
    expect(page).toContain('<text x="');
    expect(page).toMatch(/class="nt">succeeded · try 2<\/text>/);
    expect(
      gridOf(await show(u.app, PIPELINE))
        .get('clean')
        ?.get('2026-11-28'),
    ).toBe('succeeded');
  });
});

describe('console: pipeline refusals, each a 4xx page', () => {
  it('an unknown pipeline or date: 404; a malformed date: 422 naming the field', async () => {
    const u = setup();
    await runDate(u, '2026-11-27');
    expect(await show(u.app, '/pipelines/nope', 404)).toContain('pipeline &quot;nope&quot; is not defined');
    expect(await show(u.app, `${PIPELINE}/runs/2026-11-20`, 404)).toContain(
      'pipeline &quot;nightly_sales&quot; has no run for 2026-11-20',
    );
    expect(await show(u.app, `${PIPELINE}/runs/2026-11-27/nodes`, 404)).toContain('no page at');
    const bad = await show(u.app, `${PIPELINE}/runs/2026-13-45`, 422);
    expect(bad).toContain('<h1>Unprocessable request</h1>');
    expect(bad).toContain('logical_date must be a date (YYYY-MM-DD), got &quot;2026-13-45&quot;');
    expect(await show(u.app, `${PIPELINE}?to=yesterday`, 422)).toContain('to must be a date (YYYY-MM-DD)');
    expect(await show(u.app, `${PIPELINE}?from=2026-11-28&to=2026-11-01`, 422)).toContain('to must not be before from');
  });

  it('a trigger with a bad or no date: 422 on the pipeline page, the form keeping what was typed; nothing started', async () => {
    const u = setup();
    const sent = u.queue.sent.length;
    const r = await u.app.handle(request('POST', `${PIPELINE}/runs`, { _token: TOKEN, logical_date: '28/11/2026"' }));
    expect(r.status).toBe(422);
    expect(flash(body(r))).toBe(
      'Not triggered: logical_date must be a date (YYYY-MM-DD), got &quot;28/11/2026\\&quot;&quot;',
    );
    expect(body(r)).toContain('<input name="logical_date" value="28/11/2026&quot;" required');
    expect(body(r)).toContain('<h1>Pipeline nightly_sales</h1>');
    const none = await u.app.handle(request('POST', `${PIPELINE}/runs`, { _token: TOKEN, logical_date: ' ' }));
    expect(none.status).toBe(422);
    expect(flash(body(none))).toBe('Not triggered: logical_date: required (the date to run)');
    expect(u.queue.sent).toHaveLength(sent);
    const unknown = await u.app.handle(
      request('POST', '/pipelines/nope/runs', { _token: TOKEN, logical_date: '2026-11-28' }),
    );
    expect(unknown.status).toBe(404);
  });

  it('a date that has a run: shown, not started again', async () => {
    const u = setup();
    await runDate(u, '2026-11-27');
    const again = await u.app.handle(
      request('POST', `${PIPELINE}/runs`, { _token: TOKEN, logical_date: '2026-11-27' }),
    );
    expect(again.headers.location).toBe(`${PIPELINE}/runs/2026-11-27?msg=exists`);
    expect(await show(u.app, again.headers.location as string)).toContain('This date has a run already');
  });

  it('clearing a run still going or one with nothing failed: 409 on the run’s page, saying why', async () => {
    const u = setup();
    await runDate(u, '2026-11-27');
    const nothing = await u.app.handle(request('POST', `${PIPELINE}/runs/2026-11-27/clear`, { _token: TOKEN }));
    expect(nothing.status).toBe(409);
    expect(flash(body(nothing))).toBe(
      'Not cleared: the run of 2026-11-27 has no failed node to clear (nothing_to_clear).',
    );
    expect(body(nothing)).toContain('<span class="st st-succeeded">succeeded</span>');
    await u.app.handle(request('POST', `${PIPELINE}/runs`, { _token: TOKEN, logical_date: '2026-11-29' }));
    const active = await u.app.handle(request('POST', `${PIPELINE}/runs/2026-11-29/clear`, { _token: TOKEN }));
    expect(active.status).toBe(409);
    expect(flash(body(active))).toBe(
      'Not cleared: the run of 2026-11-29 is queued: clear it once it has ended (run_active).',
    );
    const missing = await u.app.handle(request('POST', `${PIPELINE}/runs/2026-11-20/clear`, { _token: TOKEN }));
    expect(missing.status).toBe(404);
    const bad = await u.app.handle(request('POST', `${PIPELINE}/runs/20261120/clear`, { _token: TOKEN }));
    expect(bad.status).toBe(422);
  });

  it('the console’s guards: no token or a read-only console is 403 (its forms disabled), and nothing changes', async () => {
    const u = setup();
    const sent = u.queue.sent.length;
    const noToken = await u.app.handle(request('POST', `${PIPELINE}/runs`, { logical_date: '2026-11-28' }));
    expect(noToken.status).toBe(403);
    const readOnly = u.consoleOf({ actions: false });
    const refused = await readOnly.handle(
      request('POST', `${PIPELINE}/runs`, { _token: TOKEN, logical_date: '2026-11-28' }),
    );
    expect(refused.status).toBe(403);
    expect(body(refused)).toContain('read-only');
    expect(await show(readOnly, PIPELINE)).toMatch(
      /<button type="submit" disabled title="read-only console[^"]*">Trigger<\/button>/,
    );
    expect(u.queue.sent).toHaveLength(sent);
  });

  it('without the pipeline service: no navigation link, and every pipeline page is a 404 saying so', async () => {
    const u = setup();
    const app = u.consoleOf({ pipelines: false });
    expect(await show(app, '/pipelines', 404)).toContain('no pipelines');
    expect(await show(app, PIPELINE, 404)).not.toContain('href="/pipelines"');
    const r = await app.handle(request('POST', `${PIPELINE}/runs`, { _token: TOKEN, logical_date: '2026-11-28' }));
    expect(r.status).toBe(404);
  });

  it('escapes names, dates and messages it did not write', async () => {
    const u = setup();
    const page = await show(u.app, '/pipelines/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E', 404);
    expect(page).toContain('pipeline &quot;&lt;img src=x onerror=alert(1)&gt;&quot; is not defined');
    expect(page).not.toContain('<img src=x');
  });
});

describe('console: pipeline renderers escape what they show', () => {
  const ctx: PageContext = {
    label: 'x',
    token: 't',
    actionsAllowed: true,
    schedules: false,
    pipelines: true,
    now: NOW,
  };
  const HOSTILE = '<script>alert(1)</script>';
  const node = (name: string, after: string[] = []): NodeView => ({
    name,
    type: `${name}"type`,
    after,
    trigger: 'all_success',
    state: 'failed',
    task_id: `t_${name}"`,
    try: 1,
  });
  const nodes = [node('<b>a</b>'), node('b&c', ['<b>a</b>'])];
  const limits = { timezone: 'UTC', max_active_runs: 1, max_run_days: 7, logical_date_format: 'date' } as const;
  const graph = nodes.map(({ name, type, after, trigger }) => ({ name, type, after, trigger }));
  const summary: PipelineSummary = { name: 'p', description: HOSTILE, ...limits, nodes: graph };
  const at = { created_at: '2026-11-29T00:00:00.000Z', updated_at: '2026-11-29T00:00:00.000Z' };
  const run: RunView = { pipeline: 'p', logical_date: '2026-11-28', run_id: 't_r', status: 'failed', ...at, nodes };

  it('names, types, task ids, descriptions and errors come out as text', () => {
    const out = [
      runPage(ctx, summary, { ...run, error: HOSTILE }).text,
      graphSvg(nodes).text,
      gridTable(summary, { keys: ['2026-11-28'], runs: new Map([['2026-11-28', run]]), earlier: '2026-11-27' }).text,
      pipelinesPage(ctx, [summary]).text,
    ].join('\n');
    expect(out).not.toContain('<b>a</b>');
    expect(out).not.toContain('<script>alert');
    expect(out).not.toContain('"type');
    expect(out).toContain('&lt;b&gt;a&lt;/b&gt;');
    expect(out).toContain('b&amp;c');
    expect(out).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(graphSvg(nodes).text).toContain('href="/tasks/t_%3Cb%3Ea%3C%2Fb%3E%22"');
  });
});
