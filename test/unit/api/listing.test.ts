import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { PermanentError } from '../../../shared/retry/errors.js';
import { classifyError } from '../../../shared/retry/classify.js';
import { DEVELOPMENT_ID_SECRET } from '../../../shared/service/all-in-one.js';
import { CursorSigner } from '../../../shared/task/cursor.js';
import { defineTask, resolvePolicy, TaskRegistry } from '../../../shared/task/define.js';
import { apiEvent, unitKaj } from '../../../testing/fixtures.js';

const registry = new TaskRegistry([
  defineTask({
    type: 'job',
    schema: z.object({ n: z.number() }),
    maxAttempts: 1,
    handler: async () => {
      throw new PermanentError('no');
    },
  }),
]);

const ALICE = 'arn:aws:iam::1:role/alice';
const BOB = 'arn:aws:iam::1:role/bob';

function listEvent(query: Record<string, string>, userArn = ALICE): APIGatewayProxyEventV2 {
  return { ...apiEvent('GET', '/api/v1/tasks', { userArn }), queryStringParameters: query };
}

/** Alice has three failed tasks, Bob one. */
async function withFailures() {
  const u = unitKaj(registry);
  const fail = async (owner: string) => {
    const { record } = await u.kaj.submitter.submit({ type: 'job', payload: { n: 1 } }, { owner });
    const claim = await u.kaj.lifecycle.claims.claim(record.task_id, record.dispatch_id);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await u.kaj.lifecycle.outcomes.attemptFailed(
      claim.record,
      classifyError(new PermanentError('no')),
      resolvePolicy({ maxAttempts: 1 }),
      2,
    );
    u.clock.advance(1000);
    return record.task_id;
  };
  const alice = [await fail(ALICE), await fail(ALICE), await fail(ALICE)];
  const bob = await fail(BOB);
  return { ...u, alice, bob };
}

describe('GET /api/v1/tasks', () => {
  it("lists the caller's own tasks of a status, newest first, without payloads or owners; pages with a cursor", async () => {
    const { kaj, alice } = await withFailures();
    const res = await kaj.handleHttp(listEvent({ status: 'failed', limit: '2' }));
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body) as { items: Record<string, unknown>[]; cursor?: string };
    expect(body.items.map((t) => t.task_id)).toEqual([alice[2], alice[1]]);
    expect(body.items[0]).toMatchObject({ type: 'job', status: 'failed', last_error: { message: 'no' } });
    expect(body.items[0]).not.toHaveProperty('payload');
    expect(body.items[0]).not.toHaveProperty('owner');
    expect(typeof body.items[0]?.listed_at).toBe('string');
    const next = await kaj.handleHttp(listEvent({ status: 'failed', limit: '2', cursor: body.cursor as string }));
    expect((JSON.parse(next.body) as { items: { task_id: string }[] }).items.map((t) => t.task_id)).toEqual([alice[0]]);
    const bob = await kaj.handleHttp(listEvent({ status: 'failed' }, BOB));
    expect((JSON.parse(bob.body) as { items: unknown[] }).items).toHaveLength(1);
  });

  it.each([
    [{}, 'status', /required/],
    [{ status: 'queued' }, 'status', /queue depth.*status=delayed/],
    [{ status: 'succeeded' }, 'status', /not listed/],
    [{ status: 'weird' }, 'status', /one of retrying, failed, cancelled, running, waiting, delayed/],
    [{ status: 'failed', limit: '0' }, 'limit', /1 to 100/],
    [{ status: 'failed', limit: '101' }, 'limit', /1 to 100/],
    [{ status: 'failed', limit: 'ten' }, 'limit', /1 to 100/],
    [{ status: 'failed', sort: 'asc' }, 'sort', /unknown field/],
  ])('%j → 400 naming %s', async (query, field, message) => {
    const { kaj } = unitKaj(registry);
    const res = await kaj.handleHttp(listEvent(query as Record<string, string>));
    expect(res.statusCode).toBe(400);
    const error = (JSON.parse(res.body) as { error: { code: string; field: string; message: string } }).error;
    expect(error).toMatchObject({ code: 'invalid_query', field });
    expect(error.message).toMatch(message);
  });

  it("status=delayed lists the caller's queued tasks waiting in the table, soonest first, with run_at", async () => {
    const u = unitKaj(registry);
    const submit = async (owner: string, delay: number) =>
      (await u.kaj.submitter.submit({ type: 'job', payload: { n: 1 }, delay_seconds: delay }, { owner })).record;
    const later = await submit(ALICE, 7_200);
    const soon = await submit(ALICE, 3_600);
    await submit(BOB, 3_000);
    await submit(ALICE, 10); // sent to SQS at once
    const res = await u.kaj.handleHttp(listEvent({ status: 'delayed' }));
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body) as { items: Record<string, unknown>[]; cursor?: string };
    expect(body.items.map((t) => t.task_id)).toEqual([soon.task_id, later.task_id]);
    expect(body.items[0]).toMatchObject({ status: 'queued', run_at: soon.run_at, listed_at: soon.updated_at });
    expect(body.items[0]).not.toHaveProperty('payload');
    expect(body.items[0]).not.toHaveProperty('owner');
    expect(body.items[0]).not.toHaveProperty('outbox_pk');
    expect(body.cursor).toBeUndefined();
  });

  it("refuses another owner's cursor (a cursor is bound to the query and the caller)", async () => {
    const { kaj } = await withFailures();
    const first = JSON.parse((await kaj.handleHttp(listEvent({ status: 'failed', limit: '1' }))).body) as {
      cursor: string;
    };
    const res = await kaj.handleHttp(listEvent({ status: 'failed', limit: '1', cursor: first.cursor }, BOB));
    expect(res.statusCode).toBe(400);
  });
});

describe('GET /api/v1/tasks: cursors', () => {
  /** A cursor signed with the listing's key (the development key of createKaj), holding `position`. */
  const signed = (position: unknown[], status = 'failed', owner = ALICE) =>
    new CursorSigner(`${DEVELOPMENT_ID_SECRET}\nlisting`, 'kaj-list-cursor').encode(position, [status, '', owner]);
  const TASK = `t_${'a'.repeat(32)}`;

  const expectInvalidCursor = (res: { statusCode: number; body: string }) => {
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toEqual({
      error: { code: 'invalid_cursor', message: expect.stringMatching(/^cursor: /), field: 'cursor' },
    });
  };

  it("the signer here is the listing's: a position it signs is taken (the cases below fail for what they hold)", async () => {
    const { kaj } = await withFailures();
    const ok = signed([`2030-01-01T00:00:00.000Z#${TASK}`, TASK]);
    expect((await kaj.handleHttp(listEvent({ status: 'failed', cursor: ok }))).statusCode).toBe(200);
    const delayed = signed([Date.parse('2030-01-01T00:00:00.000Z'), 3, TASK], 'delayed');
    expect((await kaj.handleHttp(listEvent({ status: 'delayed', cursor: delayed }))).statusCode).toBe(200);
  });

  it.each([
    ['empty', ''],
    ['tampered', 'forged.cursor'],
    ['over 2,048 characters', `${'A'.repeat(2049)}.x`],
    ['not base64 JSON', 'AAAA'],
  ])('%s → 400 invalid_cursor naming cursor', async (_, cursor) => {
    const { kaj } = await withFailures();
    expectInvalidCursor(await kaj.handleHttp(listEvent({ status: 'failed', cursor })));
    expectInvalidCursor(await kaj.handleHttp(listEvent({ status: 'delayed', cursor })));
  });

  // Signed with the listing's key (which a development runtime does not keep secret), yet no page
  // ends there: each of these reached DynamoDB as an ExclusiveStartKey it refuses, and was a 500.
  it.each([
    ['an empty position', ['', '']],
    ['an empty task id', [`2030-01-01T00:00:00.000Z#`, '']],
    ['a key over 1 KB', [`2030-01-01T00:00:00.000Z#t_${'a'.repeat(1010)}`, 't_a']],
    [
      'a key over 1 KB ending with its task id',
      [`2030-01-01T00:00:00.000Z#t_${'a'.repeat(1010)}`, `t_${'a'.repeat(1010)}`],
    ],
    ['a sort key that does not end with its task id', [`2030-01-01T00:00:00.000Z#${TASK}`, `t_${'b'.repeat(32)}`]],
    ['a sort key without a time', [`#${TASK}`, TASK]],
    ['a time that is no date', [`2030-13-45T99:00:00.000Z#${TASK}`, TASK]],
    ['numbers', [1e308, 1]],
    ['three parts', [`2030-01-01T00:00:00.000Z#${TASK}`, TASK, 'x']],
  ])('a signed cursor holding %s → 400 invalid_cursor', async (_, position) => {
    const { kaj } = await withFailures();
    expectInvalidCursor(await kaj.handleHttp(listEvent({ status: 'failed', cursor: signed(position) })));
  });

  it.each([
    ['a due time of 1e308', [1e308, 0, TASK]],
    ['a negative due time', [-1, 0, TASK]],
    ['a fractional due time', [1.5, 0, TASK]],
    ['a due time as a string', ['1', 0, TASK]],
    ['a partition out of range', [0, 99, TASK]],
    ['an empty task id', [0, 0, '']],
    ['a task id over 1 KB', [0, 0, `t_${'a'.repeat(1100)}`]],
  ])('a signed delayed cursor holding %s → 400 invalid_cursor', async (_, position) => {
    const { kaj } = await withFailures();
    expectInvalidCursor(await kaj.handleHttp(listEvent({ status: 'delayed', cursor: signed(position, 'delayed') })));
  });
});
