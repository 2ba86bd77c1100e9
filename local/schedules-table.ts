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
  UpdateTableCommand,
} from '@aws-sdk/client-dynamodb';
import { HISTORY_TABLE_SCHEMA, LIMIT_TABLE_SCHEMA, SCHEDULE_TABLE_SCHEMA } from '../shared/config/resources.js';

/** A GSI of a keyed table: a string partition key, a string or number sort key. */
export interface KeyedIndexSchema {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  /** @default 'N' */
  readonly sortKeyType?: 'S' | 'N';
  readonly projection: 'ALL' | 'KEYS_ONLY' | 'INCLUDE';
  readonly nonKeyAttributes?: readonly string[];
}

/** A table keyed by one string attribute (and a string sort key, or none), with GSIs (or none). */
export interface KeyedTableSchema {
  readonly partitionKey: string;
  /** A string sort key. @default - none */
  readonly sortKey?: string;
  readonly index?: KeyedIndexSchema;
  /** More GSIs besides `index`. */
  readonly moreIndexes?: readonly KeyedIndexSchema[];
}

function gsiOf(index: KeyedIndexSchema) {
  return {
    IndexName: index.name,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
      { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
    ],
    Projection:
      index.projection === 'INCLUDE'
        ? { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...(index.nonKeyAttributes ?? [])] }
        : { ProjectionType: index.projection },
  };
}

function attributesOf(indexes: readonly KeyedIndexSchema[]) {
  return indexes.flatMap((i) => [
    { AttributeName: i.partitionKey, AttributeType: 'S' as const },
    { AttributeName: i.sortKey, AttributeType: i.sortKeyType ?? ('N' as const) },
  ]);
}

/**
 * Creates `tableName` with `schema` (on demand) unless it exists, and waits until it and its
 * indexes are ACTIVE. Idempotent; a table made before an index existed (a persisted local store)
 * gets the missing index added (UpdateTable). Kaj's tables are made by it (the task table in
 * ./bootstrap.ts, the schedules, limits and history tables below).
 *
 * @throws if the endpoint refuses, or the table is not ACTIVE after about 5 s.
 */
export async function createKeyedTable(
  dynamodb: DynamoDBClient,
  tableName: string,
  schema: KeyedTableSchema,
): Promise<void> {
  const { partitionKey, sortKey } = schema;
  const indexes = [...(schema.index === undefined ? [] : [schema.index]), ...(schema.moreIndexes ?? [])];
  try {
    await dynamodb.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: partitionKey, KeyType: 'HASH' },
          ...(sortKey === undefined ? [] : [{ AttributeName: sortKey, KeyType: 'RANGE' as const }]),
        ],
        AttributeDefinitions: [
          { AttributeName: partitionKey, AttributeType: 'S' },
          ...(sortKey === undefined ? [] : [{ AttributeName: sortKey, AttributeType: 'S' as const }]),
          ...attributesOf(indexes),
        ],
        ...(indexes.length === 0 ? {} : { GlobalSecondaryIndexes: indexes.map(gsiOf) }),
      }),
    );
  } catch (err) {
    if (!(err instanceof Error && err.name === 'ResourceInUseException')) throw err;
    await addMissingIndexes(dynamodb, tableName, indexes);
  }
  for (let i = 0; i < 100; i += 1) {
    const out = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (out.Table?.GlobalSecondaryIndexes ?? []).every((g) => g.IndexStatus === 'ACTIVE');
    if (out.Table?.TableStatus === 'ACTIVE' && indexesActive) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}

async function addMissingIndexes(
  dynamodb: DynamoDBClient,
  tableName: string,
  indexes: readonly KeyedIndexSchema[],
): Promise<void> {
  const out = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
  const present = new Set((out.Table?.GlobalSecondaryIndexes ?? []).map((g) => g.IndexName));
  for (const index of indexes) {
    if (present.has(index.name)) continue;
    // One index per UpdateTable (DynamoDB's rule); wait for it before the next.
    await dynamodb.send(
      new UpdateTableCommand({
        TableName: tableName,
        AttributeDefinitions: attributesOf([index]),
        GlobalSecondaryIndexUpdates: [{ Create: gsiOf(index) }],
      }),
    );
    for (let i = 0; i < 100; i += 1) {
      const d = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
      const g = d.Table?.GlobalSecondaryIndexes?.find((x) => x.IndexName === index.name);
      if (g?.IndexStatus === 'ACTIVE') break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
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

/**
 * Creates the history table `tableName` (key `run_id` + sort key `key`, both strings, no index)
 * unless it exists (workflow runs' histories, `shared/workflow/history-store.ts`).
 */
export async function createHistoryTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  await createKeyedTable(dynamodb, tableName, {
    partitionKey: HISTORY_TABLE_SCHEMA.partitionKey,
    sortKey: HISTORY_TABLE_SCHEMA.sortKey,
  });
}

/** Deletes the schedules table `tableName`; nothing if it does not exist. */
export async function deleteSchedulesTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await dynamodb.send(new DeleteTableCommand({ TableName: tableName }));
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException)) throw err;
  }
}
