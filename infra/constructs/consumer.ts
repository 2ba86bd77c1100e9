import { Duration } from 'aws-cdk-lib';
import type { Architecture, EventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULTS, ENV, PRIORITIES, type Priority } from '../../shared/config/resources.js';
import { grantQueues } from './grants.js';
import { KajFunction } from './kaj-function.js';
import type { HistoryTable } from './history-table.js';
import type { LimitTable } from './limit-table.js';
import type { TaskTable } from './task-table.js';

/** Event source mapping settings of one priority. */
export interface PriorityMappingSettings {
  /**
   * Maximum concurrent consumer invocations this priority's mapping may run (2-1000).
   * Unlike reserved concurrency this caps only this mapping and reserves nothing.
   */
  readonly maxConcurrency: number;
  /** Messages per invocation. */
  readonly batchSize: number;
  /** Seconds to wait to fill a batch (0 = invoke as soon as messages arrive). */
  readonly maxBatchingWindowSeconds: number;
}

export interface TaskConsumerProps {
  /** The task table: the consumer gets and updates items (no index). */
  readonly table: TaskTable;
  /** The queues of the consumer's lane: the only ones it polls, deletes from and extends leases on. */
  readonly queues: Readonly<Record<Priority, sqs.IQueue>>;
  readonly deadLetterQueues: Readonly<Record<Priority, sqs.IQueue>>;
  /**
   * The main queues of every other lane: the consumer may send to them (a retry goes to the
   * task's own lane, which is another one when its type moved since it was sent), nothing else.
   * @default - no other lane
   */
  readonly otherLaneQueues?: readonly sqs.IQueue[];
  /**
   * The limits table: the consumer enforces the flow-control limits there
   * (`LimitTable.grantConsumer`) and gets its name as `KAJ_LIMITS_TABLE_NAME`.
   * @default - no limits: no permission on a limits table and no `KAJ_LIMITS_TABLE_NAME`
   */
  readonly limitsTable?: LimitTable;
  /**
   * The history table: the consumer reads and appends workflow runs' histories there
   * (`HistoryTable.grantAppend`) and gets its name as `KAJ_HISTORY_TABLE_NAME`.
   * @default - no workflows: no permission on a history table and no `KAJ_HISTORY_TABLE_NAME`
   */
  readonly historyTable?: HistoryTable;
  /**
   * The lane this consumer runs, named in the function's description.
   * @default - the default lane
   */
  readonly lane?: string;
  /** Mapping settings per priority. */
  readonly mappings: Readonly<Record<Priority, PriorityMappingSettings>>;
  readonly environment: Readonly<Record<string, string>>;
  /**
   * Function timeout; the queues' visibility timeout must be at least this.
   * @default Duration.seconds(DEFAULTS.consumerTimeoutSeconds)
   */
  readonly timeout?: Duration;
  /**
   * Memory in MiB.
   * @default 256
   */
  readonly memorySize?: number;
  /**
   * Instruction set of the function.
   * @default Architecture.ARM_64
   */
  readonly architecture?: Architecture;
  readonly logRetention: logs.RetentionDays;
}

/**
 * The consumer of one lane: one function, one SQS event source mapping per priority queue of the
 * lane, each with its own maximum concurrency, batch size and batching window, and partial batch
 * responses (ReportBatchItemFailures) so one failed task doesn't redeliver its whole batch.
 * Every lane runs the same code (`functions/consumer.ts`); lanes differ in the function's size
 * and in the queues it polls.
 */
export class TaskConsumer extends Construct {
  public readonly handler: KajFunction;
  /** The event source mapping of each priority. */
  public readonly mappings: Readonly<Record<Priority, EventSourceMapping>>;

  constructor(scope: Construct, id: string, props: TaskConsumerProps) {
    super(scope, id);
    this.handler = new KajFunction(this, 'Handler', {
      entryName: 'consumer',
      description:
        props.lane === undefined
          ? 'Kaj consumer: runs the tasks of the three priority queues'
          : `Kaj consumer of lane ${props.lane}: runs the tasks of the lane's three priority queues`,
      timeout: props.timeout ?? Duration.seconds(DEFAULTS.consumerTimeoutSeconds),
      ...(props.memorySize !== undefined ? { memorySize: props.memorySize } : {}),
      ...(props.architecture !== undefined ? { architecture: props.architecture } : {}),
      environment: {
        ...props.environment,
        ...(props.limitsTable !== undefined ? { [ENV.limitsTableName]: props.limitsTable.table.tableName } : {}),
        ...(props.historyTable !== undefined ? { [ENV.historyTableName]: props.historyTable.table.tableName } : {}),
      },
      logRetention: props.logRetention,
    });
    const role = this.handler.executionRole;
    const own = PRIORITIES.map((p) => props.queues[p]);
    props.table.grantItems(role, 'TaskTableItems', ['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    grantQueues(role, 'LeaseAndRequeue', ['sqs:ChangeMessageVisibility', 'sqs:SendMessage'], own);
    const otherLanes = props.otherLaneQueues ?? [];
    if (otherLanes.length > 0) grantQueues(role, 'RequeueToOtherLanes', ['sqs:SendMessage'], otherLanes);
    grantQueues(
      role,
      'DeadLetter',
      ['sqs:SendMessage'],
      PRIORITIES.map((p) => props.deadLetterQueues[p]),
    );
    grantQueues(role, 'PollQueues', ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'], own);
    props.limitsTable?.grantConsumer(role);
    props.historyTable?.grantAppend(role);

    const mappings = {} as Record<Priority, EventSourceMapping>;
    for (const p of PRIORITIES) {
      const s = props.mappings[p];
      const cap = p.charAt(0).toUpperCase() + p.slice(1);
      // What SqsEventSource does, keeping a handle on the mapping. The mapping polls with the
      // function's role; its permissions are granted above (PollQueues), without GetQueueUrl.
      mappings[p] = this.handler.addEventSourceMapping(`${cap}Mapping`, {
        eventSourceArn: props.queues[p].queueArn,
        batchSize: s.batchSize,
        ...(s.maxBatchingWindowSeconds > 0 ? { maxBatchingWindow: Duration.seconds(s.maxBatchingWindowSeconds) } : {}),
        maxConcurrency: s.maxConcurrency,
        reportBatchItemFailures: true,
      });
    }
    this.mappings = mappings;
  }
}
