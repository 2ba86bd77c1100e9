/**
 * What the alarms and the dashboard of a Kaj deployment read: the construct's props, and the
 * metrics the functions emit under the stack's namespace.
 */
import type { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { METRICS } from '../../../shared/config/metrics.js';
import type { Priority } from '../../../shared/config/resources.js';

export interface ObservabilityProps {
  /** Prefix of alarm names (the stack name). */
  readonly namePrefix: string;
  /**
   * The namespace the functions' metrics are in (`metricsNamespace(stackName)`).
   * @default METRICS.namespace (`Kaj`)
   */
  readonly metricsNamespace?: string;
  readonly queues: Readonly<Record<Priority, sqs.IQueue>>;
  readonly deadLetterQueues: Readonly<Record<Priority, sqs.IQueue>>;
  /** The default lane's consumer. */
  readonly consumer: lambda.IFunction;
  /**
   * The other lanes' queues and consumers, by lane name: each gets the default lane's alarms on
   * them (oldest message age per queue, consumer errors and throttles). Their dead letters are in
   * the shared DLQs, which the DLQ alarms already watch.
   * @default - no other lane
   */
  readonly lanes?: Readonly<Record<string, LaneResources>>;
  /**
   * Alarm when tasks stay deferred behind flow-control limits for 30 minutes
   * ({@link LIMIT_SATURATED_PERIODS} 5-minute periods in a row).
   * @default false - a deployment without limits defers nothing
   */
  readonly limitAlarm?: boolean;
  readonly api: lambda.IFunction;
  /**
   * The API's stage (an HTTP API's or a REST API's): its `5xx` metric counts every server error
   * callers saw.
   */
  readonly apiStage: { metricServerError(props?: cloudwatch.MetricOptions): cloudwatch.Metric };
  readonly sweeper: lambda.IFunction;
  readonly scheduler: lambda.IFunction;
  /**
   * Alarm when a priority queue's oldest message is older than this.
   * @default Duration.minutes(15)
   */
  readonly oldestMessageAgeThreshold?: Duration;
  /**
   * Email subscribed to the alarm topic (the address must confirm).
   * @default - no subscription: subscribe any endpoint to the topic (output `AlarmTopicArn`)
   */
  readonly alarmEmail?: string;
  /**
   * Create the CloudWatch dashboard.
   * @default true
   */
  readonly dashboard?: boolean;
  /**
   * Encrypt the alarm topic with a customer managed KMS key (rotated yearly; $1/month, up to $3
   * after rotations). CloudWatch alarms cannot publish to a topic under the AWS managed `aws/sns`.
   * @default false - unencrypted: notifications carry alarm names and metric values, no task data
   */
  readonly encryptTopic?: boolean;
}

/** What the alarms and the dashboard watch of a lane besides the default one. */
export interface LaneResources {
  readonly queues: Readonly<Record<Priority, sqs.IQueue>>;
  readonly consumer: lambda.IFunction;
}

/** Consecutive 5-minute periods with deferrals before the limit alarm fires: 30 minutes. */
export const LIMIT_SATURATED_PERIODS = 6;

/**
 * Deferrals of any task type (`LimitDeferrals` with the service dimension, whatever other
 * dimensions it carries): a Metrics Insights query, because the consumer counts deferrals per
 * TaskType and an alarm on a plain metric must name every dimension value.
 */
export function limitDeferralsQuery(namespace: string): string {
  return (
    `SELECT SUM(${METRICS.limitDeferrals}) FROM "${namespace}" ` +
    `WHERE ${METRICS.serviceDimension} = '${METRICS.serviceName}'`
  );
}

/** `high` → `High`, `cpu` → `Cpu`: priorities and lane names in construct ids. */
export const cap = (p: string) => p.charAt(0).toUpperCase() + p.slice(1);

/**
 * The dimension every EMF metric carries (`{ service: <serviceName> }`, see emfLines() in
 * shared/service/observability.ts). A count emitted without a TaskType has this dimension only, and
 * CloudWatch matches an alarm's dimensions exactly: the alarm must name it too.
 */
export const POWERTOOLS_SERVICE_DIMENSION = METRICS.serviceDimension;

/** A Kaj count emitted without a TaskType, with exactly the dimensions it is emitted with. */
export function untypedCount(
  namespace: string,
  metricName: string,
  options: cloudwatch.MetricOptions,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace,
    metricName,
    dimensionsMap: { [POWERTOOLS_SERVICE_DIMENSION]: METRICS.serviceName },
    ...options,
  });
}
