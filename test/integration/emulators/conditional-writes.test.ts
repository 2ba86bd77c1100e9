/**
 * What the fencing of Kaj's writes takes for granted of DynamoDB — a conditional UpdateItem is
 * atomic and isolated per item — checked on the emulators the suites run on: dynalite, and moto
 * as `local/moto_server.py` starts it. (`python3 -m moto.server` alone fails both checks:
 * its threaded server runs requests side by side and moto applies an update action by action to
 * the live item, so two concurrent claims could both pass their condition, and a GetItem could
 * read a success write's `succeeded` status without its history entry.)
 * Also: the launcher's one-request-at-a-time lock does not make an SQS long poll hold up others.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startEmulators } from '../../../local/emulators.js';
import { motoAvailable, startMoto } from '../../support/moto.js';

interface Emulator {
  readonly name: string;
  start(): Promise<{ sqs: string; dynamodb: string; stop(): Promise<void> }>;
}

const emulators: Emulator[] = [
  {
    name: 'dynalite + local-aws-sqs',
    start: async () => {
      const e = await startEmulators();
      return { sqs: e.sqsEndpoint, dynamodb: e.dynamoEndpoint, stop: () => e.stop() };
    },
  },
];
if (motoAvailable()) {
  emulators.push({
    name: 'moto (local/moto_server.py)',
    start: async () => {
      const m = await startMoto();
      return { sqs: m.endpoint, dynamodb: m.endpoint, stop: () => m.stop() };
    },
  });
}

/** The long polls' wait in the poll test: what a request held up behind one would wait. */
const POLL_SECONDS = 10;
const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number): AttributeValue => ({ N: String(n) });

describe.each(emulators)('$name', (emulator) => {
  let stop: () => Promise<void>;
  let ddb: DynamoDBClient;
  let sqs: SQSClient;
  const table = `kaj-atomic-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    const e = await emulator.start();
    stop = e.stop;
    const config = {
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    };
    ddb = new DynamoDBClient({ ...config, endpoint: e.dynamodb });
    sqs = new SQSClient({ ...config, endpoint: e.sqs });
    await ddb.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'task_id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'task_id', KeyType: 'HASH' }],
      }),
    );
  });
  afterAll(async () => {
    ddb?.destroy();
    sqs?.destroy();
    await stop?.();
  });

  it('concurrent conditional claims of one item: exactly one passes its condition, every round', async () => {
    await ddb.send(new PutItemCommand({ TableName: table, Item: { task_id: S('claimed'), lease_token: N(0) } }));
    const claim = (token: number) =>
      ddb
        .send(
          new UpdateItemCommand({
            TableName: table,
            Key: { task_id: S('claimed') },
            UpdateExpression: 'SET #t = #t + :one, #s = :running',
            ConditionExpression: '#t = :token',
            ExpressionAttributeNames: { '#t': 'lease_token', '#s': 'status' },
            ExpressionAttributeValues: { ':one': N(1), ':token': N(token), ':running': S('running') },
          }),
        )
        .then(
          () => true,
          (err: unknown) => {
            if (err instanceof ConditionalCheckFailedException) return false;
            throw err;
          },
        );
    const rounds = 120;
    const winners: number[] = [];
    for (let token = 0; token < rounds; token += 1) {
      const won = await Promise.all([claim(token), claim(token), claim(token), claim(token)]);
      winners.push(won.filter(Boolean).length);
    }
    expect(winners.filter((w) => w !== 1)).toEqual([]);
    const item = await ddb.send(
      new GetItemCommand({ TableName: table, Key: { task_id: S('claimed') }, ConsistentRead: true }),
    );
    expect(item.Item?.lease_token).toEqual(N(rounds));
  });

  it('a GetItem never sees half of an UpdateItem (status and history written together)', async () => {
    // The writer flips the item between two self-consistent states with the SET list of a success
    // write (status first, history fifth); the readers check that they agree.
    const history = (last: string) => ({
      L: ['crashed', 'crashed', last].map((outcome, i) => ({ M: { attempt: N(i + 1), outcome: S(outcome) } })),
    });
    await ddb.send(
      new PutItemCommand({
        TableName: table,
        Item: { task_id: S('torn'), status: S('running'), history: history('running'), v: N(0) },
      }),
    );
    const writes = 150;
    let done = false;
    const torn: string[] = [];
    let reads = 0;
    const reader = async () => {
      while (!done) {
        const { Item } = await ddb.send(
          new GetItemCommand({ TableName: table, Key: { task_id: S('torn') }, ConsistentRead: true }),
        );
        reads += 1;
        const last = Item?.history?.L?.at(-1)?.M?.outcome?.S;
        if (last !== Item?.status?.S) torn.push(`status ${Item?.status?.S}, last history entry ${last}`);
      }
    };
    const writer = async () => {
      for (let v = 0; v < writes; v += 1) {
        const status = v % 2 === 0 ? 'succeeded' : 'running';
        const now = new Date().toISOString();
        await ddb.send(
          new UpdateItemCommand({
            TableName: table,
            Key: { task_id: S('torn') },
            UpdateExpression: 'SET #s = :s, #r = :r, #f = :f, #u = :u, #h = :h, #v = :next REMOVE #l',
            ConditionExpression: '#v = :v',
            ExpressionAttributeNames: {
              '#s': 'status',
              '#r': 'result',
              '#f': 'finished_at',
              '#u': 'updated_at',
              '#h': 'history',
              '#v': 'v',
              '#l': 'lease_until',
            },
            ExpressionAttributeValues: {
              ':s': S(status),
              ':r': { M: { padding: S('x'.repeat(2000)) } },
              ':f': S(now),
              ':u': S(now),
              ':h': history(status),
              ':v': N(v),
              ':next': N(v + 1),
            },
          }),
        );
      }
      done = true;
    };
    await Promise.all([writer(), reader(), reader(), reader()]);
    expect(reads).toBeGreaterThan(writes);
    expect(torn).toEqual([]);
  });

  it('an SQS long poll holds up neither other requests nor the send it waits for', async () => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `kaj-poll-${randomUUID().slice(0, 8)}` }));
    const started = Date.now();
    const polls = [1, 2].map(() => sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: POLL_SECONDS })));
    await new Promise((r) => setTimeout(r, 300));
    const t = Date.now();
    await ddb.send(new GetItemCommand({ TableName: table, Key: { task_id: S('nothing') } }));
    // Held up by a poll, the read would wait out its POLL_SECONDS: the bound is that, not a speed.
    expect(Date.now() - t).toBeLessThan(POLL_SECONDS * 1000);
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'wake up' }));
    const first = await Promise.race(
      polls.map((p) => p.then((o) => ({ got: o.Messages?.length ?? 0, ms: Date.now() - started }))),
    );
    expect(first.got).toBe(1);
    // A poll the send could not reach would end at its wait time, empty.
    expect(first.ms).toBeLessThan(POLL_SECONDS * 1000);
    // Wakes the other poll too (each takes one message), so the test does not wait it out.
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'wake up too' }));
    await Promise.all(polls);
  });
});
