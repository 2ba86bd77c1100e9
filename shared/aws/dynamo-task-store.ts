import {
  type AttributeValue,
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { TABLE_SCHEMA } from '../config/resources.js';
import type { TaskRecord } from '../task/model.js';
import {
  ConditionFailedError,
  StoreRejectedError,
  StoreUnavailableError,
  TaskAlreadyExistsError,
} from '../task/store-errors.js';
import type {
  ListedTask,
  ListingPage,
  ListingRequest,
  OutboxEntry,
  OutboxRange,
  OutboxRangeRequest,
  OutboxRow,
  ReadOptions,
  TaskChanges,
  TaskCondition,
  TaskListingReader,
  TaskStore,
} from '../task/task-store.js';
import { dynamoStoreError } from './dynamo-errors.js';

const PK = TABLE_SCHEMA.partitionKey;

/**
 * How records become DynamoDB items: what the document client did for us before, set once.
 * `undefined` fields are left out (optional record fields), class instances are refused.
 */
const MARSHALL = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;

/**
 * `TaskStore` on one DynamoDB table: every write is one single-item request (no transactions);
 * the listing's reads are Queries of an index and a BatchGetItem of one page's rows.
 *
 * On the low-level client, marshalling by hand (`@aws-sdk/util-dynamodb`): the document client
 * costs a second middleware stack and a second pass over every input and output per request,
 * and cannot be combined with `cacheMiddleware` (docs/measured.md, "Speed", has the difference).
 */
export class DynamoTaskStore implements TaskStore, TaskListingReader {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async create(record: TaskRecord): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: marshall(record, MARSHALL),
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        const existing = itemOf(err) ?? (await this.get(record.task_id));
        throw new TaskAlreadyExistsError(record.task_id, existing, err);
      }
      throw unavailable(err, 'PutItem', record.task_id);
    }
  }

  async get(taskId: string, options: ReadOptions = {}): Promise<TaskRecord | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: { [PK]: { S: taskId } },
          ConsistentRead: options.consistent ?? true,
        }),
      );
      return out.Item === undefined ? undefined : recordOf(out.Item);
    } catch (err) {
      throw unavailable(err, 'GetItem', taskId);
    }
  }

  async update(taskId: string, changes: TaskChanges, condition: TaskCondition): Promise<TaskRecord> {
    const expr = new ExpressionBuilder();
    const sets: string[] = [];
    for (const [k, v] of Object.entries(changes.set ?? {})) {
      if (v === undefined || k === PK) continue;
      sets.push(`${expr.name(k)} = ${expr.value(v)}`);
    }
    for (const [k, v] of Object.entries(changes.add ?? {})) {
      if (v === undefined) continue;
      const n = expr.name(k);
      sets.push(`${n} = if_not_exists(${n}, ${expr.value(0)}) + ${expr.value(v)}`);
    }
    for (const [k, v] of Object.entries(changes.append ?? {})) {
      if (v === undefined) continue;
      const n = expr.name(k);
      sets.push(`${n} = list_append(if_not_exists(${n}, ${expr.value([])}), ${expr.value(v)})`);
    }
    const removes = (changes.remove ?? []).map((k) => expr.name(k));
    const parts: string[] = [];
    if (sets.length > 0) parts.push(`SET ${sets.join(', ')}`);
    if (removes.length > 0) parts.push(`REMOVE ${removes.join(', ')}`);
    if (parts.length === 0) throw new RangeError('update needs at least one change');

    try {
      const conditionText = conditionExpression(expr, condition);
      // DynamoDB rejects an empty map here (a REMOVE-only update has no values).
      const values = Object.keys(expr.values).length > 0 ? marshall(expr.values, MARSHALL) : undefined;
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { [PK]: { S: taskId } },
          UpdateExpression: parts.join(' '),
          ConditionExpression: conditionText,
          ExpressionAttributeNames: expr.names,
          ...(values === undefined ? {} : { ExpressionAttributeValues: values }),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return recordOf(out.Attributes ?? {});
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        throw new ConditionFailedError(taskId, itemOf(err), err);
      }
      throw unavailable(err, 'UpdateItem', taskId);
    }
  }

  async listOutboxDue(partition: string, dueBy: number, limit: number): Promise<OutboxEntry[]> {
    const { name, partitionKey, sortKey } = TABLE_SCHEMA.outboxIndex;
    try {
      const out = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: name,
          KeyConditionExpression: '#pk = :pk AND #due <= :due',
          ExpressionAttributeNames: { '#pk': partitionKey, '#due': sortKey },
          ExpressionAttributeValues: { ':pk': { S: partition }, ':due': { N: String(dueBy) } },
          Limit: limit,
          ScanIndexForward: true,
        }),
      );
      // Keys only, also from an index that projects more (stacks deployed before keys-only).
      return (out.Items ?? []).map(recordOf).map(({ task_id, outbox_pk, outbox_due }) => ({
        task_id,
        outbox_pk,
        outbox_due,
      }));
    } catch (err) {
      throw unavailable(err, 'Query', undefined);
    }
  }

  async listTasks(request: ListingRequest): Promise<ListingPage> {
    const { name, partitionKey, sortKey } = TABLE_SCHEMA.listIndex;
    const names: Record<string, string> = { '#pk': partitionKey };
    const values: Record<string, AttributeValue> = { ':pk': { S: request.status } };
    const filters: string[] = [];
    if (request.type !== undefined) {
      names['#type'] = 'type';
      values[':type'] = { S: request.type };
      filters.push('#type = :type');
    }
    if (request.owner !== undefined) {
      names['#owner'] = 'owner';
      values[':owner'] = { S: request.owner };
      filters.push('#owner = :owner');
    }
    try {
      const out = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: name,
          KeyConditionExpression: '#pk = :pk',
          ...(filters.length === 0 ? {} : { FilterExpression: filters.join(' AND ') }),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          Limit: request.limit,
          ScanIndexForward: false,
          ...(request.after === undefined
            ? {}
            : {
                ExclusiveStartKey: {
                  [PK]: { S: request.after.task_id },
                  [partitionKey]: { S: request.status },
                  [sortKey]: { S: request.after.list_sk },
                },
              }),
        }),
      );
      const last = out.LastEvaluatedKey;
      const lastSk = last?.[sortKey]?.S;
      const lastId = last?.[PK]?.S;
      return {
        items: (out.Items ?? []).map((item) => {
          const { list_pk: _pk, ...row } = unmarshall(item) as TaskRecord & { list_sk: string };
          return row as ListedTask;
        }),
        read: out.ScannedCount ?? out.Count ?? 0,
        ...(lastSk === undefined || lastId === undefined ? {} : { last: { list_sk: lastSk, task_id: lastId } }),
      };
    } catch (err) {
      throw unavailable(err, 'Query', undefined);
    }
  }

  async readOutbox(request: OutboxRangeRequest): Promise<OutboxRange> {
    const { name, partitionKey, sortKey } = TABLE_SCHEMA.outboxIndex;
    const from = request.from;
    const values: Record<string, AttributeValue> = { ':pk': { S: request.partition } };
    if (from !== undefined) values[':due'] = { N: String(from.due) };
    try {
      const out = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: name,
          KeyConditionExpression:
            from === undefined ? '#pk = :pk' : `#pk = :pk AND #due ${from.inclusive ? '>=' : '>'} :due`,
          ExpressionAttributeNames: { '#pk': partitionKey, ...(from === undefined ? {} : { '#due': sortKey }) },
          ExpressionAttributeValues: values,
          Limit: request.limit,
          ScanIndexForward: true,
          ...(request.after === undefined
            ? {}
            : {
                ExclusiveStartKey: {
                  [PK]: { S: request.after.task_id },
                  [partitionKey]: { S: request.partition },
                  [sortKey]: { N: String(request.after.outbox_due) },
                },
              }),
        }),
      );
      const entries = (out.Items ?? []).map(recordOf).flatMap(({ task_id, outbox_due }) =>
        // An entry without a numeric due time is not in the index's order: never listed.
        typeof outbox_due === 'number' ? [{ task_id, outbox_due }] : [],
      );
      return { entries, more: out.LastEvaluatedKey !== undefined };
    } catch (err) {
      throw unavailable(err, 'Query', undefined);
    }
  }

  async readRows(taskIds: readonly string[]): Promise<OutboxRow[]> {
    if (taskIds.length > 100)
      throw new StoreRejectedError(`DynamoDB BatchGetItem rejected: at most 100 keys, got ${taskIds.length}`);
    const attributes = [PK, ...TABLE_SCHEMA.listIndex.nonKeyAttributes, 'outbox_pk', 'outbox_due'];
    const names = Object.fromEntries(attributes.map((a, i) => [`#a${i}`, a]));
    let keys: Record<string, AttributeValue>[] = [...new Set(taskIds)].map((id) => ({ [PK]: { S: id } }));
    const rows: OutboxRow[] = [];
    // DynamoDB may leave keys unprocessed under throttling: ask again for those, backing off.
    for (let round = 0; keys.length > 0; round += 1) {
      if (round === UNPROCESSED_ROUNDS)
        throw new StoreUnavailableError(`DynamoDB BatchGetItem left ${keys.length} key(s) unprocessed`);
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, 25 * 2 ** round));
      try {
        const out = await this.client.send(
          new BatchGetItemCommand({
            RequestItems: {
              [this.tableName]: {
                Keys: keys,
                ProjectionExpression: Object.keys(names).join(', '),
                ExpressionAttributeNames: names,
                ConsistentRead: false,
              },
            },
          }),
        );
        for (const item of out.Responses?.[this.tableName] ?? []) rows.push(unmarshall(item) as OutboxRow);
        keys = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      } catch (err) {
        throw unavailable(err, 'BatchGetItem', undefined);
      }
    }
    return rows;
  }
}

/** Rounds of asking again for the keys a BatchGetItem left unprocessed. */
const UNPROCESSED_ROUNDS = 4;

function recordOf(item: Record<string, AttributeValue>): TaskRecord {
  return unmarshall(item) as TaskRecord;
}

function conditionExpression(expr: ExpressionBuilder, c: TaskCondition): string {
  const clauses = [`attribute_exists(${expr.name(PK)})`];
  // Named only when used: DynamoDB rejects an ExpressionAttributeNames entry no expression uses.
  const status = (): string => expr.name('status');
  const alternatives: string[] = [];
  if (c.status !== undefined && c.status.length > 0) {
    alternatives.push(`${status()} IN (${c.status.map((s) => expr.value(s)).join(', ')})`);
  }
  if (c.orLeaseExpiredBefore !== undefined) {
    alternatives.push(
      `(${status()} = ${expr.value('running')} AND ${expr.name('lease_until')} < ${expr.value(c.orLeaseExpiredBefore)})`,
    );
  }
  // Parenthesize only a real OR: DynamoDB rejects `((a AND b))` as "redundant parentheses",
  // which a lone `orLeaseExpiredBefore` (the crash-reclaim fence) used to produce.
  if (alternatives.length === 1) clauses.push(alternatives[0] as string);
  if (alternatives.length > 1) clauses.push(`(${alternatives.join(' OR ')})`);
  if (c.dispatchId !== undefined) clauses.push(`${expr.name('dispatch_id')} = ${expr.value(c.dispatchId)}`);
  if (c.leaseToken !== undefined) clauses.push(`${expr.name('lease_token')} = ${expr.value(c.leaseToken)}`);
  if (c.outboxPending === true) clauses.push(`attribute_exists(${expr.name('outbox_pk')})`);
  if (c.outboxPending === false) clauses.push(`attribute_not_exists(${expr.name('outbox_pk')})`);
  if (c.noCancelRequest === true) clauses.push(`attribute_not_exists(${expr.name('cancel_requested')})`);
  if (c.childrenOpenAbove !== undefined) {
    clauses.push(`${expr.name('children_open')} > ${expr.value(c.childrenOpenAbove)}`);
  }
  return clauses.join(' AND ');
}

/** Placeholders for attribute names and values, so no reserved word (`status`, `type`) bites. */
class ExpressionBuilder {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private n = 0;
  private v = 0;
  private readonly byName = new Map<string, string>();

  name(attr: string): string {
    let placeholder = this.byName.get(attr);
    if (placeholder === undefined) {
      placeholder = `#n${this.n++}`;
      this.byName.set(attr, placeholder);
      this.names[placeholder] = attr;
    }
    return placeholder;
  }

  value(v: unknown): string {
    const placeholder = `:v${this.v++}`;
    this.values[placeholder] = v;
    return placeholder;
  }
}

/**
 * The item a failed condition returns (ReturnValuesOnConditionCheckFailure). Emulators that
 * ignore the option give none.
 */
function itemOf(err: ConditionalCheckFailedException): TaskRecord | undefined {
  return err.Item === undefined ? undefined : recordOf(err.Item);
}

/** The store error for a failed request, carrying the task id when it was about one task. */
function unavailable(
  err: unknown,
  operation: string,
  taskId: string | undefined,
): StoreUnavailableError | StoreRejectedError {
  return dynamoStoreError(err, operation, { taskId });
}
