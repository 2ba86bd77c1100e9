/**
 * The schedules table on an emulator (or any DynamoDB endpoint), from the same definition the
 * CDK stack uses (`SCHEDULE_TABLE_SCHEMA` of shared/config/resources.ts): `ensureResources` of
 * ./bootstrap.ts makes it for the local runtime, the contract tests for `DynamoScheduleStore`.
 *
 * @module
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
} from '@aws-sdk/client-dynamodb';
import { SCHEDULE_TABLE_SCHEMA } from '../shared/config/resources.js';

/**
 * Creates the schedules table `tableName` (key `name`, sparse GSI `due` on `due_pk` / `due_at`,
 * every attribute projected, on demand) unless it exists, and waits until it and its index are
 * ACTIVE. Idempotent.
 *
 * @throws if the endpoint refuses, or the table is not ACTIVE after about 5 s.
 */
export async function createSchedulesTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  const { partitionKey, dueIndex } = SCHEDULE_TABLE_SCHEMA;
  try {
    await dynamodb.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
        AttributeDefinitions: [
          { AttributeName: partitionKey, AttributeType: 'S' },
          { AttributeName: dueIndex.partitionKey, AttributeType: 'S' },
          { AttributeName: dueIndex.sortKey, AttributeType: 'N' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: dueIndex.name,
            KeySchema: [
              { AttributeName: dueIndex.partitionKey, KeyType: 'HASH' },
              { AttributeName: dueIndex.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: dueIndex.projection },
          },
        ],
      }),
    );
  } catch (err) {
    if (!(err instanceof Error && err.name === 'ResourceInUseException')) throw err;
  }
  for (let i = 0; i < 100; i += 1) {
    const out = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (out.Table?.GlobalSecondaryIndexes ?? []).every((g) => g.IndexStatus === 'ACTIVE');
    if (out.Table?.TableStatus === 'ACTIVE' && indexesActive) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}

/** Deletes the schedules table `tableName`; nothing if it does not exist. */
export async function deleteSchedulesTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await dynamodb.send(new DeleteTableCommand({ TableName: tableName }));
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException)) throw err;
  }
}
