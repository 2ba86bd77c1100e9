import { DeleteTableCommand, ResourceNotFoundException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DEFAULTS, PRIORITIES, TABLE_SCHEMA, resourceNames, type Priority } from '../shared/config/resources.js';
import { prefixedResources, queueArnOf, type PrefixedResources, type QueueRef } from '../shared/aws/wiring.js';
import { type LaneDeclarations, laneQueueNames } from '../shared/config/lanes.js';
import { createHistoryTable, createKeyedTable, createLimitsTable, createSchedulesTable } from './schedules-table.js';

/** The queues and table of one deployment, as created here. */
export type LocalResources = PrefixedResources;

/**
 * Creates (or finds) Kaj's queues and tables (tasks, schedules, limits, history) on an SQS/DynamoDB
 * endpoint, from the same definitions the CDK stack uses (`shared/config/resources.ts`). Idempotent.
 */
export async function ensureResources(
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient },
  prefix: string,
  settings: { maxReceiveCount?: number; visibilityTimeoutSeconds?: number; lanes?: LaneDeclarations } = {},
): Promise<LocalResources> {
  const names = resourceNames(prefix);
  const queues = {} as Record<Priority, QueueRef>;
  const deadLetterQueues = {} as Record<Priority, QueueRef>;
  const lanes: Record<string, Record<Priority, QueueRef>> = {};
  for (const p of PRIORITIES) {
    const dlqUrl = await createQueue(clients.sqs, names.deadLetterQueues[p], {
      MessageRetentionPeriod: String(DEFAULTS.dlqRetentionSeconds),
    });
    const dlqArn = await queueArnOf(clients.sqs, dlqUrl);
    // Every lane's queue of this priority dead-letters into the one DLQ (shared/config/lanes.ts).
    const mainQueue = async (name: string) => {
      const url = await createQueue(clients.sqs, name, {
        VisibilityTimeout: String(settings.visibilityTimeoutSeconds ?? DEFAULTS.queueVisibilityTimeoutSeconds),
        MessageRetentionPeriod: String(DEFAULTS.queueRetentionSeconds),
        ReceiveMessageWaitTimeSeconds: '20',
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: settings.maxReceiveCount ?? DEFAULTS.maxReceiveCount,
        }),
      });
      return { url, arn: await queueArnOf(clients.sqs, url) };
    };
    queues[p] = await mainQueue(names.queues[p]);
    deadLetterQueues[p] = { url: dlqUrl, arn: dlqArn };
    for (const lane of Object.keys(settings.lanes ?? {})) {
      (lanes[lane] ??= {} as Record<Priority, QueueRef>)[p] = await mainQueue(laneQueueNames(prefix, lane)[p]);
    }
  }
  await createTable(clients.dynamodb, names.table);
  await createSchedulesTable(clients.dynamodb, names.schedules);
  await createLimitsTable(clients.dynamodb, names.limits);
  // Made whatever the task types: a table costs nothing here, and a workflow added later finds it.
  await createHistoryTable(clients.dynamodb, names.history);
  return prefixedResources(prefix, { queues, deadLetterQueues, lanes }, names.limits, names.history);
}

/** Deletes what `ensureResources` made (tests clean up after themselves; `--reset`). */
export async function deleteResources(
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient },
  prefix: string,
  lanes: LaneDeclarations = {},
): Promise<void> {
  const names = resourceNames(prefix);
  for (const p of PRIORITIES) {
    const laneQueues = Object.keys(lanes).map((lane) => laneQueueNames(prefix, lane)[p]);
    for (const name of [names.queues[p], names.deadLetterQueues[p], ...laneQueues]) {
      try {
        const { QueueUrl } = await clients.sqs.send(new GetQueueUrlCommand({ QueueName: name }));
        await clients.sqs.send(new DeleteQueueCommand({ QueueUrl }));
      } catch (err) {
        if (!isMissingQueue(err)) throw err;
      }
    }
  }
  for (const table of [names.table, names.schedules, names.limits, names.history]) {
    try {
      await clients.dynamodb.send(new DeleteTableCommand({ TableName: table }));
    } catch (err) {
      if (!(err instanceof ResourceNotFoundException)) throw err;
    }
  }
}

async function createQueue(sqs: SQSClient, name: string, attributes: Record<string, string>): Promise<string> {
  const out = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!out.QueueUrl) throw new Error(`CreateQueue ${name} returned no URL`);
  return out.QueueUrl;
}

async function createTable(dynamodb: DynamoDBClient, tableName: string): Promise<void> {
  await createKeyedTable(dynamodb, tableName, {
    partitionKey: TABLE_SCHEMA.partitionKey,
    index: TABLE_SCHEMA.outboxIndex,
    moreIndexes: [{ ...TABLE_SCHEMA.listIndex, sortKeyType: 'S' }],
  });
}

function isMissingQueue(err: unknown): boolean {
  return err instanceof Error && /NonExistentQueue|QueueDoesNotExist/.test(err.name);
}
