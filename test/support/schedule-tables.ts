/**
 * A schedules table on an emulator target, for suites that test `DynamoScheduleStore` without
 * the rest of the runtime (no queues): made from the runtime's own definition
 * (`createSchedulesTable` of local/schedules-table.ts, from shared/config/resources.ts).
 *
 * @module
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EMULATOR_REGION, startEmulators } from '../../local/emulators.js';
import { createSchedulesTable, deleteSchedulesTable } from '../../local/schedules-table.js';
import { resourceNames } from '../../shared/config/resources.js';
import type { Target } from './targets.js';
import { uniquePrefix } from './wait.js';

/** A schedules table made by {@link startSchedulesTable}. */
export interface SchedulesTableOnTarget {
  /** A client of the target's DynamoDB (one attempt per request: a test sees every error). */
  readonly dynamodb: DynamoDBClient;
  readonly tableName: string;
  /** Deletes the table, closes the client, stops what was started. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts `target` (for the embedded target: dynalite in this process) and makes a schedules table
 * with a unique name on it (`<tag>-<pid>-<random>-schedules`).
 */
export async function startSchedulesTable(target: Target, tag = 'schedules'): Promise<SchedulesTableOnTarget> {
  const t = await target.start();
  const embedded = t.endpoints === undefined ? await startEmulators().catch(stopAnd(t.stop)) : undefined;
  const endpoint = t.endpoints?.dynamodb ?? embedded?.dynamoEndpoint ?? '';
  const dynamodb = new DynamoDBClient({
    region: EMULATOR_REGION,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    endpoint,
    maxAttempts: 1,
  });
  const tableName = resourceNames(uniquePrefix(tag)).schedules;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      try {
        await deleteSchedulesTable(dynamodb, tableName);
      } finally {
        dynamodb.destroy();
        await embedded?.stop();
        await t.stop();
      }
    })();
    return stopping;
  };
  await createSchedulesTable(dynamodb, tableName).catch(stopAnd(stop));
  return { dynamodb, tableName, stop };
}

/** A rejection handler that stops what was started, then rethrows. */
function stopAnd(stop: () => Promise<void>): (err: unknown) => Promise<never> {
  return async (err) => {
    await stop().catch(() => undefined);
    throw err;
  };
}
