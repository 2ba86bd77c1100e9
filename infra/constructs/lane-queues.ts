import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { PRIORITIES, type Priority } from '../../shared/config/resources.js';
import { type PriorityQueueSettings, priorityQueue } from './task-queues.js';

export interface LaneQueuesProps extends PriorityQueueSettings {
  /** The lane's queue names, from `laneQueueNames(stackName, lane)` (`<stack>-<lane>-lane-<priority>`). */
  readonly names: Readonly<Record<Priority, string>>;
  /**
   * The deployment's DLQs ({@link TaskQueues}): the lane's priority-p queue dead-letters into the
   * priority-p one, which must list it as a redrive source (`TaskQueues`' `laneQueueNames`).
   */
  readonly deadLetterQueues: Readonly<Record<Priority, sqs.IQueue>>;
}

/**
 * The main queues of one lane besides the default one: one per priority, with the settings of the
 * default lane's queues (SSE-SQS, TLS only, retention, `maxReceiveCount`) and a visibility timeout
 * fitted to the lane's consumer. No DLQs of their own: dead letters of every lane go to the
 * deployment's DLQs, so `kaj dlq` sees every failure in one place.
 */
export class LaneQueues extends Construct {
  /** The lane's priority queues. */
  public readonly queues: Readonly<Record<Priority, sqs.Queue>>;

  constructor(scope: Construct, id: string, props: LaneQueuesProps) {
    super(scope, id);
    const queues = {} as Record<Priority, sqs.Queue>;
    for (const p of PRIORITIES) {
      const cap = p.charAt(0).toUpperCase() + p.slice(1);
      queues[p] = priorityQueue(this, `${cap}Queue`, {
        ...props,
        queueName: props.names[p],
        deadLetterQueue: props.deadLetterQueues[p],
      });
    }
    this.queues = queues;
  }

  /** The three priority queues. */
  get allQueues(): sqs.Queue[] {
    return PRIORITIES.map((p) => this.queues[p]);
  }
}
