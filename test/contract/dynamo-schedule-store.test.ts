/**
 * The `ScheduleStore` contract on `DynamoScheduleStore`, on every emulator target the task-store
 * contract runs on (`targets()`: embedded dynalite, moto when python3 has it, `KAJ_TEST_ENDPOINT`),
 * on a schedules table made per file from the runtime's own definition (`createSchedulesTable` of
 * local/schedules-table.ts, from shared/config/resources.ts) and deleted afterwards.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import { DynamoScheduleStore } from '../../shared/aws/dynamo-schedule-store.js';
import { type SchedulesTableOnTarget, startSchedulesTable } from '../support/schedule-tables.js';
import { type Target, targets } from '../support/targets.js';
import { type ScheduleStoreContractOptions, scheduleStoreContract } from './schedule-store.contract.js';

/** How each emulator departs from DynamoDB, where the contract notices. */
function optionsFor(target: Target): ScheduleStoreContractOptions {
  switch (target.name) {
    case 'embedded':
      return {
        knownFailures: {
          emptyIndexKey: 'dynalite 4.0.0 stores an empty string in a GSI key attribute (DynamoDB refuses it)',
        },
      };
    case 'moto':
      return {
        knownFailures: {
          indexKeyType:
            'moto stores a string due_at for a GSI sort key declared N (DynamoDB refuses it), and a Query of that partition then answers HTTP 500',
        },
      };
    default:
      return {};
  }
}

describe.each(targets())('DynamoScheduleStore on $name', (target) => {
  let table: SchedulesTableOnTarget | undefined;

  beforeAll(async () => {
    table = await startSchedulesTable(target, 'schedule-contract');
  });

  afterAll(async () => {
    await table?.stop();
  });

  scheduleStoreContract(
    `DynamoScheduleStore (${target.name})`,
    async () => {
      if (table === undefined) throw new Error('the emulator did not start');
      return { store: new DynamoScheduleStore(table.dynamodb, table.tableName), cleanup: async () => {} };
    },
    optionsFor(target),
  );
});
