/** The console without a browser: escaping, pages, guards, routes, jobs, throughput. */
import { describe, expect, it, vi } from 'vitest';
import { ConsoleApp, type ConsoleRequest } from '../../../console/app.js';
import { html, raw } from '../../../console/html.js';
import type { ConsoleBackend, DeadTaskRow, Overview } from '../../../console/model.js';
import { groupDeadLetters, taskPage } from '../../../console/pages.js';
import { checkAction, isOwnHost } from '../../../console/security.js';
import { ThroughputRecorder } from '../../../console/throughput.js';
import { ScheduleNotFoundError } from '../../../shared/schedule/errors.js';
import { TaskNotCancellableError, ValidationError } from '../../../shared/task/errors.js';
import type { TaskRecord } from '../../../shared/task/model.js';

const NOW = Date.parse('2026-12-02T12:00:00Z');
const clock = { now: () => NOW };
const TOKEN = 'tok-123';
const PORT = 3000;

function record(over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    task_id: 't_abc',
    type: 'send_email',
    priority: 'normal',
    status: 'failed',
    payload: { to: 'a@example.com' },
    attempts: 2,
    max_attempts: 3,
    timeout_seconds: 30,
    run_at: '2026-12-02T11:00:00.000Z',
    created_at: '2026-12-02T11:00:00.000Z',
    updated_at: '2026-12-02T11:01:00.000Z',
    history: [
      {
        attempt: 1,
        outcome: 'retrying',
        started_at: '2026-12-02T11:00:00.000Z',
        finished_at: '2026-12-02T11:00:01.000Z',
        duration_ms: 1000,
        error: { name: 'RetryableError', message: 'busy', retryable: true, code: 'HTTP_503' },
      },
      {
        attempt: 2,
        outcome: 'failed',
        started_at: '2026-12-02T11:00:05.000Z',
        finished_at: '2026-12-02T11:00:06.000Z',
        duration_ms: 350,
        error: { name: 'PermanentError', message: 'gone', retryable: false },
      },
    ],
    fingerprint: 'f',
    lease_token: 2,
    dispatch_id: 'd',
    ...over,
  };
}

const overview: Overview = {
  at: NOW,
  queues: [
    { priority: 'high', visible: 1, inFlight: 2, delayed: 3, oldestAgeSeconds: null },
    { priority: 'normal', visible: 10, inFlight: 20, delayed: 30, oldestAgeSeconds: 75 },
    { priority: 'low', visible: 100, inFlight: 200, delayed: 300, oldestAgeSeconds: null },
  ],
  dlqs: [
    { priority: 'high', visible: 0, inFlight: 0 },
    { priority: 'normal', visible: 4, inFlight: 1 },
    { priority: 'low', visible: 0, inFlight: 0 },
  ],
  statuses: [
    { status: 'retrying', count: 7, capped: false },
    { status: 'failed', count: 1000, capped: true },
    { status: 'cancelled', count: 0, capped: false },
    { status: 'running', count: 2, capped: false },
  ],
  delayedInTable: { count: 1234, capped: true },
  throughput: {
    available: true,
    source: 'a test',
    bucketSeconds: 60,
    buckets: [
      { start: NOW - 60_000, succeeded: 9, failed: 1, retried: 2 },
      { start: NOW, succeeded: 0, failed: 0, retried: 0 },
    ],
  },
};

function backend(over: Partial<ConsoleBackend> = {}): ConsoleBackend {
  return {
    label: 'local (test)',
    overview: async () => overview,
    listTasks: async () => ({ items: [] }),
    getTask: async (id) => (id === 't_abc' ? record() : undefined),
    cancelTask: async () => ({ status: 'cancelled', requested: false }),
    deadLetters: async () => ({ tasks: [], received: 0, truncated: false }),
    redrive: async (sel) => ({
      selected: sel.taskIds.length,
      done: sel.taskIds.length,
      skipped: 0,
      failed: 0,
      interrupted: false,
      items: [],
    }),
    purge: async () => ({ selected: 0, done: 0, skipped: 0, failed: 0, interrupted: false, items: [] }),
    ...over,
  };
}

function app(b: ConsoleBackend = backend(), actionsAllowed = true): ConsoleApp {
  return new ConsoleApp({
    backend: b,
    token: TOKEN,
    port: () => PORT,
    actionsAllowed,
    actor: 'alice',
    clock,
    newId: () => 'id',
  });
}

function get(path: string, headers: Record<string, string> = {}): ConsoleRequest {
  const u = new URL(path, 'http://x');
  return {
    method: 'GET',
    path: u.pathname,
    query: Object.fromEntries(u.searchParams),
    headers: { host: `127.0.0.1:${PORT}`, ...headers },
    form: {},
  };
}

function post(path: string, form: Record<string, string>, headers: Record<string, string> = {}): ConsoleRequest {
  return { method: 'POST', path, query: {}, headers: { host: `127.0.0.1:${PORT}`, ...headers }, form };
}

const body = (r: { body: string | Buffer }) => String(r.body);

describe('html', () => {
  it('escapes interpolated text in content and attributes, keeps markup made by the tag', () => {
    const evil = `<script>alert("x")</script>' onload='x`;
    const out = html`<p title="${evil}">${evil}${html`<b>${'&'}</b>`}${[1, ' & ', raw('<i></i>')]}${undefined}${false}</p>`;
    expect(out.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onload=&#39;x">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onload=&#39;x<b>&amp;</b>1 &amp; <i></i></p>',
    );
  });
});

describe('pages', () => {
  const ctx = { label: 'x', token: TOKEN, actionsAllowed: true, schedules: false, now: NOW };

  it('a task page: user data escaped, the attempts as a timeline, actions by status', () => {
    const r = record({ payload: { html: '<img src=x onerror=alert(1)>' }, result: '</pre><script>1</script>' });
    const page = taskPage(ctx, r).text;
    expect(page).not.toContain('<img src=x');
    expect(page).not.toContain('<script>1</script>');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page.match(/<li class="o-/g)).toHaveLength(2);
    expect(page).toContain('<li class="o-retrying"><strong>Attempt 1</strong>');
    expect(page).toMatch(/took<\/span> 350 ms/);
    expect(page).toContain('action="/tasks/t_abc/redrive"');
    expect(page).not.toContain('/cancel"');
    expect(page).toContain(`name="_token" value="${TOKEN}"`);
    const queued = taskPage(ctx, record({ status: 'queued', history: [] })).text;
    expect(queued).toContain('action="/tasks/t_abc/cancel"');
    expect(queued).not.toContain('/redrive"');
    const readOnly = taskPage({ ...ctx, actionsAllowed: false }, record()).text;
    expect(readOnly).toMatch(/<button type="submit" class="" disabled title="read-only console/);
  });

  it('dead letters are grouped by type and error, largest first; a non-Kaj message has no task ids to act on', () => {
    const row = (taskId: string | undefined, type: string | undefined, lastError: string | undefined): DeadTaskRow => ({
      messageId: `m-${taskId}`,
      originPriority: 'normal',
      kind: taskId === undefined ? 'unreadable' : 'dead_letter',
      ...(taskId === undefined ? {} : { taskId }),
      ...(type === undefined ? {} : { type }),
      ...(lastError === undefined ? {} : { lastError, deadSince: `2026-12-02T10:0${taskId?.slice(-1)}:00Z` }),
    });
    const groups = groupDeadLetters([
      row('t_1', 'a', 'E1'),
      row('t_2', 'b', 'E1'),
      row('t_3', 'a', 'E1'),
      row('t_3', 'a', 'E1'),
      row(undefined, undefined, undefined),
      row('t_4', 'a', 'E2'),
    ]);
    expect(groups.map((g) => [g.type, g.error, g.tasks.length, g.taskIds])).toEqual([
      ['a', 'E1', 3, ['t_1', 't_3']],
      [undefined, undefined, 1, []],
      ['a', 'E2', 1, ['t_4']],
      ['b', 'E1', 1, ['t_2']],
    ]);
    expect(groups[0]?.oldest).toBe('2026-12-02T10:01:00Z');
    expect(groups[0]?.newest).toBe('2026-12-02T10:03:00Z');
    expect(groups[0]?.id).not.toBe(groups[3]?.id);
  });
});

describe('guards', () => {
  it('Host must be the console itself', () => {
    expect(isOwnHost('127.0.0.1:3000', 3000)).toBe(true);
    expect(isOwnHost('LOCALHOST:3000', 3000)).toBe(true);
    expect(isOwnHost('[::1]:3000', 3000)).toBe(true);
    expect(isOwnHost('127.0.0.1:3001', 3000)).toBe(false);
    expect(isOwnHost('evil.example:3000', 3000)).toBe(false);
    expect(isOwnHost(undefined, 3000)).toBe(false);
  });

  it('an action needs the token, and no foreign Origin or cross-site fetch', () => {
    const o = { token: TOKEN, port: PORT };
    const ok = {
      headers: { origin: `http://127.0.0.1:${PORT}`, 'sec-fetch-site': 'same-origin' },
      form: { _token: TOKEN },
    };
    expect(() => checkAction(ok, o)).not.toThrow();
    expect(() => checkAction({ headers: { 'x-kaj-token': TOKEN }, form: {} }, o)).not.toThrow();
    expect(() => checkAction({ ...ok, form: {} }, o)).toThrow(/needs the token/);
    expect(() => checkAction({ ...ok, form: { _token: 'tok-12' } }, o)).toThrow(/needs the token/);
    expect(() => checkAction({ ...ok, headers: { origin: 'http://evil.example' } }, o)).toThrow(/another origin/);
    expect(() => checkAction({ ...ok, headers: { origin: 'https://127.0.0.1:3000' } }, o)).toThrow(/another origin/);
    expect(() => checkAction({ ...ok, headers: { 'sec-fetch-site': 'cross-site' } }, o)).toThrow(/cross-site/);
  });
});

describe('ConsoleApp', () => {
  it('refuses a foreign Host before reading anything (421)', async () => {
    const overviewSpy = vi.fn(async () => overview);
    const r = await app(backend({ overview: overviewSpy })).handle(get('/', { host: 'evil.example:3000' }));
    expect(r.status).toBe(421);
    expect(overviewSpy).not.toHaveBeenCalled();
  });

  it('the overview shows what the backend read; the refresh fragment is the same region', async () => {
    const r = await app().handle(get('/'));
    expect(r.status).toBe(200);
    expect(r.headers['content-security-policy']).toContain("script-src 'self'");
    const page = body(r);
    expect(page).toMatch(/data-stat="queued">111</);
    expect(page).toMatch(/data-stat="in-flight">222</);
    expect(page).toContain('>Delayed in queue (SQS)<');
    expect(page).toMatch(/data-stat="delayed-sqs">333</);
    expect(page).toContain('>Delayed in table (&gt; 15 min)<');
    expect(page).toMatch(/data-stat="delayed-table"><a href="\/tasks\?status=delayed">1,234\+<\/a>/);
    expect(page).toMatch(/data-stat="failed"><a href="\/tasks\?status=failed">1,000\+<\/a>/);
    expect(page).toMatch(/data-stat="dead-letters"><a href="\/dead-letters">5</);
    expect(page).toMatch(/data-stat="failure-rate">10.0 %/);
    expect(page).toContain('1 min 15 s');
    const fragment = body(await app().handle(get('/fragments/overview')));
    expect(fragment.startsWith('<div id="live"')).toBe(true);
    expect(page).toContain(fragment);
  });

  it('the overview shows the tasks delayed in the table beside those SQS holds: "N" under the bound, no "+"', async () => {
    const b = backend({ overview: async () => ({ ...overview, delayedInTable: { count: 7, capped: false } }) });
    const page = body(await app(b).handle(get('/')));
    expect(page).toMatch(/data-stat="delayed-table"><a href="\/tasks\?status=delayed">7<\/a>/);
    expect(page).toMatch(/data-stat="delayed-sqs">333</);
  });

  it.each([
    ['/tasks?status=exploded', 'status: one of retrying, failed, cancelled, running, waiting, delayed'],
    ['/tasks?status=delayed&since=1h', 'since: not with status=delayed'],
    ['/tasks?priority=urgent', 'priority: high, normal or low'],
    ['/tasks?limit=0', 'limit: an integer from 1 to 100'],
    ['/tasks?since=3w', 'since: one of 15m, 1h, 24h, 7d'],
    ['/tasks?type=%3Cscript%3E', 'type: not a task type'],
    ['/tasks/not-an-id', 'task id: not a task id'],
    ['/dead-letters/confirm?verb=explode&group=x', 'verb: redrive or purge'],
  ])('GET %s is a 400 naming the field', async (path, message) => {
    const r = await app().handle(get(path));
    expect(r.status).toBe(400);
    expect(body(r)).toContain(message.replace('<', '&lt;'));
  });

  it('a bad cursor (the listing refuses it) is a 400 naming it, not a 500', async () => {
    const b = backend({
      listTasks: async () => {
        throw new ValidationError('cursor', 'cursor: not a cursor of this listing');
      },
    });
    const r = await app(b).handle(get('/tasks?status=failed&cursor=zzz'));
    expect(r.status).toBe(400);
    expect(body(r)).toContain('cursor: not a cursor of this listing');
  });

  it('unknown pages, tasks and schedules are 404s; schedules pages exist only with a scheduler', async () => {
    expect((await app().handle(get('/nope'))).status).toBe(404);
    expect((await app().handle(get('/tasks/t_missing'))).status).toBe(404);
    expect((await app().handle(get('/schedules'))).status).toBe(404);
    const schedules = {
      list: async () => ({ items: [] }),
      get: async (name: string) => {
        throw new ScheduleNotFoundError(name);
      },
      pause: vi.fn(),
      resume: vi.fn(),
      trigger: vi.fn(),
    };
    const withSchedules = app(backend({ schedules: schedules as unknown as ConsoleBackend['schedules'] }));
    expect((await withSchedules.handle(get('/schedules'))).status).toBe(200);
    expect((await withSchedules.handle(get('/schedules/nightly'))).status).toBe(404);
  });

  it('a read-only console refuses every action (403), token or not', async () => {
    const cancel = vi.fn(async () => ({ status: 'cancelled', requested: false }));
    const r = await app(backend({ cancelTask: cancel }), false).handle(post('/tasks/t_abc/cancel', { _token: TOKEN }));
    expect(r.status).toBe(403);
    expect(body(r)).toContain('read-only');
    expect(cancel).not.toHaveBeenCalled();
  });

  it('an action without the token is refused; with it, the cancel is audited as the operator and redirects', async () => {
    const cancel = vi.fn(async () => ({ status: 'cancelled', requested: false }));
    const a = app(backend({ cancelTask: cancel }));
    expect((await a.handle(post('/tasks/t_abc/cancel', {}))).status).toBe(403);
    expect(cancel).not.toHaveBeenCalled();
    const r = await a.handle(post('/tasks/t_abc/cancel', { _token: TOKEN, reason: 'dup' }));
    expect(r.status).toBe(303);
    expect(r.headers.location).toBe('/tasks/t_abc?msg=cancelled');
    expect(cancel).toHaveBeenCalledWith('t_abc', { actor: 'alice', reason: 'dup' });
    const viaHtmx = await a.handle(post('/tasks/t_abc/cancel', { _token: TOKEN }, { 'hx-request': 'true' }));
    expect(viaHtmx.status).toBe(200);
    expect(viaHtmx.headers['hx-redirect']).toBe('/tasks/t_abc?msg=cancelled');
    expect(body(await a.handle(get('/tasks/t_abc?msg=cancelled')))).toContain(
      '<p class="flash ok" role="status">Cancelled.</p>',
    );
  });

  it('a cancel the domain refuses is shown on the task page (409)', async () => {
    const a = app(
      backend({
        cancelTask: async () => {
          throw new TaskNotCancellableError('t_abc', 'failed');
        },
      }),
    );
    const r = await a.handle(post('/tasks/t_abc/cancel', { _token: TOKEN }));
    expect(r.status).toBe(409);
    expect(body(r)).toContain('class="flash bad"');
  });

  it('redrive of a group runs as a job: the page polls its progress until it is done', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const redrive = vi.fn(async (sel: { taskIds: readonly string[] }, _op: unknown, onProgress: (c: never) => void) => {
      onProgress({ selected: 2, done: 1, skipped: 0, failed: 0 } as never);
      await gate;
      return {
        selected: 2,
        done: 2,
        skipped: 0,
        failed: 0,
        interrupted: false,
        items: sel.taskIds.map((id) => ({ task_id: id, outcome: 'done' as const, action: 'reset' })),
      };
    });
    const a = app(backend({ redrive }));
    expect((await a.handle(post('/dead-letters/redrive', { _token: TOKEN, ids: '' }))).status).toBe(400);
    expect((await a.handle(post('/dead-letters/redrive', { _token: TOKEN, ids: 't_1,bad id' }))).status).toBe(400);
    const r = await a.handle(post('/dead-letters/redrive', { _token: TOKEN, ids: 't_1,t_2,t_1', reason: 'fixed' }));
    expect(r.status).toBe(303);
    const location = r.headers.location as string;
    expect(location).toMatch(/^\/jobs\/1-id$/);
    expect(redrive).toHaveBeenCalledWith(
      { taskIds: ['t_1', 't_2'] },
      { actor: 'alice', reason: 'fixed' },
      expect.any(Function),
    );
    const running = body(await a.handle(get(location)));
    expect(running).toContain('Running…');
    expect(running).toContain('1 of 2 handled');
    expect(running).toContain('hx-trigger="every 1s"');
    release();
    await a.jobs.settled();
    const done = body(await a.handle(get('/fragments/jobs/1-id')));
    expect(done).toContain('Done.');
    expect(done).toContain('2 of 2 handled: 2 redriven');
    expect(done).not.toContain('hx-trigger');
    expect((await a.handle(get('/jobs/nope'))).status).toBe(404);
  });

  it('the confirmation says how many and which, from the DLQs read again', async () => {
    const tasks: DeadTaskRow[] = ['t_1', 't_2'].map((taskId) => ({
      messageId: taskId,
      taskId,
      type: 'send_email',
      originPriority: 'normal',
      kind: 'dead_letter',
      lastError: 'HTTP_401 PermanentError: bad key',
    }));
    const a = app(backend({ deadLetters: async () => ({ tasks, received: 2, truncated: false }) }));
    const list = body(await a.handle(get('/dead-letters')));
    const href = /href="(\/dead-letters\/confirm\?verb=purge&amp;group=[^"]+)"/.exec(list)?.[1]?.replace('&amp;', '&');
    expect(href).toBeDefined();
    const confirm = body(await a.handle(get(href as string)));
    expect(confirm).toContain('<h1>Purge 2 dead task(s)?</h1>');
    expect(confirm).toContain('<pre>t_1\nt_2</pre>');
    expect(confirm).toContain('name="ids" value="t_1,t_2"');
    expect((await a.handle(get('/dead-letters/confirm?verb=purge&group=gone'))).status).toBe(404);
  });

  it('serves its assets (htmx from the package) for good, and nothing else under /assets', async () => {
    const page = body(await app().handle(get('/')));
    const htmx = /src="(\/assets\/htmx\.[0-9a-f]+\.js)"/.exec(page)?.[1] as string;
    const r = await app().handle(get(htmx));
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toContain('immutable');
    expect(String(r.body)).toContain('htmx');
    expect((await app().handle(get('/assets/evil.js'))).status).toBe(404);
  });
});

describe('ThroughputRecorder', () => {
  it('counts task outcomes per minute over the last hour and passes every metric on', () => {
    let now = NOW;
    const rec = new ThroughputRecorder({ now: () => now });
    const inner = { count: vi.fn(), durationMs: vi.fn() };
    const m = rec.metrics(inner);
    m.count('TasksSucceeded', 'a');
    m.count('TasksSucceeded', 'a', 2);
    m.count('TasksFailed', 'a');
    m.count('TasksSubmitted', 'a');
    now += 60_000;
    m.count('TasksRetried', 'b');
    m.durationMs('a', 5);
    expect(inner.count).toHaveBeenCalledTimes(5);
    expect(inner.durationMs).toHaveBeenCalledWith('a', 5);
    const s = rec.series();
    if (!s.available) throw new Error('unavailable');
    expect(s.buckets).toHaveLength(60);
    expect(s.buckets.at(-2)).toEqual({ start: NOW - (NOW % 60_000), succeeded: 3, failed: 1, retried: 0 });
    expect(s.buckets.at(-1)).toMatchObject({ succeeded: 0, failed: 0, retried: 1 });
    now += 61 * 60_000;
    const later = rec.series();
    expect(later.available && later.buckets.every((b) => b.succeeded + b.failed + b.retried === 0)).toBe(true);
  });
});
