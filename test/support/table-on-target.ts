/**
 * One DynamoDB table on an emulator target, for the contract suites of a store that needs only
 * its table (`DynamoScheduleStore`, `DynamoLimitStore`): starts the target (for the embedded
 * target, dynalite in this process), makes the table, and undoes all of it on `stop`.
 *
 * @module
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { emulatorClientConfig, startEndpoints, stopAnd } from './emulator-endpoints.js';
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
  const started = await startEndpoints(target);
  const dynamodb = new DynamoDBClient(emulatorClientConfig(started.endpoints.dynamodb));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      try {
        await kind.remove(dynamodb, tableName);
      } finally {
        dynamodb.destroy();
        await started.stop();
      }
    })();
    return stopping;
  };
  await kind.create(dynamodb, tableName).catch(stopAnd(stop));
  return { dynamodb, tableName, stop };
}
