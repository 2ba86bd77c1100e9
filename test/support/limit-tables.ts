/**
 * A limits table on an emulator target, for suites that test `DynamoLimitStore` without the rest
 * of the runtime: key `pk` (S) from `LIMIT_TABLE_SCHEMA` of shared/config/resources.ts, no index
 * (`createKeyedTable` of local/schedules-table.ts always makes one, so this makes its own).
 * No TTL either: the emulators do not expire items, and no test waits a day.
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
import { LIMIT_TABLE_SCHEMA, resourceNames } from '../../shared/config/resources.js';
import { startTableOnTarget, type TableOnTarget } from './table-on-target.js';
import type { Target } from './targets.js';
import { uniquePrefix } from '../../testing/wait.js';

/** A limits table made by {@link startLimitsTable}. */
export type LimitsTableOnTarget = TableOnTarget;

/** Creates the limits table `tableName` (on demand) unless it exists, and waits until it is ACTIVE. */
export async function createLimitsTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  const pk = LIMIT_TABLE_SCHEMA.partitionKey;
  try {
    await dynamodb.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: pk, KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: pk, AttributeType: 'S' }],
      }),
    );
  } catch (err) {
    if (!(err instanceof Error && err.name === 'ResourceInUseException')) throw err;
  }
  for (let i = 0; i < 100; i += 1) {
    const out = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    if (out.Table?.TableStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`table ${tableName} did not become ACTIVE`);
}

/**
 * Starts `target` (for the embedded target: dynalite in this process) and makes a limits table
 * with a unique name on it (`<tag>-<pid>-<random>-limits`).
 */
export function startLimitsTable(target: Target, tag = 'limits'): Promise<LimitsTableOnTarget> {
  return startTableOnTarget(target, resourceNames(uniquePrefix(tag)).limits, {
    create: createLimitsTable,
    remove: async (dynamodb, tableName) => {
      await dynamodb.send(new DeleteTableCommand({ TableName: tableName })).catch((err: unknown) => {
        if (!(err instanceof ResourceNotFoundException)) throw err;
      });
    },
  });
}
