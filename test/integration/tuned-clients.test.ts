/**
 * The SDK clients as the Lambda functions build them (`shared/aws/clients.ts`: middleware
 * resolved once per command class and shared by every request of it, one signer) under the
 * concurrency the consumer gives them (ten records at once): on every emulator target, many
 * concurrent requests of the same commands each get their own answer, never another's.
 */
import { randomUUID } from 'node:crypto';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteResources, ensureResources } from '../../local/bootstrap.js';
import { createDynamoDbClient, createSqsClient } from '../../shared/aws/clients.js';
import type { KajResources } from '../../shared/aws/wiring.js';
import { SqsTaskQueue } from '../../shared/aws/sqs-task-queue.js';
import { DynamoTaskStore } from '../../shared/aws/dynamo-task-store.js';
import { minimalRecord } from '../contract/task-store.contract.js';
import { emulatorClientConfig, startEndpoints } from '../support/emulator-endpoints.js';
import { targets } from '../support/targets.js';
import { uniquePrefix } from '../../testing/wait.js';

const N = 40;

describe.each(targets())('Tuned SDK clients on $name', (target) => {
  let dynamodb: ReturnType<typeof createDynamoDbClient>;
  let sqs: ReturnType<typeof createSqsClient>;
  let resources: KajResources;
  let prefix = '';
  let stop: () => Promise<void> = async () => {};

  beforeAll(async () => {
    const { endpoints, stop: stopEndpoints } = await startEndpoints(target);
    stop = stopEndpoints;
    dynamodb = createDynamoDbClient(emulatorClientConfig(endpoints.dynamodb));
    sqs = createSqsClient(emulatorClientConfig(endpoints.sqs));
    prefix = uniquePrefix('tuned-clients');
    resources = await ensureResources({ sqs, dynamodb }, prefix);
  });

  afterAll(async () => {
    if (prefix !== '') await deleteResources({ sqs, dynamodb }, prefix);
    dynamodb?.destroy();
    sqs?.destroy();
    await stop();
  });

  it('DynamoDB: concurrent puts, reads and updates each answer for their own item', async () => {
    expect(dynamodb.config.cacheMiddleware).toBe(true);
    const store = new DynamoTaskStore(dynamodb, resources.tableName);
    const ids = Array.from({ length: N }, () => `t_${randomUUID()}`);
    await Promise.all(ids.map((id, i) => store.create(minimalRecord(id, { payload: { i } }))));
    const [read, written] = await Promise.all([
      Promise.all(ids.map((id) => store.get(id))),
      Promise.all(ids.map((id, i) => store.update(id, { set: { dispatch_id: `d-${i}` } }, { status: ['queued'] }))),
    ]);
    expect(read.map((r) => [r?.task_id, r?.payload])).toEqual(ids.map((id, i) => [id, { i }]));
    expect(written.map((r) => [r.task_id, r.dispatch_id, r.payload])).toEqual(
      ids.map((id, i) => [id, `d-${i}`, { i }]),
    );
  });

  it('SQS: concurrent sends to the three queues land each on its own queue', async () => {
    expect(sqs.config.cacheMiddleware).toBe(true);
    const queue = new SqsTaskQueue(sqs, {
      queues: resources.queueUrls,
      deadLetterQueues: resources.deadLetterQueueUrls,
    });
    const priorities = ['high', 'normal', 'low'] as const;
    const sends = Array.from({ length: 30 }, (_, i) => ({ priority: priorities[i % 3] ?? 'high', id: `t_${i}` }));
    await Promise.all(
      sends.map((s) => queue.send(s.priority, { task_id: s.id, dispatch_id: 'd' }, { delaySeconds: 0, type: 'job' })),
    );
    for (const p of priorities) {
      const got: string[] = [];
      for (let empty = 0; got.length < 10 && empty < 3; ) {
        const out = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: resources.queueUrls[p], MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
        );
        const ids = (out.Messages ?? []).map((m) => (JSON.parse(m.Body ?? '{}') as { task_id: string }).task_id);
        got.push(...ids);
        empty = ids.length === 0 ? empty + 1 : 0;
      }
      expect(got.sort()).toEqual(
        sends
          .filter((s) => s.priority === p)
          .map((s) => s.id)
          .sort(),
      );
    }
  });
});
