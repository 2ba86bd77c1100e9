/**
 * The console's pages: pure functions from what the backend read to HTML. Every value from a
 * task (payload, result, errors, types) goes through the escaping `html` tag.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { PRIORITIES } from '../shared/config/resources.js';
import { OVERLAP_DESCRIPTIONS, OVERLAP_POLICIES, type OverlapPolicy } from '../shared/schedule/model.js';
import type { ScheduleSummary, ScheduleView } from '../shared/schedule/views.js';
import type { ListedTask } from '../shared/task/task-store.js';
import { boundedText, DELAYED_COUNT_BOUND } from '../shared/task/delayed-count.js';
import { listedAt } from '../shared/task/listing.js';
import { MAX_REASON_LENGTH } from '../shared/task/operations.js';
import { LISTED_STATUSES, LISTING_VIEWS, type TaskRecord } from '../shared/task/model.js';
import { throughputChart, totals } from './chart.js';
import { bytes, count, duration, jsonBytes, jsonText, timeTag } from './format.js';
import { type Html, html, type Part } from './html.js';
import type { Job } from './jobs.js';
import { actionForm, type Flash, layout, type PageContext } from './layout.js';
import type { DeadLetterView, DeadTaskRow, Overview, TaskPage, TaskQuery } from './model.js';
import { SINCE_CHOICES, type SinceChoice } from './params.js';
import { parentTerm, runCards, type RunView } from './workflow.js';

/* ---------- overview ---------- */

export function overviewPage(ctx: PageContext, ov: Overview): Html {
  return layout(ctx, {
    title: 'Overview',
    section: 'overview',
    body: html`<h1>Overview</h1>${overviewLive(ov)}`,
  });
}

/** The part of the overview that refreshes itself (the same markup each time: nothing jumps). */
export function overviewLive(ov: Overview): Html {
  const sum = (f: (q: Overview['queues'][number]) => number) => ov.queues.reduce((n, q) => n + f(q), 0);
  const dead = ov.dlqs.reduce((n, d) => n + d.visible + d.inFlight, 0);
  const t = ov.throughput;
  const tot = t.available ? totals(t.buckets) : undefined;
  return html`<div id="live" hx-get="/fragments/overview" hx-trigger="every 5s" hx-swap="outerHTML" aria-live="off" data-read-at="${ov.at}">
<div class="card">
<h2>Tasks by status</h2>
<div class="stats">
  ${stat('Queued', count(sum((q) => q.visible)), 'ready in the queues (SQS ApproximateNumberOfMessages)')}
  ${stat('In flight', count(sum((q) => q.inFlight)), 'received by a consumer: running, or about to (SQS ApproximateNumberOfMessagesNotVisible)')}
  ${stat('Delayed in queue (SQS)', count(sum((q) => q.delayed)), 'sent with a delay of up to 15 minutes: retry backoff, delay_seconds (SQS ApproximateNumberOfMessagesDelayed)', 'delayed-sqs')}
  ${stat(
    'Delayed in table (> 15 min)',
    html`<a href="/tasks?status=delayed">${boundedText(ov.delayedInTable, count)}</a>`,
    `waiting in the task table until SQS can hold the rest of the delay (beyond its 15 minutes), every lane; from the outbox index${ov.delayedInTable.capped ? `, counted up to ${count(DELAYED_COUNT_BOUND)} per partition` : ''}`,
    'delayed-table',
  )}
  ${ov.statuses.map((s) =>
    stat(
      s.status,
      html`<a href="/tasks?status=${s.status}">${count(s.count)}${s.capped ? '+' : ''}</a>`,
      `${s.status} tasks in the listing index${s.capped ? ` (counted up to ${count(s.count)})` : ''}`,
    ),
  )}
  ${stat('Dead letters', html`<a href="/dead-letters">${count(dead)}</a>`, 'messages in the DLQs (visible and held)')}
</div>
<p class="muted">Queued, in flight and delayed in queue are queue depths (approximate, up to a minute behind on AWS); delayed in table is counted from the outbox index, at most ${count(DELAYED_COUNT_BOUND)} per partition (27 partitions), and ${LISTED_STATUSES.join(', ')} from the listing index, at most 1,000 each, every 15 s; succeeded tasks are not indexed (see the throughput below).</p>
</div>
<div class="grid">
<div class="card">
<h2>Queues</h2>
<div class="scroll"><table>
<thead><tr><th>Lane</th><th>Priority</th><th class="n">Visible</th><th class="n">In flight</th><th class="n" title="sent with a delay of up to 15 minutes (SQS)">Delayed (SQS)</th><th class="n" title="age of the oldest message (CloudWatch); not known locally">Oldest</th></tr></thead>
<tbody>${ov.queues.map(
    (q) =>
      html`<tr><td>${q.lane ?? 'default'}</td><td>${q.priority}</td><td class="n">${count(q.visible)}</td><td class="n">${count(q.inFlight)}</td><td class="n">${count(q.delayed)}</td><td class="n">${q.oldestAgeSeconds === null ? html`<span class="muted" title="SQS's GetQueueAttributes has no age of the oldest message; on AWS it comes from CloudWatch">—</span>` : duration(q.oldestAgeSeconds * 1000)}</td></tr>`,
  )}</tbody>
</table></div>
<h2>Dead-letter queues</h2>
<div class="scroll"><table>
<thead><tr><th>DLQ</th><th class="n">Visible</th><th class="n">Held</th></tr></thead>
<tbody>${ov.dlqs.map(
    (d) =>
      html`<tr><td>${d.priority}</td><td class="n">${count(d.visible)}</td><td class="n">${count(d.inFlight)}</td></tr>`,
  )}</tbody>
</table></div>
</div>
<div class="card">
<h2>Last hour</h2>
${
  t.available && tot !== undefined
    ? html`<div class="stats">
  ${stat('Succeeded', count(tot.succeeded), 'tasks that succeeded', 'hour-succeeded')}
  ${stat('Failed', count(tot.failed), 'tasks that failed for good (dead-lettered)', 'hour-failed')}
  ${stat('Retried', count(tot.retried), 'attempts that failed and were retried', 'hour-retried')}
  ${stat('Failure rate', tot.failureRate === undefined ? '—' : `${(tot.failureRate * 100).toFixed(1)} %`, 'failed ÷ (succeeded + failed)')}
</div>
${throughputChart(t.buckets, t.bucketSeconds)}
<p class="muted">From ${t.source}.</p>`
    : html`<p class="muted">Not available: ${t.available ? '' : t.reason}</p>`
}
</div>
</div>
${ov.limits === undefined || ov.limits.length === 0 ? '' : limitsCard(ov)}
<p class="muted">Read ${timeTag(ov.at)}; refreshes every 5 s.</p>
</div>`;
}

function limitsCard(ov: Overview): Html {
  return html`<div class="card"><h2>Limits in use</h2><div class="scroll"><table>
<thead><tr><th>Limit</th><th>Key</th><th>Kind</th><th class="n">Holders</th><th class="n">Free</th><th class="n">Of</th><th>Paused</th><th>Waiting</th></tr></thead>
<tbody>${(ov.limits ?? []).map(
    (l) =>
      html`<tr><td>${l.limit}</td><td>${l.key ?? '—'}</td><td>${l.kind}</td><td class="n">${l.kind === 'concurrency' ? count(l.holders) : '—'}</td><td class="n">${count(l.tokensAvailable)}</td><td class="n">${count(l.capacity)}</td><td>${l.pausedUntil !== undefined && l.pausedUntil > ov.at ? html`until ${timeTag(l.pausedUntil)}` : '—'}</td><td>${l.refusedRecently ? `yes (${count(l.refused)} refusals)` : 'no'}</td></tr>`,
  )}</tbody></table></div></div>`;
}

function stat(label: string, value: Part, help: string, key = label.toLowerCase().replace(/[^a-z]+/g, '-')): Html {
  return html`<div title="${help}"><div class="muted">${label}</div><div class="stat" data-stat="${key}">${value}</div></div>`;
}

/* ---------- tasks ---------- */

export function tasksPage(ctx: PageContext, q: TaskQuery, since: SinceChoice | undefined, page: TaskPage): Html {
  const base = { status: q.status, type: q.type, priority: q.priority, since };
  const next = page.cursor === undefined ? undefined : `/tasks?${query({ ...base, cursor: page.cursor })}`;
  return layout(ctx, {
    title: `Tasks: ${q.status}`,
    section: 'tasks',
    body: html`<h1>Tasks</h1>
<form class="filters" method="get" action="/tasks">
  <label>Status<select name="status">${LISTING_VIEWS.map((s) => option(s, s === 'delayed' ? 'delayed (waiting in the table)' : s, q.status === s))}</select></label>
  <label>Type<input name="type" value="${q.type ?? ''}" placeholder="any" size="16"></label>
  <label>Priority<select name="priority">${option('', 'any', q.priority === undefined)}${PRIORITIES.map((p) => option(p, p, q.priority === p))}</select></label>
  <label>Entered status<select name="since">${option('', 'any time', since === undefined)}${Object.keys(SINCE_CHOICES).map((s) => option(s, `last ${s}`, since === s))}</select></label>
  <button type="submit">Show</button>
</form>
<div class="card scroll">
${
  page.items.length === 0
    ? html`<p>No ${q.status} tasks${q.type === undefined ? '' : html` of type <code>${q.type}</code>`} here.</p>`
    : html`<table>
<thead><tr><th>Task</th><th>Type</th><th>Status</th><th>Priority</th><th class="n">Attempts</th><th>${q.status === 'delayed' ? 'Runs at' : 'Since'}</th><th>Last error</th></tr></thead>
<tbody>${page.items.map((t) => taskRow(t, q.status === 'delayed'))}</tbody></table>`
}
</div>
<div class="pager">${next === undefined ? html`<span class="muted">${count(page.items.length)} task(s); no more.</span>` : html`<a class="button secondary" href="${next}">Next page →</a>`}
${q.cursor === undefined ? '' : html`<a class="button secondary" href="/tasks?${query(base)}">First page</a>`}</div>
<p class="muted">Newest first, from the listing index (no table scan): retrying, failed, cancelled, and running tasks past their first heartbeat; <em>delayed</em> lists the queued tasks that wait in the table (beyond SQS's 15-minute delay), soonest first. Other queued tasks wait in the queues (their number is on the overview).</p>`,
  });
}

function taskRow(t: ListedTask, delayed: boolean): Html {
  return html`<tr><td class="mono"><a href="/tasks/${t.task_id}">${t.task_id}</a></td><td>${t.type}</td><td>${statusText(t.status)}</td><td>${t.priority}</td><td class="n">${t.attempts}/${t.max_attempts}</td><td>${timeTag(delayed ? t.run_at : listedAt(t))}</td><td>${t.last_error === undefined ? html`<span class="muted">—</span>` : short(`${t.last_error.name}: ${t.last_error.message}`, 90)}</td></tr>`;
}

/* ---------- one task ---------- */

/** A task's page; a workflow run's (`run`: from its history) adds its step timeline and what it waits for. */
export function taskPage(ctx: PageContext, r: TaskRecord, flash?: Flash, run?: RunView): Html {
  const cancellable =
    r.status === 'queued' || r.status === 'retrying' || (r.status === 'running' && !r.cancel_requested);
  const redrivable = r.status === 'failed' && r.discarded_at === undefined;
  const payload = jsonText(r.payload);
  return layout(ctx, {
    title: `Task ${r.task_id}`,
    section: 'tasks',
    ...(flash === undefined ? {} : { flash }),
    body: html`<h1>Task <span class="mono">${r.task_id}</span></h1>
<div class="actions">
  ${cancellable ? actionForm(ctx, { action: `/tasks/${r.task_id}/cancel`, label: r.status === 'running' ? 'Request cancel' : 'Cancel', secondary: true }) : ''}
  ${redrivable ? actionForm(ctx, { action: `/tasks/${r.task_id}/redrive`, label: 'Redrive' }) : ''}
  <a class="button secondary" href="/tasks/${r.task_id}">Reload</a>
</div>
<div class="grid">
<div class="card"><h2>Record</h2><dl class="kv">
  <dt>Status</dt><dd>${statusText(r.status)}${r.cancel_requested && r.status === 'running' ? ' (cancel requested)' : ''}${r.discarded_at === undefined ? '' : html` · discarded ${timeTag(r.discarded_at)}`}</dd>
  <dt>Type</dt><dd>${r.type}</dd>
  <dt>Priority</dt><dd>${r.priority}${r.lane === undefined ? '' : ` · lane ${r.lane}`}</dd>
  <dt>Attempts</dt><dd>${r.attempts} of ${r.max_attempts}${r.crashes ? ` · ${r.crashes} crash(es)` : ''}</dd>
  <dt>Created</dt><dd>${timeTag(r.created_at)}</dd>
  <dt>Run at</dt><dd>${timeTag(r.run_at)}</dd>
  <dt>Started</dt><dd>${timeTag(r.started_at)}</dd>
  <dt>Finished</dt><dd>${timeTag(r.finished_at)}</dd>
  <dt>Payload size</dt><dd>${bytes(jsonBytes(r.payload))}</dd>
  ${r.owner === undefined ? '' : html`<dt>Owner</dt><dd class="mono">${r.owner}</dd>`}
  ${r.tenant === undefined ? '' : html`<dt>Tenant</dt><dd>${r.tenant}</dd>`}
  ${parentTerm(r)}
  ${r.schedule === undefined ? '' : html`<dt>Schedule</dt><dd><a href="/schedules/${r.schedule}">${r.schedule}</a> (${r.scheduled_time ?? ''})</dd>`}
  ${r.redrive_count ? html`<dt>Redriven</dt><dd>${r.redrive_count} time(s)</dd>` : ''}
</dl></div>
<div class="card"><h2>Last error</h2>${
      r.last_error === undefined
        ? html`<p class="muted">None.</p>`
        : html`<p><strong>${r.last_error.name}</strong>${r.last_error.code === undefined ? '' : html` <code>${r.last_error.code}</code>`} — ${r.last_error.retryable ? 'retryable' : 'permanent'}</p><pre>${r.last_error.message}</pre>`
    }
<h2>Result</h2>${r.result === undefined ? html`<p class="muted">None.</p>` : html`<pre>${jsonText(r.result).text}</pre>`}
</div>
</div>
${run === undefined ? '' : runCards(ctx, r, run)}
<div class="card"><h2>Attempts</h2>${
      r.history.length === 0
        ? html`<p class="muted">No attempt has finished yet.</p>`
        : html`<ol class="timeline" aria-label="attempt history">${r.history.map(
            (h) =>
              html`<li class="o-${h.outcome}"><strong>Attempt ${h.attempt}</strong> · <span class="st st-${h.outcome}">${h.outcome}</span><br>
<span class="muted">started</span> ${timeTag(h.started_at)} · <span class="muted">took</span> ${duration(h.duration_ms)} · <span class="muted">ended</span> ${timeTag(h.finished_at)}${
                h.error === undefined
                  ? ''
                  : html`<br><code>${h.error.code ?? ''}</code> ${h.error.name}: ${short(h.error.message, 400)}`
              }</li>`,
          )}</ol>`
    }</div>
<div class="card"><h2>Audit trail</h2>${
      (r.audit ?? []).length === 0
        ? html`<p class="muted">No operator action (redrive, purge, cancel) on this task.</p>`
        : html`<div class="scroll"><table><thead><tr><th>Action</th><th>By</th><th>At</th><th>Reason</th></tr></thead><tbody>${(
            r.audit ?? []
          ).map(
            (a) =>
              html`<tr><td>${a.action}</td><td>${a.by}</td><td>${timeTag(a.at)}</td><td>${a.reason ?? html`<span class="muted">—</span>`}</td></tr>`,
          )}</tbody></table></div>`
    }</div>
<div class="card"><details><summary>Payload (${bytes(jsonBytes(r.payload))})</summary><pre>${payload.text}</pre></details></div>`,
  });
}

/* ---------- dead letters ---------- */

/** Dead tasks with the same type and last error. */
export interface DeadGroup {
  /** Stable id of (type, error), for the confirmation URL. */
  readonly id: string;
  readonly type: string | undefined;
  readonly error: string | undefined;
  readonly tasks: readonly DeadTaskRow[];
  /** Task ids the group can act on (messages that are not Kaj's have none). */
  readonly taskIds: readonly string[];
  readonly newest?: string;
  readonly oldest?: string;
}

export function groupId(type: string | undefined, error: string | undefined): string {
  return createHash('sha256')
    .update(`${type ?? ''}\n${error ?? ''}`)
    .digest('base64url')
    .slice(0, 16);
}

/** Groups by type and last error, the largest first. */
export function groupDeadLetters(tasks: readonly DeadTaskRow[]): DeadGroup[] {
  const groups = new Map<string, DeadTaskRow[]>();
  for (const t of tasks) {
    const id = groupId(t.type, t.lastError);
    const g = groups.get(id);
    if (g === undefined) groups.set(id, [t]);
    else g.push(t);
  }
  return [...groups.entries()]
    .map(([id, rows]) => {
      const times = rows
        .map((r) => r.deadSince)
        .filter((s): s is string => s !== undefined)
        .sort();
      const first = rows[0] as DeadTaskRow;
      return {
        id,
        type: first.type,
        error: first.lastError,
        tasks: rows,
        taskIds: [...new Set(rows.map((r) => r.taskId).filter((s): s is string => s !== undefined))],
        ...(times.length === 0 ? {} : { oldest: times[0] as string, newest: times[times.length - 1] as string }),
      };
    })
    .sort((a, b) => b.tasks.length - a.tasks.length || (a.type ?? '').localeCompare(b.type ?? ''));
}

export function deadLettersPage(ctx: PageContext, view: DeadLetterView, groups: readonly DeadGroup[]): Html {
  return layout(ctx, {
    title: 'Dead letters',
    section: 'dead-letters',
    body: html`<h1>Dead letters</h1>
<p class="muted">${count(view.tasks.length)} dead task(s) in the DLQs${view.truncated ? ' (reading stopped at the bound: there are more)' : ''}. Reading a DLQ receives its messages and releases them at once (SQS has no peek), so this page does not refresh by itself: <a href="/dead-letters">read again</a>.</p>
${
  groups.length === 0
    ? html`<div class="card"><p>No dead tasks. 🎉</p></div>`
    : html`<div class="card scroll"><table>
<thead><tr><th class="n">Tasks</th><th>Type</th><th>Last error</th><th>Died</th><th>Actions</th></tr></thead>
<tbody>${groups.map(
        (g) => html`<tr>
<td class="n"><strong>${count(g.tasks.length)}</strong></td>
<td>${g.type ?? html`<span class="muted">(not a Kaj message)</span>`}</td>
<td>${g.error === undefined ? html`<span class="muted">—</span>` : short(g.error, 160)}
<details><summary>${count(g.taskIds.length)} task id(s)</summary><ul class="mono">${g.taskIds.slice(0, 50).map((id) => html`<li><a href="/tasks/${id}">${id}</a></li>`)}${g.taskIds.length > 50 ? html`<li>… ${count(g.taskIds.length - 50)} more</li>` : ''}</ul></details></td>
<td>${g.oldest === undefined ? '—' : html`${timeTag(g.oldest)}${g.newest !== g.oldest ? html`<br>to ${timeTag(g.newest)}` : ''}`}</td>
<td><div class="actions">${
          g.taskIds.length === 0
            ? html`<span class="muted">inspect with <code>kaj dlq list</code></span>`
            : html`<a class="button" href="/dead-letters/confirm?verb=redrive&amp;group=${g.id}">Redrive these</a>
<a class="button secondary" href="/dead-letters/confirm?verb=purge&amp;group=${g.id}">Purge these</a>`
        }</div></td></tr>`,
      )}</tbody></table></div>`
}`,
  });
}

const VERB_TEXT = {
  redrive: {
    title: 'Redrive',
    explain:
      'Each task record is reset (status queued, attempts 0, an audit entry with you and the reason), its message is sent to the queue it died on, and only then its dead letter is deleted: the path of kaj dlq redrive.',
  },
  purge: {
    title: 'Purge',
    explain:
      'Each task is marked discarded (audited; the record then expires after the usual retention), and only then its dead letter is deleted, for good: the path of kaj dlq purge.',
  },
} as const;

export function confirmPage(ctx: PageContext, verb: 'redrive' | 'purge', g: DeadGroup): Html {
  const v = VERB_TEXT[verb];
  return layout(ctx, {
    title: `${v.title} ${g.taskIds.length} task(s)?`,
    section: 'dead-letters',
    body: html`<h1>${v.title} ${count(g.taskIds.length)} dead task(s)?</h1>
<div class="card">
<dl class="kv"><dt>Type</dt><dd>${g.type ?? '—'}</dd><dt>Last error</dt><dd>${g.error ?? '—'}</dd><dt>How many</dt><dd><strong>${count(g.taskIds.length)}</strong> task(s)</dd></dl>
<p>${v.explain}</p>
<details open><summary>Which: ${count(g.taskIds.length)} task id(s)</summary><pre>${g.taskIds.join('\n')}</pre></details>
<form method="post" action="/dead-letters/${verb}" class="filters">
<input type="hidden" name="_token" value="${ctx.token}">
<input type="hidden" name="ids" value="${g.taskIds.join(',')}">
<input type="hidden" name="description" value="${`${g.taskIds.length} ${g.type ?? ''} task(s) that died with: ${g.error ?? '—'}`.slice(0, 500)}">
<label>Reason (for the audit entries)<input name="reason" size="40" maxlength="${MAX_REASON_LENGTH}" placeholder="e.g. SMTP_HOST fixed"></label>
<button type="submit" class="${verb === 'purge' ? 'danger' : ''}"${ctx.actionsAllowed ? '' : html` disabled title="read-only console: start kaj ui with --allow-actions"`}>${v.title} these ${count(g.taskIds.length)}</button>
<a class="button secondary" href="/dead-letters">Cancel</a>
</form>
${ctx.actionsAllowed ? '' : html`<p class="flash bad">This console is read-only. Start it with <code>kaj ui --allow-actions</code> to act.</p>`}
</div>`,
  });
}

export function jobPage(ctx: PageContext, job: Job): Html {
  return layout(ctx, {
    title: `${VERB_TEXT[job.verb].title} ${job.finishedAt === undefined ? 'running' : 'done'}`,
    section: 'dead-letters',
    body: html`<h1>${VERB_TEXT[job.verb].title}: ${job.description}</h1>${jobLive(job)}`,
  });
}

/** The job's progress; polls itself until the job has finished. */
export function jobLive(job: Job): Html {
  const p = job.progress;
  const handled = p.done + p.skipped + p.failed;
  const running = job.finishedAt === undefined;
  const o = job.outcome;
  const doneWord = job.verb === 'redrive' ? 'redriven' : 'purged';
  return html`<div id="job" class="card"${running ? html` hx-get="/fragments/jobs/${job.id}" hx-trigger="every 1s" hx-swap="outerHTML"` : ''}>
<p role="status"><strong>${running ? 'Running…' : job.error !== undefined ? 'Stopped by an error' : 'Done.'}</strong> ${count(handled)} of ${count(job.total)} handled: ${count(p.done)} ${doneWord}, ${count(p.skipped)} skipped, ${count(p.failed)} failed.</p>
<progress max="${Math.max(1, job.total)}" value="${Math.min(handled, job.total)}" aria-label="progress">${count(handled)} / ${count(job.total)}</progress>
${job.error === undefined ? '' : html`<p class="flash bad">${job.error}</p>`}
${
  o === undefined || o.items.length === 0
    ? ''
    : html`<div class="scroll"><table><thead><tr><th>Task</th><th>Outcome</th><th>Action</th><th>Detail</th></tr></thead><tbody>${o.items
        .slice(0, 500)
        .map(
          (i) =>
            html`<tr><td class="mono">${i.task_id === null ? '—' : html`<a href="/tasks/${i.task_id}">${i.task_id}</a>`}</td><td class="st st-${i.outcome === 'done' ? 'succeeded' : i.outcome === 'failed' ? 'failed' : 'cancelled'}">${i.outcome}</td><td>${i.action}</td><td>${i.detail ?? ''}</td></tr>`,
        )}</tbody></table></div>`
}
${running ? '' : html`<p><a href="/dead-letters">Back to the dead letters</a></p>`}
</div>`;
}

/* ---------- schedules ---------- */

export function schedulesPage(
  ctx: PageContext,
  page: { readonly items: readonly ScheduleSummary[]; readonly cursor?: string },
  flash?: Flash,
): Html {
  return layout(ctx, {
    title: 'Schedules',
    section: 'schedules',
    ...(flash === undefined ? {} : { flash }),
    body: html`<h1>Schedules</h1>${
      page.items.length === 0
        ? html`<div class="card"><p>No schedules. Declare them in <code>defineTask({ schedules })</code> or <code>PUT /api/v1/schedules/{name}</code>.</p></div>`
        : html`<div class="card scroll"><table>
<thead><tr><th>Name</th><th>State</th><th>Type</th><th>When</th><th>Next fire</th><th>Last run</th><th>Outcome</th><th>Actions</th></tr></thead>
<tbody>${page.items.map(
            (s) =>
              html`<tr><td><a href="/schedules/${s.name}">${s.name}</a></td><td>${s.state}</td><td>${s.type}</td><td class="mono">${s.when}${s.timezone === 'UTC' ? '' : ` (${s.timezone})`}</td><td>${timeTag(s.next_fire_time)}</td><td>${timeTag(s.last_run?.scheduled_time)}</td><td>${s.last_outcome ?? html`<span class="muted">—</span>`}</td><td><div class="actions">${scheduleActions(ctx, s.name, s.state)}</div></td></tr>`,
          )}</tbody></table></div>`
    }
${page.cursor === undefined ? '' : html`<div class="pager"><a class="button secondary" href="/schedules?cursor=${page.cursor}">Next page →</a></div>`}`,
  });
}

function scheduleActions(ctx: PageContext, name: string, state: string): Html {
  const path = `/schedules/${encodeURIComponent(name)}`;
  return html`${
    state === 'paused'
      ? actionForm(ctx, { action: `${path}/resume`, label: 'Resume', secondary: true })
      : state === 'active'
        ? actionForm(ctx, { action: `${path}/pause`, label: 'Pause', secondary: true })
        : ''
  }${actionForm(ctx, { action: `${path}/trigger`, label: 'Trigger now', secondary: true })}`;
}

export function schedulePage(ctx: PageContext, v: ScheduleView, flash?: Flash): Html {
  return layout(ctx, {
    title: `Schedule ${v.name}`,
    section: 'schedules',
    ...(flash === undefined ? {} : { flash }),
    body: html`<h1>Schedule ${v.name}</h1>
<div class="actions">${scheduleActions(ctx, v.name, v.state)}</div>
<div class="grid">
<div class="card"><h2>State</h2><dl class="kv">
<dt>State</dt><dd>${v.state}${v.pause_note === undefined ? '' : ` — ${v.pause_note}`}</dd>
<dt>Source</dt><dd>${v.source}</dd><dt>Owner</dt><dd class="mono">${v.owner}</dd>
<dt>Fired</dt><dd>${count(v.fired)}</dd><dt>Missed</dt><dd>${count(v.missed)}</dd>
${overlapTerm(v.spec.overlap)}
</dl>
<h2>Next fire times</h2>${v.next_fire_times.length === 0 ? html`<p class="muted">None.</p>` : html`<ul>${v.next_fire_times.map((t) => html`<li>${timeTag(t)}</li>`)}</ul>`}
</div>
<div class="card"><h2>Spec</h2><pre>${jsonText(v.spec).text}</pre></div>
</div>
<div class="card"><h2>Recent runs</h2>${
      v.recent_runs.length === 0
        ? html`<p class="muted">No run yet.</p>`
        : html`<div class="scroll"><table><thead><tr><th>Scheduled</th><th>Outcome</th><th>Kind</th><th>Task</th><th>Task now</th><th>Reason</th></tr></thead><tbody>${v.recent_runs.map(
            (r) =>
              html`<tr><td>${timeTag(r.scheduled_time)}</td><td>${r.outcome}</td><td>${r.kind}</td><td class="mono">${r.task_id === undefined ? '—' : html`<a href="/tasks/${r.task_id}">${r.task_id}</a>`}</td><td>${r.task_status === undefined ? '—' : statusText(r.task_status)}</td><td>${r.reason ?? ''}</td></tr>`,
          )}</tbody></table></div>`
    }</div>`,
  });
}

/** The schedule's overlap policy and what it does (for `replace`: how long two runs may overlap). */
function overlapTerm(policy: unknown): Html {
  if (!(OVERLAP_POLICIES as readonly unknown[]).includes(policy)) return html``;
  const p = policy as OverlapPolicy;
  return html`<dt>Overlap</dt><dd><code>${p}</code>: ${OVERLAP_DESCRIPTIONS[p]}</dd>`;
}

/* ---------- errors ---------- */

export function errorPage(ctx: PageContext, title: string, message: string): Html {
  return layout(ctx, {
    title,
    section: 'none',
    body: html`<h1>${title}</h1><div class="card"><p>${message}</p><p><a href="/">Back to the overview</a></p></div>`,
  });
}

/* ---------- helpers ---------- */

function statusText(s: string): Html {
  return html`<span class="st st-${s}">${s}</span>`;
}

function option(value: string, text: string, selected: boolean): Html {
  return html`<option value="${value}"${selected ? html` selected` : ''}>${text}</option>`;
}

function short(s: string, max: number): Html {
  return s.length <= max ? html`${s}` : html`<span title="${s.slice(0, 2000)}">${s.slice(0, max)}…</span>`;
}

/** A query string of the defined values. */
export function query(p: Readonly<Record<string, string | undefined>>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(p)) if (v !== undefined) q.set(k, v);
  return q.toString();
}
