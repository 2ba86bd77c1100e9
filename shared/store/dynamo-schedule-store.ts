import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { SCHEDULE_TABLE_SCHEMA } from '../config/resources.js';
import type { ScheduleRecord } from '../schedule/model.js';
import { ScheduleVersionConflictError, StoreRejectedError, StoreUnavailableError } from './errors.js';
import type { ScheduleDueEntry, SchedulePage, ScheduleReadOptions, ScheduleStore } from './schedule-store.js';

const PK = SCHEDULE_TABLE_SCHEMA.partitionKey;

/**
 * How records become DynamoDB items, as in `dynamo-task-store.ts`: `undefined` fields are left
 * out (optional record fields), class instances are refused.
 */
const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/**
 * `ScheduleStore` on the schedules table (`SCHEDULE_TABLE_SCHEMA`): every call is one request
 * (no transactions), on the low-level client with hand marshalling, as `DynamoTaskStore`.
 *
 * Writes are conditioned on the record's `version`; a failed condition becomes a
 * `ScheduleVersionConflictError` carrying the stored record (from
 * `ReturnValuesOnConditionCheckFailure`, or a consistent GetItem where the emulator ignores that
 * option). Listings page with opaque cursors: base64url JSON of DynamoDB's `LastEvaluatedKey`.
 */
export class DynamoScheduleStore implements ScheduleStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async get(name: string, options: ScheduleReadOptions = {}): Promise<ScheduleRecord | undefined> {
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

  async put(record: ScheduleRecord, expectedVersion: number | 'absent'): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: marshall(record, MARSHALL),
          ...versionCondition(expectedVersion),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) throw await this.conflict(record.name, err);
      throw storeError(err, 'PutItem', record.name);
    }
  }

  async delete(name: string, expectedVersion: number): Promise<void> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: { [PK]: { S: name } },
          ...versionCondition(expectedVersion),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
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
      const start = cursor === undefined ? undefined : keyOfCursor(cursor, (k) => Object.keys(k).length === 1);
      const out = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          Limit: limit,
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      return pageOf(out.Items, out.LastEvaluatedKey);
    } catch (err) {
      throw storeError(err, 'Scan', undefined);
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

/** A limit DynamoDB would refuse, refused before sending (moto answers Limit 0 with a body the SDK cannot parse). */
function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new InvalidRequest(`limit must be an integer >= 1, got ${limit}`);
  }
}

/**
 * The opaque cursor of a page: base64url of the JSON of `LastEvaluatedKey`, unmarshalled (its
 * values are key attributes: strings and numbers only), so that it stays short.
 */
function cursorOfKey(key: Record<string, AttributeValue>): string {
  return Buffer.from(JSON.stringify(unmarshall(key)), 'utf8').toString('base64url');
}

/** DynamoDB's limit on a sort key (a partition key may have 2,048 bytes): no key of this table comes near. */
const MAX_KEY_BYTES = 1024;

/**
 * `ExclusiveStartKey` from a cursor; an `InvalidRequest` for anything no page of this listing
 * gave (`fits` checks the key attributes beyond the table key).
 */
function keyOfCursor(
  cursor: string,
  fits: (key: Record<string, string | number>) => boolean,
): Record<string, AttributeValue> {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch (err) {
    throw new InvalidRequest('the cursor is not one this store gave', { cause: err });
  }
  const valid =
    typeof key === 'object' &&
    key !== null &&
    !Array.isArray(key) &&
    typeof (key as Record<string, unknown>)[PK] === 'string' &&
    // Key values DynamoDB takes: a non-empty string within its key size, a number it can hold.
    Object.values(key).every(
      (v) =>
        (typeof v === 'string' && v !== '' && Buffer.byteLength(v) <= MAX_KEY_BYTES) ||
        (typeof v === 'number' && Number.isSafeInteger(v)),
    ) &&
    fits(key as Record<string, string | number>);
  if (!valid) throw new InvalidRequest('the cursor is not one this store gave');
  return marshall(key as Record<string, string | number>, MARSHALL);
}

/** A request refused before it is sent (bad limit, bad cursor): mapped to `StoreRejectedError`. */
class InvalidRequest extends Error {
  override readonly name = 'ValidationException';
}

/**
 * Errors DynamoDB (or the client, before sending) gives for a request that can never succeed,
 * as in `dynamo-task-store.ts`. Everything else — throttling, 5xx, network, timeouts — is an
 * outage worth retrying.
 */
const REJECTED = new Set(['ValidationException', 'SerializationException', 'ItemCollectionSizeLimitExceededException']);

function storeError(
  err: unknown,
  operation: string,
  scheduleName: string | undefined,
): StoreUnavailableError | StoreRejectedError {
  const name = err instanceof Error ? err.name : 'Error';
  const message = err instanceof Error ? err.message : String(err);
  const about = scheduleName === undefined ? '' : ` (schedule "${scheduleName}")`;
  if (REJECTED.has(name) || isMarshallError(err)) {
    return new StoreRejectedError(`DynamoDB ${operation} rejected${about}: ${name}: ${message}`, { cause: err });
  }
  return new StoreUnavailableError(`DynamoDB ${operation} failed${about}: ${name}`, { cause: err });
}

/**
 * `marshall` throws plain Errors for values DynamoDB cannot hold (unsafe integers, NaN, class
 * instances), before anything is sent. They have no HTTP metadata.
 */
function isMarshallError(err: unknown): boolean {
  if (!(err instanceof Error) || '$metadata' in err) return false;
  return /MAX_SAFE_INTEGER|Unsupported type passed|Special numeric value|Number .* is|cannot be converted|marshall/i.test(
    err.message,
  );
}
