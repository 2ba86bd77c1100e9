import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { TABLE_SCHEMA } from '../../shared/config/resources.js';
import type { TaskRecord } from '../../shared/task/model.js';
import {
  ConditionFailedError,
  StoreRejectedError,
  StoreUnavailableError,
  TaskAlreadyExistsError,
} from '../../shared/task/store-errors.js';
import type { ReadOptions, TaskChanges, TaskCondition, TaskStore } from '../../shared/task/task-store.js';

const PK = TABLE_SCHEMA.partitionKey;

/**
 * `DynamoTaskStore` as it was before it moved to the low-level client: on the DynamoDB *document* client.
 * Kept for `bench/cpu.ts` only, as the `before` of the low-level client with hand marshalling
 * that `shared/aws/dynamo-task-store.ts` uses now. Not used by Kaj.
 */
export class DocumentTaskStore implements TaskStore {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    private readonly tableName: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, {
      marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    });
  }

  async create(record: TaskRecord): Promise<void> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: record,
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
      const out = await this.doc.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { [PK]: taskId },
          ConsistentRead: options.consistent ?? true,
        }),
      );
      return out.Item as TaskRecord | undefined;
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
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { [PK]: taskId },
          UpdateExpression: parts.join(' '),
          ConditionExpression: conditionExpression(expr, condition),
          ExpressionAttributeNames: expr.names,
          // DynamoDB rejects an empty map here (a REMOVE-only update has no values).
          ...(Object.keys(expr.values).length > 0 ? { ExpressionAttributeValues: expr.values } : {}),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return out.Attributes as TaskRecord;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) {
        throw new ConditionFailedError(taskId, itemOf(err), err);
      }
      throw unavailable(err, 'UpdateItem', taskId);
    }
  }

  async listOutboxDue(partition: string, dueBy: number, limit: number): Promise<TaskRecord[]> {
    const { name, partitionKey, sortKey } = TABLE_SCHEMA.outboxIndex;
    try {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: name,
          KeyConditionExpression: '#pk = :pk AND #due <= :due',
          ExpressionAttributeNames: { '#pk': partitionKey, '#due': sortKey },
          ExpressionAttributeValues: { ':pk': partition, ':due': dueBy },
          Limit: limit,
          ScanIndexForward: true,
        }),
      );
      return (out.Items ?? []) as TaskRecord[];
    } catch (err) {
      throw unavailable(err, 'Query', undefined);
    }
  }
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
 * The item a failed condition returns (ReturnValuesOnConditionCheckFailure). The document
 * client does not unmarshall exceptions, so this does. Emulators that ignore the option give none.
 */
function itemOf(err: ConditionalCheckFailedException): TaskRecord | undefined {
  return err.Item === undefined ? undefined : (unmarshall(err.Item) as TaskRecord);
}

/**
 * Errors DynamoDB (or the client, before sending) gives for a request that can never succeed.
 * Everything else — throttling, 5xx, network, timeouts — is an outage worth retrying.
 */
const REJECTED = new Set(['ValidationException', 'SerializationException', 'ItemCollectionSizeLimitExceededException']);

function unavailable(
  err: unknown,
  operation: string,
  taskId: string | undefined,
): StoreUnavailableError | StoreRejectedError {
  const name = err instanceof Error ? err.name : 'Error';
  const message = err instanceof Error ? err.message : String(err);
  if (REJECTED.has(name) || isMarshallError(err)) {
    return new StoreRejectedError(`DynamoDB ${operation} rejected: ${name}: ${message}`, { taskId, cause: err });
  }
  return new StoreUnavailableError(`DynamoDB ${operation} failed: ${name}`, { taskId, cause: err });
}

/**
 * The document client marshals before sending and throws plain Errors for values DynamoDB
 * cannot hold (unsafe integers, NaN, class instances). They have no HTTP metadata.
 */
function isMarshallError(err: unknown): boolean {
  if (!(err instanceof Error) || '$metadata' in err) return false;
  return /MAX_SAFE_INTEGER|Unsupported type passed|Special numeric value|Number .* is|cannot be converted|marshall/i.test(
    err.message,
  );
}
