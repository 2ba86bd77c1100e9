/**
 * The DynamoDB features Kaj's task store relies on, checked on dynalite (local runtime).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { startEmulators, type RunningEmulators } from '../../../local/emulators.js';
import { TABLE_SCHEMA } from '../../../shared/config/resources.js';

const PK = TABLE_SCHEMA.partitionKey;
const { name: INDEX, partitionKey: IPK, sortKey: ISK } = TABLE_SCHEMA.outboxIndex;

let emulators: RunningEmulators;
let ddb: DynamoDBClient;
const table = `kaj-test-${randomUUID().slice(0, 8)}-tasks`;

beforeAll(async () => {
  emulators = await startEmulators();
  ddb = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: emulators.dynamoEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  await ddb.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [
        { AttributeName: PK, AttributeType: 'S' },
        { AttributeName: IPK, AttributeType: 'S' },
        { AttributeName: ISK, AttributeType: 'N' },
      ],
      KeySchema: [{ AttributeName: PK, KeyType: 'HASH' }],
      GlobalSecondaryIndexes: [
        {
          IndexName: INDEX,
          KeySchema: [
            { AttributeName: IPK, KeyType: 'HASH' },
            { AttributeName: ISK, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
      ],
    }),
  );
});

afterAll(async () => {
  ddb?.destroy();
  await emulators?.stop();
});

const put = (item: Record<string, string | number>, condition?: string) =>
  ddb.send(
    new PutItemCommand({
      TableName: table,
      Item: Object.fromEntries(
        Object.entries(item).map(([k, v]) => [k, typeof v === 'number' ? { N: String(v) } : { S: v }]),
      ),
      ...(condition ? { ConditionExpression: condition, ExpressionAttributeNames: { '#pk': PK } } : {}),
    }),
  );

describe('dynalite', () => {
  it('rejects a conditional PutItem on an existing key with ConditionalCheckFailedException', async () => {
    const id = randomUUID();
    await put({ [PK]: id, status: 'queued' }, 'attribute_not_exists(#pk)');
    await expect(put({ [PK]: id, status: 'other' }, 'attribute_not_exists(#pk)')).rejects.toBeInstanceOf(
      ConditionalCheckFailedException,
    );
  });

  it('applies a conditional UpdateItem with ReturnValues ALL_NEW, and refuses it when the condition fails', async () => {
    const id = randomUUID();
    await put({ [PK]: id, status: 'queued', attempts: 0 });
    const update = (expected: string) =>
      ddb.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { [PK]: { S: id } },
          UpdateExpression: 'SET #s = :running, attempts = attempts + :one',
          ConditionExpression: '#s = :expected',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':running': { S: 'running' }, ':one': { N: '1' }, ':expected': { S: expected } },
          ReturnValues: 'ALL_NEW',
        }),
      );

    const out = await update('queued');
    expect(out.Attributes).toEqual({ [PK]: { S: id }, status: { S: 'running' }, attempts: { N: '1' } });
    await expect(update('queued')).rejects.toBeInstanceOf(ConditionalCheckFailedException);
  });

  it('queries a sparse GSI: only items carrying the index keys, in sort-key order, bounded by the key condition', async () => {
    const partition = `p-${randomUUID().slice(0, 8)}`;
    await put({ [PK]: randomUUID(), [IPK]: partition, [ISK]: 30 });
    await put({ [PK]: randomUUID(), [IPK]: partition, [ISK]: 10 });
    await put({ [PK]: randomUUID(), [IPK]: partition, [ISK]: 99 });
    await put({ [PK]: randomUUID(), status: 'not in the outbox' });

    const out = await ddb.send(
      new QueryCommand({
        TableName: table,
        IndexName: INDEX,
        KeyConditionExpression: '#pk = :pk AND #due <= :due',
        ExpressionAttributeNames: { '#pk': IPK, '#due': ISK },
        ExpressionAttributeValues: { ':pk': { S: partition }, ':due': { N: '50' } },
      }),
    );
    expect(out.Items?.map((i) => i[ISK]?.N)).toEqual(['10', '30']);
  });
});
