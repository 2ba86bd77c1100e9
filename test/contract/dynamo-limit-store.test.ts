/**
 * The `LimitStore` contract on `DynamoLimitStore`, on every emulator target (`targets()`: embedded
 * dynalite, moto when python3 has it, `KAJ_TEST_ENDPOINT`), on a limits table made per file
 * (`startLimitsTable` of test/support/limit-tables.ts, key from shared/config/resources.ts) and
 * deleted afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoLimitStore } from '../../shared/aws/dynamo-limit-store.js';
import { StoreRejectedError, StoreUnavailableError } from '../../shared/task/store-errors.js';
import { type FaultErrorKind, FaultInjector } from '../support/faults.js';
import { type LimitsTableOnTarget, startLimitsTable } from '../support/limit-tables.js';
import { type Target, targets } from '../support/targets.js';
import { type LimitStoreContractOptions, limitStoreContract } from './limit-store.contract.js';

/**
 * How each emulator departs from DynamoDB, where the contract notices: nowhere so far. dynalite
 * ignores ReturnValuesOnConditionCheckFailure (the adapter reads the item back instead). moto 5.2.1's
 * own server applies concurrent conditional updates non-atomically, but `targets()` starts it through
 * local/moto_server.py, which serves one request at a time: the concurrent cases
 * (`concurrentAdds`, `concurrentTakes`) hold there too, so they are not declared known failures
 * (`it.fails` would turn red). Against a plain `moto.server` they would need declaring.
 */
function optionsFor(_target: Target): LimitStoreContractOptions {
  return {};
}

describe.each(targets())('DynamoLimitStore on $name', (target) => {
  let table: LimitsTableOnTarget | undefined;

  beforeAll(async () => {
    table = await startLimitsTable(target, 'limit-contract');
  });

  afterAll(async () => {
    await table?.stop();
  });

  limitStoreContract(
    `DynamoLimitStore (${target.name})`,
    async () => {
      if (table === undefined) throw new Error('the emulator did not start');
      return { store: new DynamoLimitStore(table.dynamodb, table.tableName), cleanup: async () => {} };
    },
    optionsFor(target),
  );

  describe('errors', () => {
    const store = (): DynamoLimitStore => {
      if (table === undefined) throw new Error('the emulator did not start');
      return new DynamoLimitStore(table.dynamodb, table.tableName);
    };

    it('maps throttling, 5xx and timeouts to StoreUnavailableError (retryable), on writes and on the Scan', async () => {
      if (table === undefined) throw new Error('the emulator did not start');
      const faults = new FaultInjector().attach(table.dynamodb);
      try {
        const kinds: FaultErrorKind[] = ['provisioned-throughput', 'internal', 'unavailable', 'timeout'];
        for (const error of kinds) {
          faults.add({ command: 'UpdateItem', error });
          const err = await store()
            .addHolder('c#errors', 'a.1', 1, 1)
            .catch((e: unknown) => e);
          expect(err).toBeInstanceOf(StoreUnavailableError);
          expect((err as StoreUnavailableError).retryable).toBe(true);
          faults.clear();
        }
        faults.add({ command: 'Scan', error: 'throttling' });
        await expect(store().list()).rejects.toBeInstanceOf(StoreUnavailableError);
      } finally {
        faults.detach();
      }
    });

    it('maps a request DynamoDB refuses (ValidationException: a key over 2,048 bytes) to StoreRejectedError', async () => {
      const err = await store()
        .addHolder(`c#${'x'.repeat(2100)}`, 'a.1', 1, 1)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreRejectedError);
      expect((err as StoreRejectedError).retryable).toBe(false);
    });
  });
});
