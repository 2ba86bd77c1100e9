/**
 * The CLI's adapters on SQS and DynamoDB: DLQ reads, queue depths, message move tasks, table
 * scans. Thin: every rule about a task record lives in shared/task (the domain).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  StartMessageMoveTaskCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { KajResources } from '../../shared/aws/wiring.js';
import type { Priority } from '../../shared/config/resources.js';
import type { TaskRecord } from '../../shared/task/model.js';
import type { DeadLetterQueues, DlqMessage } from './dead-letters.js';
import { DeadLetterQueueUnavailableError, MoveTaskRunningError, NativeMoveUnsupportedError } from './errors.js';
import type { FailedTaskSource, MessageMover, MoveProgress, MoveTaskStatus } from './native.js';
import type { QueueDepth, QueueInspector, StatusItem, StatusSource } from './stats.js';

const nameOf = (err: unknown) => (err instanceof Error ? err.name : 'Error');

/** Errors that say "you may not" or "cannot reach": never mistaken for a missing feature. */
function isAccessOrNetwork(err: unknown): boolean {
  const text = `${nameOf(err)} ${err instanceof Error ? err.message : ''}`;
  return /AccessDenied|NotAuthorized|Credential|ExpiredToken|InvalidClientTokenId|SignatureDoesNotMatch|ECONNREFUSED|ENOTFOUND|ETIMEDOUT|TimeoutError/i.test(
    text,
  );
}

function chunks<T>(xs: readonly T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

export class SqsDeadLetterQueues implements DeadLetterQueues {
  constructor(
    private readonly sqs: SQSClient,
    private readonly urls: Readonly<Record<Priority, string>>,
  ) {}

  async receive(
    priority: Priority,
    o: { max: number; visibilitySeconds: number; waitSeconds: number },
  ): Promise<DlqMessage[]> {
    try {
      const out = await this.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.urls[priority],
          MaxNumberOfMessages: Math.max(1, Math.min(10, o.max)),
          VisibilityTimeout: Math.max(0, Math.min(43_200, Math.ceil(o.visibilitySeconds))),
          WaitTimeSeconds: Math.max(0, Math.min(20, o.waitSeconds)),
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount'],
        }),
      );
      return (out.Messages ?? []).flatMap((m) => {
        if (m.MessageId === undefined || m.ReceiptHandle === undefined) return [];
        const attributes: Record<string, string> = {};
        for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) {
          if (v.StringValue !== undefined) attributes[k] = v.StringValue;
        }
        const sent = Number(m.Attributes?.SentTimestamp);
        const count = Number(m.Attributes?.ApproximateReceiveCount);
        return [
          {
            messageId: m.MessageId,
            receiptHandle: m.ReceiptHandle,
            body: m.Body ?? '',
            attributes,
            ...(Number.isFinite(sent) ? { sentTimestamp: sent } : {}),
            ...(Number.isFinite(count) ? { receiveCount: count } : {}),
          },
        ];
      });
    } catch (err) {
      throw new DeadLetterQueueUnavailableError(`SQS ReceiveMessage on the ${priority} DLQ failed: ${nameOf(err)}`, {
        cause: err,
      });
    }
  }

  async release(priority: Priority, receiptHandles: readonly string[]): Promise<void> {
    for (const batch of chunks(receiptHandles, 10)) {
      try {
        await this.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: this.urls[priority],
            Entries: batch.map((h, i) => ({ Id: String(i), ReceiptHandle: h, VisibilityTimeout: 0 })),
          }),
        );
      } catch {
        // Best effort: an unreleased message comes back by itself when its visibility timeout ends.
      }
    }
  }

  async delete(priority: Priority, receiptHandles: readonly string[]): Promise<string[]> {
    const failed: string[] = [];
    let error: unknown;
    for (const batch of chunks(receiptHandles, 10)) {
      try {
        const out = await this.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: this.urls[priority],
            Entries: batch.map((h, i) => ({ Id: String(i), ReceiptHandle: h })),
          }),
        );
        for (const f of out.Failed ?? []) {
          const h = batch[Number(f.Id)];
          if (h !== undefined) failed.push(h);
        }
      } catch (err) {
        error = err;
        failed.push(...batch);
      }
    }
    if (error !== undefined && failed.length === receiptHandles.length) {
      throw new DeadLetterQueueUnavailableError(
        `SQS DeleteMessageBatch on the ${priority} DLQ failed: ${nameOf(error)}`,
        {
          cause: error,
        },
      );
    }
    return failed;
  }
}

export class SqsQueueInspector implements QueueInspector {
  constructor(
    private readonly sqs: SQSClient,
    private readonly r: Pick<KajResources, 'queueUrls' | 'deadLetterQueueUrls' | 'lanes'>,
  ) {}

  /** The lanes whose queues this inspector knows (besides the default one). */
  lanes(): string[] {
    return Object.keys(this.r.lanes ?? {}).sort();
  }

  async depth(kind: 'queue' | 'dlq', priority: Priority, lane?: string): Promise<QueueDepth> {
    const laneUrls = lane === undefined ? undefined : this.r.lanes?.[lane]?.queueUrls;
    const url = kind === 'dlq' ? this.r.deadLetterQueueUrls[priority] : (laneUrls ?? this.r.queueUrls)[priority];
    const out = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    const a = out.Attributes ?? {};
    return {
      visible: Number(a.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
      delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
    };
  }
}

export class SqsMessageMover implements MessageMover {
  constructor(
    private readonly sqs: SQSClient,
    private readonly r: Pick<KajResources, 'queueArns' | 'deadLetterQueueArns'>,
  ) {}

  async check(source: Priority): Promise<void> {
    let latest: MoveProgress | undefined;
    try {
      latest = await this.progress(source);
    } catch (err) {
      if (isAccessOrNetwork(err)) throw err;
      throw new NativeMoveUnsupportedError(
        `this endpoint does not implement SQS message move tasks (ListMessageMoveTasks failed: ${nameOf(err)}); moto, for one, does not. Redrive without --native.`,
        { cause: err },
      );
    }
    if (latest?.status === 'RUNNING' || latest?.status === 'CANCELLING') {
      throw new MoveTaskRunningError(
        `a message move task is already running on the ${source} DLQ (SQS allows one at a time)`,
      );
    }
  }

  async start(source: Priority, destination: Priority, maxPerSecond?: number): Promise<void> {
    await this.sqs.send(
      new StartMessageMoveTaskCommand({
        SourceArn: this.r.deadLetterQueueArns[source],
        // Always explicit: messages the consumer wrote to the DLQ have no "source queue" of their own.
        DestinationArn: this.r.queueArns[destination],
        ...(maxPerSecond === undefined ? {} : { MaxNumberOfMessagesPerSecond: maxPerSecond }),
      }),
    );
  }

  async progress(source: Priority): Promise<MoveProgress | undefined> {
    const out = await this.sqs.send(
      new ListMessageMoveTasksCommand({ SourceArn: this.r.deadLetterQueueArns[source], MaxResults: 1 }),
    );
    const t = out.Results?.[0];
    if (t === undefined) return undefined;
    return {
      status: (t.Status ?? 'FAILED') as MoveTaskStatus,
      moved: t.ApproximateNumberOfMessagesMoved ?? 0,
      toMove: t.ApproximateNumberOfMessagesToMove ?? 0,
      ...(t.FailureReason === undefined ? {} : { failureReason: t.FailureReason }),
    };
  }
}

/** Scans of the task table (whole-table reads: admin use only). */
export class DynamoTaskTable implements FailedTaskSource, StatusSource {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    private readonly tableName: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  }

  async failedTasks(priority: Priority, diedSince: number): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new ScanCommand({
          TableName: this.tableName,
          ConsistentRead: true,
          FilterExpression: '#s = :failed AND #p = :p AND attribute_not_exists(#d) AND #f >= :since',
          ExpressionAttributeNames: { '#s': 'status', '#p': 'priority', '#d': 'discarded_at', '#f': 'finished_at' },
          ExpressionAttributeValues: {
            ':failed': 'failed',
            ':p': priority,
            ':since': new Date(diedSince).toISOString(),
          },
          ExclusiveStartKey: startKey,
        }),
      );
      out.push(...((page.Items ?? []) as TaskRecord[]));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return out;
  }

  async *scanStatuses(): AsyncIterable<StatusItem[]> {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new ScanCommand({
          TableName: this.tableName,
          ProjectionExpression: '#id, #s, #r, #d',
          ExpressionAttributeNames: { '#id': 'task_id', '#s': 'status', '#r': 'run_at', '#d': 'discarded_at' },
          ExclusiveStartKey: startKey,
        }),
      );
      yield (page.Items ?? []) as StatusItem[];
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
  }
}
