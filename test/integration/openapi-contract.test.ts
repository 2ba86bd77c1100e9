/**
 * Contract test of `GET /api/v1/openapi.json`: real responses of the local runtime (embedded
 * emulators; the HTTP contract does not depend on the emulator) to every route, validated with
 * Ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect) against the schema the served document gives
 * for that route and status. Every documented route and status is exercised here, except the few
 * listed in NOT_EXERCISED with the reason.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { LocalRuntime } from '../../local/runtime.js';
import { defineTask, TaskRegistry } from '../../shared/task/define.js';
import { defineWorkflow } from '../../shared/workflow/define.js';
import { definePipeline, node } from '../../shared/pipeline/define.js';
import { FaultInjector } from '../support/faults.js';
import { embedded, startOnTarget } from '../support/targets.js';
import { TaskProbe, testRegistry } from '../support/test-tasks.js';
import { uniquePrefix } from '../../testing/wait.js';

type HeaderSpec = { required?: boolean; schema: unknown };
type Doc = {
  paths: Record<
    string,
    Record<
      string,
      {
        operationId: string;
        responses: Record<
          string,
          {
            description: string;
            headers?: Record<string, { $ref: string }>;
            content: Record<string, { schema: unknown }>;
          }
        >;
      }
    >
  >;
  components: { schemas: Record<string, unknown>; headers: Record<string, HeaderSpec> };
};

/** The headers Kaj sets on its answers (shared/service/api/http.ts): each one a response carries must be declared for it. */
const KAJ_HEADERS = ['location', 'idempotent-replayed', 'retry-after'];

/** The test task types, and one with a schedule declared in code (read-only through the API: 409). */
function contractRegistry(): TaskRegistry {
  const base = testRegistry(new TaskProbe());
  const step = defineTask({ type: 'oas_step', schema: z.object({}), handler: async () => ({}) });
  const waiter = defineWorkflow({
    type: 'oas_waiter',
    schema: z.object({}),
    run: (_input, wf) => wf.waitForSignal('never', { timeout: '1h' }),
  });
  return new TaskRegistry([
    ...base.types().map((t) => base.get(t)),
    step,
    waiter,
    // One that finishes at once, one whose run waits (its node waits for a signal that never comes).
    definePipeline({ name: 'oas_pipe', nodes: { a: node(step), b: node(step, { after: ['a'] }) } }),
    definePipeline({ name: 'oas_wait', nodes: { w: node(waiter) } }),
    defineTask({
      type: 'oas_declared',
      schema: z.object({}),
      handler: async () => ({}),
      schedules: [{ name: 'oas-code', cron: '0 4 * * *' }],
    }),
    defineWorkflow({
      type: 'oas_flow',
      schema: z.object({}),
      // It keeps waiting after "go", so a second "go" meets a live run (not a finished one) however
      // quickly the worker takes the first.
      run: async (_input, wf) => {
        await wf.waitForSignal('go', { timeout: '1h' });
        return wf.waitForSignal('stop', { timeout: '1h' });
      },
    }),
  ]);
}

/** Documented pairs no request here produces, and why. */
const NOT_EXERCISED: Record<string, string> = {
  '*:400': 'the body parser and path decoding every route shares; exercised on submit',
  '*:415': 'the body parser every route shares; exercised on submit',
  '*:403': 'API Gateway answers it (IAM auth); the local runtime has no auth',
  '*:429': "API Gateway's throttling; the local runtime has none",
  '*:502': 'API Gateway answers it when the function fails; the local runtime has no gateway',
  '*:500': 'an internal error; unit tests cover its body (test/unit/api/http.test.ts)',
  '*:503': 'a store outage: exercised on get (GetItem failing), with its Retry-After',
  'cancel:202': 'needs a task running past its first heartbeat; test/integration/reliability/cancel.test.ts',
  'schedule_trigger:200': 'a second trigger within the same second; test/unit/schedule tests',
  'schedule_backfill:404': 'covered by schedule_get:404 (same lookup)',
  'schedule_pause:404': 'covered by schedule_get:404 (same lookup)',
  'schedule_resume:404': 'covered by schedule_get:404 (same lookup)',
  'schedule_trigger:404': 'covered by schedule_get:404 (same lookup)',
  'schedule_delete:404': 'covered by schedule_get:404 (same lookup)',
  'schedule_put:422': 'test/integration/schedules.test.ts (bad specs)',
  'signal:413': 'the body parser every route shares; exercised on submit',
  'schedule_backfill:422': 'test/unit/schedule tests (bad ranges)',
};

describe('OpenAPI contract: the local runtime answers as docs/openapi.json says', () => {
  let runtime: LocalRuntime;
  let stop: () => Promise<void> = async () => {};
  let doc: Doc;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const exercised = new Set<string>();
  const headersSeen = new Set<string>();
  const faults = new FaultInjector();
  const operationOf = new Map<string, string>();

  beforeAll(async () => {
    ({ runtime, stop } = await startOnTarget(embedded, {
      registry: contractRegistry(),
      prefix: uniquePrefix('oas'),
      port: 0,
      waitTimeSeconds: 1,
      scheduling: { tickSeconds: 60 },
    }));
    faults.attach(runtime.clients.dynamodb);
    doc = (await (await fetch(`${runtime.url}/api/v1/openapi.json`)).json()) as Doc;
    ajv.addSchema({ $id: 'kaj', components: doc.components });
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops))
        operationOf.set(`${method.toUpperCase()} ${path}`, op.operationId);
    }
  }, 60_000);
  afterAll(() => stop(), 60_000);

  /** Calls a route and checks the body against the document's schema for the route and status. */
  async function call(
    method: string,
    template: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ) {
    const res = await fetch(`${runtime.url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': contentType },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, any>;
    const op = doc.paths[template]?.[method.toLowerCase()];
    expect(op, `${method} ${template} is documented`).toBeDefined();
    const response = op?.responses[String(res.status)];
    expect(response, `${method} ${template} documents ${res.status}`).toBeDefined();
    const schema = JSON.parse(
      JSON.stringify(response?.content['application/json']?.schema).replaceAll('"#/components', '"kaj#/components'),
    );
    const validate = ajv.compile(schema);
    expect(validate(json) ? [] : validate.errors, `${method} ${path} → ${res.status}: ${JSON.stringify(json)}`).toEqual(
      [],
    );
    // Headers: each Kaj header the answer carries is declared for it; each declared one is there, as declared.
    const declared = new Map(
      Object.entries(response?.headers ?? {}).map(([name, h]) => [
        name.toLowerCase(),
        doc.components.headers[h.$ref.replace('#/components/headers/', '')] as HeaderSpec,
      ]),
    );
    for (const name of KAJ_HEADERS) {
      if (res.headers.has(name))
        expect(declared.has(name), `${method} ${template} → ${res.status} declares the ${name} it sends`).toBe(true);
    }
    for (const [name, h] of declared) {
      const value = res.headers.get(name);
      if (h.required) expect(value, `${method} ${path} → ${res.status} sends ${name}`).not.toBeNull();
      if (value === null) continue;
      const check = ajv.compile(h.schema as object);
      expect(check(value) ? [] : check.errors, `${name}: ${value}`).toEqual([]);
      headersSeen.add(name);
    }
    // An error names its code; the document names, per route and status, the codes it may carry.
    const code = json.error?.code;
    if (typeof code === 'string')
      expect(response?.description, `${method} ${template} → ${res.status} documents ${code}`).toContain(code);
    exercised.add(`${op?.operationId}:${res.status}`);
    return { status: res.status, json, headers: res.headers };
  }

  it('every route and status code, each body as documented', async () => {
    const T = '/api/v1/tasks';
    const echo = { type: 'echo', payload: { value: 1 }, idempotency_key: 'oas-1' };
    const created = await call('POST', T, T, echo);
    expect(created.status).toBe(202);
    expect(created.headers.get('location')).toBe(`/api/v1/tasks/${created.json.task_id}`);
    const replay = await call('POST', T, T, echo);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await call('POST', T, T, { ...echo, payload: { value: 2 } })).status).toBe(409);
    expect((await call('POST', T, T, { type: 'nope' })).status).toBe(422);
    expect((await call('POST', T, T, { type: 'echo', payload: { value: 'x'.repeat(70_000) } })).status).toBe(413);
    expect((await call('POST', T, T, '{"type":')).status).toBe(400);
    expect((await call('POST', T, T, '{}', 'text/plain')).status).toBe(415);

    const B = '/api/v1/tasks/batch';
    const batch = await call('POST', B, B, {
      tasks: [{ type: 'echo', payload: { value: 3 } }, echo, { type: 'nope' }],
    });
    expect(batch.json.results.map((r: { http_status: number }) => r.http_status)).toEqual([202, 200, 422]);
    expect((await call('POST', B, B, { tasks: [] })).status).toBe(422);
    expect(
      (await call('POST', B, B, { tasks: [{ type: 'echo', payload: { value: 'x'.repeat(1_100_000) } }] })).status,
    ).toBe(413);

    const I = '/api/v1/tasks/{id}';
    const id = created.json.task_id as string;
    expect((await call('GET', I, `${T}/${id}`)).status).toBe(200);
    expect((await call('GET', I, `${T}/t_0123456789abcdef0123456789abcdef`)).status).toBe(404);
    const delayed = await call('POST', T, T, { type: 'echo', payload: { value: 4 }, delay_seconds: 600 });
    expect((await call('DELETE', I, `${T}/${delayed.json.task_id}`)).status).toBe(200);
    expect((await call('DELETE', I, `${T}/t_0123456789abcdef0123456789abcdef`)).status).toBe(404);
    const listed = await call('GET', T, `${T}?status=cancelled&limit=10`);
    expect(listed.json.items.map((t: { task_id: string }) => t.task_id)).toContain(delayed.json.task_id);
    expect((await call('GET', T, `${T}?status=queued`)).status).toBe(400);
    const badCursor = await call('GET', T, `${T}?status=cancelled&cursor=not-a-cursor`);
    expect(badCursor).toMatchObject({ status: 400, json: { error: { code: 'invalid_cursor', field: 'cursor' } } });
    // A store outage: 503 with Retry-After (one GetItem of this id fails, as after the SDK's own retries).
    const unknown = 't_fedcba9876543210fedcba9876543210';
    faults.add({ command: 'GetItem', match: (input) => JSON.stringify(input).includes(unknown), error: 'unavailable' });
    const outage = await call('GET', I, `${T}/${unknown}`);
    faults.clear();
    expect(outage).toMatchObject({ status: 503, json: { error: { code: 'unavailable' } } });
    expect(outage.headers.get('retry-after')).toMatch(/^\d+$/);
    const done = await (async () => {
      for (let i = 0; i < 100; i += 1) {
        const view = (await (await fetch(`${runtime.url}${T}/${id}`)).json()) as { status: string };
        if (view.status === 'succeeded') return view;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the echo task did not finish');
    })();
    // A finished task can no longer be cancelled.
    expect(done.status).toBe('succeeded');
    expect((await call('DELETE', I, `${T}/${id}`)).status).toBe(409);

    // Signals: to a workflow run (202, then 409 for the same name again), to a task that is not one
    // (409), to an unknown run (404), with a bad name (422 naming it).
    const G = '/api/v1/tasks/{id}/signals/{name}';
    const run = await call('POST', T, T, { type: 'oas_flow', payload: {} });
    const runId = run.json.task_id as string;
    expect((await call('POST', G, `${T}/${runId}/signals/go`, { ok: true })).status).toBe(202);
    expect(await call('POST', G, `${T}/${runId}/signals/go`, { ok: true })).toMatchObject({
      status: 409,
      json: { error: { code: 'signal_already_received' } },
    });
    expect(await call('POST', G, `${T}/${id}/signals/go`, {})).toMatchObject({
      status: 409,
      json: { error: { code: 'not_a_workflow' } },
    });
    expect((await call('POST', G, `${T}/${unknown}/signals/go`, {})).status).toBe(404);
    expect(await call('POST', G, `${T}/${runId}/signals/Not-Valid`, {})).toMatchObject({
      status: 422,
      json: { error: { field: 'name' } },
    });

    const S = '/api/v1/schedules';
    const N = '/api/v1/schedules/{name}';
    const spec = { cron: '0 3 * * *', type: 'echo', payload: { value: 'nightly' } };
    expect((await call('PUT', N, `${S}/oas-nightly`, spec)).status).toBe(201);
    expect((await call('PUT', N, `${S}/oas-nightly`, spec)).status).toBe(200);
    expect((await call('GET', N, `${S}/oas-nightly`)).status).toBe(200);
    expect((await call('GET', N, `${S}/oas-missing`)).status).toBe(404);
    expect((await call('GET', S, S)).status).toBe(200);
    const badScheduleCursor = await call('GET', S, `${S}?cursor=not-a-cursor`);
    expect(badScheduleCursor).toMatchObject({ status: 400, json: { error: { code: 'invalid_cursor' } } });
    expect(await call('GET', S, `${S}?limit=0`)).toMatchObject({ status: 422, json: { error: { field: 'limit' } } });
    expect(await call('POST', `${N}/pause`, `${S}/oas-nightly/pause`, { nope: 1 })).toMatchObject({
      status: 422,
      json: { error: { code: 'validation_error', field: 'nope' } },
    });
    expect((await call('POST', `${N}/pause`, `${S}/oas-nightly/pause`, { note: 'maintenance' })).status).toBe(200);
    expect((await call('POST', `${N}/resume`, `${S}/oas-nightly/resume`)).status).toBe(200);
    expect((await call('POST', `${N}/trigger`, `${S}/oas-nightly/trigger`)).status).toBe(202);
    const to = new Date(Date.now() - 86_400_000).toISOString();
    const from = new Date(Date.now() - 3 * 86_400_000).toISOString();
    expect((await call('POST', `${N}/backfill`, `${S}/oas-nightly/backfill`, { from, to })).status).toBe(202);
    expect((await call('DELETE', N, `${S}/oas-nightly`)).status).toBe(200);
    // A schedule declared in code is changed by no API caller.
    const code = `${S}/oas-code`;
    for (const [method, template, path, body] of [
      ['PUT', N, code, spec],
      ['POST', `${N}/pause`, `${code}/pause`, undefined],
      ['POST', `${N}/resume`, `${code}/resume`, undefined],
      ['POST', `${N}/trigger`, `${code}/trigger`, undefined],
      ['POST', `${N}/backfill`, `${code}/backfill`, { from, to }],
      ['DELETE', N, code, undefined],
    ] as const) {
      expect(await call(method, template, path, body), `${method} ${path}`).toMatchObject({
        status: 409,
        json: { error: { code: 'declared_in_code' } },
      });
    }
    expect((await call('GET', '/api/v1/openapi.json', '/api/v1/openapi.json')).status).toBe(200);

    // Pipelines: list, read, runs by date, trigger (201 then 200), backfill (dry run, then for
    // real), a run read, cancelled and cleared; every refusal a 4xx naming the field.
    const P = '/api/v1/pipelines';
    const PN = `${P}/{name}`;
    const PR = `${PN}/runs`;
    const PD = `${PR}/{logical_date}`;
    expect((await call('GET', P, P)).status).toBe(200);
    expect((await call('GET', PN, `${P}/oas_pipe`)).status).toBe(200);
    expect((await call('GET', PN, `${P}/nope`)).status).toBe(404);
    expect((await call('POST', PR, `${P}/oas_pipe/runs`, { logical_date: '2026-11-01' })).status).toBe(201);
    expect((await call('POST', PR, `${P}/oas_pipe/runs`, { logical_date: '2026-11-01' })).status).toBe(200);
    expect((await call('POST', PR, `${P}/nope/runs`, { logical_date: '2026-11-01' })).status).toBe(404);
    expect(await call('POST', PR, `${P}/oas_pipe/runs`, { logical_date: '2026-13-01' })).toMatchObject({
      status: 422,
      json: { error: { field: 'logical_date' } },
    });
    expect((await call('GET', PR, `${P}/oas_pipe/runs?from=2026-10-01&to=2026-11-30`)).status).toBe(200);
    expect((await call('GET', PR, `${P}/nope/runs`)).status).toBe(404);
    expect(await call('GET', PR, `${P}/oas_pipe/runs?from=soon`)).toMatchObject({
      status: 422,
      json: { error: { field: 'from' } },
    });
    const BF = `${PN}/backfill`;
    const range = { from: '2026-10-01', to: '2026-10-02' };
    expect((await call('POST', BF, `${P}/oas_pipe/backfill`, { ...range, dry_run: true })).status).toBe(200);
    expect((await call('POST', BF, `${P}/oas_pipe/backfill`, range)).status).toBe(202);
    expect((await call('POST', BF, `${P}/nope/backfill`, range)).status).toBe(404);
    expect(await call('POST', BF, `${P}/oas_pipe/backfill`, { ...range, reprocess: 'some' })).toMatchObject({
      status: 422,
      json: { error: { field: 'reprocess' } },
    });
    expect((await call('GET', PD, `${P}/oas_pipe/runs/2026-01-01`)).status).toBe(404);
    expect(await call('GET', PD, `${P}/oas_pipe/runs/2026-02-30`)).toMatchObject({
      status: 422,
      json: { error: { field: 'logical_date' } },
    });
    const ended = async (name: string, date: string, status: string) => {
      for (let i = 0; i < 200; i += 1) {
        const view = (await (await fetch(`${runtime.url}${P}/${name}/runs/${date}`)).json()) as { status: string };
        if (view.status === status) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`the run of ${name} on ${date} is not ${status}`);
    };
    await ended('oas_pipe', '2026-11-01', 'succeeded');
    expect((await call('GET', PD, `${P}/oas_pipe/runs/2026-11-01`)).status).toBe(200);
    const CL = `${PD}/clear`;
    expect(await call('POST', CL, `${P}/oas_pipe/runs/2026-11-01/clear`, { nodes: ['zz'] })).toMatchObject({
      status: 422,
      json: { error: { field: 'nodes' } },
    });
    expect((await call('POST', CL, `${P}/oas_pipe/runs/2026-11-01/clear`, { nodes: ['b'] })).status).toBe(202);
    expect((await call('POST', CL, `${P}/oas_pipe/runs/2026-01-01/clear`, { nodes: ['b'] })).status).toBe(404);
    expect((await call('POST', PR, `${P}/oas_wait/runs`, { logical_date: '2026-11-01' })).status).toBe(201);
    await ended('oas_wait', '2026-11-01', 'running');
    expect(await call('POST', CL, `${P}/oas_wait/runs/2026-11-01/clear`, { failed: true })).toMatchObject({
      status: 409,
      json: { error: { code: 'run_active' } },
    });
    expect((await call('DELETE', PD, `${P}/oas_wait/runs/2026-11-01`)).status).toBe(200);
    expect((await call('DELETE', PD, `${P}/oas_wait/runs/2026-11-01`)).status).toBe(200);
    await ended('oas_pipe', '2026-11-01', 'succeeded');
    expect(await call('DELETE', PD, `${P}/oas_pipe/runs/2026-11-01`)).toMatchObject({
      status: 409,
      json: { error: { code: 'not_cancellable' } },
    });
    expect((await call('DELETE', PD, `${P}/oas_pipe/runs/2026-01-01`)).status).toBe(404);
    expect(await call('DELETE', PD, `${P}/oas_pipe/runs/yesterday`)).toMatchObject({
      status: 422,
      json: { error: { field: 'logical_date' } },
    });

    const documented = Object.values(doc.paths).flatMap((ops) =>
      Object.values(ops).flatMap((op) => Object.keys(op.responses).map((s) => `${op.operationId}:${s}`)),
    );
    const missing = documented.filter(
      (k) => !exercised.has(k) && NOT_EXERCISED[k] === undefined && NOT_EXERCISED[`*:${k.split(':')[1]}`] === undefined,
    );
    expect(missing).toEqual([]);
    // Every header the document declares was seen on a real answer.
    expect([...headersSeen].sort()).toEqual(
      Object.keys(doc.components.headers)
        .map((h) => h.toLowerCase())
        .sort(),
    );
  }, 60_000);
});
