/**
 * Regression tests for Kaj's patch of local-aws-sqs 2.0.2 (patches/local-aws-sqs+2.0.2.patch).
 * Each test fails on the unpatched package, except the guard that the fair-queue order leaves
 * queues without message groups in their order.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
  type Message,
  type QueueAttributeName,
} from '@aws-sdk/client-sqs';
import { startEmulators, type RunningEmulators } from '../../../local/emulators.js';

let emulators: RunningEmulators;
let sqs: SQSClient;
const created: string[] = [];

beforeAll(async () => {
  emulators = await startEmulators();
  sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: emulators.sqsEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
});

afterEach(async () => {
  for (const url of created.splice(0)) await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
});

afterAll(async () => {
  sqs?.destroy();
  await emulators?.stop();
});

async function createQueue(name: string, attributes?: Record<string, string>): Promise<{ url: string; arn: string }> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!QueueUrl) throw new Error('no QueueUrl');
  created.push(QueueUrl);
  const arn = (await attributesOf(QueueUrl, ['QueueArn'])).QueueArn;
  if (!arn) throw new Error('no QueueArn');
  return { url: QueueUrl, arn };
}

/** A main queue whose messages go to a fresh DLQ after `maxReceiveCount` receives. */
async function queueWithDlq(maxReceiveCount: number) {
  const base = `kaj-test-${randomUUID().slice(0, 8)}`;
  const dlq = await createQueue(`${base}-dlq`);
  const main = await createQueue(base, {
    RedrivePolicy: JSON.stringify({ maxReceiveCount, deadLetterTargetArn: dlq.arn }),
  });
  return { main, dlq };
}

async function attributesOf(url: string, names: QueueAttributeName[]): Promise<Record<string, string>> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names }));
  return out.Attributes ?? {};
}

async function receive(
  url: string,
  opts: { visibility?: number; wait?: number; max?: number } = {},
): Promise<Message[]> {
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      VisibilityTimeout: opts.visibility,
      WaitTimeSeconds: opts.wait ?? 0,
      MaxNumberOfMessages: opts.max ?? 1,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return out.Messages ?? [];
}

describe('local-aws-sqs (patched)', () => {
  it('ChangeMessageVisibility (heartbeat) does not count as a receive nor redrive to the DLQ', async () => {
    const { main, dlq } = await queueWithDlq(2);
    await sqs.send(new SendMessageCommand({ QueueUrl: main.url, MessageBody: 'hb' }));

    const [first] = await receive(main.url, { visibility: 30 });
    expect(first?.ReceiptHandle).toBeDefined();
    for (let i = 0; i < 5; i++) {
      await sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: main.url,
          ReceiptHandle: first!.ReceiptHandle,
          VisibilityTimeout: 30,
        }),
      );
    }
    // Give the lease up: the message must come back on the main queue, received twice in all.
    await sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: main.url,
        ReceiptHandle: first!.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const [second] = await receive(main.url, { visibility: 30, wait: 2 });
    expect(second?.Body).toBe('hb');
    expect(second?.Attributes?.ApproximateReceiveCount).toBe('2');
    expect((await attributesOf(dlq.url, ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages).toBe('0');
  });

  it('a long poll asking for more messages than available returns as soon as one is there', async () => {
    const { url } = await createQueue(`kaj-test-${randomUUID().slice(0, 8)}`);
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'only one' }));

    const started = Date.now();
    const messages = await receive(url, { wait: 20, max: 10 });
    const elapsed = Date.now() - started;

    expect(messages.map((m) => m.Body)).toEqual(['only one']);
    // Before its 20 s wait is up (a poll waiting to fill its 10 takes all of it): the bound is the
    // wait asked for, which no loaded machine's request time comes near.
    expect(elapsed).toBeLessThan(20_000);
  });

  it('redrives to the DLQ after maxReceiveCount receives, reporting system attributes', async () => {
    const { main, dlq } = await queueWithDlq(2);
    await sqs.send(new SendMessageCommand({ QueueUrl: main.url, MessageBody: 'poison' }));

    // MessageSystemAttributeNames (what SDK v3 sends instead of the deprecated AttributeNames).
    const counts: (string | undefined)[] = [];
    for (let i = 0; i < 2; i++) {
      const [m] = await receive(main.url, { visibility: 0, wait: 2 });
      counts.push(m?.Attributes?.ApproximateReceiveCount);
    }
    expect(counts).toEqual(['1', '2']);
    expect(await receive(main.url, { visibility: 0 })).toEqual([]);

    const [dead] = await receive(dlq.url, { visibility: 0, wait: 2 });
    expect(dead?.Body).toBe('poison');
    expect(dead?.Attributes?.DeadLetterQueueSourceArn).toBe(main.arn);
  });

  it('ApproximateNumberOfMessages excludes in-flight messages; a DLQ redrive moves them all back', async () => {
    const { main, dlq } = await queueWithDlq(1);
    for (const body of ['a', 'b']) await sqs.send(new SendMessageCommand({ QueueUrl: main.url, MessageBody: body }));

    await receive(main.url, { visibility: 30 }); // one in flight
    expect(
      await attributesOf(main.url, ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible']),
    ).toEqual({ ApproximateNumberOfMessages: '1', ApproximateNumberOfMessagesNotVisible: '1' });

    // Send the visible one to the DLQ (maxReceiveCount 1), then redrive the DLQ back.
    expect(await receive(main.url, { visibility: 0 })).toHaveLength(1);
    await expect
      .poll(async () => (await attributesOf(dlq.url, ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages)
      .toBe('1');
    await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlq.arn }));
    await expect
      .poll(async () => (await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlq.arn }))).Results?.[0], {
        interval: 200,
      })
      .toMatchObject({
        Status: 'COMPLETED',
        ApproximateNumberOfMessagesMoved: 1,
        ApproximateNumberOfMessagesToMove: 1,
      });
    expect((await attributesOf(main.url, ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages).toBe('1');
  });

  it('fair queues: a receive serves the message groups with the fewest messages in flight first (a quiet tenant is not stuck behind a noisy one)', async () => {
    const { url } = await createQueue(`kaj-test-${randomUUID().slice(0, 8)}`);
    const send = (body: string, group?: string) =>
      sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageGroupId: group }));
    for (let i = 0; i < 30; i += 1) await send(`noisy-${i}`, 'noisy');
    // Ten of the noisy tenant's messages in flight (deferred), twenty still visible before the quiet one.
    expect((await receive(url, { visibility: 60, max: 10 })).map((m) => m.Body)).toEqual(
      Array.from({ length: 10 }, (_, i) => `noisy-${i}`),
    );
    await send('quiet-0', 'quiet');
    await send('quiet-1', 'quiet');
    await send('plain'); // no group: not held back by anyone's load
    const next = (await receive(url, { visibility: 60, max: 4 })).map((m) => m.Body);
    // quiet has none in flight: its first message comes before noisy's (10 in flight); its second
    // scores as noisy's next would after 1 more in flight — both before any noisy message.
    expect(next).toEqual(['quiet-0', 'plain', 'quiet-1', 'noisy-10']);
  });

  it('fair queues (guard): without message groups a receive keeps the queue order', async () => {
    const { url } = await createQueue(`kaj-test-${randomUUID().slice(0, 8)}`);
    for (let i = 0; i < 5; i += 1) await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: `m-${i}` }));
    expect((await receive(url, { visibility: 60, max: 2 })).map((m) => m.Body)).toEqual(['m-0', 'm-1']);
    expect((await receive(url, { visibility: 60, max: 3 })).map((m) => m.Body)).toEqual(['m-2', 'm-3', 'm-4']);
  });
});
