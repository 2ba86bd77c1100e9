/**
 * The `HistoryStore` contract on `DynamoHistoryStore`, on every emulator target (`targets()`:
 * embedded dynalite, moto when python3 has it, `KAJ_TEST_ENDPOINT`), on a history table made per
 * file from the runtime's own definition (`createHistoryTable` of local/schedules-table.ts) and
 * deleted afterwards; and what only the adapter shows: the requests it makes and how it maps
 * DynamoDB's errors.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoHistoryStore, HISTORY_JSON_ATTRIBUTES } from '../../shared/aws/dynamo-history-store.js';
import { HISTORY_TABLE_SCHEMA } from '../../shared/config/resources.js';
import { StoreRejectedError, StoreUnavailableError } from '../../shared/task/store-errors.js';
import { type FaultErrorKind, FaultInjector } from '../support/faults.js';
import { type HistoryTableOnTarget, startHistoryTable } from '../support/history-tables.js';
import { type Target, targets } from '../support/targets.js';
import { type HistoryStoreContractOptions, historyStoreContract, stepEntry } from './history-store.contract.js';

/**
 * How each emulator departs from DynamoDB, where the contract notices: nowhere so far. dynalite
 * ignores ReturnValuesOnConditionCheckFailure (the adapter reads the winning entry back with a
 * consistent GetItem instead; see below).
 */
function optionsFor(_target: Target): HistoryStoreContractOptions {
  return {};
}

describe.each(targets())('DynamoHistoryStore on $name', (target) => {
  let table: HistoryTableOnTarget | undefined;

  beforeAll(async () => {
    table = await startHistoryTable(target, 'history-contract');
  });

  afterAll(async () => {
    await table?.stop();
  });

  const store = (): DynamoHistoryStore => {
    if (table === undefined) throw new Error('the emulator did not start');
    return new DynamoHistoryStore(table.dynamodb, table.tableName);
  };
  const run = (name: string) => `wf-${target.name}-${name}-${process.pid}`;

  historyStoreContract(
    `DynamoHistoryStore (${target.name})`,
    async () => ({ store: store(), cleanup: async () => {} }),
    optionsFor(target),
  );

  describe('requests', () => {
    it('reads a long history page by page: several strongly consistent Queries, each from where the last stopped', async () => {
      if (table === undefined) throw new Error('the emulator did not start');
      const id = run('pages');
      for (let i = 0; i < 300; i += 10) {
        await Promise.all(
          Array.from({ length: 10 }, (_, j) =>
            store().append(stepEntry(id, `s${String(i + j).padStart(4, '0')}`, 'p'.repeat(4096))),
          ),
        );
      }
      const faults = new FaultInjector().attach(table.dynamodb);
      try {
        const queries = faults.watch('Query');
        expect(await store().read(id)).toHaveLength(300);
        expect(queries.count).toBeGreaterThan(1);
        expect(queries.inputs.every((q) => q.ConsistentRead === true)).toBe(true);
        expect(queries.inputs[0]).not.toHaveProperty('ExclusiveStartKey');
        expect(queries.inputs.slice(1).every((q) => q.ExclusiveStartKey !== undefined)).toBe(true);
      } finally {
        faults.detach();
      }
    }, 60_000);

    it('appends with one conditional PutItem; a taken key is answered from the failed condition, or one consistent GetItem where the emulator does not return it', async () => {
      if (table === undefined) throw new Error('the emulator did not start');
      const id = run('conflict');
      const faults = new FaultInjector().attach(table.dynamodb);
      try {
        const puts = faults.watch('PutItem');
        const gets = faults.watch('GetItem');
        const first = stepEntry(id, 'a', { n: 1 });
        await store().append(first);
        expect(puts.count).toBe(1);
        expect(puts.inputs[0]).toMatchObject({
          ConditionExpression: 'attribute_not_exists(#run)',
          ExpressionAttributeNames: { '#run': HISTORY_TABLE_SCHEMA.partitionKey },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        });
        expect(await store().append(stepEntry(id, 'a', { n: 2 }))).toStrictEqual({ written: false, entry: first });
        expect(puts.count).toBe(2);
        // moto returns the item with the failed condition (as DynamoDB does); dynalite does not.
        if (target.name === 'moto') expect(gets.count).toBe(0);
        else if (target.name === 'embedded') expect(gets.count).toBe(1);
        else expect(gets.count).toBeLessThanOrEqual(1);
        expect(gets.inputs.every((g) => g.ConsistentRead === true)).toBe(true);
      } finally {
        faults.detach();
      }
    });

    it('stores value and error as JSON text, the other fields as plain attributes', async () => {
      if (table === undefined) throw new Error('the emulator did not start');
      const id = run('item');
      await store().append({
        run_id: id,
        key: 'fail#x#1',
        kind: 'step_failure',
        at: 1000,
        lease_token: 2,
        attempt: 1,
        error: { name: 'E', message: 'm', retryable: true },
        expires_at: 99,
      });
      await store().append(stepEntry(id, 'x', { a: [1, 'b'] }));
      const get = async (key: string) =>
        (
          await table!.dynamodb.send(
            new GetItemCommand({
              TableName: table!.tableName,
              Key: { [HISTORY_TABLE_SCHEMA.partitionKey]: { S: id }, [HISTORY_TABLE_SCHEMA.sortKey]: { S: key } },
              ConsistentRead: true,
            }),
          )
        ).Item;
      expect(await get('fail#x#1')).toStrictEqual({
        run_id: { S: id },
        key: { S: 'fail#x#1' },
        kind: { S: 'step_failure' },
        at: { N: '1000' },
        lease_token: { N: '2' },
        attempt: { N: '1' },
        [HISTORY_TABLE_SCHEMA.ttlAttribute]: { N: '99' },
        [HISTORY_JSON_ATTRIBUTES.error]: { S: '{"name":"E","message":"m","retryable":true}' },
      });
      expect((await get('step#x'))?.[HISTORY_JSON_ATTRIBUTES.value]).toStrictEqual({ S: '{"a":[1,"b"]}' });
    });
  });

  describe('errors', () => {
    it('maps throttling, 5xx and timeouts to StoreUnavailableError (retryable), on the Query, the PutItem and the GetItem', async () => {
      if (table === undefined) throw new Error('the emulator did not start');
      const id = run('errors');
      await store().append(stepEntry(id, 'taken', 1));
      const faults = new FaultInjector().attach(table.dynamodb);
      try {
        const kinds: FaultErrorKind[] = ['provisioned-throughput', 'internal', 'unavailable', 'timeout'];
        for (const error of kinds) {
          faults.add({ command: 'PutItem', error });
          const err = await store()
            .append(stepEntry(id, `new-${error}`, 1))
            .catch((e: unknown) => e);
          expect(err).toBeInstanceOf(StoreUnavailableError);
          expect((err as StoreUnavailableError).retryable).toBe(true);
          faults.clear();
        }
        faults.add({ command: 'Query', error: 'throttling' });
        await expect(store().read(id)).rejects.toBeInstanceOf(StoreUnavailableError);
        faults.clear();
        // The read-back of a taken key, where the emulator needs one (dynalite).
        if (target.name === 'embedded') {
          faults.add({ command: 'GetItem', error: 'internal' });
          await expect(store().append(stepEntry(id, 'taken', 2))).rejects.toBeInstanceOf(StoreUnavailableError);
        }
      } finally {
        faults.detach();
      }
    });

    it('maps a request DynamoDB refuses (ValidationException: a key over 1,024 bytes) to StoreRejectedError', async () => {
      const err = await store()
        .append(stepEntry(run('long-key'), 'k'.repeat(1100), 1))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreRejectedError);
      expect((err as StoreRejectedError).retryable).toBe(false);
    });
  });
});
