/**
 * The console's pipeline pages, pure functions from what `PipelineService` read to HTML: the list
 * of pipelines; a pipeline's grid (one column per logical date, oldest on the left, one row per
 * node in graph order, each cell coloured by the node's state in that date's run, as Airflow's
 * grid view); and a run's page with its graph drawn as SVG (`pipeline-graph.ts` lays it out) and
 * its nodes' table. Every name, date and message goes through the escaping `html` tag.
 *
 * @module
 */
import type { PipelineSummary } from '../shared/pipeline/service.js';
import type { NodeView, RunView as PipelineRun } from '../shared/pipeline/view.js';
import { count, timeTag } from './format.js';
import { type Html, html } from './html.js';
import { type Flash, layout, type PageContext } from './layout.js';
import { layoutGraph } from './pipeline-graph.js';
import { TOKEN_FIELD } from './security.js';

/** The dates a pipeline page shows. */
export interface GridWindow {
  /** Logical dates, oldest first. */
  readonly keys: readonly string[];
  /** The runs of those dates that exist, by logical date. */
  readonly runs: ReadonlyMap<string, PipelineRun>;
  /** `?to=` of the window before. */
  readonly earlier: string;
  /** `?to=` of the window after, when later dates are due. */
  readonly later?: string;
}

/** Each state's colour in the grid and the graph (CSS class `ns-<state>`), as the legend says. */
export const STATE_LEGEND: readonly (readonly [string, string])[] = [
  ['succeeded', 'succeeded'],
  ['failed', 'failed'],
  ['upstream_failed', 'upstream failed'],
  ['skipped', 'skipped'],
  ['running', 'running'],
  ['queued', 'queued'],
  ['pending', 'pending'],
  ['cancelled', 'cancelled'],
  ['none', 'no run'],
];

/** Characters of a node's name drawn in its box (the whole name is on hover). */
const NAME_CHARS = 22;

export const pipelinePath = (name: string) => `/pipelines/${encodeURIComponent(name)}`;
export const runPath = (name: string, date: string) => `${pipelinePath(name)}/runs/${encodeURIComponent(date)}`;

/* ---------- the list ---------- */

export function pipelinesPage(ctx: PageContext, items: readonly PipelineSummary[]): Html {
  return layout(ctx, {
    title: 'Pipelines',
    section: 'pipelines',
    body: html`<h1>Pipelines</h1>${
      items.length === 0
        ? html`<div class="card"><p>No pipelines. Declare them with <code>definePipeline({ name, schedule, nodes })</code> (docs/pipelines.md).</p></div>`
        : html`<div class="card scroll"><table>
<thead><tr><th>Pipeline</th><th>Schedule</th><th class="n">Nodes</th><th class="n">Max active runs</th><th>Description</th></tr></thead>
<tbody>${items.map(
            (p) =>
              html`<tr><td><a href="${pipelinePath(p.name)}">${p.name}</a></td><td>${scheduleText(p)}</td><td class="n">${count(p.nodes.length)}</td><td class="n">${count(p.max_active_runs)}</td><td>${p.description ?? html`<span class="muted">—</span>`}</td></tr>`,
          )}</tbody></table></div>`
    }`,
  });
}

function scheduleText(p: PipelineSummary): Html {
  return p.schedule === undefined
    ? html`<span class="muted">none (runs by hand or by backfill; dates in ${p.timezone})</span>`
    : html`<code>${p.schedule.cron}</code> ${p.schedule.timezone}${p.schedule.catchup ? ' · catch-up' : ''}`;
}

/* ---------- a pipeline: its grid ---------- */

export function pipelinePage(
  ctx: PageContext,
  p: PipelineSummary,
  grid: GridWindow,
  o: { readonly flash?: Flash; readonly draft?: string } = {},
): Html {
  const path = pipelinePath(p.name);
  const first = grid.keys[0] ?? '';
  const last = grid.keys.at(-1) ?? '';
  return layout(ctx, {
    title: `Pipeline ${p.name}`,
    section: 'pipelines',
    ...(o.flash === undefined ? {} : { flash: o.flash }),
    body: html`<h1>Pipeline ${p.name}</h1>${p.description === undefined ? '' : html`<p class="muted">${p.description}</p>`}
<div class="grid">
<div class="card"><h2>Definition</h2><dl class="kv">
<dt>Schedule</dt><dd>${scheduleText(p)}</dd>
<dt>Runs named by</dt><dd>${p.logical_date_format === 'date' ? html`date (YYYY-MM-DD in ${p.timezone})` : 'time (ISO, UTC)'}</dd>
<dt>Max active runs</dt><dd>${count(p.max_active_runs)}</dd>
<dt>Run deadline</dt><dd>${count(p.max_run_days)} day(s)</dd>
<dt>Nodes</dt><dd>${count(p.nodes.length)}</dd>
</dl></div>
<div class="card"><h2>Trigger a run</h2>
${postForm(ctx, `${path}/runs`, 'Trigger', html`<label>Logical date<input name="logical_date" value="${o.draft ?? ''}" required maxlength="40" size="26" autocomplete="off" spellcheck="false" placeholder="${p.logical_date_format === 'date' ? 'YYYY-MM-DD' : 'an ISO time of the schedule'}"></label>`)}
<p class="muted">The run of that date starts now; a date has one run (an existing one is shown instead).</p>
</div>
</div>
<div class="card"><h2>Runs from ${first} to ${last}</h2>
<div class="actions"><a class="button secondary" href="${path}?to=${encodeURIComponent(grid.earlier)}">← Earlier</a>${
      grid.later === undefined
        ? ''
        : html`<a class="button secondary" href="${path}?to=${encodeURIComponent(grid.later)}">Later →</a><a class="button secondary" href="${path}">Latest</a>`
    }
<form method="get" action="${path}" class="filters"><label>Up to<input name="to" value="${last}" size="26" maxlength="40" spellcheck="false"></label><button type="submit" class="secondary">Show</button></form></div>
<div class="scroll">${gridTable(p, grid)}</div>
${legend()}
<p class="muted">One column per logical date (the start of the run's data interval), oldest on the left; a cell opens the run.</p>
</div>`,
  });
}

/** The grid: a header of dates, the runs' states, then one row per node. */
export function gridTable(p: PipelineSummary, grid: GridWindow): Html {
  const cell = (date: string, node: string | undefined, state: string | undefined) => {
    const what = `${node ?? 'run'} on ${date}`;
    return state === undefined
      ? html`<td><span class="cell ns-none" data-date="${date}" title="${what}: ${node === undefined || !grid.runs.has(date) ? 'no run' : 'not in this run'}"></span></td>`
      : html`<td><a class="cell ns-${state}" data-date="${date}" href="${runPath(p.name, date)}${node === undefined ? '' : `#node-${node}`}" title="${what}: ${stateText(state)}" aria-label="${what}: ${stateText(state)}"></a></td>`;
  };
  return html`<table class="pgrid" aria-label="runs of ${p.name} by logical date">
<thead><tr><th scope="col">Node</th>${grid.keys.map((k) => html`<th scope="col" title="${k}">${dateLabel(k)}</th>`)}</tr></thead>
<tbody><tr class="run" data-node=""><th scope="row">Run</th>${grid.keys.map((k) => cell(k, undefined, grid.runs.get(k)?.status))}</tr>
${p.nodes.map(
  (n) =>
    html`<tr data-node="${n.name}"><th scope="row" title="${upstreamsText(n)}">${n.name}</th>${grid.keys.map((k) =>
      cell(k, n.name, grid.runs.get(k)?.nodes.find((x) => x.name === n.name)?.state),
    )}</tr>`,
)}</tbody></table>`;
}

function upstreamsText(n: {
  readonly after: readonly string[];
  readonly trigger: string;
  readonly type: string;
}): string {
  return `${n.type} · ${n.after.length === 0 ? 'a root (no upstream)' : `after ${n.after.join(', ')} (${n.trigger})`}`;
}

/** `upstream failed` for `upstream_failed`. */
function stateText(state: string): string {
  return state.replace('_', ' ');
}

/** `11-28` for a date, `11-28 18:30` for a time. */
function dateLabel(key: string): string {
  return /^\d{4}-\d{2}-\d{2}$/.test(key) ? key.slice(5) : `${key.slice(5, 10)} ${key.slice(11, 16)}`;
}

function legend(): Html {
  return html`<p class="legend" aria-label="colours of the states">${STATE_LEGEND.map(
    ([state, text]) => html`<span><i class="sw ns-${state}"></i>${text}</span>`,
  )}</p>`;
}

/* ---------- a run: its graph and nodes ---------- */

export function runPage(ctx: PageContext, p: PipelineSummary, run: PipelineRun, flash?: Flash): Html {
  const finished = run.status === 'succeeded' || run.status === 'failed' || run.status === 'cancelled';
  const clearable = finished && run.nodes.some((n) => n.state === 'failed' || n.state === 'cancelled');
  const path = runPath(p.name, run.logical_date);
  return layout(ctx, {
    title: `${p.name} ${run.logical_date}`,
    section: 'pipelines',
    ...(flash === undefined ? {} : { flash }),
    body: html`<h1>Pipeline <a href="${pipelinePath(p.name)}">${p.name}</a>: run <span class="mono">${run.logical_date}</span></h1>
<div class="actions">${
      clearable
        ? postForm(ctx, `${path}/clear`, 'Clear failed nodes and their downstream', html``, {
            failed: 'true',
          })
        : ''
    }<a class="button secondary" href="${path}">Reload</a><a class="button secondary" href="${pipelinePath(p.name)}">Grid</a></div>
<div class="card"><h2>Run</h2><dl class="kv">
<dt>Status</dt><dd><span class="st st-${run.status}">${run.status}</span></dd>
<dt>Logical date</dt><dd class="mono">${run.logical_date}</dd>
<dt>Data interval</dt><dd>${run.data_interval === undefined ? html`<span class="muted">—</span>` : html`${timeTag(run.data_interval.start)} → ${timeTag(run.data_interval.end)}`}</dd>
<dt>Run task</dt><dd><a class="mono" href="/tasks/${encodeURIComponent(run.run_id)}">${run.run_id}</a></dd>
<dt>Created</dt><dd>${timeTag(run.created_at)}</dd>
<dt>Updated</dt><dd>${timeTag(run.updated_at)}</dd>
${run.error === undefined ? '' : html`<dt>Error</dt><dd>${run.error}</dd>`}
</dl></div>
<div class="card"><h2>Graph</h2><div class="scroll">${graphSvg(run.nodes)}</div>${legend()}</div>
<div class="card"><h2>Nodes</h2><div class="scroll"><table>
<thead><tr><th>Node</th><th>Type</th><th>State</th><th>Trigger</th><th>After</th><th class="n">Attempts</th><th class="n">Try</th><th>Task</th></tr></thead>
<tbody>${run.nodes.map(nodeRow)}</tbody></table></div>
${clearable ? html`<p class="muted">Clearing reopens the run: its failed and cancelled nodes, with every node downstream of them, run again (as new tasks: the try goes up).</p>` : ''}
</div>`,
  });
}

function nodeRow(n: NodeView): Html {
  return html`<tr id="node-${n.name}"><td><strong>${n.name}</strong></td><td>${n.type}</td><td><span class="st st-${n.state}">${stateText(n.state)}</span></td><td>${n.trigger}</td><td>${n.after.length === 0 ? html`<span class="muted">—</span>` : n.after.join(', ')}</td><td class="n">${n.attempts ?? html`<span class="muted">—</span>`}</td><td class="n">${n.try}</td><td>${taskLink(n)}</td></tr>`;
}

function taskLink(n: NodeView): Html {
  return n.task_id === undefined
    ? html`<span class="muted">—</span>`
    : html`<a class="mono" href="/tasks/${encodeURIComponent(n.task_id)}">${n.task_id}</a>`;
}

/**
 * The run's graph as SVG: a box per node, coloured by its state (`ns-<state>`), with its name and
 * state, linking to its task when it has one; a curve with an arrow per dependency.
 */
export function graphSvg(nodes: readonly NodeView[]): Html {
  const g = layoutGraph(nodes);
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const box = (n: NodeView, x: number, y: number) => {
    const name = n.name.length > NAME_CHARS ? `${n.name.slice(0, NAME_CHARS - 1)}…` : n.name;
    const drawn = html`<g class="node ns-${n.state}" data-node="${n.name}"><title>${n.name} (${n.type}) · ${stateText(n.state)}${n.after.length === 0 ? '' : ` · after ${n.after.join(', ')}`}</title><rect x="${x}" y="${y}" width="${g.nodeWidth}" height="${g.nodeHeight}" rx="6"></rect><text x="${x + 10}" y="${y + 18}" class="nn">${name}</text><text x="${x + 10}" y="${y + 35}" class="nt">${stateText(n.state)}${n.try > 1 ? ` · try ${n.try}` : ''}</text></g>`;
    return n.task_id === undefined
      ? drawn
      : html`<a href="/tasks/${encodeURIComponent(n.task_id)}" aria-label="${n.name}: ${stateText(n.state)}">${drawn}</a>`;
  };
  return html`<svg class="pgraph" xmlns="http://www.w3.org/2000/svg" width="${g.width}" height="${g.height}" viewBox="0 0 ${g.width} ${g.height}" aria-label="the run's graph: ${nodes.length} node(s), ${g.edges.length} dependency(ies)">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path class="arrow" d="M0 0L10 5L0 10z"></path></marker></defs>
${g.edges.map((e) => html`<path class="edge" data-from="${e.from}" data-to="${e.to}" d="${e.path}" marker-end="url(#arrow)"></path>`)}
${g.nodes.map((b) => box(byName.get(b.name) as NodeView, b.x, b.y))}
</svg>`;
}

/** A POST form that is not boosted (a refusal is a 4xx page, which htmx would not show), with the token. */
function postForm(
  ctx: PageContext,
  action: string,
  label: string,
  fields: Html,
  hidden: Readonly<Record<string, string>> = {},
): Html {
  return html`<form method="post" action="${action}" class="filters" hx-boost="false">
<input type="hidden" name="${TOKEN_FIELD}" value="${ctx.token}">${Object.entries(hidden).map(
    ([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`,
  )}${fields}
<button type="submit"${ctx.actionsAllowed ? '' : html` disabled title="read-only console: start kaj ui with --allow-actions"`}>${label}</button>
</form>`;
}
