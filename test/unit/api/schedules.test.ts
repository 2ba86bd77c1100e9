import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { DEVELOPMENT_ID_SECRET } from '../../../shared/service/all-in-one.js';
import { CursorSigner } from '../../../shared/task/cursor.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { FakeClock, sequenceRandom } from '../../../testing/doubles.js';
import { apiEvent, unitKaj } from '../../../testing/fixtures.js';
import { MemoryScheduleStore } from '../../../testing/memory-schedule-store.js';

/**
 * The schedule routes over the HTTP handler: status codes, owner isolation, schedules declared in
 * code read-only, validation naming the field, and the same 415/400 rules as the task routes.
 */
const registry = new TaskRegistry([
  defineTask({
    type: 'report',
    schema: z.object({ region: z.string().default('all') }),
    schedules: [{ name: 'nightly', cron: '30 0 * * *', timezone: 'Asia/Dhaka' }],
    handler: async () => ({}),
  }),
]);

const ALICE = 'arn:aws:iam::111122223333:user/alice';
const BOB = 'arn:aws:iam::111122223333:user/bob';

function event(method: string, path: string, userArn: string, body?: unknown, query?: string): APIGatewayProxyEventV2 {
  const e = apiEvent(method, path, {
    userArn,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  if (query === undefined) return e;
  return { ...e, rawQueryString: query, queryStringParameters: Object.fromEntries(new URLSearchParams(query)) };
}

async function setup() {
  const clock = new FakeClock(Date.parse('2026-12-01T10:00:00.000Z'));
  const schedules = new MemoryScheduleStore();
  const u = unitKaj(registry, sequenceRandom([0.5]), clock, { schedules });
  const service = u.kaj.schedules;
  if (service === undefined) throw new Error('no schedule service');
  await service.syncDeclared(registry.declaredSchedules());
  const call = async (method: string, path: string, who: string, body?: unknown, query?: string) => {
    const r = await u.kaj.handleHttp(event(method, path, who, body, query));
    return { status: r.statusCode, body: JSON.parse(r.body) as Record<string, unknown> };
  };
  return { ...u, schedules, call };
}

describe('schedule routes', () => {
  it('PUT creates (201), the same body again is 200 with changed: false, GET shows it, DELETE removes it', async () => {
    const { call } = await setup();
    const body = { every: '15m', type: 'report', payload: { region: 'eu' } };
    const created = await call('PUT', '/api/v1/schedules/cleanup', ALICE, body);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'cleanup', owner: ALICE, state: 'active', changed: true });
    expect(created.body.next_times).toEqual([
      '2026-12-01T10:00:00.000Z',
      '2026-12-01T10:15:00.000Z',
      '2026-12-01T10:30:00.000Z',
      '2026-12-01T10:45:00.000Z',
      '2026-12-01T11:00:00.000Z',
    ]);
    const again = await call('PUT', '/api/v1/schedules/cleanup', ALICE, { ...body });
    expect(again).toMatchObject({ status: 200, body: { changed: false } });
    expect((await call('GET', '/api/v1/schedules/cleanup', ALICE)).status).toBe(200);
    expect(await call('DELETE', '/api/v1/schedules/cleanup', ALICE)).toEqual({
      status: 200,
      body: { name: 'cleanup', deleted: true },
    });
    expect((await call('GET', '/api/v1/schedules/cleanup', ALICE)).status).toBe(404);
  });

  it('another owner’s schedule is 404 to read, delete and act on; PUT of its name is 409 name_taken', async () => {
    const { call } = await setup();
    await call('PUT', '/api/v1/schedules/mine', ALICE, { every: '1h', type: 'report' });
    for (const [method, path] of [
      ['GET', '/api/v1/schedules/mine'],
      ['DELETE', '/api/v1/schedules/mine'],
      ['POST', '/api/v1/schedules/mine/pause'],
      ['POST', '/api/v1/schedules/mine/resume'],
      ['POST', '/api/v1/schedules/mine/trigger'],
    ] as const) {
      expect((await call(method, path, BOB)).status, `${method} ${path}`).toBe(404);
    }
    const taken = await call('PUT', '/api/v1/schedules/mine', BOB, { every: '1h', type: 'report' });
    expect(taken).toMatchObject({ status: 409, body: { error: { code: 'name_taken' } } });
    const list = await call('GET', '/api/v1/schedules', BOB);
    expect((list.body.items as { name: string }[]).map((s) => s.name)).toEqual(['nightly']);
    const alices = await call('GET', '/api/v1/schedules', ALICE);
    expect((alices.body.items as { name: string }[]).map((s) => s.name)).toEqual(['mine', 'nightly']);
  });

  it('a schedule declared in code is readable by every caller and changed by none (409 declared_in_code)', async () => {
    const { call } = await setup();
    const view = await call('GET', '/api/v1/schedules/nightly', BOB);
    expect(view).toMatchObject({ status: 200, body: { source: 'code', owner: 'kaj:code' } });
    // 00:30 in Dhaka (UTC+6) is 18:30 UTC the day before.
    expect((view.body.next_times as string[])[0]).toBe('2026-12-01T18:30:00.000Z');
    for (const [method, path, body] of [
      ['PUT', '/api/v1/schedules/nightly', { every: '1h', type: 'report' }],
      ['DELETE', '/api/v1/schedules/nightly', undefined],
      ['POST', '/api/v1/schedules/nightly/pause', undefined],
      ['POST', '/api/v1/schedules/nightly/trigger', undefined],
    ] as const) {
      const r = await call(method, path, ALICE, body);
      expect(r, `${method} ${path}`).toMatchObject({ status: 409, body: { error: { code: 'declared_in_code' } } });
    }
  });

  it('pause with a note, resume, trigger (202 with the run key and task id), backfill', async () => {
    const { call, clock, store } = await setup();
    await call('PUT', '/api/v1/schedules/hourly', ALICE, { cron: '0 * * * *', type: 'report' });
    const paused = await call('POST', '/api/v1/schedules/hourly/pause', ALICE, { note: 'db migration' });
    expect(paused).toMatchObject({ status: 200, body: { state: 'paused', pause_note: 'db migration' } });
    expect((await call('POST', '/api/v1/schedules/hourly/resume', ALICE)).body).toMatchObject({ state: 'active' });
    const run = await call('POST', '/api/v1/schedules/hourly/trigger', ALICE);
    expect(run).toMatchObject({
      status: 202,
      body: { run_key: 'hourly@2026-12-01T10:00:00.000Z', created: true },
    });
    const task = await store.get(run.body.task_id as string);
    expect(task).toMatchObject({ owner: ALICE, schedule: 'hourly', scheduled_time: '2026-12-01T10:00:00.000Z' });
    clock.set(Date.parse('2026-12-01T12:30:00.000Z'));
    const filled = await call('POST', '/api/v1/schedules/hourly/backfill', ALICE, {
      from: '2026-12-01T08:00:00Z',
      to: '2026-12-01T12:00:00Z',
    });
    expect(filled.status).toBe(202);
    const runs = filled.body.runs as { scheduled_time: string; created: boolean; task_id: string }[];
    expect(runs.map((r) => r.scheduled_time.slice(11, 16))).toEqual(['08:00', '09:00', '10:00', '11:00', '12:00']);
    const again = await call('POST', '/api/v1/schedules/hourly/backfill', ALICE, {
      from: '2026-12-01T08:00:00Z',
      to: '2026-12-01T12:00:00Z',
    });
    expect((again.body.runs as { created: boolean }[]).every((r) => !r.created)).toBe(true);
  });

  it.each([
    [{ cron: '61 * * * *', type: 'report' }, 'cron'],
    [{ cron: '0 * * * *', timezone: 'Nowhere/Land', type: 'report' }, 'timezone'],
    [{ every: '59s', type: 'report' }, 'every'],
    [{ every: '1h', start_at: '2026-12-02T00:00:00Z', end_at: '2026-12-01T00:00:00Z', type: 'report' }, 'end_at'],
    [{ every: '1h', type: 'report', payload: { region: 7 } }, 'payload.region'],
    [{ every: '1h', type: 'report', colour: 'red' }, 'colour'],
    [{ every: '1h' }, 'type'],
  ])('PUT %j → 422 naming %s', async (body, field) => {
    const { call } = await setup();
    const r = await call('PUT', '/api/v1/schedules/bad', ALICE, body);
    expect(r).toMatchObject({ status: 422, body: { error: { code: 'validation_error', field } } });
  });

  it('a bad name, a bad action body, a bad backfill range and a bad limit are 422 naming the field', async () => {
    const { call } = await setup();
    await call('PUT', '/api/v1/schedules/ok', ALICE, { every: '1h', type: 'report' });
    expect((await call('PUT', '/api/v1/schedules/-bad', ALICE, { every: '1h', type: 'report' })).body).toMatchObject({
      error: { field: 'name' },
    });
    expect((await call('POST', '/api/v1/schedules/ok/pause', ALICE, { reason: 'x' })).body).toMatchObject({
      error: { field: 'reason' },
    });
    expect((await call('POST', '/api/v1/schedules/ok/backfill', ALICE, { from: 'yesterday' })).body).toMatchObject({
      error: { field: 'from' },
    });
    expect((await call('GET', '/api/v1/schedules', ALICE, undefined, 'limit=0')).body).toMatchObject({
      error: { field: 'limit' },
    });
  });

  it('PUT needs a JSON body: 415 without the content type, 400 when malformed', async () => {
    const { kaj } = await setup();
    const plain = apiEvent('PUT', '/api/v1/schedules/x', { body: '{}', headers: { 'content-type': 'text/plain' } });
    expect((await kaj.handleHttp(plain)).statusCode).toBe(415);
    const broken = apiEvent('PUT', '/api/v1/schedules/x', { body: '{' });
    expect((await kaj.handleHttp(broken)).statusCode).toBe(400);
  });

  it.each([
    ['null', 'null'],
    ['a list', '[]'],
    ['a string', '"db migration"'],
    ['a number', '42'],
  ])('a body that is JSON but not an object (%s) is 422 naming body; nothing changes', async (_, raw) => {
    const { call } = await setup();
    await call('PUT', '/api/v1/schedules/ok', ALICE, { every: '1h', type: 'report' });
    for (const [method, path] of [
      ['POST', '/api/v1/schedules/ok/pause'],
      ['POST', '/api/v1/schedules/ok/backfill'],
      ['PUT', '/api/v1/schedules/ok'],
    ] as const) {
      const r = await call(method, path, ALICE, raw);
      expect(r, `${method} ${path}`).toMatchObject({
        status: 422,
        body: { error: { code: 'validation_error', field: 'body', message: expect.stringMatching(/^body: /) } },
      });
    }
    expect((await call('GET', '/api/v1/schedules/ok', ALICE)).body).toMatchObject({ state: 'active' });
  });

  it('without a schedules store the routes answer 404', async () => {
    const { kaj } = unitKaj(registry);
    const r = await kaj.handleHttp(apiEvent('GET', '/api/v1/schedules', {}));
    expect(r.statusCode).toBe(404);
  });
});

describe('schedule listing cursors', () => {
  /** Alice owns `count` schedules besides the one declared in code. */
  async function withSchedules(count: number) {
    const h = await setup();
    for (let i = 0; i < count; i += 1)
      await h.call('PUT', `/api/v1/schedules/s${i}`, ALICE, { every: '1h', type: 'report' });
    return h;
  }
  const invalidCursor = { status: 400, body: { error: { code: 'invalid_cursor', field: 'cursor' } } };

  it("pages through every schedule with the cursors it returns (signed: not the store's own)", async () => {
    const { call } = await withSchedules(3);
    const seen: unknown[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await call(
        'GET',
        '/api/v1/schedules',
        ALICE,
        undefined,
        `limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      seen.push(...(page.body.items as { name: string }[]).map((i) => i.name));
      cursor = page.body.cursor as string | undefined;
      if (cursor !== undefined) expect(cursor).toMatch(/^[\w-]+\.[\w-]{32}$/);
      pages += 1;
    } while (cursor !== undefined && pages < 10);
    // `nightly` is declared in code: read-only, and listed to every caller.
    expect(seen.sort()).toEqual(['nightly', 's0', 's1', 's2']);
  });

  it.each([
    ['AAAA', 'AAAA'],
    ['empty', ''],
    ['tampered', 'eyJ4Ijp0cnVlfQ.AAAA'],
    ["the store's own cursor, unsigned", Buffer.from(JSON.stringify({ name: 's0' })).toString('base64url')],
    ['over 2,048 characters', 'A'.repeat(2049)],
  ])('cursor %s → 400 invalid_cursor naming cursor (it was a 500)', async (_, cursor) => {
    const { call } = await withSchedules(2);
    const r = await call('GET', '/api/v1/schedules', ALICE, undefined, `cursor=${encodeURIComponent(cursor)}`);
    expect(r).toMatchObject(invalidCursor);
  });

  it("refuses another caller's cursor (a cursor is bound to the caller)", async () => {
    const { call } = await withSchedules(2);
    const first = await call('GET', '/api/v1/schedules', ALICE, undefined, 'limit=1');
    const cursor = first.body.cursor as string;
    expect(cursor).toBeDefined();
    const r = await call('GET', '/api/v1/schedules', BOB, undefined, `cursor=${encodeURIComponent(cursor)}`);
    expect(r).toMatchObject(invalidCursor);
  });

  it('a cursor signed with the key yet holding no position of the store is a 400 too', async () => {
    const { call } = await withSchedules(1);
    const signer = new CursorSigner(`${DEVELOPMENT_ID_SECRET}\nschedules`, 'kaj-schedule-cursor');
    for (const position of [[''], [42], ['not base64 json'], [Buffer.from('{"name":""}').toString('base64url')], []]) {
      const cursor = signer.encode(position, ['owner', ALICE]);
      const r = await call('GET', '/api/v1/schedules', ALICE, undefined, `cursor=${encodeURIComponent(cursor)}`);
      expect(r, JSON.stringify(position)).toMatchObject(invalidCursor);
    }
  });
});
