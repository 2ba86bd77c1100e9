/**
 * One DynamoDB table on an emulator target, for the contract suites of a store that needs only
 * its table (`DynamoScheduleStore`, `DynamoLimitStore`): starts the target (for the embedded
 * target, dynalite in this process), makes the table, and undoes all of it on `stop`.
 *
 * @module
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EMULATOR_REGION, startEmulators } from '../../local/emulators.js';
import type { Target } from './targets.js';

/** A table made by {@link startTableOnTarget}. */
export interface TableOnTarget {
  /** A client of the target's DynamoDB (one attempt per request: a test sees every error). */
  readonly dynamodb: DynamoDBClient;
  readonly tableName: string;
  /** Deletes the table, closes the client, stops what was started. Idempotent. */
  stop(): Promise<void>;
}

/** How to make and remove the table. */
export interface TableKind {
  create(dynamodb: DynamoDBClient, tableName: string): Promise<void>;
  remove(dynamodb: DynamoDBClient, tableName: string): Promise<void>;
}

export async function startTableOnTarget(target: Target, tableName: string, kind: TableKind): Promise<TableOnTarget> {
  const t = await target.start();
  const embedded = t.endpoints === undefined ? await startEmulators().catch(stopAnd(t.stop)) : undefined;
  const endpoint = t.endpoints?.dynamodb ?? embedded?.dynamoEndpoint ?? '';
  const dynamodb = new DynamoDBClient({
    region: EMULATOR_REGION,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    endpoint,
    maxAttempts: 1,
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      try {
        await kind.remove(dynamodb, tableName);
      } finally {
        dynamodb.destroy();
        await embedded?.stop();
        await t.stop();
      }
    })();
    return stopping;
  };
  await kind.create(dynamodb, tableName).catch(stopAnd(stop));
  return { dynamodb, tableName, stop };
}

/** A rejection handler that stops what was started, then rethrows. */
function stopAnd(stop: () => Promise<void>): (err: unknown) => Promise<never> {
  return async (err) => {
    await stop().catch(() => undefined);
    throw err;
  };
}
