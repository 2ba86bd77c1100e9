import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { KajApiError, KajClient, KajTimeoutError, KajUnreachableError } from '../../../client/index.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';

const registry = new TaskRegistry([
  defineTask({ type: 'job', schema: z.object({ n: z.number() }), handler: async () => ({}) }),
]);

interface Call {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: any;
}

/** A transport answering from `answers` in turn (a thrown Error is a network failure), recording each call. */
function transport(answers: (Response | Error)[]) {
  const calls: Call[] = [];
  const fetchFn = (async (url: URL | string, init?: RequestInit) => {
    calls.push({
      method: init?.method ?? 'GET',
      url: String(url),
      headers: (init?.headers ?? {}) as Record<string, string>,
      body: init?.body === undefined ? undefined : JSON.parse(String(init.body)),
    });
    const next = answers.shift();
    if (next === undefined) throw new Error('no more answers');
    if (next instanceof Error) throw next;
    return next;
  }) as typeof fetch;
  return { calls, fetchFn };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const accepted = (status = 202) =>
  json(status, { task_id: 't_1', status: 'queued', priority: 'normal', run_at: 'x', created_at: 'x' });

function client(answers: (Response | Error)[], extra: Partial<ConstructorParameters<typeof KajClient>[0]> = {}) {
  const t = transport(answers);
  const sleeps: number[] = [];
  const kaj = new KajClient<typeof registry>({
    url: 'http://localhost:3000',
    fetch: t.fetchFn,
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    newKey: () => 'generated-key',
    ...extra,
  });
  return { kaj, calls: t.calls, sleeps };
}

describe('Class: KajClient', () => {
  it('retries a 503 and a network failure with the same generated idempotency key, honouring Retry-After', async () => {
    const { kaj, calls, sleeps } = client([
      json(503, { error: { code: 'unavailable', message: 'retry later' } }, { 'retry-after': '2' }),
      new TypeError('fetch failed'),
      accepted(200),
    ]);
    const r = await kaj.submit('job', { n: 1 }, { priority: 'high' });
    expect(r).toMatchObject({ task_id: 't_1', replayed: true, idempotencyKey: 'generated-key' });
    expect(calls.map((c) => c.body.idempotency_key)).toEqual(['generated-key', 'generated-key', 'generated-key']);
    expect(calls[0]?.body).toEqual({
      type: 'job',
      payload: { n: 1 },
      idempotency_key: 'generated-key',
      priority: 'high',
    });
    // Retry-After 2 s, then full jitter on try 2: random 0.5 × min(5,000, 200·2²).
    expect(sleeps).toEqual([2000, 400]);
  });

  it('a 422 is not retried: KajApiError with the code and the field', async () => {
    const { kaj, calls } = client([
      json(422, { error: { code: 'validation_error', message: 'payload.n: expected number', field: 'payload.n' } }),
    ]);
    const err = await kaj.submit('job', { n: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajApiError);
    expect(err).toMatchObject({ status: 422, code: 'validation_error', field: 'payload.n', retryable: false });
    expect(calls).toHaveLength(1);
  });

  it('gives up after maxAttempts: KajApiError for a 5xx, KajUnreachableError for the network', async () => {
    const down = client(
      Array.from({ length: 3 }, () => json(500, { error: { code: 'internal', message: 'x' } })),
      { maxAttempts: 3 },
    );
    await expect(down.kaj.get('t_1')).rejects.toMatchObject({ status: 500, retryable: true });
    expect(down.calls).toHaveLength(3);
    const gone = client([new TypeError('a'), new TypeError('b')], { maxAttempts: 2 });
    await expect(gone.kaj.get('t_1')).rejects.toBeInstanceOf(KajUnreachableError);
  });

  it('waitFor returns the finished task, and times out cleanly with the last status', async () => {
    const view = (status: string) => json(200, { task_id: 't_1', status, history: [] });
    const ok = client([view('queued'), view('running'), view('succeeded')]);
    await expect(ok.kaj.waitFor('t_1', { pollMs: 100 })).resolves.toMatchObject({ status: 'succeeded' });
    expect(ok.sleeps).toEqual([100, 100]);
    const slow = client(Array.from({ length: 10 }, () => view('running')));
    const err = await slow.kaj.waitFor('t_1', { timeoutMs: 250, pollMs: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajTimeoutError);
    expect(err).toMatchObject({ taskId: 't_1', lastStatus: 'running', timeoutMs: 250 });
    expect(slow.sleeps).toEqual([100, 100, 50]);
  });

  it('signs with SigV4 for execute-api when given a region; sends no Authorization without one', async () => {
    const signed = client([accepted()], {
      url: 'https://abc.execute-api.eu-west-1.amazonaws.com',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
    });
    await signed.kaj.submit('job', { n: 1 });
    const h = signed.calls[0]?.headers ?? {};
    expect(h.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[^,]*content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    expect(h['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    const plain = client([accepted()]);
    await plain.kaj.submit('job', { n: 1 });
    expect(plain.calls[0]?.headers.authorization).toBeUndefined();
    expect(plain.calls[0]?.url).toBe('http://localhost:3000/api/v1/tasks');
  });

  it('submitMany sends 100 a request, re-sends only the items the store refused (503), and returns the rest as results', async () => {
    let n = 0;
    const keys = () => `k${(n += 1)}`;
    const item = (index: number, http_status: number) =>
      http_status < 300
        ? {
            index,
            http_status,
            task_id: `t_${index}`,
            status: 'queued',
            priority: 'normal',
            run_at: 'x',
            created_at: 'x',
          }
        : {
            index,
            http_status,
            error: { code: http_status === 503 ? 'unavailable' : 'validation_error', message: 'm' },
          };
    const { kaj, calls } = client(
      [json(207, { results: [item(0, 202), item(1, 503), item(2, 422)] }), json(207, { results: [item(0, 202)] })],
      { newKey: keys },
    );
    const r = await kaj.submitMany([0, 1, 2].map((i) => ({ type: 'job' as const, payload: { n: i } })));
    expect(calls.map((c) => c.body.tasks.map((t: { idempotency_key: string }) => t.idempotency_key))).toEqual([
      ['k1', 'k2', 'k3'],
      ['k2'],
    ]);
    expect(r.map((i) => [i.index, i.ok])).toEqual([
      [0, true],
      [1, true],
      [2, false],
    ]);
    expect(r[2]?.ok === false && r[2].error).toMatchObject({ status: 422, code: 'validation_error' });
  });

  it('signal posts the payload to the run’s signal route (names encoded) and answers as the API', async () => {
    const answer = { task_id: 't_1', signal: 'manager_approval', accepted_at: 'x', woken: true };
    const { kaj, calls } = client([
      json(202, answer),
      json(409, { error: { code: 'signal_already_received', message: 'm' } }),
    ]);
    expect(await kaj.signal('t_1', 'manager_approval', { approved: true })).toEqual(answer);
    expect(calls[0]).toMatchObject({
      method: 'POST',
      url: 'http://localhost:3000/api/v1/tasks/t_1/signals/manager_approval',
      body: { approved: true },
    });
    await expect(kaj.signal('t_1', 'manager_approval')).rejects.toMatchObject({
      status: 409,
      code: 'signal_already_received',
    });
    expect(calls[1]?.body).toBeNull();
  });

  it('refuses a bad url and maxAttempts at construction', () => {
    expect(() => new KajClient({ url: 'not a url' })).toThrow(/url: not a URL/);
    expect(() => new KajClient({ url: 'http://x', maxAttempts: 0 })).toThrow(/maxAttempts/);
  });
});

describe('KajClient.pipelines', () => {
  it('calls the pipeline routes with encoded paths and the API’s field names', async () => {
    const run = { pipeline: 'nightly_sales', logical_date: '2026-11-28', status: 'queued', nodes: [] };
    const { kaj, calls } = client([
      json(200, { items: [{ name: 'nightly_sales' }] }),
      json(200, { pipeline: 'nightly_sales', items: [run] }),
      json(201, { ...run, created: true }),
      json(200, { pipeline: 'nightly_sales', dry_run: true, runs: [{ logical_date: '2026-11-01', action: 'create' }] }),
      json(202, run),
      json(200, run),
    ]);
    expect((await kaj.pipelines.list()).map((p) => p.name)).toEqual(['nightly_sales']);
    expect(await kaj.pipelines.runs('nightly_sales', { from: '2026-11-01', to: '2026-11-28' })).toEqual([run]);
    expect((await kaj.pipelines.trigger('nightly_sales', '2026-11-28')).created).toBe(true);
    expect(
      await kaj.pipelines.backfill('nightly_sales', {
        from: '2026-11-01',
        to: '2026-11-02',
        maxActiveRuns: 1,
        dryRun: true,
      }),
    ).toEqual([{ logical_date: '2026-11-01', action: 'create' }]);
    await kaj.pipelines.clear('nightly_sales', '2026-11-28T00:00:00Z', { nodes: ['clean'], downstream: true });
    await kaj.pipelines.cancel('nightly_sales', '2026-11-28');
    expect(calls.map((c) => `${c.method} ${new URL(c.url).pathname}${new URL(c.url).search}`)).toEqual([
      'GET /api/v1/pipelines',
      'GET /api/v1/pipelines/nightly_sales/runs?from=2026-11-01&to=2026-11-28',
      'POST /api/v1/pipelines/nightly_sales/runs',
      'POST /api/v1/pipelines/nightly_sales/backfill',
      'POST /api/v1/pipelines/nightly_sales/runs/2026-11-28T00%3A00%3A00Z/clear',
      'DELETE /api/v1/pipelines/nightly_sales/runs/2026-11-28',
    ]);
    expect(calls[2]?.body).toEqual({ logical_date: '2026-11-28' });
    expect(calls[3]?.body).toEqual({ from: '2026-11-01', to: '2026-11-02', max_active_runs: 1, dry_run: true });
    expect(calls[4]?.body).toEqual({ nodes: ['clean'], downstream: true });
  });

  it('a refusal is a KajApiError naming the field', async () => {
    const { kaj } = client([
      json(422, { error: { code: 'validation_error', message: 'logical_date: bad', field: 'logical_date' } }),
    ]);
    const err = await kaj.pipelines.trigger('nightly_sales', 'yesterday').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajApiError);
    expect(err).toMatchObject({ status: 422, field: 'logical_date' });
  });
});
