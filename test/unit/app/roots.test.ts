/**
 * The Lambda functions' composition roots (`shared/service/app/*.ts`): each wires its service on the
 * DynamoDB and SQS adapters (mocked SDK clients here: aws-sdk-client-mock), and each function's
 * bundle carries only its own code (esbuild, as `npm run bench:bundle` and the stack bundle it).
 */
import {
  type AttributeValue,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2, SQSRecord } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import * as z from 'zod';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiFunction } from '../../../shared/service/app/api.js';
import { createConsumerFunction } from '../../../shared/service/app/consumer.js';
import { queueNameOf, queueNamesOf } from '../../../shared/service/app/on-aws.js';
import { createSweeperFunction } from '../../../shared/service/app/sweeper.js';
import { createKajOnAws } from '../../../shared/service/all-in-one.js';
import { MissingEnvironmentError } from '../../../shared/config/errors.js';
import { FUNCTION_ENTRIES } from '../../../shared/config/resources.js';
import { type FunctionConfig, runtimeSettings } from '../../../shared/config/settings.js';
import { MissingLimiterError } from '../../../shared/service/consumer/errors.js';
import { defineLimits, defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { bundleInputs } from '../../support/bundle.js';

const url = (name: string) => `https://sqs.eu-west-1.amazonaws.com/123456789012/${name}`;
const CONFIG: FunctionConfig = {
  tableName: 'kaj-unit-tasks',
  queueUrls: { high: url('kaj-high'), normal: url('kaj-normal'), low: url('kaj-low') },
  deadLetterQueueUrls: { high: url('kaj-high-dlq'), normal: url('kaj-normal-dlq'), low: url('kaj-low-dlq') },
  settings: runtimeSettings(),
  idSecret: 'unit-secret',
};

const ddb = mockClient(DynamoDBClient);
const sqs = mockClient(SQSClient);
const dynamodb = new DynamoDBClient({ region: 'eu-west-1', credentials: { accessKeyId: 'a', secretAccessKey: 's' } });
const sqsClient = new SQSClient({ region: 'eu-west-1', credentials: { accessKeyId: 'a', secretAccessKey: 's' } });
const clients = { dynamodb, sqs: sqsClient };

const ran: unknown[] = [];
const registry = new TaskRegistry([
  defineTask({
    type: 'probe',
    schema: z.object({ n: z.number() }),
    handler: async (payload) => {
      ran.push(payload);
      return { ok: true };
    },
  }),
]);

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  ran.length = 0;
});
afterAll(() => {
  ddb.restore();
  sqs.restore();
  dynamodb.destroy();
  sqsClient.destroy();
});

function post(body: unknown): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/api/v1/tasks',
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    requestContext: { http: { method: 'POST', path: '/api/v1/tasks' } } as APIGatewayProxyEventV2['requestContext'],
    body: JSON.stringify(body),
    isBase64Encoded: false,
  };
}

/** The record the API function wrote, the message it sent: what the consumer gets. */
async function submitted(
  reg = registry,
  type = 'probe',
): Promise<{ item: Record<string, AttributeValue>; record: SQSRecord }> {
  ddb.on(PutItemCommand).resolves({});
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
  const api = createApiFunction(CONFIG, reg, clients);
  const reply = await api.handleHttp(post({ type, payload: { n: 7 } }));
  expect(reply.statusCode).toBe(202);
  const item = ddb.commandCalls(PutItemCommand)[0]?.args[0].input.Item ?? {};
  const message = sqs.commandCalls(SendMessageCommand)[0]?.args[0].input;
  return {
    item,
    record: {
      messageId: 'm-1',
      receiptHandle: 'rh-1',
      body: message?.MessageBody ?? '',
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(Date.now()),
        SenderId: 'x',
        ApproximateFirstReceiveTimestamp: String(Date.now()),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:eu-west-1:123456789012:${queueNameOf(message?.QueueUrl ?? '')}`,
      awsRegion: 'eu-west-1',
    },
  };
}

describe('Module: composition roots', () => {
  describe('Function: createApiFunction', () => {
    it('writes the task to the table and its message to the priority queue, answering 202', async () => {
      await submitted();
      expect(ddb.commandCalls(PutItemCommand)[0]?.args[0].input.TableName).toBe(CONFIG.tableName);
      expect(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.QueueUrl).toBe(CONFIG.queueUrls.normal);
    });

    it('refuses to start without an id secret (MissingEnvironmentError naming KAJ_ID_SECRET)', () => {
      const { idSecret: _none, ...noSecret } = CONFIG;
      expect(() => createApiFunction(noSecret, registry, clients)).toThrow(MissingEnvironmentError);
      expect(() => createApiFunction(noSecret, registry, clients)).toThrow(/KAJ_ID_SECRET/);
    });
  });

  describe('Function: createConsumerFunction', () => {
    it('runs the task a message stands for and records its outcome; no record is left for redelivery', async () => {
      const { item, record } = await submitted();
      ddb.on(GetItemCommand).resolves({ Item: item });
      ddb.on(UpdateItemCommand).callsFake(async () => ({ Attributes: { ...item, status: { S: 'succeeded' } } }));
      const consumer = createConsumerFunction(CONFIG, registry, clients);
      const reply = await consumer.processBatch({ Records: [record] }, { getRemainingTimeInMillis: () => 900_000 });
      expect(reply.batchItemFailures).toEqual([]);
      expect(ran).toEqual([{ n: 7 }]);
      expect(ddb.commandCalls(UpdateItemCommand).length).toBeGreaterThan(0);
    });
  });

  describe('Function: createConsumerFunction with limits', () => {
    const limited = new TaskRegistry(
      [
        defineTask({
          type: 'limited',
          schema: z.object({ n: z.number() }),
          uses: ['pool'],
          handler: async (payload) => {
            ran.push(payload);
            return { ok: true };
          },
        }),
      ],
      { limits: defineLimits({ pool: { concurrency: 2 } }) },
    );

    it('refuses to start when a type uses a limit and no limits table is configured', () => {
      expect(() => createConsumerFunction(CONFIG, limited, clients)).toThrow(MissingLimiterError);
    });

    it('enforces the limits on the limits table the stack names (KAJ_LIMITS_TABLE_NAME): a slot taken, then given back', async () => {
      const { item, record } = await submitted(limited, 'limited');
      ddb.on(GetItemCommand).resolves({ Item: item });
      ddb
        .on(UpdateItemCommand)
        .callsFake(async (input: { TableName?: string }) =>
          input.TableName === 'kaj-unit-limits' ? {} : { Attributes: { ...item, status: { S: 'succeeded' } } },
        );
      const consumer = createConsumerFunction({ ...CONFIG, limitsTableName: 'kaj-unit-limits' }, limited, clients);
      expect(consumer.limiter).toBeDefined();
      const reply = await consumer.processBatch({ Records: [record] }, { getRemainingTimeInMillis: () => 900_000 });
      expect(reply.batchItemFailures).toEqual([]);
      expect(ran).toEqual([{ n: 7 }]);
      const onLimits = ddb
        .commandCalls(UpdateItemCommand)
        .map((c) => c.args[0].input)
        .filter((i) => i.TableName === 'kaj-unit-limits');
      expect(onLimits.map((i) => i.UpdateExpression?.split(' ')[0])).toEqual(['SET', 'REMOVE']);
      expect(onLimits.map((i) => i.Key?.pk?.S)).toEqual(['c#pool', 'c#pool']);
    });
  });

  describe('The history store of workflow runs (KAJ_HISTORY_TABLE_NAME)', () => {
    const HISTORY = 'kaj-unit-history';
    const withHistory = { ...CONFIG, historyTableName: HISTORY };

    it('each root that runs or shows workflows builds it on the table the stack names: the consumer, the API, the all-in-one root', async () => {
      ddb.on(QueryCommand).resolves({
        Items: [
          {
            run_id: { S: 'r1' },
            key: { S: 'step#a' },
            kind: { S: 'step' },
            at: { N: '1' },
            lease_token: { N: '1' },
            value_json: { S: '{"ok":true}' },
          },
        ],
      });
      const stores = [
        createConsumerFunction(withHistory, registry, clients).history,
        createApiFunction(withHistory, registry, clients).history,
        createKajOnAws(withHistory, registry, clients).history,
      ];
      for (const history of stores) {
        expect(history).toBeDefined();
        expect(await history?.read('r1')).toEqual([
          { run_id: 'r1', key: 'step#a', kind: 'step', at: 1, lease_token: 1, value: { ok: true } },
        ]);
      }
      const queries = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
      expect(queries).toHaveLength(3);
      for (const q of queries) expect(q).toMatchObject({ TableName: HISTORY, ConsistentRead: true });
    });

    it('none without a history table', () => {
      expect(createConsumerFunction(CONFIG, registry, clients)).not.toHaveProperty('history');
      expect(createApiFunction(CONFIG, registry, clients)).not.toHaveProperty('history');
      expect(createKajOnAws(CONFIG, registry, clients)).not.toHaveProperty('history');
    });
  });

  describe('Function: createSweeperFunction', () => {
    it('queries the outbox index and reports nothing to do on an empty one', async () => {
      ddb.on(QueryCommand).resolves({ Items: [] });
      const sweeper = createSweeperFunction(CONFIG, clients);
      expect(await sweeper.sweep(10_000)).toMatchObject({ sent: 0, failed: 0 });
      const queries = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
      expect(queries.length).toBeGreaterThan(0);
      for (const q of queries) expect(q).toMatchObject({ TableName: CONFIG.tableName, IndexName: 'outbox' });
    });
  });

  describe('Function: queueNamesOf', () => {
    it('names each priority’s queue from its URL (what the consumer matches event sources against)', () => {
      expect(queueNamesOf(CONFIG.queueUrls)).toEqual({ high: 'kaj-high', normal: 'kaj-normal', low: 'kaj-low' });
      expect(queueNameOf(`${CONFIG.queueUrls.low}/`)).toBe('kaj-low');
      expect(() => queueNameOf('///')).toThrow(RangeError);
    });
  });

  describe('Bundles: each function carries its own code only', () => {
    /** The repository files in a function's bundle. */
    const inputs = bundleInputs;
    const NOT_IN: Record<keyof typeof FUNCTION_ENTRIES, RegExp[]> = {
      api: [/^shared\/service\/consumer\//, /^shared\/service\/sweeper\//],
      // The consumer carries the submitter: a workflow run creates its children (`wf.run`). Of the
      // scheduler it carries the cron arithmetic only: a pipeline (tasks/) names its runs by the
      // logical dates of its cron (`shared/schedule/timing.ts`).
      consumer: [/^shared\/service\/api\//, /^shared\/service\/sweeper\//, /^shared\/schedule\/(?!timing\.ts$)/],
      sweeper: [
        /^shared\/service\/api\//,
        /^shared\/service\/consumer\//,
        /^shared\/task\/submit\.ts$/,
        /^tasks\//,
        /^shared\/schedule\//,
      ],
      scheduler: [/^shared\/service\/api\//, /^shared\/service\/consumer\//, /^shared\/service\/sweeper\//],
    };

    it.each(Object.keys(FUNCTION_ENTRIES) as (keyof typeof FUNCTION_ENTRIES)[])(
      '%s: its root, none of the other functions’ code, no all-in-one root, no document client',
      async (name) => {
        const files = await inputs(FUNCTION_ENTRIES[name]);
        expect(files).toContain(`shared/service/app/${name}.ts`);
        for (const pattern of [
          ...NOT_IN[name],
          /^shared\/service\/all-in-one\.ts$/,
          /node_modules\/@aws-sdk\/lib-dynamodb\//,
        ]) {
          expect(files.filter((f) => pattern.test(f))).toEqual([]);
        }
      },
      60_000,
    );
  });
});
