/**
 * `DynamoTaskStore` against a mocked DynamoDB client (aws-sdk-client-mock): the exact requests it
 * builds (compared unmarshalled, as the document client it used before took them), how it
 * marshals records in and out, and how it maps every kind of failure. What DynamoDB makes of
 * those requests is checked on emulators by `test/contract/dynamo-task-store.test.ts`.
 */
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  DynamoDBServiceException,
  InternalServerError,
  ItemCollectionSizeLimitExceededException,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ResourceNotFoundException,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ConditionFailedError,
  StoreRejectedError,
  StoreUnavailableError,
  TaskAlreadyExistsError,
} from '../../../shared/task/store-errors.js';
import { DynamoTaskStore } from '../../../shared/aws/dynamo-task-store.js';
import type { TaskChanges, TaskCondition } from '../../../shared/task/task-store.js';
import type { TaskRecord } from '../../../shared/task/model.js';

const TABLE = 'kaj-unit-tasks';
const doc = mockClient(DynamoDBClient);
const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
const store = new DynamoTaskStore(client, TABLE);

beforeEach(() => {
  doc.reset();
});
afterAll(() => {
  doc.restore();
  client.destroy();
});

function record(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    task_id: 't_1',
    type: 'job',
    priority: 'normal',
    status: 'running',
    payload: { to: 'a@example.com', sizes: [64, 256], nested: { ok: true, none: null } },
    attempts: 1,
    max_attempts: 5,
    timeout_seconds: 60,
    run_at: '2030-01-01T00:00:00.000Z',
    created_at: '2030-01-01T00:00:00.000Z',
    updated_at: '2030-01-01T00:00:01.000Z',
    history: [{ attempt: 1, outcome: 'retrying', finished_at: '2030-01-01T00:00:01.000Z' }],
    fingerprint: 'fp',
    lease_token: 2,
    lease_until: 1_900_000_000_000,
    dispatch_id: 'd_1',
    ...overrides,
  };
}

/** As DynamoDB stores it, with what the store marshals (undefined members dropped). */
const item = (r: unknown): Record<string, AttributeValue> =>
  marshall(r, { removeUndefinedValues: true, convertClassInstanceToMap: false });

/** A request's input with its marshalled maps (Key, Item, ExpressionAttributeValues) read back. */
function readable(input: object): Record<string, unknown> {
  const out: Record<string, unknown> = { ...input };
  for (const k of ['Key', 'Item', 'ExpressionAttributeValues']) {
    if (out[k] !== undefined) out[k] = unmarshall(out[k] as Record<string, AttributeValue>);
  }
  return out;
}

/** The input of the one UpdateItemCommand sent for `update(...)`, unmarshalled. */
async function updateInput(changes: TaskChanges, condition: TaskCondition): Promise<Record<string, unknown>> {
  doc.on(UpdateItemCommand).resolves({ Attributes: item(record()) });
  await store.update('t_1', changes, condition);
  const calls = doc.commandCalls(UpdateItemCommand);
  expect(calls).toHaveLength(1);
  return readable(calls[0]?.args[0].input ?? {});
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => expect.fail(`expected a rejection, got ${JSON.stringify(v)}`),
    (err: unknown) => err,
  );
}

const conditionFailed = (item?: TaskRecord): ConditionalCheckFailedException =>
  new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: { httpStatusCode: 400 },
    ...(item === undefined ? {} : { Item: marshall(item, { removeUndefinedValues: true }) }),
  });

const serviceError = (name: string, status: number, message = `${name} happened`): DynamoDBServiceException =>
  new DynamoDBServiceException({
    name,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
    message,
  });

/** The exact Error `marshall` throws when it cannot marshal a value. */
function marshallError(value: unknown): Error {
  try {
    marshall({ v: value }, { removeUndefinedValues: true, convertClassInstanceToMap: false });
  } catch (err) {
    return err as Error;
  }
  throw new Error(`marshall accepted ${String(value)}`);
}

describe('Class: DynamoTaskStore', () => {
  describe('Method: create', () => {
    it('sends a PutItem conditioned on the key not existing, asking for the old item on failure', async () => {
      doc.on(PutItemCommand).resolves({});
      const r = record();
      await store.create(r);
      expect(doc.commandCalls(PutItemCommand).map((c) => readable(c.args[0].input))).toEqual([
        {
          TableName: TABLE,
          Item: r,
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': 'task_id' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      ]);
    });

    it('maps ConditionalCheckFailedException with the item to TaskAlreadyExistsError carrying it, unmarshalled, without a read', async () => {
      const existing = record({ status: 'succeeded', result: { n: 1 } });
      const cause = conditionFailed(existing);
      doc.on(PutItemCommand).rejects(cause);
      const err = await rejection(store.create(record()));
      expect(err).toBeInstanceOf(TaskAlreadyExistsError);
      expect(err).toMatchObject({ taskId: 't_1', cause });
      expect((err as TaskAlreadyExistsError).existing).toStrictEqual(existing);
      expect(doc.commandCalls(GetItemCommand)).toHaveLength(0);
    });

    it('reads the existing item (consistently) when the exception carries none (dynalite)', async () => {
      const existing = record({ status: 'queued' });
      doc
        .on(PutItemCommand)
        .rejects(conditionFailed())
        .on(GetItemCommand)
        .resolves({ Item: item(existing) });
      const err = await rejection(store.create(record()));
      expect(err).toBeInstanceOf(TaskAlreadyExistsError);
      expect((err as TaskAlreadyExistsError).existing).toStrictEqual(existing);
      expect(doc.commandCalls(GetItemCommand).map((c) => c.args[0].input)).toEqual([
        { TableName: TABLE, Key: { task_id: { S: 't_1' } }, ConsistentRead: true },
      ]);
    });

    it('gives existing undefined when that read finds nothing, and StoreUnavailableError when it fails', async () => {
      doc.on(PutItemCommand).rejects(conditionFailed()).on(GetItemCommand).resolves({});
      const gone = await rejection(store.create(record()));
      expect(gone).toBeInstanceOf(TaskAlreadyExistsError);
      expect((gone as TaskAlreadyExistsError).existing).toBeUndefined();
      doc.reset();
      doc
        .on(PutItemCommand)
        .rejects(conditionFailed())
        .on(GetItemCommand)
        .rejects(new ThrottlingException({ message: 'slow down', $metadata: {} }));
      await expect(store.create(record())).rejects.toBeInstanceOf(StoreUnavailableError);
    });
  });

  describe('Marshalling (by hand, as the document client did)', () => {
    it('writes numbers as N, strings as S, the payload as a map, and leaves undefined members out', async () => {
      doc.on(PutItemCommand).resolves({});
      await store.create(
        record({ last_error: undefined, payload: { a: 1, gone: undefined, list: [1, undefined, 'x'] } }),
      );
      const sent = doc.commandCalls(PutItemCommand)[0]?.args[0].input.Item ?? {};
      expect(sent.attempts).toEqual({ N: '1' });
      expect(sent.status).toEqual({ S: 'running' });
      expect(sent.payload).toEqual({ M: { a: { N: '1' }, list: { L: [{ N: '1' }, { S: 'x' }] } } });
      expect(sent).not.toHaveProperty('last_error');
    });

    it('drops undefined members of update values too', async () => {
      const input = await updateInput(
        { set: { result: { ok: true, none: undefined } as unknown as TaskRecord['result'] } },
        { status: ['running'] },
      );
      expect(input.ExpressionAttributeValues).toEqual({ ':v0': { ok: true }, ':v1': 'running' });
    });

    it('reads items back as plain values: numbers as numbers, maps and lists as objects and arrays', async () => {
      doc.on(GetItemCommand).resolves({
        Item: {
          task_id: { S: 't_1' },
          attempts: { N: '3' },
          lease_until: { N: '1900000000000' },
          payload: { M: { deep: { L: [{ M: { a: { N: '1.5' } } }, { NULL: true }, { BOOL: false }] } } },
        },
      });
      expect(await store.get('t_1')).toStrictEqual({
        task_id: 't_1',
        attempts: 3,
        lease_until: 1_900_000_000_000,
        payload: { deep: [{ a: 1.5 }, null, false] },
      });
    });

    it.each<[string, unknown]>([
      ['an unsafe integer', 2 ** 53],
      ['NaN', Number.NaN],
      ['a class instance', new Date(0)],
    ])('refuses %s with StoreRejectedError, sending nothing', async (_what, value) => {
      const created = await rejection(store.create(record({ payload: { v: value } })));
      expect(created).toBeInstanceOf(StoreRejectedError);
      expect((created as Error).message).toMatch(/^DynamoDB PutItem rejected: /);
      const updated = await rejection(store.update('t_1', { set: { result: { v: value } } }, { status: ['running'] }));
      expect(updated).toBeInstanceOf(StoreRejectedError);
      expect(doc.calls()).toHaveLength(0);
    });
  });

  describe('Method: get', () => {
    it('sends a strongly consistent GetItem by default, and returns the item', async () => {
      const r = record();
      doc.on(GetItemCommand).resolves({ Item: item(r) });
      expect(await store.get('t_1')).toStrictEqual(r);
      expect(doc.commandCalls(GetItemCommand)[0]?.args[0].input).toEqual({
        TableName: TABLE,
        Key: { task_id: { S: 't_1' } },
        ConsistentRead: true,
      });
    });

    it('sends ConsistentRead false for consistent: false, and true for consistent: true', async () => {
      doc.on(GetItemCommand).resolves({});
      await store.get('t_1', { consistent: false });
      await store.get('t_1', { consistent: true });
      expect(doc.commandCalls(GetItemCommand).map((c) => c.args[0].input.ConsistentRead)).toEqual([false, true]);
    });

    it('returns undefined for a missing item', async () => {
      doc.on(GetItemCommand).resolves({});
      expect(await store.get('t_missing')).toBeUndefined();
    });
  });

  describe('Method: update (the request)', () => {
    it('builds SET with placeholders for every name and value, conditioned on the item existing', async () => {
      const input = await updateInput(
        { set: { status: 'running', updated_at: 'U' } },
        { status: ['queued', 'retrying'] },
      );
      expect(input).toEqual({
        TableName: TABLE,
        Key: { task_id: 't_1' },
        UpdateExpression: 'SET #n0 = :v0, #n1 = :v1',
        ConditionExpression: 'attribute_exists(#n2) AND #n0 IN (:v2, :v3)',
        ExpressionAttributeNames: { '#n0': 'status', '#n1': 'updated_at', '#n2': 'task_id' },
        ExpressionAttributeValues: { ':v0': 'running', ':v1': 'U', ':v2': 'queued', ':v3': 'retrying' },
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    });

    it('builds ADD as if_not_exists(+0), APPEND as list_append(if_not_exists([])), then REMOVE', async () => {
      const audit = [{ action: 'redrive', at: 'A', by: 'ops' }];
      const input = await updateInput(
        { set: { updated_at: 'U' }, add: { attempts: 1, lease_token: 2 }, append: { audit }, remove: ['lease_until'] },
        { status: ['queued'] },
      );
      expect(input.UpdateExpression).toBe(
        'SET #n0 = :v0, #n1 = if_not_exists(#n1, :v1) + :v2, #n2 = if_not_exists(#n2, :v3) + :v4, #n3 = list_append(if_not_exists(#n3, :v5), :v6) REMOVE #n4',
      );
      expect(input.ConditionExpression).toBe('attribute_exists(#n5) AND #n6 IN (:v7)');
      expect(input.ExpressionAttributeNames).toEqual({
        '#n0': 'updated_at',
        '#n1': 'attempts',
        '#n2': 'lease_token',
        '#n3': 'audit',
        '#n4': 'lease_until',
        '#n5': 'task_id',
        '#n6': 'status',
      });
      expect(input.ExpressionAttributeValues).toEqual({
        ':v0': 'U',
        ':v1': 0,
        ':v2': 1,
        ':v3': 0,
        ':v4': 2,
        ':v5': [],
        ':v6': audit,
        ':v7': 'queued',
      });
    });

    it('skips undefined set values and task_id (the key), reusing one placeholder per attribute', async () => {
      const input = await updateInput(
        { set: { task_id: 'other', owner: undefined, status: 'queued' } as Partial<TaskRecord>, remove: ['outbox_pk'] },
        { status: ['running'], outboxPending: true },
      );
      expect(input.UpdateExpression).toBe('SET #n0 = :v0 REMOVE #n1');
      expect(input.ConditionExpression).toBe('attribute_exists(#n2) AND #n0 IN (:v1) AND attribute_exists(#n1)');
      expect(input.ExpressionAttributeNames).toEqual({ '#n0': 'status', '#n1': 'outbox_pk', '#n2': 'task_id' });
    });

    it('omits ExpressionAttributeValues when nothing needs one (DynamoDB rejects an empty map)', async () => {
      const input = await updateInput({ remove: ['outbox_pk', 'outbox_due'] }, { outboxPending: true });
      expect(input.UpdateExpression).toBe('REMOVE #n0, #n1');
      expect(input).not.toHaveProperty('ExpressionAttributeValues');
    });

    it('throws RangeError, sending nothing, for an update with no change (or only undefined / key changes)', async () => {
      for (const changes of [
        {},
        { set: { owner: undefined } },
        { set: { task_id: 'x' } as Partial<TaskRecord> },
        { remove: [] },
      ]) {
        await expect(store.update('t_1', changes, { status: ['queued'] })).rejects.toBeInstanceOf(RangeError);
      }
      expect(doc.calls()).toHaveLength(0);
    });

    it('returns the item as written (ReturnValues ALL_NEW)', async () => {
      const written = record({ status: 'succeeded' });
      doc.on(UpdateItemCommand).resolves({ Attributes: item(written) });
      expect(await store.update('t_1', { set: { status: 'succeeded' } }, { status: ['running'] })).toStrictEqual(
        written,
      );
    });
  });

  describe('Method: update (each condition kind)', () => {
    const changes = { set: { updated_at: 'U' } };
    // #n0 updated_at, :v0 'U', #n1 task_id, #n2 status; further names and values follow.
    it.each<[string, TaskCondition, string, Record<string, string>, Record<string, unknown>]>([
      ['status list', { status: ['running'] }, 'attribute_exists(#n1) AND #n2 IN (:v1)', {}, { ':v1': 'running' }],
      [
        'orLeaseExpiredBefore alone (no redundant parentheses)',
        { orLeaseExpiredBefore: 1000 },
        'attribute_exists(#n1) AND (#n2 = :v1 AND #n3 < :v2)',
        { '#n3': 'lease_until' },
        { ':v1': 'running', ':v2': 1000 },
      ],
      [
        'status OR orLeaseExpiredBefore',
        { status: ['queued', 'retrying'], orLeaseExpiredBefore: 1000 },
        'attribute_exists(#n1) AND (#n2 IN (:v1, :v2) OR (#n2 = :v3 AND #n3 < :v4))',
        { '#n3': 'lease_until' },
        { ':v1': 'queued', ':v2': 'retrying', ':v3': 'running', ':v4': 1000 },
      ],
      [
        'dispatchId',
        { status: ['running'], dispatchId: 'd_9' },
        'attribute_exists(#n1) AND #n2 IN (:v1) AND #n3 = :v2',
        { '#n3': 'dispatch_id' },
        { ':v1': 'running', ':v2': 'd_9' },
      ],
      [
        'leaseToken',
        { status: ['running'], leaseToken: 7 },
        'attribute_exists(#n1) AND #n2 IN (:v1) AND #n3 = :v2',
        { '#n3': 'lease_token' },
        { ':v1': 'running', ':v2': 7 },
      ],
      [
        'outboxPending true',
        { status: ['running'], outboxPending: true },
        'attribute_exists(#n1) AND #n2 IN (:v1) AND attribute_exists(#n3)',
        { '#n3': 'outbox_pk' },
        { ':v1': 'running' },
      ],
      [
        'outboxPending false',
        { status: ['running'], outboxPending: false },
        'attribute_exists(#n1) AND #n2 IN (:v1) AND attribute_not_exists(#n3)',
        { '#n3': 'outbox_pk' },
        { ':v1': 'running' },
      ],
      [
        'noCancelRequest',
        { status: ['running'], noCancelRequest: true },
        'attribute_exists(#n1) AND #n2 IN (:v1) AND attribute_not_exists(#n3)',
        { '#n3': 'cancel_requested' },
        { ':v1': 'running' },
      ],
      [
        'noCancelRequest false (no clause)',
        { status: ['running'], noCancelRequest: false },
        'attribute_exists(#n1) AND #n2 IN (:v1)',
        {},
        { ':v1': 'running' },
      ],
      [
        'every part at once',
        {
          status: ['running'],
          orLeaseExpiredBefore: 5,
          dispatchId: 'd',
          leaseToken: 3,
          outboxPending: false,
          noCancelRequest: true,
        },
        'attribute_exists(#n1) AND (#n2 IN (:v1) OR (#n2 = :v2 AND #n3 < :v3)) AND #n4 = :v4 AND #n5 = :v5 AND attribute_not_exists(#n6) AND attribute_not_exists(#n7)',
        {
          '#n3': 'lease_until',
          '#n4': 'dispatch_id',
          '#n5': 'lease_token',
          '#n6': 'outbox_pk',
          '#n7': 'cancel_requested',
        },
        { ':v1': 'running', ':v2': 'running', ':v3': 5, ':v4': 'd', ':v5': 3 },
      ],
    ])('%s', async (_kind, condition, expression, names, values) => {
      const input = await updateInput(changes, condition);
      expect(input.UpdateExpression).toBe('SET #n0 = :v0');
      expect(input.ConditionExpression).toBe(expression);
      expect(input.ExpressionAttributeNames).toEqual({
        '#n0': 'updated_at',
        '#n1': 'task_id',
        '#n2': 'status',
        ...names,
      });
      expect(input.ExpressionAttributeValues).toEqual({ ':v0': 'U', ...values });
    });

    /** DynamoDB rejects a request defining a placeholder no expression uses, or using an undefined one. */
    function expectPlaceholdersConsistent(input: Record<string, unknown>): void {
      const text = `${String(input.UpdateExpression)} ${String(input.ConditionExpression)}`;
      const used = (re: RegExp) => [...new Set(text.match(re) ?? [])].sort();
      expect(Object.keys((input.ExpressionAttributeNames ?? {}) as object).sort()).toEqual(used(/#n\d+/g));
      const values = (input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
      expect(
        Object.keys(values)
          .filter((k) => values[k] !== undefined)
          .sort(),
      ).toEqual(used(/:v\d+/g));
    }

    it.each<[string, TaskCondition]>([
      ['status', { status: ['running'] }],
      ['orLeaseExpiredBefore', { orLeaseExpiredBefore: 1 }],
      [
        'every part',
        {
          status: ['queued'],
          orLeaseExpiredBefore: 1,
          dispatchId: 'd',
          leaseToken: 1,
          outboxPending: true,
          noCancelRequest: true,
        },
      ],
    ])('defines exactly the placeholders its expressions use: %s', async (_kind, condition) => {
      expectPlaceholdersConsistent(await updateInput(changes, condition));
    });

    // A former adapter bug: conditionExpression() registers `#status` before
    // knowing whether a status part exists, so a condition without one (and changes that do not
    // write status) defines an unused name, which DynamoDB rejects with a ValidationException.
    it.each<[string, TaskCondition]>([
      ['no condition part', {}],
      ['dispatchId alone', { dispatchId: 'd' }],
      ['leaseToken alone', { leaseToken: 1 }],
      ['outboxPending alone', { outboxPending: false }],
      ['noCancelRequest alone', { noCancelRequest: true }],
      ['an empty status list', { status: [] }],
    ])('defines exactly the placeholders its expressions use: %s', async (_kind, condition) => {
      expectPlaceholdersConsistent(await updateInput(changes, condition));
    });

    // Known adapter bug: an undefined add/append amount becomes a placeholder whose value the
    // marshaller drops (removeUndefinedValues): "An expression attribute value used in expression is not defined".
    it.each<[string, TaskChanges]>([
      ['add', { set: { updated_at: 'U' }, add: { crashes: undefined } }],
      ['append', { set: { updated_at: 'U' }, append: { audit: undefined } }],
    ])('skips an undefined %s amount as it skips an undefined set value', async (_kind, c) => {
      expectPlaceholdersConsistent(await updateInput(c, { status: ['running'] }));
    });
  });

  describe('Method: update (failures)', () => {
    it('maps ConditionalCheckFailedException with an item to ConditionFailedError whose current is that item, unmarshalled', async () => {
      const current = record({ status: 'succeeded', payload: { deep: [{ a: 1 }, null, 'x'] }, cancel_requested: true });
      const cause = conditionFailed(current);
      doc.on(UpdateItemCommand).rejects(cause);
      const err = await rejection(store.update('t_1', { set: { status: 'running' } }, { status: ['queued'] }));
      expect(err).toBeInstanceOf(ConditionFailedError);
      expect(err).toMatchObject({ taskId: 't_1', cause, message: 'condition failed for task t_1' });
      expect((err as ConditionFailedError).current).toStrictEqual(current);
    });

    it('maps ConditionalCheckFailedException without an item (missing task, or dynalite) to current undefined, without a read', async () => {
      doc.on(UpdateItemCommand).rejects(conditionFailed());
      const err = await rejection(store.update('t_1', { set: { status: 'running' } }, { status: ['queued'] }));
      expect(err).toBeInstanceOf(ConditionFailedError);
      expect((err as ConditionFailedError).current).toBeUndefined();
      expect(doc.commandCalls(GetItemCommand)).toHaveLength(0);
    });
  });

  describe('Method: listOutboxDue', () => {
    it('queries the outbox GSI for the partition, due at or before dueBy, oldest first, limited', async () => {
      const items = [
        record({ task_id: 'a', outbox_pk: 'queue#high', outbox_due: 1 }),
        record({ task_id: 'b', outbox_pk: 'queue#high', outbox_due: 2 }),
      ];
      doc.on(QueryCommand).resolves({ Items: items.map(item) });
      // Keys only, whatever the index projects.
      expect(await store.listOutboxDue('queue#high', 1234, 25)).toStrictEqual(
        items.map((i) => ({ task_id: i.task_id, outbox_pk: i.outbox_pk, outbox_due: i.outbox_due })),
      );
      expect(readable(doc.commandCalls(QueryCommand)[0]?.args[0].input ?? {})).toEqual({
        TableName: TABLE,
        IndexName: 'outbox',
        KeyConditionExpression: '#pk = :pk AND #due <= :due',
        ExpressionAttributeNames: { '#pk': 'outbox_pk', '#due': 'outbox_due' },
        ExpressionAttributeValues: { ':pk': 'queue#high', ':due': 1234 },
        Limit: 25,
        ScanIndexForward: true,
      });
    });

    it('returns [] when the query gives no Items', async () => {
      doc.on(QueryCommand).resolves({});
      expect(await store.listOutboxDue('dlq#low', 1, 10)).toEqual([]);
    });
  });

  describe('Errors: mapping of everything but a failed condition', () => {
    type Op = 'create' | 'get' | 'update' | 'listOutboxDue';
    const OPS: [
      Op,
      string,
      typeof PutItemCommand | typeof GetItemCommand | typeof UpdateItemCommand | typeof QueryCommand,
      string | undefined,
    ][] = [
      ['create', 'PutItem', PutItemCommand, 't_1'],
      ['get', 'GetItem', GetItemCommand, 't_1'],
      ['update', 'UpdateItem', UpdateItemCommand, 't_1'],
      ['listOutboxDue', 'Query', QueryCommand, undefined],
    ];
    const call = (op: Op): Promise<unknown> =>
      op === 'create'
        ? store.create(record())
        : op === 'get'
          ? store.get('t_1')
          : op === 'update'
            ? store.update('t_1', { set: { status: 'queued' } }, { status: ['running'] })
            : store.listOutboxDue('queue#normal', 1, 10);

    const rejected: [string, () => unknown][] = [
      [
        'ValidationException',
        () => serviceError('ValidationException', 400, 'One or more parameter values were invalid'),
      ],
      [
        'SerializationException',
        () => serviceError('SerializationException', 400, 'Start of structure or map found where not expected'),
      ],
      [
        'ItemCollectionSizeLimitExceededException',
        () =>
          new ItemCollectionSizeLimitExceededException({
            message: 'collection too large',
            $metadata: { httpStatusCode: 400 },
          }),
      ],
      ['a marshalling error: an unsafe integer', () => marshallError(2 ** 53)],
      ['a marshalling error: NaN', () => marshallError(Number.NaN)],
      ['a marshalling error: a class instance', () => marshallError(new Date(0))],
    ];
    const unavailable: [string, () => unknown][] = [
      [
        'ThrottlingException',
        () => new ThrottlingException({ message: 'Rate exceeded', $metadata: { httpStatusCode: 400 } }),
      ],
      [
        'ProvisionedThroughputExceededException',
        () => new ProvisionedThroughputExceededException({ message: 'throughput', $metadata: { httpStatusCode: 400 } }),
      ],
      [
        'RequestLimitExceeded',
        () => new RequestLimitExceeded({ message: 'account limit', $metadata: { httpStatusCode: 400 } }),
      ],
      [
        'InternalServerError (500)',
        () => new InternalServerError({ message: 'Internal server error', $metadata: { httpStatusCode: 500 } }),
      ],
      ['a 503 ServiceUnavailable', () => serviceError('ServiceUnavailable', 503)],
      ['TimeoutError', () => Object.assign(new Error('Connection timed out after 1000 ms'), { name: 'TimeoutError' })],
      ['a network error (ECONNRESET)', () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
      [
        'ResourceNotFoundException (no table)',
        () =>
          new ResourceNotFoundException({
            message: 'Requested resource not found',
            $metadata: { httpStatusCode: 400 },
          }),
      ],
      [
        'an error with HTTP metadata whose message merely mentions marshall',
        () => Object.assign(new Error('cannot unmarshall response'), { $metadata: {} }),
      ],
      ['a thrown non-Error', () => 'boom'],
    ];

    describe.each(OPS)('Method: %s', (op, operation, Command, taskId) => {
      it.each(rejected)(
        '%s → StoreRejectedError (permanent), naming the operation and the cause',
        async (_what, make) => {
          const cause = make();
          doc.on(Command as typeof GetItemCommand).callsFake(() => Promise.reject(cause));
          const err = await rejection(call(op));
          expect(err).toBeInstanceOf(StoreRejectedError);
          expect(err).toMatchObject({ retryable: false, taskId, cause });
          expect((err as Error).message).toMatch(new RegExp(`^DynamoDB ${operation} rejected: \\w+: `));
          expect((err as Error).message).toContain((cause as Error).message);
        },
      );

      it.each(unavailable)('%s → StoreUnavailableError (retryable), naming the operation', async (_what, make) => {
        const cause = make();
        // callsFake, not rejects(): rejects() would wrap a non-Error in an Error.
        doc.on(Command as typeof GetItemCommand).callsFake(() => Promise.reject(cause));
        const err = await rejection(call(op));
        expect(err).toBeInstanceOf(StoreUnavailableError);
        expect(err).toMatchObject({ retryable: true, taskId, cause });
        const name = cause instanceof Error ? cause.name : 'Error';
        expect((err as Error).message).toBe(`DynamoDB ${operation} failed: ${name}`);
      });
    });
  });
});
