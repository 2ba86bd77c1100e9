/**
 * Direct mode of `KajClient` (`kaj/client/direct`):
 * - the direct transport answers every task route exactly as the API does (`handleHttp`), on two
 *   identical deployments over the in-memory fakes — statuses, bodies, error codes and fields;
 * - the client over it: results, typed errors, retries with one key, waitFor, no schedules;
 * - `directClient` on (mocked) AWS: the owner from STS normalised as the API normalises it, the
 *   id secret from Secrets Manager, each asked once, in the producer config's region; failures;
 * - the producer root and the ProducerConfig reader;
 * - bundles: `kaj/client` carries no DynamoDB/SQS/STS/Secrets Manager client, the direct entry
 *   carries the API's submit code.
 */
import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { mockClient } from 'aws-sdk-client-mock';
import * as z from 'zod';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { ownerOf } from '../../../shared/service/api/http.js';
import { createProducer, NO_DEAD_LETTER_QUEUE, producerFunctionConfig } from '../../../shared/service/app/producer.js';
import {
  directClient,
  KajApiError,
  KajClient,
  KajClientError,
  KajNotSupportedError,
  KajTimeoutError,
  KajUnreachableError,
  ownerOfPrincipal,
} from '../../../client/direct.js';
import { DirectTransport, type DirectServices } from '../../../client/direct-transport.js';
import { ConfigError } from '../../../shared/config/errors.js';
import { parseProducerConfig, type ProducerConfigInput } from '../../../shared/config/producer.js';
import { StoreUnavailableError } from '../../../shared/task/store-errors.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { idempotentTaskId } from '../../../shared/task/submit.js';
import { bundleInputs } from '../../support/bundle.js';
import { FakeClock, sequenceRandom } from '../../../testing/doubles.js';
import { apiEvent, type UnitKaj, unitKaj } from '../../../testing/fixtures.js';

const registry = new TaskRegistry(
  [
    defineTask({ type: 'job', schema: z.object({ n: z.number() }), handler: async () => ({}) }),
    defineTask({ type: 'render', lane: 'cpu', schema: z.object({ page: z.number() }), handler: async () => ({}) }),
  ],
  { lanes: { cpu: {} } },
);

/** A producer's session, and the owner the API records for it (its role). */
const SESSION = 'arn:aws:sts::123456789012:assumed-role/Producer/i-0abc123';
const ROLE_OWNER = 'arn:aws:sts::123456789012:assumed-role/Producer';
const UNKNOWN_ID = 't_0123456789abcdef0123456789abcdef';

describe('ownerOfPrincipal', () => {
  it('is the API’s owner of a caller: an assumed-role session is owned by its role, anything else by itself', () => {
    for (const arn of [
      SESSION,
      'arn:aws:sts::123456789012:assumed-role/Producer/other-session',
      'arn:aws:iam::123456789012:user/ada',
      'arn:aws:iam::123456789012:role/path/Producer',
      'arn:aws-cn:sts::123456789012:assumed-role/Cn/s',
    ]) {
      expect(ownerOfPrincipal(arn)).toBe(ownerOf(apiEvent('GET', '/', { userArn: arn }), 'anonymous'));
    }
    expect(ownerOfPrincipal(SESSION)).toBe(ROLE_OWNER);
    expect(ownerOfPrincipal('arn:aws:iam::123456789012:user/ada')).toBe('arn:aws:iam::123456789012:user/ada');
  });
});

/** Two identical deployments: one asked through the API's handler, one through the direct transport. */
function twins(owner = ROLE_OWNER) {
  const viaApi = unitKaj(registry, sequenceRandom([0.5]), new FakeClock());
  const viaDirect = unitKaj(registry, sequenceRandom([0.5]), new FakeClock());
  const api = async (method: string, path: string, body?: unknown, userArn = SESSION) => {
    const r = await viaApi.kaj.handleHttp(
      apiEvent(method, path, { userArn, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }),
    );
    return { status: r.statusCode, body: JSON.parse(r.body) as unknown };
  };
  const transport = (o: string) =>
    new DirectTransport({ owner: async () => o, services: async () => viaDirect.kaj as DirectServices });
  const mine = transport(owner);
  const direct = async (method: string, path: string, body?: unknown, t = mine) => {
    const a = await t.request(method, path, body);
    return { status: a.status, body: a.body };
  };
  return { viaApi, viaDirect, api, direct, transport };
}

describe('DirectTransport answers as the API does', () => {
  it('every task route, success and refusal, on the same deployment state: the same status and body', async () => {
    const { api, direct, viaApi, viaDirect } = twins();
    const submit = (body: unknown) => ['POST', '/api/v1/tasks', body] as const;
    const requests: (readonly [string, string, unknown?])[] = [
      submit({ type: 'job', payload: { n: 1 }, idempotency_key: 'k1', priority: 'high' }),
      // A replay, then the same key for another request.
      submit({ type: 'job', payload: { n: 1 }, idempotency_key: 'k1', priority: 'high' }),
      submit({ type: 'job', payload: { n: 2 }, idempotency_key: 'k1' }),
      submit({ type: 'job', payload: { n: 'x' } }),
      submit({ type: 'nope', payload: {} }),
      submit({ type: 'job', payload: { n: 1 }, typo: true }),
      submit({ type: 'job', payload: { n: 1 }, delay_seconds: 5, run_at: '2026-01-01T00:10:00Z' }),
      submit({ type: 'job', payload: { n: 1, big: 'x'.repeat(33 * 1024) } }),
      // What JSON makes of a Date is what both get: the string.
      submit({ type: 'job', payload: { n: 3, at: new Date(0) }, idempotency_key: 'dated' }),
      submit({ type: 'render', payload: { page: 1 }, delay_seconds: 3600, idempotency_key: 'later' }),
      [
        'POST',
        '/api/v1/tasks/batch',
        {
          tasks: [
            { type: 'job', payload: { n: 4 }, idempotency_key: 'b1' },
            { type: 'job', payload: { n: 'bad' } },
            { type: 'job', payload: { n: 4 }, idempotency_key: 'b1' },
            { type: 'job', payload: { n: 5 }, idempotency_key: 'b1' },
            { type: 'job', payload: { n: 1 }, idempotency_key: 'k1', priority: 'high' },
          ],
        },
      ],
      ['POST', '/api/v1/tasks/batch', { tasks: [] }],
      ['GET', `/api/v1/tasks/${UNKNOWN_ID}`],
      ['GET', '/api/v1/tasks/not-a-task-id'],
      ['DELETE', `/api/v1/tasks/${UNKNOWN_ID}`],
      // Bodies over the API's limits (64 KiB a submit, 1 MiB a batch): refused whole, as the API does.
      submit({ type: 'job', payload: { n: 1, big: 'x'.repeat(65 * 1024) } }),
      [
        'POST',
        '/api/v1/tasks/batch',
        {
          tasks: Array.from({ length: 40 }, (_, i) => ({ type: 'job', payload: { n: i, big: 'y'.repeat(27 * 1024) } })),
        },
      ],
    ];
    const answers: { status: number; body: any }[] = [];
    for (const [method, path, body] of requests) {
      const a = await api(method, path, body);
      const d = await direct(method, path, body);
      expect(d, `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)}`).toEqual(a);
      answers.push(d as { status: number; body: any });
    }
    expect(answers.map((a) => a.status)).toEqual([
      202, 200, 409, 422, 422, 422, 422, 413, 202, 202, 207, 422, 404, 404, 404, 413, 413,
    ]);
    expect(answers.slice(15).map((a) => [a.body.error.code, a.body.error.field])).toEqual([
      ['payload_too_large', 'body'],
      ['payload_too_large', 'body'],
    ]);
    expect(answers.slice(2, 8).map((a) => [a.body.error.code, a.body.error.field])).toEqual([
      ['idempotency_conflict', 'idempotency_key'],
      ['validation_error', 'payload.n'],
      ['unknown_type', 'type'],
      ['validation_error', 'typo'],
      ['validation_error', 'run_at'],
      ['payload_too_large', 'payload'],
    ]);
    expect(answers[10]?.body.results.map((r: { http_status: number }) => r.http_status)).toEqual([
      202, 422, 200, 409, 200,
    ]);

    // Reads and cancels of the tasks made above: found by the role's every session, by no one else.
    const first = answers[0]?.body.task_id as string;
    const dated = answers[8]?.body.task_id as string;
    const later = answers[9]?.body.task_id as string;
    for (const [method, path] of [
      ['GET', `/api/v1/tasks/${first}`],
      ['GET', `/api/v1/tasks/${dated}`],
      ['DELETE', `/api/v1/tasks/${later}`],
      ['DELETE', `/api/v1/tasks/${later}`],
      ['GET', `/api/v1/tasks/${later}`],
    ] as const) {
      expect(await direct(method, path), `${method} ${path}`).toEqual(await api(method, path));
    }
    expect((await viaDirect.store.get(dated))?.payload).toEqual({ n: 3, at: '1970-01-01T00:00:00.000Z' });
    expect(await viaDirect.store.get(dated)).toEqual(await viaApi.store.get(dated));
    expect((await direct('DELETE', `/api/v1/tasks/${later}`)).body).toEqual({ task_id: later, status: 'cancelled' });
    const otherSession = 'arn:aws:sts::123456789012:assumed-role/Producer/another-instance';
    expect((await api('GET', `/api/v1/tasks/${first}`, undefined, otherSession)).status).toBe(200);
    expect((await api('GET', `/api/v1/tasks/${first}`, undefined, 'arn:aws:iam::123456789012:user/eve')).status).toBe(
      404,
    );
  });

  it('another owner sees none of the tasks (404), as over the API', async () => {
    const { api, direct, transport } = twins();
    const body = { type: 'job', payload: { n: 1 }, idempotency_key: 'mine' };
    const { task_id } = (await direct('POST', '/api/v1/tasks', body)).body as { task_id: string };
    await api('POST', '/api/v1/tasks', body);
    const eve = transport('arn:aws:iam::123456789012:user/eve');
    const a = await api('GET', `/api/v1/tasks/${task_id}`, undefined, 'arn:aws:iam::123456789012:user/eve');
    expect(await direct('GET', `/api/v1/tasks/${task_id}`, undefined, eve)).toEqual(a);
    expect(a.status).toBe(404);
    expect(await direct('DELETE', `/api/v1/tasks/${task_id}`, undefined, eve)).toMatchObject({ status: 404 });
  });

  it('an outage is the API’s 503 (code unavailable, Retry-After 1) with the cause kept and named', async () => {
    const { viaDirect } = twins();
    const denied = Object.assign(new Error('User: x is not authorized to perform: dynamodb:PutItem'), {
      name: 'AccessDeniedException',
    });
    viaDirect.store.create = async () => {
      throw new StoreUnavailableError('DynamoDB PutItem failed: AccessDeniedException', { cause: denied });
    };
    const t = new DirectTransport({ owner: async () => 'o', services: async () => viaDirect.kaj });
    const a = await t.request('POST', '/api/v1/tasks', { type: 'job', payload: { n: 1 } });
    expect(a).toMatchObject({
      status: 503,
      retryAfterSeconds: 1,
      body: {
        error: {
          code: 'unavailable',
          message:
            'a dependency is unavailable; retry later (DynamoDB PutItem failed: AccessDeniedException: User: x is not authorized to perform: dynamodb:PutItem)',
        },
      },
    });
    expect(a.cause).toBeInstanceOf(StoreUnavailableError);
  });

  it('the schedules and other API-only routes are KajNotSupportedError, before any owner or service is asked', async () => {
    let asked = 0;
    const t = new DirectTransport({
      owner: async () => {
        asked += 1;
        return 'o';
      },
      services: async () => {
        asked += 1;
        throw new Error('not reached');
      },
    });
    await expect(t.request('GET', '/api/v1/schedules')).rejects.toThrow(/schedules are not available in direct mode/);
    await expect(t.request('PUT', '/api/v1/schedules/nightly', {})).rejects.toBeInstanceOf(KajNotSupportedError);
    await expect(t.request('GET', '/api/v1/openapi.json')).rejects.toThrow(
      /GET \/api\/v1\/openapi.json is not available in direct mode/,
    );
    await expect(t.request('GET', '/nowhere')).rejects.toBeInstanceOf(KajNotSupportedError);
    expect(asked).toBe(0);
  });
});

/** A KajClient in direct mode over the in-memory fakes. */
function directOnFakes(extra: { maxAttempts?: number } = {}) {
  const u: UnitKaj = unitKaj(registry, sequenceRandom([0.5]), new FakeClock());
  const sleeps: number[] = [];
  let keys = 0;
  const kaj = new KajClient<typeof registry>({
    transport: new DirectTransport({ owner: async () => ROLE_OWNER, services: async () => u.kaj }),
    sleep: async (ms) => {
      sleeps.push(ms);
      await u.clock.sleep(ms);
    },
    random: () => 0.5,
    newKey: () => `key-${(keys += 1)}`,
    ...extra,
  });
  return { kaj, u, sleeps };
}

describe('KajClient in direct mode', () => {
  it('submits (typed result, generated key), reads back, and a bad payload is a KajApiError naming the field', async () => {
    const { kaj, u } = directOnFakes();
    expect(kaj.mode).toBe('direct');
    const r = await kaj.submit('job', { n: 7 }, { priority: 'high' });
    expect(r).toMatchObject({ status: 'queued', priority: 'high', replayed: false, idempotencyKey: 'key-1' });
    expect(r.task_id).toBe(idempotentTaskId('kaj-development-id-secret', ROLE_OWNER, 'job', 'key-1'));
    expect(u.queue.sent.map((s) => s.message.task_id)).toEqual([r.task_id]);
    expect(await kaj.get(r.task_id)).toMatchObject({ task_id: r.task_id, status: 'queued', type: 'job' });
    expect((await u.store.get(r.task_id))?.payload).toEqual({ n: 7 });
    const again = await kaj.submit('job', { n: 7 }, { priority: 'high', idempotencyKey: 'key-1' });
    expect(again).toMatchObject({ task_id: r.task_id, replayed: true });
    const err = await kaj.submit('job', { n: 'seven' as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajApiError);
    expect(err).toMatchObject({ status: 422, code: 'validation_error', field: 'payload.n', retryable: false });
    await expect(kaj.get(UNKNOWN_ID)).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it('submitMany: each item answered in order, refusals as KajApiError items; the lane type goes to its lane', async () => {
    const { kaj, u } = directOnFakes();
    const items = await kaj.submitMany([
      { type: 'job', payload: { n: 1 } },
      { type: 'job', payload: { n: 'x' as never } },
      { type: 'render', payload: { page: 2 } },
    ]);
    expect(items.map((i) => [i.index, i.ok])).toEqual([
      [0, true],
      [1, false],
      [2, true],
    ]);
    const bad = items[1];
    expect(bad?.ok === false && bad.error).toMatchObject({ status: 422, code: 'validation_error', field: 'payload.n' });
    expect(u.queue.batches.length).toBeGreaterThan(0);
    const render = items[2];
    expect(render?.ok === true && (await u.store.get(render.task_id))?.lane).toBe('cpu');
  });

  it('retries a 503 with the same key after Retry-After, and gives up after maxAttempts with the cause', async () => {
    const { kaj, u, sleeps } = directOnFakes({ maxAttempts: 3 });
    const create = u.store.create.bind(u.store);
    let failures = 1;
    u.store.create = async (record) => {
      if (failures > 0) {
        failures -= 1;
        throw new StoreUnavailableError('DynamoDB PutItem failed: ThrottlingException');
      }
      return create(record);
    };
    const r = await kaj.submit('job', { n: 1 });
    expect(r).toMatchObject({ replayed: false, idempotencyKey: 'key-1' });
    expect(sleeps).toEqual([1000]);
    // The message of the failed try went out before its put: the consumer drops the stale one.
    expect(u.queue.sent.map((s) => s.message.task_id)).toEqual([r.task_id, r.task_id]);

    failures = 10;
    const err = await kaj.submit('job', { n: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajApiError);
    expect(err).toMatchObject({ status: 503, code: 'unavailable', retryable: true });
    expect((err as Error).message).toContain('ThrottlingException');
    expect((err as Error).cause).toBeInstanceOf(StoreUnavailableError);
    expect(failures).toBe(7);
  });

  it('waitFor times out cleanly with the last status; cancel answers as the API', async () => {
    const { kaj } = directOnFakes();
    const { task_id } = await kaj.submit('job', { n: 1 }, { delaySeconds: 600 });
    const err = await kaj.waitFor(task_id, { timeoutMs: 250, pollMs: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajTimeoutError);
    expect(err).toMatchObject({ lastStatus: 'queued', timeoutMs: 250 });
    expect(await kaj.cancel(task_id)).toEqual({ task_id, status: 'cancelled' });
    await expect(kaj.waitFor(task_id)).resolves.toMatchObject({ status: 'cancelled' });
  });

  it('schedules are KajNotSupportedError, not retried', async () => {
    const { kaj, sleeps } = directOnFakes();
    await expect(kaj.schedules.list()).rejects.toBeInstanceOf(KajNotSupportedError);
    await expect(kaj.schedules.trigger('nightly')).rejects.toThrow(/through the API/);
    expect(sleeps).toEqual([]);
  });
});

// --- directClient on (mocked) AWS ----------------------------------------------------------------

const PRODUCER: ProducerConfigInput = {
  version: 1,
  region: 'eu-west-1',
  tableName: 'kaj-tasks',
  queueUrls: {
    high: 'https://sqs.eu-west-1.amazonaws.com/123456789012/kaj-high',
    normal: 'https://sqs.eu-west-1.amazonaws.com/123456789012/kaj-normal',
    low: 'https://sqs.eu-west-1.amazonaws.com/123456789012/kaj-low',
  },
  laneQueueUrls: {
    cpu: {
      high: 'https://sqs.eu-west-1.amazonaws.com/123456789012/kaj-cpu-lane-high',
      normal: 'https://sqs.eu-west-1.amazonaws.com/123456789012/kaj-cpu-lane-normal',
      low: 'https://sqs.eu-west-1.amazonaws.com/123456789012/kaj-cpu-lane-low',
    },
  },
  idSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:kaj-id-secret-AbCdEf',
};
const SECRET = 'deployment-secret-0123456789';
const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

const sts = mockClient(STSClient);
const sm = mockClient(SecretsManagerClient);
const ddb = mockClient(DynamoDBClient);
const sqs = mockClient(SQSClient);

/** An AWS SDK service error as the SDK throws it. */
function awsError(name: string, fault: 'client' | 'server', retryable = false): Error {
  return Object.assign(new Error(`${name} from the service`), {
    name,
    $fault: fault,
    $metadata: { httpStatusCode: fault === 'client' ? 400 : 500 },
    ...(retryable ? { $retryable: { throttling: true } } : {}),
  });
}

beforeEach(() => {
  for (const m of [sts, sm, ddb, sqs]) m.reset();
  sts.on(GetCallerIdentityCommand).resolves({ Arn: SESSION, Account: '123456789012', UserId: 'AROA:i-0abc123' });
  sm.on(GetSecretValueCommand).resolves({ SecretString: SECRET });
  ddb.on(PutItemCommand).resolves({});
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm' });
});
afterAll(() => {
  for (const m of [sts, sm, ddb, sqs]) m.restore();
});

const fast = { sleep: async () => {}, random: () => 0 };

describe('directClient', () => {
  it("asks STS and Secrets Manager once (in the config's region), records the role as the owner, and derives the API's ids", async () => {
    const kaj = directClient({ registry, producer: JSON.stringify(PRODUCER), credentials: CREDENTIALS, ...fast });
    expect(kaj).toBeInstanceOf(KajClient);
    expect(kaj.mode).toBe('direct');
    const [a, b] = await Promise.all([
      kaj.submit('job', { n: 1 }, { idempotencyKey: 'order-1' }),
      kaj.submit('render', { page: 1 }),
    ]);
    await kaj.submit('job', { n: 2 });
    expect(sts.commandCalls(GetCallerIdentityCommand)).toHaveLength(1);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    expect(sm.commandCalls(GetSecretValueCommand)[0]?.args[0].input).toEqual({ SecretId: PRODUCER.idSecretArn });
    for (const call of [sts.call(0), sm.call(0), ddb.call(0), sqs.call(0)]) {
      expect(await (call.thisValue as { config: { region: () => Promise<string> } }).config.region()).toBe('eu-west-1');
    }
    expect(a.task_id).toBe(idempotentTaskId(SECRET, ROLE_OWNER, 'job', 'order-1'));
    const puts = ddb.commandCalls(PutItemCommand).map((c) => c.args[0].input);
    expect(puts.map((p) => p.TableName)).toEqual(['kaj-tasks', 'kaj-tasks', 'kaj-tasks']);
    expect(puts.map((p) => p.Item?.owner?.S)).toEqual([ROLE_OWNER, ROLE_OWNER, ROLE_OWNER]);
    const sends = sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
    const urlOf = (id: string) => sends.find((s) => JSON.parse(s.MessageBody ?? '{}').task_id === id)?.QueueUrl;
    expect(urlOf(a.task_id)).toBe(PRODUCER.queueUrls.normal);
    expect(urlOf(b.task_id)).toBe(PRODUCER.laneQueueUrls?.cpu?.normal);
  });

  it('answers without an Arn or a secret string are KajClientErrors saying so', async () => {
    sts.on(GetCallerIdentityCommand).resolves({});
    const noArn = directClient({ registry, producer: PRODUCER, idSecret: 's', credentials: CREDENTIALS, ...fast });
    await expect(noArn.submit('job', { n: 1 })).rejects.toThrow(/^STS GetCallerIdentity answered no Arn$/);
    sm.on(GetSecretValueCommand).resolves({ SecretBinary: new Uint8Array([1]) });
    const binary = directClient({ registry, producer: PRODUCER, owner: 'o', credentials: CREDENTIALS, ...fast });
    const err = await binary.submit('job', { n: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajClientError);
    expect((err as Error).message).toBe(`the id secret ${PRODUCER.idSecretArn} has no string value`);
    expect(ddb.calls()).toHaveLength(0);
  });

  it('a given owner is taken as the API takes it: a session ARN as its role', async () => {
    const kaj = directClient({ registry, producer: PRODUCER, owner: SESSION, idSecret: 's', credentials: CREDENTIALS });
    await kaj.submit('job', { n: 1 });
    expect(ddb.commandCalls(PutItemCommand)[0]?.args[0].input.Item?.owner?.S).toBe(ROLE_OWNER);
    expect(sts.calls()).toHaveLength(0);
  });

  it('with owner and idSecret given, asks neither STS nor Secrets Manager', async () => {
    const dynamodb = new DynamoDBClient({ region: 'eu-west-1', credentials: CREDENTIALS });
    const sqsClient = new SQSClient({ region: 'eu-west-1', credentials: CREDENTIALS });
    const kaj = directClient({
      registry,
      producer: PRODUCER,
      owner: 'local',
      idSecret: 'given-secret',
      dynamodb,
      sqs: sqsClient,
      ...fast,
    });
    const r = await kaj.submit('job', { n: 1 }, { idempotencyKey: 'k' });
    expect(r.task_id).toBe(idempotentTaskId('given-secret', 'local', 'job', 'k'));
    expect(sts.calls()).toHaveLength(0);
    expect(sm.calls()).toHaveLength(0);
    expect(ddb.call(0).thisValue).toBe(dynamodb);
    dynamodb.destroy();
    sqsClient.destroy();
  });

  it('a refused GetSecretValue is a KajClientError naming the secret, not retried, and asked again by the next call', async () => {
    sm.on(GetSecretValueCommand)
      .rejectsOnce(awsError('AccessDeniedException', 'client'))
      .resolves({ SecretString: SECRET });
    const kaj = directClient({ registry, producer: PRODUCER, credentials: CREDENTIALS, ...fast });
    const err = await kaj.submit('job', { n: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajClientError);
    expect(err).not.toBeInstanceOf(KajUnreachableError);
    expect((err as Error).message).toBe(
      `the id secret ${PRODUCER.idSecretArn}: AccessDeniedException: AccessDeniedException from the service`,
    );
    expect(sm.calls()).toHaveLength(1);
    expect(ddb.calls()).toHaveLength(0);
    await expect(kaj.submit('job', { n: 1 })).resolves.toMatchObject({ replayed: false });
    expect(sm.calls()).toHaveLength(2);
  });

  it('an STS outage (5xx, throttling after the SDK’s retries) is KajUnreachableError, retried by the client', async () => {
    sts.on(GetCallerIdentityCommand).rejects(awsError('InternalFailure', 'server'));
    const down = directClient({ registry, producer: PRODUCER, credentials: CREDENTIALS, maxAttempts: 2, ...fast });
    await expect(down.submit('job', { n: 1 })).rejects.toBeInstanceOf(KajUnreachableError);
    expect(sts.calls()).toHaveLength(2);
    sts.reset();
    sts.on(GetCallerIdentityCommand).rejects(awsError('ThrottlingException', 'client', true));
    const throttled = directClient({ registry, producer: PRODUCER, credentials: CREDENTIALS, maxAttempts: 3, ...fast });
    await expect(throttled.get(UNKNOWN_ID)).rejects.toThrow(
      /^the caller identity \(STS GetCallerIdentity\): ThrottlingException/,
    );
    expect(sts.calls()).toHaveLength(3);
  });

  it('a role without dynamodb:PutItem gets 503 unavailable naming AccessDeniedException (after the retries)', async () => {
    ddb.on(PutItemCommand).rejects(awsError('AccessDeniedException', 'client'));
    const kaj = directClient({ registry, producer: PRODUCER, credentials: CREDENTIALS, maxAttempts: 2, ...fast });
    const err = await kaj.submit('job', { n: 1 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 503, code: 'unavailable' });
    expect((err as Error).message).toContain('DynamoDB PutItem failed: AccessDeniedException');
    expect(ddb.commandCalls(PutItemCommand)).toHaveLength(2);
  });

  it('reads a task with a consistent GetItem on the task table', async () => {
    ddb.on(GetItemCommand).resolves({});
    const kaj = directClient({ registry, producer: PRODUCER, owner: 'o', idSecret: 's', credentials: CREDENTIALS });
    await expect(kaj.get(UNKNOWN_ID)).rejects.toMatchObject({ status: 404, code: 'not_found' });
    expect(ddb.commandCalls(GetItemCommand)[0]?.args[0].input).toMatchObject({
      TableName: 'kaj-tasks',
      ConsistentRead: true,
    });
  });

  it('refuses a producer config that is not the stack output, naming the field', () => {
    expect(() => directClient({ registry, producer: '{"version":1}' })).toThrow(ConfigError);
    expect(() => directClient({ registry, producer: { ...PRODUCER, tableName: '' } })).toThrow(/producer\.tableName/);
  });
});

describe('ProducerConfig and the producer root', () => {
  it('parseProducerConfig reads the JSON or the object, fills the defaults, and names what is wrong', () => {
    const { laneQueueUrls: _lanes, ...minimal } = PRODUCER;
    expect(parseProducerConfig(JSON.stringify(minimal))).toEqual({ ...minimal, laneQueueUrls: {}, retentionDays: 7 });
    expect(parseProducerConfig({ ...PRODUCER, extra: 'ignored' } as ProducerConfigInput)).not.toHaveProperty('extra');
    expect(() => parseProducerConfig('not json')).toThrow(/producer: the ProducerConfig output is not JSON/);
    expect(() => parseProducerConfig({ ...PRODUCER, version: 2 as 1 })).toThrow(/^producer\.version: /);
    expect(() => parseProducerConfig({ ...PRODUCER, queueUrls: { high: 'h', normal: 'n' } as never })).toThrow(
      /^producer\.queueUrls\.low: /,
    );
    expect(() => parseProducerConfig({ ...PRODUCER, laneQueueUrls: { 'Bad Lane': PRODUCER.queueUrls } })).toThrow(
      ConfigError,
    );
  });

  it('a producer is a function config without DLQs, with the deployment’s retention; an empty secret is refused', () => {
    const config = producerFunctionConfig(parseProducerConfig({ ...PRODUCER, retentionDays: 30 }), 's');
    expect(config.deadLetterQueueUrls).toEqual({
      high: NO_DEAD_LETTER_QUEUE,
      normal: NO_DEAD_LETTER_QUEUE,
      low: NO_DEAD_LETTER_QUEUE,
    });
    expect(config.settings.retentionDays).toBe(30);
    expect(config.laneQueueUrls).toEqual(PRODUCER.laneQueueUrls);
    expect(() => createProducer(parseProducerConfig(PRODUCER), '', registry)).toThrow(/idSecret/);
  });
});

describe('Bundles', () => {
  const inputs = bundleInputs;
  const SERVICE_CLIENTS = /node_modules\/@aws-sdk\/client-(dynamodb|sqs|sts|secrets-manager)\//;

  it('kaj/client (HTTP) carries no DynamoDB, SQS, STS or Secrets Manager client and none of the submit code', async () => {
    const files = await inputs('client/index.ts');
    expect(files).toContain('client/client.ts');
    for (const pattern of [SERVICE_CLIENTS, /^shared\/service\//, /^shared\/aws\//, /^shared\/task\/submit\.ts$/]) {
      expect(files.filter((f) => pattern.test(f))).toEqual([]);
    }
  }, 60_000);

  it('kaj/client/direct carries the API’s submit code and its adapters, not the consumer or the sweeper', async () => {
    const files = await inputs('client/direct.ts');
    for (const f of ['shared/service/app/producer.ts', 'shared/task/submit.ts', 'shared/aws/dynamo-task-store.ts']) {
      expect(files).toContain(f);
    }
    expect(files.filter((f) => SERVICE_CLIENTS.test(f)).length).toBeGreaterThan(0);
    for (const pattern of [
      /^shared\/service\/consumer\//,
      /^shared\/service\/sweeper\//,
      /^shared\/service\/all-in-one\.ts$/,
      /^shared\/service\/app\/api\.ts$/,
    ]) {
      expect(files.filter((f) => pattern.test(f))).toEqual([]);
    }
  }, 60_000);
});
