/**
 * A workflow run on its task page: its step timeline (steps, sleeps, signals, children, as
 * `GET /api/v1/tasks/{id}` shows them in `steps`), what a waiting run waits for (`waiting_for`),
 * the send-signal form, and a child's link to its parent run. Steps show the size of their
 * results, never the results (nor signal payloads): those are user data the page does not need.
 *
 * @module
 */
import type { TaskRecord } from '../shared/task/model.js';
import type { HistoryEntry } from '../shared/workflow/history-store.js';
import { type StepView, stepsView, type WaitingForView, waitingFor } from '../shared/workflow/view.js';
import { bytes, count, timeTag } from './format.js';
import { type Html, html } from './html.js';
import type { PageContext } from './layout.js';
import { TOKEN_FIELD } from './security.js';

/** What the send-signal form holds: what the operator typed, when a signal was refused. */
export interface SignalDraft {
  readonly name: string;
  readonly payload: string;
}

/** A workflow run as its task page shows it. */
export interface RunView {
  /** In the order they started. */
  readonly steps: readonly StepView[];
  /** A waiting run: what it waits for. */
  readonly waiting?: WaitingForView;
  readonly draft?: SignalDraft;
  /** The history could not be read: why (the page shows the rest of the task). */
  readonly unreadable?: string;
}

/** Characters an error message is cut to on the page (the whole one stays in the title). */
const ERROR_CHARS = 400;

/**
 * The run view of a task from its history entries, or undefined for a task that has none (no
 * workflow run, or one that has recorded nothing yet).
 */
export function runView(
  r: TaskRecord,
  entries: readonly HistoryEntry[],
  now: number,
  draft?: SignalDraft,
): RunView | undefined {
  if (entries.length === 0) return undefined;
  return {
    steps: stepsView(entries, now),
    ...(r.status === 'waiting' ? { waiting: waitingFor(entries, r.run_at) } : {}),
    ...(draft === undefined ? {} : { draft }),
  };
}

/** A child task's parent run (a term of the record's list), or nothing for a task that is no child. */
export function parentTerm(r: TaskRecord): Html {
  if (r.parent_id === undefined) return html``;
  return html`<dt>Parent run</dt><dd><a class="mono" rel="up" href="/tasks/${encodeURIComponent(r.parent_id)}">${r.parent_id}</a>${
    r.parent_step === undefined ? '' : html` · started by its call <code>${r.parent_step}</code>`
  }</dd>`;
}

/** The run's cards: the step timeline, and for a waiting run what it waits for (and the send-signal form). */
export function runCards(ctx: PageContext, r: TaskRecord, run: RunView): Html {
  if (run.unreadable !== undefined) {
    return html`<div class="card"><h2>Steps</h2><p class="flash bad">Could not read the workflow history of this task: ${cut(run.unreadable)}</p></div>`;
  }
  return html`<div class="card"><h2>Steps</h2>${
    run.steps.length === 0
      ? html`<p class="muted">No step recorded yet.</p>`
      : html`<ol class="timeline" aria-label="step timeline">${run.steps.map(stepRow)}</ol>`
  }</div>
${run.waiting === undefined ? '' : waitingCard(ctx, r, run)}`;
}

function stepRow(s: StepView): Html {
  const facts = [
    s.attempts === undefined ? undefined : html`${count(s.attempts)} attempt(s)`,
    s.started_at === undefined ? undefined : html`<span class="muted">started</span> ${timeTag(s.started_at)}`,
    s.ended_at === undefined ? undefined : html`<span class="muted">ended</span> ${timeTag(s.ended_at)}`,
    s.received_at === undefined ? undefined : html`<span class="muted">received</span> ${timeTag(s.received_at)}`,
    s.next_attempt_at === undefined
      ? undefined
      : html`<span class="muted">next attempt</span> ${timeTag(s.next_attempt_at)}`,
    s.until === undefined
      ? undefined
      : html`<span class="muted">${s.kind === 'signal' ? 'deadline' : 'until'}</span> ${timeTag(s.until)}`,
    s.result_bytes === undefined ? undefined : html`<span class="muted">result</span> ${bytes(s.result_bytes)}`,
  ].filter((f) => f !== undefined);
  return html`<li class="o-${s.status}" data-kind="${s.kind}"><strong>${s.name}</strong> <span class="muted">${s.kind}</span> · <span class="st st-${s.status}">${s.status.replace('_', ' ')}</span>${
    s.child_id === undefined
      ? ''
      : html` · <span class="muted">task</span> <a class="mono" href="/tasks/${encodeURIComponent(s.child_id)}">${s.child_id}</a>`
  }${facts.length === 0 ? '' : html`<br>${facts.map((f, i) => (i === 0 ? f : html` · ${f}`))}`}${
    s.error === undefined
      ? ''
      : html`<br>${s.error.code === undefined ? '' : html`<code>${s.error.code}</code> `}${s.error.name}: ${cut(s.error.message)}`
  }</li>`;
}

function waitingCard(ctx: PageContext, r: TaskRecord, run: RunView): Html {
  const w = run.waiting as WaitingForView;
  const names = (w.signals ?? []).map((g) => g.name);
  const open = run.steps.filter((s) => s.kind === 'child' && s.status === 'running' && s.child_id !== undefined);
  return html`<div class="card" id="waiting-for"><h2>Waiting for</h2>
<ul aria-label="what the run waits for">
<li><span class="muted">its timer</span> ${timeTag(w.timer)} <span class="muted">(a sleep's end, a step's next attempt or a signal's deadline: the run goes on then at the latest)</span></li>
${(w.signals ?? []).map((g) => html`<li>signal <code>${g.name}</code> <span class="muted">until</span> ${timeTag(g.deadline)}</li>`)}
${
  w.children === undefined
    ? ''
    : html`<li>${count(w.children)} child task(s) still open${
        open.length === 0
          ? ''
          : html`: ${open.map((s, i) => html`${i === 0 ? '' : ', '}<a class="mono" href="/tasks/${encodeURIComponent(s.child_id ?? '')}">${s.child_id}</a>`)}`
      }</li>`
}
</ul>
${
  ctx.actionsAllowed
    ? signalForm(ctx, r, names, run.draft)
    : html`<p class="muted">Read-only console: send a signal with <code>kaj task signal ${r.task_id} NAME --data JSON</code>, or start <code>kaj ui</code> with <code>--allow-actions</code>.</p>`
}
</div>`;
}

/** The send-signal form: the name prefilled with the first signal the run waits for, the others offered. */
function signalForm(ctx: PageContext, r: TaskRecord, names: readonly string[], draft: SignalDraft | undefined): Html {
  // A plain POST (not boosted): a refusal is a 4xx page, which htmx would not show.
  return html`<h2>Send a signal</h2>
<form method="post" action="/tasks/${r.task_id}/signal" class="filters" hx-boost="false">
<input type="hidden" name="${TOKEN_FIELD}" value="${ctx.token}">
<label>Signal name<input name="name" value="${draft?.name ?? names[0] ?? ''}" list="signal-names" required maxlength="64" size="24" autocomplete="off" spellcheck="false" placeholder="lower_snake_case"></label>
<datalist id="signal-names">${names.map((n) => html`<option value="${n}"></option>`)}</datalist>
<label>Payload (JSON; empty sends null)<textarea name="payload" rows="4" cols="48" spellcheck="false" placeholder='{"approved": true}'>${draft?.payload ?? ''}</textarea></label>
<button type="submit">Send signal</button>
</form>`;
}

/** Text cut to {@link ERROR_CHARS}, the whole of it (up to 2,000 characters) on hover. */
function cut(s: string): Html {
  return s.length <= ERROR_CHARS
    ? html`${s}`
    : html`<span title="${s.slice(0, 2000)}">${s.slice(0, ERROR_CHARS)}…</span>`;
}
