/**
 * The `TaskQueue` contract on `SqsTaskQueue`, on every emulator target (`targets()`: embedded
 * local-aws-sqs, moto when installed, `KAJ_TEST_ENDPOINT`). Each test gets fresh queues made by
 * the runtime's own bootstrap (`ensureResources`, from shared/config/resources.ts), deleted after it.
 * The SQS client is built as the Lambda functions build theirs (`createSqsClient`: cached
 * middleware, one signer), so the suite covers that configuration too.
 */
import { freePort } from '../../local/emulators.js';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe } from 'vitest';
import { deleteResources, ensureResources } from '../../local/bootstrap.js';
import { EMULATOR_REGION, startEmulators } from '../../local/emulators.js';
import { createSqsClient } from '../../shared/aws/clients.js';
import type { Priority } from '../../shared/config/resources.js';
import { SqsTaskQueue } from '../../shared/aws/sqs-task-queue.js';
import type { ReceivedAttribute } from '../../testing/memory-task-queue.js';
import { targets } from '../support/targets.js';
import { uniquePrefix } from '../../testing/wait.js';
import { describeTaskQueueContract } from './task-queue.contract.js';

const CONFIG = {
  region: EMULATOR_REGION,
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  maxAttempts: 1,
};

/** A local port nothing listens on. */
const closedPort = freePort;

describe.each(targets())('SqsTaskQueue on $name', (target) => {
  let endpoints = { sqs: '', dynamodb: '' };
  let stop: () => Promise<void> = async () => {};
  let unreachablePort = 0;
  const clients: { destroy(): void }[] = [];

  beforeAll(async () => {
    const t = await target.start();
    const embedded = t.endpoints === undefined ? await startEmulators() : undefined;
    stop = async () => {
      await embedded?.stop();
      await t.stop();
    };
    endpoints = t.endpoints ?? { sqs: embedded?.sqsEndpoint ?? '', dynamodb: embedded?.dynamoEndpoint ?? '' };
    unreachablePort = await closedPort();
  });

  afterAll(async () => {
    for (const c of clients) c.destroy();
    await stop();
  });

  describeTaskQueueContract(`SqsTaskQueue (${target.name})`, async () => {
    const sqs = createSqsClient({ ...CONFIG, endpoint: endpoints.sqs });
    const dynamodb = new DynamoDBClient({ ...CONFIG, endpoint: endpoints.dynamodb });
    clients.push(sqs, dynamodb);
    const prefix = uniquePrefix('queue-contract');
    const resources = await ensureResources({ sqs, dynamodb }, prefix);
    const urls = { queues: resources.queueUrls, deadLetterQueues: resources.deadLetterQueueUrls };
    const url = (p: Priority, dead = false): string => (dead ? urls.deadLetterQueues[p] : urls.queues[p]);
    return {
      queue: new SqsTaskQueue(sqs, urls),
      receive: async (priority, options = {}) => {
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url(priority, options.dead),
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 0,
            VisibilityTimeout: options.visibilitySeconds ?? 30,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['ApproximateReceiveCount'],
            // local-aws-sqs reads only the older (deprecated) parameter.
            AttributeNames: ['All'],
          }),
        );
        return (out.Messages ?? []).map((m) => ({
          body: m.Body ?? '',
          attributes: Object.fromEntries(
            Object.entries(m.MessageAttributes ?? {}).map(([k, a]): [string, ReceivedAttribute] => [
              k,
              { dataType: a.DataType as ReceivedAttribute['dataType'], value: a.StringValue ?? '' },
            ]),
          ),
          receiptHandle: m.ReceiptHandle ?? '',
          receiveCount: Number(m.Attributes?.ApproximateReceiveCount),
        }));
      },
      delete: async (priority, receiptHandle) => {
        await sqs.send(new DeleteMessageCommand({ QueueUrl: url(priority), ReceiptHandle: receiptHandle }));
      },
      elapse: (ms) => new Promise((r) => setTimeout(r, ms)),
      unreachable: () => {
        const down = createSqsClient({ ...CONFIG, endpoint: `http://127.0.0.1:${unreachablePort}` });
        clients.push(down);
        return new SqsTaskQueue(down, urls);
      },
      cleanup: () => deleteResources({ sqs, dynamodb }, prefix),
    };
  });
});
