import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { PermanentError } from '../../../shared/retry/errors.js';
import { classifyError } from '../../../shared/retry/classify.js';
import { defineTask, resolvePolicy, TaskRegistry } from '../../../shared/task/define.js';
import { apiEvent, unitKaj } from '../../support/fixtures.js';

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
    const claim = await u.kaj.lifecycle.claim(record.task_id, record.dispatch_id);
    if (claim.kind !== 'claimed') throw new Error(claim.kind);
    await u.kaj.lifecycle.attemptFailed(
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
    [{ status: 'weird' }, 'status', /one of retrying, failed, cancelled, running, delayed/],
    [{ status: 'failed', limit: '0' }, 'limit', /1 to 100/],
    [{ status: 'failed', limit: '101' }, 'limit', /1 to 100/],
    [{ status: 'failed', limit: 'ten' }, 'limit', /1 to 100/],
    [{ status: 'failed', sort: 'asc' }, 'sort', /unknown field/],
    [{ status: 'failed', cursor: 'forged.cursor' }, 'cursor', /not a cursor of this listing/],
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
