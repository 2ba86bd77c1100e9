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
import { LIMIT_TABLE_SCHEMA, SCHEDULE_TABLE_SCHEMA } from '../shared/config/resources.js';

/** A table keyed by one string attribute, with (or without) one GSI on a string / number key pair. */
export interface KeyedTableSchema {
  readonly partitionKey: string;
  readonly index?: {
    readonly name: string;
    readonly partitionKey: string;
    readonly sortKey: string;
    readonly projection: 'ALL' | 'KEYS_ONLY';
  };
}

/**
 * Creates `tableName` with `schema` (on demand) unless it exists, and waits until it and its
 * index are ACTIVE. Idempotent. Both of Kaj's tables are made by it (the task table in
 * ./bootstrap.ts, the schedules table below).
 *
 * @throws if the endpoint refuses, or the table is not ACTIVE after about 5 s.
 */
export async function createKeyedTable(
  dynamodb: DynamoDBClient,
  tableName: string,
  schema: KeyedTableSchema,
): Promise<void> {
  const { partitionKey, index } = schema;
  try {
    await dynamodb.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
        AttributeDefinitions: [
          { AttributeName: partitionKey, AttributeType: 'S' },
          ...(index === undefined
            ? []
            : [
                { AttributeName: index.partitionKey, AttributeType: 'S' as const },
                { AttributeName: index.sortKey, AttributeType: 'N' as const },
              ]),
        ],
        ...(index === undefined
          ? {}
          : {
              GlobalSecondaryIndexes: [
                {
                  IndexName: index.name,
                  KeySchema: [
                    { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
                    { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
                  ],
                  Projection: { ProjectionType: index.projection },
                },
              ],
            }),
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

/**
 * Creates the schedules table `tableName` (key `name`, sparse keys-only GSI `due` on `due_pk` /
 * `due_at`) unless it exists, and waits until it is ACTIVE.
 */
export async function createSchedulesTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  await createKeyedTable(dynamodb, tableName, {
    partitionKey: SCHEDULE_TABLE_SCHEMA.partitionKey,
    index: SCHEDULE_TABLE_SCHEMA.dueIndex,
  });
}

/** Creates the limits table `tableName` (key `pk`, no index) unless it exists (flow control, `shared/limit/`). */
export async function createLimitsTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  await createKeyedTable(dynamodb, tableName, { partitionKey: LIMIT_TABLE_SCHEMA.partitionKey });
}

/** Deletes the schedules table `tableName`; nothing if it does not exist. */
export async function deleteSchedulesTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await dynamodb.send(new DeleteTableCommand({ TableName: tableName }));
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException)) throw err;
  }
}
