import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULTS, PRIORITIES, type Priority, type ResourceNames } from '../../shared/config/resources.js';

export interface TaskQueuesProps {
  /** Queue names, from `resourceNames(stackName)`. */
  readonly names: Pick<ResourceNames, 'queues' | 'deadLetterQueues'>;
  /**
   * Visibility timeout of the priority queues; must be >= the consumer function timeout.
   * @default Duration.seconds(DEFAULTS.queueVisibilityTimeoutSeconds)
   */
  readonly visibilityTimeout?: Duration;
  /**
   * Receives of one message before SQS moves it to its DLQ (crash-loop backstop).
   * @default DEFAULTS.maxReceiveCount
   */
  readonly maxReceiveCount?: number;
  /**
   * Retention of the priority queues.
   * @default Duration.seconds(DEFAULTS.queueRetentionSeconds)
   */
  readonly retentionPeriod?: Duration;
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
 * One SQS standard queue per priority, each with its own dead-letter queue.
 *
 * All queues use SSE-SQS and deny non-TLS access. Each DLQ only accepts its own priority queue as
 * a redrive source (RedriveAllowPolicy byQueue), so a message's origin is known from which DLQ
 * it is in, and SQS's native redrive (StartMessageMoveTask) sends it back to that queue.
 */
export class TaskQueues extends Construct {
  /** The priority queues. */
  public readonly queues: Readonly<Record<Priority, sqs.Queue>>;
  /** The dead-letter queue of each priority. */
  public readonly deadLetterQueues: Readonly<Record<Priority, sqs.Queue>>;

  constructor(scope: Construct, id: string, props: TaskQueuesProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const queues = {} as Record<Priority, sqs.Queue>;
    const dlqs = {} as Record<Priority, sqs.Queue>;

    for (const p of PRIORITIES) {
      const cap = p.charAt(0).toUpperCase() + p.slice(1);
      const queueName = props.names.queues[p];
      // The DLQ names its source by ARN built from the fixed queue name, not by reference:
      // source → DLQ (RedrivePolicy) and DLQ → source (RedriveAllowPolicy) would be a cycle.
      const sourceArn = stack.formatArn({
        service: 'sqs',
        resource: queueName,
        arnFormat: ArnFormat.NO_RESOURCE_NAME,
      });
      const dlq = new sqs.Queue(this, `${cap}Dlq`, {
        queueName: props.names.deadLetterQueues[p],
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: props.deadLetterRetentionPeriod ?? Duration.seconds(DEFAULTS.dlqRetentionSeconds),
        redriveAllowPolicy: {
          redrivePermission: sqs.RedrivePermission.BY_QUEUE,
          sourceQueues: [sqs.Queue.fromQueueArn(this, `${cap}SourceRef`, sourceArn)],
        },
        removalPolicy: props.deadLetterRemovalPolicy ?? RemovalPolicy.RETAIN,
      });
      const queue = new sqs.Queue(this, `${cap}Queue`, {
        queueName,
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        visibilityTimeout: props.visibilityTimeout ?? Duration.seconds(DEFAULTS.queueVisibilityTimeoutSeconds),
        retentionPeriod: props.retentionPeriod ?? Duration.seconds(DEFAULTS.queueRetentionSeconds),
        deadLetterQueue: { queue: dlq, maxReceiveCount: props.maxReceiveCount ?? DEFAULTS.maxReceiveCount },
        removalPolicy: RemovalPolicy.DESTROY,
      });
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
