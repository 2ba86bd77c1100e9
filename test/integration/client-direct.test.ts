/**
 * `KajClient` in direct mode (`kaj/client/direct`) against the local runtime on each emulator:
 * the cases of `client.test.ts` — submit, wait, read, a bad payload, a lost answer retried under
 * one key, submitMany, cancel, 404 — with the tasks written and sent by the producer's own SDK
 * clients (no HTTP), and run by the runtime's consumer. Direct and API submits are one: the same
 * idempotency key through the API and through the direct client is one task, which each reads.
 *
 * The local API records requests under `LOCAL_OWNER` and derives ids with the development secret
 * (no IAM, no deployment secret here): the direct client is given both.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../local/runtime.js';
import { DEVELOPMENT_ID_SECRET, LOCAL_OWNER } from '../../shared/service/all-in-one.js';
import { KajClient } from '../../client/index.js';
import { directClient, KajApiError, KajNotSupportedError, KajTimeoutError } from '../../client/direct.js';
import type { ProducerConfigInput } from '../../shared/config/producer.js';
import { EMULATOR_CREDENTIALS, EMULATOR_REGION, emulatorClients, type KajClients } from '../../shared/aws/wiring.js';
import { FaultInjector } from '../support/faults.js';
import { expectKeyIsTheTask } from '../support/suite-runtime.js';
import { startOnTarget, targets } from '../support/targets.js';
import { TaskProbe, testRegistry } from '../support/test-tasks.js';
import { uniquePrefix } from '../../testing/wait.js';

const probe = new TaskProbe();
const registry = testRegistry(probe);
const WAIT = { timeoutMs: 20_000, pollMs: 100 };

describe.each(targets())('KajClient in direct mode on $name', (target) => {
  let runtime: LocalRuntime;
  let stop: () => Promise<void> = async () => {};
  /** The producer's own clients, as a producer process would have. */
  let clients: KajClients;
  let producer: ProducerConfigInput;
  const faults = new FaultInjector();

  beforeAll(async () => {
    ({ runtime, stop } = await startOnTarget(target, {
      registry,
      prefix: uniquePrefix('direct'),
      port: 0,
      sweepIntervalMs: 500,
      waitTimeSeconds: 1,
    }));
    clients = emulatorClients(runtime.endpoints);
    faults.attach(clients.dynamodb);
    // What the stack's ProducerConfig output holds, for the local runtime's resources.
    producer = {
      version: 1,
      region: EMULATOR_REGION,
      tableName: runtime.config.tableName,
      queueUrls: runtime.config.queueUrls,
      laneQueueUrls: runtime.config.laneQueueUrls ?? {},
      idSecretArn: 'arn:aws:secretsmanager:us-east-1:000000000000:secret:not-read-here',
    };
  }, 60_000);
  afterEach(() => faults.clear());
  afterAll(async () => {
    faults.detach();
    clients?.destroy();
    await stop();
  }, 60_000);

  const direct = (extra: { sleep?: (ms: number) => Promise<void>; newKey?: () => string } = {}) =>
    directClient({
      registry,
      producer: JSON.stringify(producer),
      dynamodb: clients.dynamodb,
      sqs: clients.sqs,
      credentials: { ...EMULATOR_CREDENTIALS },
      owner: LOCAL_OWNER,
      idSecret: DEVELOPMENT_ID_SECRET,
      ...extra,
    });

  it('submits, waits for and reads a task; a bad payload is a KajApiError naming the field', async () => {
    const kaj = direct();
    expect(kaj.mode).toBe('direct');
    const { task_id, replayed } = await kaj.submit('echo', { value: { n: 7 } }, { priority: 'high' });
    expect(replayed).toBe(false);
    const done = await kaj.waitFor(task_id, WAIT);
    expect(done).toMatchObject({ status: 'succeeded', priority: 'high', result: { echoed: { n: 7 }, attempt: 1 } });
    // The API reads what the producer submitted: same table, same owner.
    expect(await new KajClient<typeof registry>({ url: runtime.url }).get(task_id)).toEqual(done);
    const err = await kaj.submit('flaky', { fail_times: 'two' as never }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajApiError);
    expect(err).toMatchObject({ status: 422, code: 'validation_error', field: 'payload.fail_times' });
  });

  it('a DynamoDB answer lost after the put landed: the retry with the same key makes no second task', async () => {
    // The put is applied, then the producer sees a 503 from DynamoDB (after the SDK's retries).
    const lost = faults.add({ command: 'PutItem', error: 'unavailable', phase: 'after' });
    const kaj = direct({ sleep: async () => {} });
    const r = await kaj.submit('echo', { value: 'once' });
    expect(lost.fired).toBe(1);
    expect(r.replayed).toBe(true);
    await kaj.waitFor(r.task_id, WAIT);
    expect(probe.runs(r.task_id)).toBe(1);
    // The key the client generated is the task's: a submit with it through the API is the same task.
    await expectKeyIsTheTask(runtime, r);
  });

  it('the same idempotency key through the API and through the direct client is one task, either way round', async () => {
    const api = new KajClient<typeof registry>({ url: runtime.url });
    const kaj = direct();
    const key = uniquePrefix('order');
    const viaApi = await api.submit('echo', { value: 'api first' }, { idempotencyKey: key });
    const viaDirect = await kaj.submit('echo', { value: 'api first' }, { idempotencyKey: key });
    expect(viaDirect).toMatchObject({ task_id: viaApi.task_id, replayed: true });
    const other = `${key}-2`;
    const first = await kaj.submit('echo', { value: 'direct first' }, { idempotencyKey: other });
    expect(first.replayed).toBe(false);
    expect(await api.submit('echo', { value: 'direct first' }, { idempotencyKey: other })).toMatchObject({
      task_id: first.task_id,
      replayed: true,
    });
    // The same key for another request is a conflict through either.
    await expect(kaj.submit('echo', { value: 'changed' }, { idempotencyKey: key })).rejects.toMatchObject({
      status: 409,
      code: 'idempotency_conflict',
      field: 'idempotency_key',
    });
    await kaj.waitFor(viaApi.task_id, WAIT);
    await kaj.waitFor(first.task_id, WAIT);
    expect(probe.runs(viaApi.task_id)).toBe(1);
    expect(probe.runs(first.task_id)).toBe(1);
  });

  it('submitMany with valid and invalid items; cancel a delayed task; an unknown task is 404', async () => {
    const kaj = direct();
    const items = await kaj.submitMany([
      { type: 'echo', payload: { value: 1 } },
      { type: 'flaky', payload: { fail_times: -1 } },
      { type: 'echo', payload: { value: 2 }, options: { delaySeconds: 600 } },
    ]);
    expect(items.map((i) => [i.index, i.ok])).toEqual([
      [0, true],
      [1, false],
      [2, true],
    ]);
    const [first, bad, later] = items;
    if (first?.ok !== true || bad?.ok !== false || later?.ok !== true) throw new Error('unexpected item results');
    expect(bad.error).toBeInstanceOf(KajApiError);
    expect(bad.error).toMatchObject({ status: 422, code: 'validation_error', field: 'payload.fail_times' });
    await kaj.waitFor(first.task_id, WAIT);
    expect(await kaj.cancel(later.task_id)).toEqual({ task_id: later.task_id, status: 'cancelled' });
    expect(await new KajClient<typeof registry>({ url: runtime.url }).get(later.task_id)).toMatchObject({
      status: 'cancelled',
    });
    await expect(kaj.get('t_0123456789abcdef0123456789abcdef')).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
    });
  });

  it('waitFor times out cleanly with the last status; schedules are not available', async () => {
    const kaj = direct();
    const { task_id } = await kaj.submit('echo', { value: 'later' }, { delaySeconds: 600 });
    const started = Date.now();
    const err = await kaj.waitFor(task_id, { timeoutMs: 300, pollMs: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KajTimeoutError);
    expect(err).toMatchObject({ lastStatus: 'queued', timeoutMs: 300 });
    // Ended on its 300 ms timeout, not on the task (due in 600 s): the bound is far from either.
    expect(Date.now() - started).toBeLessThan(60_000);
    await expect(kaj.schedules.list()).rejects.toBeInstanceOf(KajNotSupportedError);
    await kaj.cancel(task_id);
  });
});
