import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { HISTORY_TABLE_SCHEMA } from '../config/resources.js';
import type { ErrorInfo } from '../task/model.js';
import { StoreRejectedError, StoreUnavailableError } from '../task/store-errors.js';
import type { AppendResult, HistoryEntry, HistoryEntryKind, HistoryStore } from '../workflow/history-store.js';
import { dynamoStoreError } from './dynamo-errors.js';

const PK = HISTORY_TABLE_SCHEMA.partitionKey;
const SK = HISTORY_TABLE_SCHEMA.sortKey;
const TTL = HISTORY_TABLE_SCHEMA.ttlAttribute;

/**
 * The attributes that hold an entry's `value` and `error`, each as JSON text: any storable JSON
 * comes back exactly as it went in (no DynamoDB number or empty-set rules apply to it), and the
 * item's size is the text's.
 */
export const HISTORY_JSON_ATTRIBUTES = { value: 'value_json', error: 'error_json' } as const;

/** The entry's number fields besides `expires_at` (stored under `HISTORY_TABLE_SCHEMA.ttlAttribute`). */
const NUMBERS = ['at', 'lease_token', 'started_at', 'attempt', 'until', 'seq'] as const;

/** Puts one append may make: the second only when the entry found under the key was gone when read back. */
const APPEND_ATTEMPTS = 2;

/**
 * `HistoryStore` on the history table (`HISTORY_TABLE_SCHEMA`), on the low-level client, as
 * `DynamoLimitStore` and `DynamoScheduleStore`: it builds the requests and maps the errors.
 *
 * An entry is one item: its key (`run_id`, `key`), `kind`, its number fields as numbers, and
 * `value` / `error` as JSON text ({@link HISTORY_JSON_ATTRIBUTES}); a field the entry does not
 * have is no attribute. `read` is a strongly consistent Query of the run's partition, every page,
 * in key order. `append` is one PutItem conditioned on the key being free; a failed condition is
 * read back from `ReturnValuesOnConditionCheckFailure: ALL_OLD` (DynamoDB, DynamoDB Local, moto),
 * or from a consistent GetItem where the emulator ignores that option (dynalite).
 *
 * An item DynamoDB refuses (over 400 KB, an empty key) is a `StoreRejectedError`, as is a value
 * that is no JSON (a BigInt, a function); throttling and outages are `StoreUnavailableError`s.
 */
export class DynamoHistoryStore implements HistoryStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async read(runId: string): Promise<HistoryEntry[]> {
    const entries: HistoryEntry[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      let out;
      try {
        out = await this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: '#run = :run',
            ExpressionAttributeNames: { '#run': PK },
            ExpressionAttributeValues: { ':run': { S: runId } },
            ConsistentRead: true,
            ...(start === undefined ? {} : { ExclusiveStartKey: start }),
          }),
        );
      } catch (err) {
        throw storeError(err, 'Query', runId);
      }
      for (const item of out.Items ?? []) entries.push(entryOf(item));
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
    return entries;
  }

  async append(entry: HistoryEntry): Promise<AppendResult> {
    const item = historyItemOf(entry);
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: item,
            ConditionExpression: 'attribute_not_exists(#run)',
            ExpressionAttributeNames: { '#run': PK },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        // As a read will give it back: what was stored, not the caller's object.
        return { written: true, entry: entryOf(item) };
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException))
          throw storeError(err, 'PutItem', entry.run_id, entry.key);
        const stored = err.Item === undefined ? await this.get(entry.run_id, entry.key) : entryOf(err.Item);
        if (stored !== undefined) return { written: false, entry: stored };
        // The entry under the key expired (TTL) between the put and the read: the key is free again.
        if (attempt >= APPEND_ATTEMPTS) {
          throw new StoreUnavailableError(
            `DynamoDB PutItem failed (run "${entry.run_id}", key "${entry.key}"): the key is taken, but no entry was found under it`,
            { taskId: entry.run_id, cause: err },
          );
        }
      }
    }
  }

  /** The entry stored under the key (a consistent read), if any. */
  private async get(runId: string, key: string): Promise<HistoryEntry | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: { [PK]: { S: runId }, [SK]: { S: key } },
          ConsistentRead: true,
        }),
      );
      return out.Item === undefined ? undefined : entryOf(out.Item);
    } catch (err) {
      throw storeError(err, 'GetItem', runId, key);
    }
  }
}

/**
 * The item `append` writes for an entry (what its size and write units are reckoned on). Fields
 * that are `undefined` are left out.
 * @throws StoreRejectedError for a field DynamoDB cannot hold as the table defines it
 */
export function historyItemOf(entry: HistoryEntry): Record<string, AttributeValue> {
  const where = `run "${entry.run_id}", key "${entry.key}"`;
  const item: Record<string, AttributeValue> = {
    [PK]: { S: text(entry.run_id, 'run_id', where) },
    [SK]: { S: text(entry.key, 'key', where) },
    kind: { S: text(entry.kind, 'kind', where) },
  };
  for (const field of NUMBERS) {
    const n = entry[field];
    if (n !== undefined) item[field] = number(n, field, where);
  }
  if (entry.expires_at !== undefined) item[TTL] = number(entry.expires_at, 'expires_at', where);
  if (entry.child_id !== undefined) item.child_id = { S: text(entry.child_id, 'child_id', where) };
  if (entry.child_status !== undefined) item.child_status = { S: text(entry.child_status, 'child_status', where) };
  if (entry.value !== undefined) item[HISTORY_JSON_ATTRIBUTES.value] = { S: json(entry.value, 'value', where) };
  if (entry.error !== undefined) item[HISTORY_JSON_ATTRIBUTES.error] = { S: json(entry.error, 'error', where) };
  return item;
}

/**
 * The entry of an item: the inverse of {@link historyItemOf}, with no member for an absent attribute.
 * @throws StoreRejectedError for an item that is no history entry (not written by this store)
 */
function entryOf(item: Record<string, AttributeValue>): HistoryEntry {
  const runId = item[PK]?.S;
  const key = item[SK]?.S;
  const kind = item.kind?.S;
  const where = `run "${runId}", key "${key}"`;
  if (runId === undefined || key === undefined || kind === undefined) {
    throw new StoreRejectedError(`history item (${where}) has no ${PK}, ${SK} or kind: not written by this store`);
  }
  const entry: Record<string, unknown> = { run_id: runId, key, kind: kind as HistoryEntryKind };
  for (const field of NUMBERS) {
    const n = item[field]?.N;
    if (n !== undefined) entry[field] = Number(n);
  }
  const expiresAt = item[TTL]?.N;
  if (expiresAt !== undefined) entry.expires_at = Number(expiresAt);
  const childId = item.child_id?.S;
  if (childId !== undefined) entry.child_id = childId;
  const childStatus = item.child_status?.S;
  if (childStatus !== undefined) entry.child_status = childStatus;
  const value = item[HISTORY_JSON_ATTRIBUTES.value]?.S;
  if (value !== undefined) entry.value = parsed(value, 'value', where);
  const error = item[HISTORY_JSON_ATTRIBUTES.error]?.S;
  if (error !== undefined) entry.error = parsed(error, 'error', where) as ErrorInfo;
  return entry as unknown as HistoryEntry;
}

function text(v: unknown, field: string, where: string): string {
  if (typeof v !== 'string') throw new StoreRejectedError(`history entry (${where}): ${field} must be a string`);
  return v;
}

function number(v: unknown, field: string, where: string): AttributeValue {
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new StoreRejectedError(`history entry (${where}): ${field} must be a finite number, got ${String(v)}`);
  }
  return { N: String(v) };
}

/** JSON text of a value; a value JSON cannot write (a BigInt, a cycle, a function) is refused. */
function json(v: unknown, field: string, where: string): string {
  let out: string | undefined;
  try {
    out = JSON.stringify(v);
  } catch (err) {
    throw new StoreRejectedError(`history entry (${where}): ${field} is not JSON: ${String(err)}`, { cause: err });
  }
  if (out === undefined) throw new StoreRejectedError(`history entry (${where}): ${field} is not JSON`);
  return out;
}

function parsed(s: string, field: string, where: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch (err) {
    throw new StoreRejectedError(`history item (${where}): ${field} is not JSON text`, { cause: err });
  }
}

/** The store error for a failed request, naming the run (and the entry's key when it was about one). */
function storeError(
  err: unknown,
  operation: string,
  runId: string,
  key?: string,
): StoreUnavailableError | StoreRejectedError {
  return dynamoStoreError(err, operation, {
    about: key === undefined ? ` (run "${runId}")` : ` (run "${runId}", key "${key}")`,
    taskId: runId,
    // Nothing here goes through marshall: its errors cannot occur.
    marshallErrors: false,
  });
}
