/**
 * The console's page of a workflow run, over Kaj in memory (unitKaj, MemoryHistoryStore): its step
 * timeline (escaped, results only as sizes), the links between a run and its children, what a
 * waiting run waits for, and the send-signal action (`signalRoute` as an operator) with its
 * refusals, each a 4xx page saying what is wrong.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { workflowConsole } from '../../../cli/console/backend.js';
import { ConsoleApp, type ConsoleRequest, type ConsoleResponse } from '../../../console/app.js';
import type { ConsoleBackend } from '../../../console/model.js';
import { childTaskId } from '../../../shared/task/child.js';
import { defineTask, PermanentError, TaskRegistry } from '../../../shared/task/define.js';
import type { TaskMessage } from '../../../shared/task/message.js';
import { defineWorkflow } from '../../../shared/workflow/define.js';
import { apiEvent, lambdaContext, sqsEvent, sqsRecord, unitKaj } from '../../../testing/fixtures.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';

const HOSTILE_STEP = '<img src=x onerror=alert(1)>';
const HOSTILE_ERROR = 'card declined: <script>alert("pwned")</script>';
const RESULT_SECRET = 'RESULT-SECRET-4111111111111111';
const HOUR = 3_600_000;
const TOKEN = 'tok-wf';
const PORT = 3000;

const sms = defineTask({
  type: 'send_sms',
  schema: z.object({ to: z.string() }),
  handler: async () => ({ sent: true }),
});

/** A step (its result a secret), a step that fails for good (caught), a signal's wait, then a sleep. */
const approval = defineWorkflow({
  type: 'approval',
  schema: z.object({}),
  timeoutSeconds: 30,
  run: async (_input, wf) => {
    await wf.step(HOSTILE_STEP, () => ({ card: RESULT_SECRET }));
    try {
      await wf.step(
        'charge',
        () => {
          throw new PermanentError(HOSTILE_ERROR, { code: 'CARD_DECLINED' });
        },
        { maxAttempts: 1 },
      );
    } catch {
      // StepFailedError: the run goes on without the charge.
    }
    const decision = await wf.waitForSignal<{ approved: boolean }>('manager_approval', { timeout: '48h' });
    if (decision === null) await wf.sleep('cool_off', '1h');
    return { approved: decision?.approved ?? null };
  },
});

/** A run that starts one child and waits for it. */
const notify = defineWorkflow({
  type: 'notify',
  schema: z.object({}),
  timeoutSeconds: 30,
  run: async (_input, wf) => wf.run(sms, { to: '+15550100' }, { name: 'text_customer' }),
});

const registry = new TaskRegistry([sms, approval, notify]);

function setup() {
  const history = new MemoryHistoryStore();
  const u = unitKaj(registry, undefined, undefined, { history, defaultOwner: 'someone-else' });
  return { ...u, history };
}
type Unit = ReturnType<typeof setup>;

const unused = async (): Promise<never> => {
  throw new Error('not read by the task page');
};

/** The console's backend as `kaj ui` builds it on these services: the record, and the workflow runs. */
function backendOf(u: Unit, o: { workflows?: boolean } = {}): ConsoleBackend {
  return {
    label: 'unit',
    overview: unused,
    listTasks: unused,
    cancelTask: unused,
    deadLetters: unused,
    redrive: unused,
    purge: unused,
    getTask: (id) => u.store.get(id),
    ...(o.workflows === false
      ? {}
      : {
          workflows: workflowConsole({
            lifecycle: u.kaj.lifecycle,
            registry,
            history: u.history,
            now: () => u.clock.now(),
            historyRetentionDays: 30,
          }),
        }),
  };
}

function consoleOf(u: Unit, o: { actions?: boolean; workflows?: boolean } = {}): ConsoleApp {
  return new ConsoleApp({
    backend: backendOf(u, o),
    token: TOKEN,
    port: () => PORT,
    actionsAllowed: o.actions ?? true,
    actor: 'alice',
    clock: u.clock,
    newId: () => 'id',
  });
}

function get(path: string): ConsoleRequest {
  const url = new URL(path, 'http://x');
  return {
    method: 'GET',
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: { host: `127.0.0.1:${PORT}` },
    form: {},
  };
}

function post(path: string, form: Record<string, string>, headers: Record<string, string> = {}): ConsoleRequest {
  return { method: 'POST', path, query: {}, headers: { host: `127.0.0.1:${PORT}`, ...headers }, form };
}

const body = (r: ConsoleResponse) => String(r.body);

async function page(app: ConsoleApp, id: string): Promise<string> {
  const r = await app.handle(get(`/tasks/${id}`));
  expect(r.status).toBe(200);
  return body(r);
}

/** Sends the signal form as the run's page would (with its token). */
const sendSignal = (app: ConsoleApp, id: string, name: string, payload: string) =>
  app.handle(post(`/tasks/${id}/signal`, { _token: TOKEN, name, payload }));

async function submit(u: Unit, type: string): Promise<string> {
  const res = await u.kaj.handleHttp(
    apiEvent('POST', '/api/v1/tasks', { body: JSON.stringify({ type, payload: {} }) }),
  );
  expect(res.statusCode).toBe(202);
  return (JSON.parse(res.body) as { task_id: string }).task_id;
}

function messagesOf(u: Unit, taskId: string): TaskMessage[] {
  return u.queue.sent.filter((s) => s.message.task_id === taskId).map((s) => s.message);
}

/** Delivers the newest message sent for the task (as SQS would once its delay passed). */
async function deliverLatest(u: Unit, taskId: string): Promise<void> {
  const message = messagesOf(u, taskId).at(-1);
  expect(message).toBeDefined();
  await u.kaj.processBatch(sqsEvent(sqsRecord(message)), lambdaContext());
}

/** An approval run, run once: waiting for `manager_approval` (48 h). */
async function waitingApproval(u: Unit): Promise<string> {
  const id = await submit(u, 'approval');
  await deliverLatest(u, id);
  expect((await u.store.get(id))?.status).toBe('waiting');
  return id;
}

/** A notify run, run once: waiting for its child, which is queued. */
async function waitingNotify(u: Unit): Promise<{ runId: string; childId: string }> {
  const runId = await submit(u, 'notify');
  await deliverLatest(u, runId);
  expect((await u.store.get(runId))?.status).toBe('waiting');
  const childId = childTaskId(runId, 'text_customer');
  expect((await u.store.get(childId))?.parent_id).toBe(runId);
  return { runId, childId };
}

/** The rows of the page's step timeline. */
function stepRows(html: string): string[] {
  const list = /<ol class="timeline" aria-label="step timeline">([\s\S]*?)<\/ol>/.exec(html)?.[1];
  expect(list).toBeDefined();
  return (list ?? '').split('</li>').filter((row) => row.includes('<li'));
}

/** The "Waiting for" card, or undefined. */
const waitingCard = (html: string) => /<div class="card" id="waiting-for">([\s\S]*?)<\/div>/.exec(html)?.[1];

const signalEntry = (u: Unit, id: string) =>
  u.history.all().find((e) => e.run_id === id && e.key === 'signal#manager_approval');

describe('console: a workflow run’s page', () => {
  it('draws the step timeline in order, one row per step and signal wait; names and errors escaped, results as sizes only', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const html = await page(consoleOf(u), id);
    const rows = stepRows(html);
    const api = JSON.parse((await u.kaj.handleHttp(apiEvent('GET', `/api/v1/tasks/${id}`))).body) as {
      steps: unknown[];
    };
    expect(rows).toHaveLength(api.steps.length);
    expect(rows.map((r) => /data-kind="(\w+)"/.exec(r)?.[1])).toEqual(['step', 'step', 'signal']);
    const [first, charge, wait] = rows as [string, string, string];
    expect(first).toContain('<strong>&lt;img src=x onerror=alert(1)&gt;</strong>');
    expect(first).toContain('<span class="st st-succeeded">succeeded</span>');
    expect(first).toMatch(/1 attempt\(s\) · <span class="muted">started<\/span> <time/);
    expect(first).toMatch(/<span class="muted">result<\/span> \d+ B/);
    expect(charge).toContain('<strong>charge</strong>');
    expect(charge).toContain('<span class="st st-failed">failed</span>');
    expect(charge).toContain(
      '<code>CARD_DECLINED</code> PermanentError: card declined: &lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;',
    );
    expect(wait).toContain('<strong>manager_approval</strong> <span class="muted">signal</span>');
    expect(wait).toContain('<span class="st st-waiting">waiting</span>');
    const deadline = new Date(u.clock.now() + 48 * HOUR).toISOString();
    expect(wait).toContain(`<span class="muted">deadline</span> <time datetime="${deadline}"`);
    // Nothing hostile gets through as markup, and no step result is on the page.
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain(RESULT_SECRET);
    // The attempts keep their own card beside it.
    expect(html).toContain('<h2>Attempts</h2>');
  });

  it('says what a waiting run waits for: its timer and the signal with its deadline; a finished run waits for nothing', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const card = waitingCard(await page(consoleOf(u), id));
    expect(card).toBeDefined();
    const deadline = new Date(u.clock.now() + 48 * HOUR).toISOString();
    const runAt = (await u.store.get(id))?.run_at;
    expect(runAt).toBe(deadline);
    expect(card).toContain(`<span class="muted">its timer</span> <time datetime="${runAt}"`);
    expect(card).toContain(
      `<li>signal <code>manager_approval</code> <span class="muted">until</span> <time datetime="${deadline}"`,
    );
    expect(card).not.toContain('child task(s)');

    expect((await sendSignal(consoleOf(u), id, 'manager_approval', '{"approved":true}')).status).toBe(303);
    await deliverLatest(u, id);
    expect((await u.store.get(id))?.status).toBe('succeeded');
    const done = await page(consoleOf(u), id);
    expect(waitingCard(done)).toBeUndefined();
    expect(stepRows(done)[2]).toContain('<span class="st st-received">received</span>');
  });

  it('links a child row to the child’s page, says the run waits for it, and the child’s page links back to its parent run', async () => {
    const u = setup();
    const { runId, childId } = await waitingNotify(u);
    const parent = await page(consoleOf(u), runId);
    const [row] = stepRows(parent);
    expect(row).toContain('data-kind="child"');
    expect(row).toContain('<strong>text_customer</strong>');
    expect(row).toContain('<span class="st st-running">running</span>');
    expect(row).toContain(`<a class="mono" href="/tasks/${childId}">${childId}</a>`);
    expect(waitingCard(parent)).toContain(`1 child task(s) still open: <a class="mono" href="/tasks/${childId}">`);
    // The run is no child: no parent link on its page.
    expect(parent).not.toContain('Parent run');

    const child = await page(consoleOf(u), childId);
    expect(child).toContain(
      `<dt>Parent run</dt><dd><a class="mono" rel="up" href="/tasks/${runId}">${runId}</a> · started by its call <code>text_customer</code></dd>`,
    );
    // A plain task has no history: no step timeline, no signal form.
    expect(child).not.toContain('step timeline');
    expect(child).not.toContain('/signal"');

    // The child ends: its row says so, and the run (woken, due now) waits for no child any more.
    await deliverLatest(u, childId);
    const after = await page(consoleOf(u), runId);
    expect(stepRows(after)[0]).toContain('<span class="st st-succeeded">succeeded</span>');
    expect(waitingCard(after)).toContain(`<time datetime="${new Date(u.clock.now()).toISOString()}"`);
    expect(waitingCard(after)).not.toContain('child task(s)');
  });

  it('offers the send-signal form on a waiting run only with actions on, prefilled with the signal it waits for', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const on = await page(consoleOf(u), id);
    const form = /<form method="post" action="\/tasks\/[^"]+\/signal"[\s\S]*?<\/form>/.exec(on)?.[0];
    expect(form).toBeDefined();
    expect(form).toContain(`action="/tasks/${id}/signal"`);
    expect(form).toContain(`<input type="hidden" name="_token" value="${TOKEN}">`);
    expect(form).toContain('<input name="name" value="manager_approval" list="signal-names"');
    expect(form).toContain('<option value="manager_approval"></option>');
    expect(form).toContain('<textarea name="payload"');

    const off = await page(consoleOf(u, { actions: false }), id);
    expect(off).toContain('id="waiting-for"');
    expect(off).not.toContain('/signal"');
    expect(off).not.toContain('<textarea');
    expect(off).toContain(`kaj task signal ${id} NAME --data JSON`);

    // A run that waits for a child only: the form, with no name to offer.
    const { runId } = await waitingNotify(u);
    const notifyPage = await page(consoleOf(u), runId);
    expect(notifyPage).toContain(`action="/tasks/${runId}/signal"`);
    expect(notifyPage).toContain('<input name="name" value="" list="signal-names"');
  });

  it('a signal sent from the console is recorded in the run’s history and wakes the run, whose page then says so', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const app = consoleOf(u);
    const sent = messagesOf(u, id).length;
    const r = await sendSignal(app, id, 'manager_approval', ' {"approved": true, "note": "SIGNAL-SECRET"} ');
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe(`/tasks/${id}?msg=signalled_woken`);
    expect(signalEntry(u, id)?.value).toEqual({ approved: true, note: 'SIGNAL-SECRET' });
    // Woken: a new message, and the run is due now (no longer in 48 h).
    expect(messagesOf(u, id)).toHaveLength(sent + 1);
    expect((await u.store.get(id))?.run_at).toBe(new Date(u.clock.now()).toISOString());
    const after = body(await app.handle(get(`/tasks/${id}?msg=signalled_woken`)));
    expect(after).toContain(
      '<p class="flash ok" role="status">Signal sent: recorded in the run&#39;s history, and the run is woken.</p>',
    );
    expect(stepRows(after)[2]).toContain('<span class="st st-received">received</span>');
    expect(waitingCard(after)).not.toContain('manager_approval');
    await deliverLatest(u, id);
    const done = await u.store.get(id);
    expect(done).toMatchObject({ status: 'succeeded', result: { approved: true } });
    const final = await page(app, id);
    expect(final).not.toContain('SIGNAL-SECRET');
  });

  it('an empty payload sends null (the run sees no approval)', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    expect((await sendSignal(consoleOf(u), id, 'manager_approval', '  ')).status).toBe(303);
    expect(signalEntry(u, id)?.value).toBeNull();
  });
});

describe('console: signals refused, each a clear 4xx page', () => {
  /** The refusal's flash text (tags dropped, entities as they are). */
  const flash = (r: ConsoleResponse) => /<p class="flash bad" role="status">([\s\S]*?)<\/p>/.exec(body(r))?.[1];

  it('invalid JSON: 400 naming the payload, the form keeping what was typed, nothing recorded', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const r = await sendSignal(consoleOf(u), id, 'manager_approval', '{"approved": <b>yes</b>');
    expect(r.status).toBe(400);
    expect(flash(r)).toMatch(/^Signal not sent: payload: not valid JSON \(/);
    expect(body(r)).toContain('>{&quot;approved&quot;: &lt;b&gt;yes&lt;/b&gt;</textarea>');
    expect(body(r)).toContain('<input name="name" value="manager_approval"');
    expect(signalEntry(u, id)).toBeUndefined();
    expect((await u.store.get(id))?.status).toBe('waiting');
  });

  it('an invalid or missing signal name: 400 naming the name', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const app = consoleOf(u);
    const bad = await sendSignal(app, id, 'Manager-Approval', '{}');
    expect(bad.status).toBe(400);
    expect(flash(bad)).toContain('Signal not sent: name: a signal name is lower snake case, 1-64 characters');
    expect(body(bad)).toContain('<input name="name" value="Manager-Approval"');
    const none = await sendSignal(app, id, ' ', '{}');
    expect(none.status).toBe(400);
    expect(flash(none)).toContain('Signal not sent: name: required');
    expect(u.history.all().filter((e) => e.kind === 'signal')).toEqual([]);
  });

  it('a payload over the size limit: 400 naming the payload', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const r = await sendSignal(consoleOf(u), id, 'manager_approval', JSON.stringify({ blob: 'x'.repeat(40_000) }));
    expect(r.status).toBe(400);
    expect(flash(r)).toMatch(/^Signal not sent: payload: \d+ bytes exceeds the limit of 32768/);
    expect(signalEntry(u, id)).toBeUndefined();
  });

  it('an unknown run: 404', async () => {
    const u = setup();
    const r = await sendSignal(consoleOf(u), 't_doesnotexist', 'manager_approval', '{}');
    expect(r.status).toBe(404);
    expect(body(r)).toContain('task t_doesnotexist not found');
  });

  it('a task that is no workflow run: 409 not_a_workflow', async () => {
    const u = setup();
    const { childId } = await waitingNotify(u);
    const r = await sendSignal(consoleOf(u), childId, 'manager_approval', '{}');
    expect(r.status).toBe(409);
    expect(flash(r)).toBe(
      `Signal not sent: task ${childId} is a send_sms task, not a workflow run: it takes no signals (not_a_workflow).`,
    );
  });

  it('a deployment without a history store: 409, and no step timeline', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const app = consoleOf(u, { workflows: false });
    expect(await page(app, id)).not.toContain('step timeline');
    const r = await sendSignal(app, id, 'manager_approval', '{}');
    expect(r.status).toBe(409);
    expect(flash(r)).toContain('Signal not sent: this deployment has no workflow history store');
    expect(signalEntry(u, id)).toBeUndefined();
  });

  it('the same signal twice: 409 signal_already_received; after the run finished: 409 run_finished', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const app = consoleOf(u);
    expect((await sendSignal(app, id, 'manager_approval', '{"approved":false}')).status).toBe(303);
    const again = await sendSignal(app, id, 'manager_approval', '{"approved":true}');
    expect(again.status).toBe(409);
    expect(flash(again)).toBe(
      'Signal not sent: the run has received &quot;manager_approval&quot; already (one signal per name and run) (signal_already_received).',
    );
    expect(signalEntry(u, id)?.value).toEqual({ approved: false });
    await deliverLatest(u, id);
    expect((await u.store.get(id))?.status).toBe('succeeded');
    const late = await sendSignal(app, id, 'other_signal', '{}');
    expect(late.status).toBe(409);
    expect(flash(late)).toBe('Signal not sent: the run is succeeded: it takes no more signals (run_finished).');
    // A finished run offers no form.
    expect(body(late)).not.toContain('<textarea');
  });

  it('a signal after its wait timed out (the run sleeps on): 409 signal_wait_ended', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    u.clock.advance(48 * HOUR);
    await u.kaj.sweep(10_000); // 48 h is beyond SQS's delay: the sweeper sends the wake
    await deliverLatest(u, id);
    expect((await u.store.get(id))?.status).toBe('waiting'); // now in its cool_off sleep
    const r = await sendSignal(consoleOf(u), id, 'manager_approval', '{"approved":true}');
    expect(r.status).toBe(409);
    expect(flash(r)).toBe(
      'Signal not sent: the run stopped waiting for &quot;manager_approval&quot; (its timeout passed) before it came (signal_wait_ended).',
    );
    const rows = stepRows(body(r));
    expect(rows[2]).toContain('<span class="st st-timed_out">timed out</span>');
    expect(rows[3]).toContain('<strong>cool_off</strong> <span class="muted">sleep</span>');
    expect(rows[3]).toContain('<span class="st st-sleeping">sleeping</span>');
  });

  it('the same guards as every action: no token or a read-only console is 403, and nothing is recorded', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    const noToken = await consoleOf(u).handle(post(`/tasks/${id}/signal`, { name: 'manager_approval', payload: '{}' }));
    expect(noToken.status).toBe(403);
    expect(body(noToken)).toContain('needs the token');
    const foreign = await consoleOf(u).handle(
      post(
        `/tasks/${id}/signal`,
        { _token: TOKEN, name: 'manager_approval', payload: '{}' },
        { origin: 'http://evil.example' },
      ),
    );
    expect(foreign.status).toBe(403);
    const readOnly = await sendSignal(consoleOf(u, { actions: false }), id, 'manager_approval', '{}');
    expect(readOnly.status).toBe(403);
    expect(body(readOnly)).toContain('read-only');
    expect(signalEntry(u, id)).toBeUndefined();
  });

  it('a history that cannot be read: the task page still shows, saying so', async () => {
    const u = setup();
    const id = await waitingApproval(u);
    u.history.failNext.read = new Error('AccessDeniedException: not authorized to Query <history>');
    const html = await page(consoleOf(u), id);
    expect(html).toContain(
      'Could not read the workflow history of this task: Error: AccessDeniedException: not authorized to Query &lt;history&gt;',
    );
    expect(html).toContain('<dt>Type</dt><dd>approval</dd>');
    expect(html).not.toContain('step timeline');
  });
});
