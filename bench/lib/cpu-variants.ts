/**
 * The wirings `bench/cpu.ts` compares, in the order it prints them:
 * - `floor:kaj-alone`: Kaj without the SDK and the network, on the contract-tested in-memory fakes
 *   of testing/;
 * - `floor:network-alone`: the bare HTTP exchanges, without Kaj and the SDK;
 * - `after`: what is deployed: each function's own root with its tuned clients
 *   (shared/aws/clients.ts), built as on Lambda.
 * What `after` costs beyond the two floors' sum is the AWS SDK's own work per request. The first
 * version's wiring, and the client tunings added one at a time, are measured in docs/measured.md
 * ("Speed").
 *
 * Each builds the API function's and the consumer function's entry points from a `FunctionConfig`,
 * a registry and the observability of the run, with SDK clients configured from the environment
 * (the instant endpoint).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import type { APIGatewayProxyEventV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { HttpResult } from '../../shared/service/api/http.js';
import { createKaj } from '../../shared/service/all-in-one.js';
import { createApiFunction } from '../../shared/service/app/api.js';
import { createConsumerFunction } from '../../shared/service/app/consumer.js';
import { queueNamesOf } from '../../shared/service/app/on-aws.js';
import { PRIORITIES, type Priority } from '../../shared/config/resources.js';
import type { FunctionConfig } from '../../shared/config/settings.js';
import type { InvocationContext } from '../../shared/service/consumer/consumer.js';
import type { Logger, Metrics } from '../../shared/runtime/logger.js';
import type { TaskRegistry } from '../../shared/task/define.js';
import { MemoryTaskQueue } from '../../testing/memory-task-queue.js';
import { MemoryTaskStore } from '../../testing/memory-task-store.js';
import { httpCall, type SentMessage } from './instant-endpoint.js';

export interface BenchFunctions {
  api(event: APIGatewayProxyEventV2): Promise<HttpResult>;
  consumer(event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse>;
  /** The messages the submits sent, when they did not go to the endpoint. */
  messages?(): SentMessage[];
  close?(): Promise<void> | void;
}

export type Observe = { logger?: Logger; metrics?: Metrics };

type Variant = (config: FunctionConfig, registry: TaskRegistry, observe: Observe) => Promise<BenchFunctions>;

/**
 * Kaj alone: the all-in-one root on the in-memory fakes the unit tests use (contract-tested as
 * DynamoDB and SQS are). No SDK, no network.
 */
const kajAlone: Variant = async (config, registry, observe) => {
  const queue = new MemoryTaskQueue();
  const kaj = createKaj({
    ...observe,
    store: new MemoryTaskStore(),
    queue,
    registry,
    settings: config.settings,
    queueNames: queueNamesOf(config.queueUrls),
    ...(config.idSecret === undefined ? {} : { idSecret: config.idSecret }),
    defaultOwner: 'anonymous',
  });
  return {
    api: (e) => kaj.handleHttp(e),
    consumer: (e, c) => kaj.processBatch(e, c),
    messages: () => drain(queue, config.queueUrls),
  };
};

/** Receives and deletes every message on the fake's queues, as the endpoint would hand them out. */
function drain(queue: MemoryTaskQueue, urls: Readonly<Record<Priority, string>>): SentMessage[] {
  return PRIORITIES.flatMap((p) =>
    queue.receive(p, { max: Number.POSITIVE_INFINITY }).map((m) => {
      queue.deleteMessage(p, m.receiptHandle);
      const attributes = Object.entries(m.attributes).map(([k, a]) => [
        k,
        { DataType: a.dataType, StringValue: a.value },
      ]);
      return {
        queueUrl: urls[p],
        messageId: randomUUID(),
        body: m.body,
        attributes: Object.fromEntries(attributes),
      };
    }),
  );
}

/**
 * The network alone: per task, the same two exchanges as the real wiring (submit: PutItem and
 * SendMessage; consume: GetItem and UpdateItem, ten records at a time) as bare HTTP/1.1
 * keep-alive POSTs of similar size to the instant endpoint: what the network part of the AWS
 * calls costs this process, without signing, the SDK's (de)serialization or its middleware. No Kaj.
 */
const networkAlone: Variant = async (config) => {
  const endpoint = `${new URL(config.queueUrls.normal).origin}/`;
  const agent = new Agent({ keepAlive: true, maxSockets: 50 });
  const call = async (target: string, body: unknown): Promise<unknown> => {
    const payload = JSON.stringify(body);
    const headers = {
      'content-type': 'application/x-amz-json-1.0',
      'content-length': Buffer.byteLength(payload),
      'x-amz-target': target,
    };
    return JSON.parse(await httpCall(endpoint, payload, { agent, headers }));
  };
  const item = (id: string) => ({
    task_id: { S: id },
    type: { S: 'noop' },
    status: { S: 'queued' },
    payload: { M: { n: { N: '1' } } },
    attempts: { N: '0' },
    max_attempts: { N: '5' },
    timeout_seconds: { N: '60' },
    run_at: { S: new Date().toISOString() },
    created_at: { S: new Date().toISOString() },
    updated_at: { S: new Date().toISOString() },
    history: { L: [] },
    fingerprint: { S: 'f'.repeat(64) },
    lease_token: { N: '0' },
    dispatch_id: { S: `d_${randomUUID()}` },
    owner: { S: 'arn:aws:sts::000000000000:assumed-role/producer' },
    outbox_pk: { S: 'queue#normal#0' },
    outbox_due: { N: String(Date.now()) },
  });
  return {
    api: async () => {
      const id = `t_${randomUUID().replaceAll('-', '')}`;
      await call('DynamoDB_20120810.PutItem', {
        TableName: config.tableName,
        Item: item(id),
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'task_id' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
      await call('AmazonSQS.SendMessage', {
        QueueUrl: config.queueUrls.normal,
        MessageBody: JSON.stringify({ task_id: id, dispatch_id: 'd_1', timeout_seconds: 60 }),
        DelaySeconds: 0,
        MessageAttributes: { 'kaj-task-id': { DataType: 'String', StringValue: id } },
      });
      return { statusCode: 202, headers: {}, body: JSON.stringify({ task_id: id }) };
    },
    consumer: async (event) => {
      await Promise.all(
        event.Records.map(async (r) => {
          const { task_id } = JSON.parse(r.body) as { task_id: string };
          await call('DynamoDB_20120810.GetItem', {
            TableName: config.tableName,
            Key: { task_id: { S: task_id } },
            ConsistentRead: true,
          });
          await call('DynamoDB_20120810.UpdateItem', {
            TableName: config.tableName,
            Key: { task_id: { S: task_id } },
            UpdateExpression: 'SET #n0 = :v0, #n1 = :v1, #n2 = :v2 REMOVE #n3, #n4',
            ConditionExpression: 'attribute_exists(#n5) AND #n0 IN (:v3) AND #n6 = :v4',
            ExpressionAttributeNames: {
              '#n0': 'status',
              '#n1': 'updated_at',
              '#n2': 'finished_at',
              '#n3': 'outbox_pk',
              '#n4': 'outbox_due',
              '#n5': 'task_id',
              '#n6': 'dispatch_id',
            },
            ExpressionAttributeValues: {
              ':v0': { S: 'succeeded' },
              ':v1': { S: new Date().toISOString() },
              ':v2': { S: new Date().toISOString() },
              ':v3': { S: 'queued' },
              ':v4': { S: 'd_1' },
            },
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          });
        }),
      );
      return { batchItemFailures: [] };
    },
    close: () => agent.destroy(),
  };
};

/** Today's wiring: each function's own root, its clients built as on Lambda (tuned, from the environment). */
const after: Variant = async (config, registry, observe) => {
  const api = createApiFunction(config, registry, observe);
  const consumer = createConsumerFunction(config, registry, observe);
  return { api: (e) => api.handleHttp(e), consumer: (e, c) => consumer.processBatch(e, c) };
};

export const VARIANTS = {
  'floor:kaj-alone': kajAlone,
  'floor:network-alone': networkAlone,
  after,
} satisfies Record<string, Variant>;
export type VariantName = keyof typeof VARIANTS;
