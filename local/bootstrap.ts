import { DeleteTableCommand, ResourceNotFoundException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DEFAULTS, PRIORITIES, TABLE_SCHEMA, resourceNames, type Priority } from '../shared/config/resources.js';
import { queueArnOf, type PrefixedResources } from '../shared/config/wiring.js';
import { createKeyedTable, createSchedulesTable } from './schedules-table.js';

/** The queues and table of one deployment, as created here. */
export type LocalResources = PrefixedResources;

/**
 * Creates (or finds) Kaj's queues and table on an SQS/DynamoDB endpoint, from the same
 * definitions the CDK stack uses (`shared/config/resources.ts`). Idempotent.
 */
export async function ensureResources(
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient },
  prefix: string,
  settings: { maxReceiveCount?: number; visibilityTimeoutSeconds?: number } = {},
): Promise<LocalResources> {
  const names = resourceNames(prefix);
  const queueUrls = {} as Record<Priority, string>;
  const queueArns = {} as Record<Priority, string>;
  const deadLetterQueueUrls = {} as Record<Priority, string>;
  const deadLetterQueueArns = {} as Record<Priority, string>;
  for (const p of PRIORITIES) {
    const dlqUrl = await createQueue(clients.sqs, names.deadLetterQueues[p], {
      MessageRetentionPeriod: String(DEFAULTS.dlqRetentionSeconds),
    });
    const dlqArn = await queueArnOf(clients.sqs, dlqUrl);
    const url = await createQueue(clients.sqs, names.queues[p], {
      VisibilityTimeout: String(settings.visibilityTimeoutSeconds ?? DEFAULTS.queueVisibilityTimeoutSeconds),
      MessageRetentionPeriod: String(DEFAULTS.queueRetentionSeconds),
      ReceiveMessageWaitTimeSeconds: '20',
      RedrivePolicy: JSON.stringify({
        deadLetterTargetArn: dlqArn,
        maxReceiveCount: settings.maxReceiveCount ?? DEFAULTS.maxReceiveCount,
      }),
    });
    queueUrls[p] = url;
    queueArns[p] = await queueArnOf(clients.sqs, url);
    deadLetterQueueUrls[p] = dlqUrl;
    deadLetterQueueArns[p] = dlqArn;
  }
  await createTable(clients.dynamodb, names.table);
  await createSchedulesTable(clients.dynamodb, names.schedules);
  return { prefix, tableName: names.table, queueUrls, queueArns, deadLetterQueueUrls, deadLetterQueueArns };
}

/** Deletes what `ensureResources` made (tests clean up after themselves; `--reset`). */
export async function deleteResources(
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient },
  prefix: string,
): Promise<void> {
  const names = resourceNames(prefix);
  for (const p of PRIORITIES) {
    for (const name of [names.queues[p], names.deadLetterQueues[p]]) {
      try {
        const { QueueUrl } = await clients.sqs.send(new GetQueueUrlCommand({ QueueName: name }));
        await clients.sqs.send(new DeleteQueueCommand({ QueueUrl }));
      } catch (err) {
        if (!isMissingQueue(err)) throw err;
      }
    }
  }
  for (const table of [names.table, names.schedules]) {
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
  });
}

function isMissingQueue(err: unknown): boolean {
  return err instanceof Error && /NonExistentQueue|QueueDoesNotExist/.test(err.name);
}
