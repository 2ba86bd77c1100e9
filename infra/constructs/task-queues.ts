import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULTS, PRIORITIES, type Priority, type ResourceNames } from '../../shared/config/resources.js';
import { MAX_LANES, MAX_REDRIVE_SOURCE_QUEUES } from '../config.js';

/** Settings every main (priority) queue shares, whichever lane it belongs to. */
export interface PriorityQueueSettings {
  /**
   * Visibility timeout; must be >= the timeout of the consumer function that polls the queue.
   * @default Duration.seconds(DEFAULTS.queueVisibilityTimeoutSeconds)
   */
  readonly visibilityTimeout?: Duration;
  /**
   * Receives of one message before SQS moves it to its DLQ (crash-loop backstop).
   * @default DEFAULTS.maxReceiveCount
   */
  readonly maxReceiveCount?: number;
  /**
   * Retention of the queue.
   * @default Duration.seconds(DEFAULTS.queueRetentionSeconds)
   */
  readonly retentionPeriod?: Duration;
}

/**
 * A main queue: SSE-SQS, TLS only, dead-lettering into `deadLetterQueue` after `maxReceiveCount`
 * receives, deleted with the stack (its tasks are in the table; only dead letters are kept).
 * The one definition of the default lane's queues and every other lane's.
 */
export function priorityQueue(
  scope: Construct,
  id: string,
  props: PriorityQueueSettings & { readonly queueName: string; readonly deadLetterQueue: sqs.IQueue },
): sqs.Queue {
  return new sqs.Queue(scope, id, {
    queueName: props.queueName,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    visibilityTimeout: props.visibilityTimeout ?? Duration.seconds(DEFAULTS.queueVisibilityTimeoutSeconds),
    retentionPeriod: props.retentionPeriod ?? Duration.seconds(DEFAULTS.queueRetentionSeconds),
    deadLetterQueue: {
      queue: props.deadLetterQueue,
      maxReceiveCount: props.maxReceiveCount ?? DEFAULTS.maxReceiveCount,
    },
    removalPolicy: RemovalPolicy.DESTROY,
  });
}

export interface TaskQueuesProps extends PriorityQueueSettings {
  /** Queue names, from `resourceNames(stackName)`. */
  readonly names: Pick<ResourceNames, 'queues' | 'deadLetterQueues'>;
  /**
   * Names of the main queues of the other lanes (`laneQueueNames(stackName, lane)`), which
   * dead-letter into these DLQs too ({@link LaneQueues}): each DLQ accepts them as redrive
   * sources beside its own priority queue. At most {@link MAX_LANES}.
   * @default - no other lane: each DLQ accepts its own priority queue only
   */
  readonly laneQueueNames?: Readonly<Record<string, Readonly<Record<Priority, string>>>>;
  /**
   * Retention of the dead-letter queues. Must exceed the queues' retention: a standard queue keeps
   * a message's original enqueue time when it moves to the DLQ.
   * @default Duration.seconds(DEFAULTS.dlqRetentionSeconds)
   */
  readonly deadLetterRetentionPeriod?: Duration;
  /**
   * What happens to the dead-letter queues (and the dead tasks in them) when the stack is deleted.
   * The priority queues are always deleted with the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly deadLetterRemovalPolicy?: RemovalPolicy;
}

/**
 * The default lane's queues: one SQS standard queue per priority, each with its own dead-letter
 * queue. The DLQs are the deployment's, shared by every lane: another lane's priority-p queue
 * ({@link LaneQueues}) dead-letters into the priority-p DLQ, so every failure is in one place.
 *
 * All queues use SSE-SQS and deny non-TLS access. Each DLQ accepts only the priority queues of its
 * own priority, one per lane, as redrive sources (RedriveAllowPolicy byQueue), so a message's
 * priority is known from which DLQ it is in. SQS allows ten sources: hence {@link MAX_LANES}.
 */
export class TaskQueues extends Construct {
  /** The priority queues. */
  public readonly queues: Readonly<Record<Priority, sqs.Queue>>;
  /** The dead-letter queue of each priority. */
  public readonly deadLetterQueues: Readonly<Record<Priority, sqs.Queue>>;

  constructor(scope: Construct, id: string, props: TaskQueuesProps) {
    super(scope, id);
    const lanes = Object.entries(props.laneQueueNames ?? {});
    if (lanes.length > MAX_LANES) {
      throw new Error(
        `TaskQueues: ${lanes.length} other lanes share the DLQs, at most ${MAX_LANES} may ` +
          `(SQS: ${MAX_REDRIVE_SOURCE_QUEUES} redrive sources per DLQ)`,
      );
    }
    const stack = Stack.of(this);
    const queues = {} as Record<Priority, sqs.Queue>;
    const dlqs = {} as Record<Priority, sqs.Queue>;

    for (const p of PRIORITIES) {
      const cap = p.charAt(0).toUpperCase() + p.slice(1);
      const queueName = props.names.queues[p];
      // The DLQ names its source by ARN built from the fixed queue name, not by reference:
      // source → DLQ (RedrivePolicy) and DLQ → source (RedriveAllowPolicy) would be a cycle.
      const arnOf = (name: string) =>
        stack.formatArn({ service: 'sqs', resource: name, arnFormat: ArnFormat.NO_RESOURCE_NAME });
      const sources = [
        sqs.Queue.fromQueueArn(this, `${cap}SourceRef`, arnOf(queueName)),
        ...lanes.map(([lane, names]) => sqs.Queue.fromQueueArn(this, `${cap}SourceRef-${lane}`, arnOf(names[p]))),
      ];
      const dlq = new sqs.Queue(this, `${cap}Dlq`, {
        queueName: props.names.deadLetterQueues[p],
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: props.deadLetterRetentionPeriod ?? Duration.seconds(DEFAULTS.dlqRetentionSeconds),
        redriveAllowPolicy: {
          redrivePermission: sqs.RedrivePermission.BY_QUEUE,
          sourceQueues: sources,
        },
        removalPolicy: props.deadLetterRemovalPolicy ?? RemovalPolicy.RETAIN,
      });
      const queue = priorityQueue(this, `${cap}Queue`, { ...props, queueName, deadLetterQueue: dlq });
      queues[p] = queue;
      dlqs[p] = dlq;
    }
    this.queues = queues;
    this.deadLetterQueues = dlqs;
  }

  /** The three priority queues. */
  get allQueues(): sqs.Queue[] {
    return PRIORITIES.map((p) => this.queues[p]);
  }

  /** The three dead-letter queues. */
  get allDeadLetterQueues(): sqs.Queue[] {
    return PRIORITIES.map((p) => this.deadLetterQueues[p]);
  }
}
