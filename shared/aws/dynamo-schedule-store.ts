import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { SCHEDULE_TABLE_SCHEMA } from '../config/resources.js';
import type { ScheduleRecord } from '../schedule/model.js';
import { OwnerScheduleLimitError, ScheduleVersionConflictError } from '../schedule/store-errors.js';
import { StoreRejectedError, type StoreUnavailableError } from '../task/store-errors.js';
import type {
  OwnerSlot,
  ScheduleDueEntry,
  SchedulePage,
  ScheduleReadOptions,
  ScheduleStore,
} from '../schedule/schedule-store.js';
import { checkLimit, cursorOfKey, keyOfCursor } from './dynamo-cursor.js';
import { dynamoStoreError } from './dynamo-errors.js';

const PK = SCHEDULE_TABLE_SCHEMA.partitionKey;

/**
 * The key prefix of an owner's count item (`#owner:<owner>`, attribute `owned`), in the
 * schedules table itself. A schedule name starts with a letter or digit, so no name collides
 * with it; listings and reads skip these items.
 */
const COUNT_PREFIX = '#owner:';
const COUNT = 'owned';
/** Attempts of a counted write whose transaction lost to another on the same count item. */
const TRANSACTION_ATTEMPTS = 3;

/**
 * How records become DynamoDB items, as in `dynamo-task-store.ts`: `undefined` fields are left
 * out (optional record fields), class instances are refused.
 */
const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/**
 * `ScheduleStore` on the schedules table (`SCHEDULE_TABLE_SCHEMA`): every call is one request,
 * on the low-level client with hand marshalling, as `DynamoTaskStore`.
 *
 * Counted creates and deletes (an owner's schedule slots) are one TransactWriteItems of the
 * schedule's write and an `ADD owned ±1` on the owner's count item (`#owner:<owner>`), the `+1`
 * conditioned on `owned < max`: two creates at max − 1 cannot both pass, and a create refused
 * for either reason changes nothing. A transaction bills 2 write units per KB per item: a counted
 * create or delete of a schedule under 1 KB costs 4 WRU instead of 1. On an emulator without
 * transactions (dynalite, which `npm start` runs on: UnknownOperationException) the two writes go
 * one after the other — the slot first, given back if the schedule's write fails; the delete,
 * then the slot — so a process killed between them can leave one count off there.
 *
 * Writes are conditioned on the record's `version`; a failed condition becomes a
 * `ScheduleVersionConflictError` carrying the stored record (from
 * `ReturnValuesOnConditionCheckFailure`, or a consistent GetItem where the emulator ignores that
 * option). Listings page with opaque cursors: base64url JSON of DynamoDB's `LastEvaluatedKey`.
 */
export class DynamoScheduleStore implements ScheduleStore {
  /** Whether the endpoint takes TransactWriteItems (`undefined`: not tried yet). */
  private transactions: boolean | undefined;

  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async get(name: string, options: ScheduleReadOptions = {}): Promise<ScheduleRecord | undefined> {
    if (name.startsWith(COUNT_PREFIX)) return undefined;
    try {
      const out = await this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: { [PK]: { S: name } },
          ConsistentRead: options.consistent ?? true,
        }),
      );
      return out.Item === undefined ? undefined : recordOf(out.Item);
    } catch (err) {
      throw storeError(err, 'GetItem', name);
    }
  }

  async put(record: ScheduleRecord, expectedVersion: number | 'absent', slot?: OwnerSlot): Promise<void> {
    let item: Record<string, AttributeValue>;
    try {
      item = marshall(record, MARSHALL);
    } catch (err) {
      throw storeError(err, 'PutItem', record.name);
    }
    const write = {
      TableName: this.tableName,
      Item: item,
      ...versionCondition(expectedVersion),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    if (slot !== undefined) {
      if (expectedVersion !== 'absent') {
        throw new StoreRejectedError(`a slot is taken by a create only (schedule "${record.name}")`);
      }
      checkSlot(slot);
      await this.counted({ Put: write }, record.name, { owner: slot.owner, add: 1, max: slot.max });
      return;
    }
    try {
      await this.client.send(new PutItemCommand(write));
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) throw await this.conflict(record.name, err);
      throw storeError(err, 'PutItem', record.name);
    }
  }

  async delete(name: string, expectedVersion: number, releaseOwner?: string): Promise<void> {
    const write = {
      TableName: this.tableName,
      Key: { [PK]: { S: name } },
      ...versionCondition(expectedVersion),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
    if (releaseOwner !== undefined) {
      await this.counted({ Delete: write }, name, { owner: releaseOwner, add: -1 });
      return;
    }
    try {
      await this.client.send(new DeleteItemCommand(write));
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) throw await this.conflict(name, err);
      throw storeError(err, 'DeleteItem', name);
    }
  }

  async listDue(
    partition: string,
    dueBy: number,
    limit: number,
    cursor?: string,
  ): Promise<SchedulePage<ScheduleDueEntry>> {
    const { name, partitionKey, sortKey } = SCHEDULE_TABLE_SCHEMA.dueIndex;
    try {
      checkLimit(limit);
      // A cursor of another listing or partition: refused here (DynamoDB refuses it too; moto answers 500).
      const start =
        cursor === undefined
          ? undefined
          : keyOfCursor(
              cursor,
              PK,
              (k) => Object.keys(k).length === 3 && k[partitionKey] === partition && typeof k[sortKey] === 'number',
            );
      const out = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: name,
          KeyConditionExpression: '#pk = :p AND #due <= :d',
          ExpressionAttributeNames: { '#pk': partitionKey, '#due': sortKey },
          ExpressionAttributeValues: { ':p': { S: partition }, ':d': { N: String(dueBy) } },
          ScanIndexForward: true,
          Limit: limit,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      return pageOf(out.Items, out.LastEvaluatedKey, (item) => {
        const r = unmarshall(item) as ScheduleDueEntry;
        return { name: r.name, due_pk: r.due_pk, due_at: r.due_at };
      });
    } catch (err) {
      throw storeError(err, 'Query', undefined);
    }
  }

  async list(limit: number, cursor?: string): Promise<SchedulePage> {
    try {
      checkLimit(limit);
      const start = cursor === undefined ? undefined : keyOfCursor(cursor, PK, (k) => Object.keys(k).length === 1);
      const out = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          Limit: limit,
          // The owners' count items are not schedules (a page may hold fewer than `limit` items).
          FilterExpression: 'NOT begins_with(#pk, :count)',
          ExpressionAttributeNames: { '#pk': PK },
          ExpressionAttributeValues: { ':count': { S: COUNT_PREFIX } },
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      return pageOf(out.Items, out.LastEvaluatedKey);
    } catch (err) {
      throw storeError(err, 'Scan', undefined);
    }
  }

  /**
   * The schedule's write (`Put` or `Delete`) and the owner's count change, as one transaction, or
   * one after the other where the endpoint has no transactions.
   */
  private async counted(
    write: Pick<TransactWriteItem, 'Put' | 'Delete'>,
    name: string,
    count: { owner: string; add: 1 | -1; max?: number },
  ): Promise<void> {
    const change = countChange(this.tableName, count);
    for (let attempt = 1; this.transactions !== false; attempt += 1) {
      try {
        await this.client.send(new TransactWriteItemsCommand({ TransactItems: [write, { Update: change }] }));
        this.transactions = true;
        return;
      } catch (err) {
        if (this.transactions === undefined && err instanceof Error && err.name === 'UnknownOperationException') {
          this.transactions = false;
          break;
        }
        if (!(err instanceof TransactionCanceledException)) throw storeError(err, 'TransactWriteItems', name);
        const [own, counter] = err.CancellationReasons ?? [];
        if (own?.Code === 'ConditionalCheckFailed') {
          throw new ScheduleVersionConflictError(
            name,
            own.Item === undefined ? await this.get(name) : recordOf(own.Item),
            err,
          );
        }
        if (counter?.Code === 'ConditionalCheckFailed' && count.max !== undefined) {
          throw new OwnerScheduleLimitError(name, count.owner, count.max, err);
        }
        const lost = (err.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict');
        if (!lost || attempt >= TRANSACTION_ATTEMPTS) throw storeError(err, 'TransactWriteItems', name);
      }
    }
    await this.oneAfterTheOther(write, name, count, change);
  }

  /** {@link counted} without a transaction (an emulator): see the class comment for what it risks. */
  private async oneAfterTheOther(
    write: Pick<TransactWriteItem, 'Put' | 'Delete'>,
    name: string,
    count: { owner: string; add: 1 | -1; max?: number },
    change: NonNullable<TransactWriteItem['Update']>,
  ): Promise<void> {
    const writeOwn = async (): Promise<void> => {
      try {
        if (write.Put !== undefined) await this.client.send(new PutItemCommand(write.Put));
        else if (write.Delete !== undefined) await this.client.send(new DeleteItemCommand(write.Delete));
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException) throw await this.conflict(name, err);
        throw storeError(err, write.Put === undefined ? 'DeleteItem' : 'PutItem', name);
      }
    };
    const changeCount = async (update: typeof change): Promise<void> => {
      await this.client.send(new UpdateItemCommand(update)).catch((err: unknown) => {
        if (err instanceof ConditionalCheckFailedException && count.max !== undefined) throw err;
        throw storeError(err, 'UpdateItem', name);
      });
    };
    if (count.add < 0) {
      await writeOwn();
      await changeCount(change);
      return;
    }
    try {
      await changeCount(change);
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // As the transaction: a schedule of that name is a conflict before the count is full.
      const current = await this.get(name);
      if (current !== undefined) throw new ScheduleVersionConflictError(name, current, err);
      throw new OwnerScheduleLimitError(name, count.owner, count.max ?? 0, err);
    }
    try {
      await writeOwn();
    } catch (err) {
      await changeCount(countChange(this.tableName, { owner: count.owner, add: -1 })).catch(() => {});
      throw err;
    }
  }

  /** The conflict, with the stored record (read back when the error did not carry it). */
  private async conflict(name: string, err: ConditionalCheckFailedException): Promise<ScheduleVersionConflictError> {
    const current = err.Item === undefined ? await this.get(name) : recordOf(err.Item);
    return new ScheduleVersionConflictError(name, current, err);
  }
}

/** The ConditionExpression of a write expecting the stored record at `expected` (or none). */
function versionCondition(expected: number | 'absent'): {
  ConditionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
} {
  if (expected === 'absent') {
    return { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': PK } };
  }
  return {
    ConditionExpression: '#version = :v',
    ExpressionAttributeNames: { '#version': 'version' },
    ExpressionAttributeValues: { ':v': { N: String(expected) } },
  };
}

/** `ADD owned ±1` on an owner's count item; a `+1` with a `max` only while `owned < max`. */
function countChange(
  tableName: string,
  count: { owner: string; add: 1 | -1; max?: number },
): NonNullable<TransactWriteItem['Update']> {
  const limited = count.add > 0 && count.max !== undefined;
  return {
    TableName: tableName,
    Key: { [PK]: { S: `${COUNT_PREFIX}${count.owner}` } },
    UpdateExpression: 'ADD #owned :add',
    ExpressionAttributeNames: { '#owned': COUNT },
    ExpressionAttributeValues: {
      ':add': { N: String(count.add) },
      ...(limited ? { ':max': { N: String(count.max) } } : {}),
    },
    ...(limited ? { ConditionExpression: 'attribute_not_exists(#owned) OR #owned < :max' } : {}),
  };
}

/** A slot DynamoDB could not hold, refused before sending. */
function checkSlot(slot: OwnerSlot): void {
  if (typeof slot.owner !== 'string' || slot.owner === '' || !Number.isSafeInteger(slot.max) || slot.max < 1) {
    throw new StoreRejectedError(`an owner slot needs an owner and a max >= 1, got ${JSON.stringify(slot)}`);
  }
}

function recordOf(item: Record<string, AttributeValue>): ScheduleRecord {
  return unmarshall(item) as ScheduleRecord;
}

function pageOf<T = ScheduleRecord>(
  items: Array<Record<string, AttributeValue>> | undefined,
  lastKey: Record<string, AttributeValue> | undefined,
  map: (item: Record<string, AttributeValue>) => T = recordOf as (item: Record<string, AttributeValue>) => T,
): SchedulePage<T> {
  const records = (items ?? []).map(map);
  return lastKey === undefined ? { items: records } : { items: records, cursor: cursorOfKey(lastKey) };
}

/** The store error for a failed request, naming the schedule when it was about one. */
function storeError(
  err: unknown,
  operation: string,
  scheduleName: string | undefined,
): StoreUnavailableError | StoreRejectedError {
  return dynamoStoreError(err, operation, {
    about: scheduleName === undefined ? '' : ` (schedule "${scheduleName}")`,
  });
}
