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
import { createSqsClient } from '../../shared/aws/clients.js';
import type { Priority } from '../../shared/config/resources.js';
import { SqsTaskQueue } from '../../shared/aws/sqs-task-queue.js';
import type { ReceivedAttribute } from '../../testing/memory-task-queue.js';
import { emulatorClientConfig, startEndpoints } from '../support/emulator-endpoints.js';
import { targets } from '../support/targets.js';
import { uniquePrefix } from '../../testing/wait.js';
import { describeTaskQueueContract } from './task-queue.contract.js';

/** A local port nothing listens on. */
const closedPort = freePort;

describe.each(targets())('SqsTaskQueue on $name', (target) => {
  let endpoints = { sqs: '', dynamodb: '' };
  let stop: () => Promise<void> = async () => {};
  let unreachablePort = 0;
  const clients: { destroy(): void }[] = [];

  beforeAll(async () => {
    const started = await startEndpoints(target);
    stop = started.stop;
    endpoints = { ...started.endpoints };
    unreachablePort = await closedPort();
  });

  afterAll(async () => {
    for (const c of clients) c.destroy();
    await stop();
  });

  describeTaskQueueContract(`SqsTaskQueue (${target.name})`, async () => {
    const sqs = createSqsClient(emulatorClientConfig(endpoints.sqs));
    const dynamodb = new DynamoDBClient(emulatorClientConfig(endpoints.dynamodb));
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
        const down = createSqsClient(emulatorClientConfig(`http://127.0.0.1:${unreachablePort}`));
        clients.push(down);
        return new SqsTaskQueue(down, urls);
      },
      cleanup: () => deleteResources({ sqs, dynamodb }, prefix),
    };
  });
});
