import { Duration, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { METRICS } from '../../shared/config/metrics.js';
import { PRIORITIES, type Priority } from '../../shared/config/resources.js';

export interface ObservabilityProps {
  /** Prefix of alarm names (the stack name). */
  readonly namePrefix: string;
  readonly queues: Readonly<Record<Priority, sqs.IQueue>>;
  readonly deadLetterQueues: Readonly<Record<Priority, sqs.IQueue>>;
  readonly consumer: lambda.IFunction;
  readonly api: lambda.IFunction;
  readonly sweeper: lambda.IFunction;
  /**
   * Alarm when a priority queue's oldest message is older than this.
   * @default Duration.minutes(15)
   */
  readonly oldestMessageAgeThreshold?: Duration;
  /**
   * Email subscribed to an SNS topic that every alarm notifies (the address must confirm).
   * @default - no topic: alarms only show in the console
   */
  readonly alarmEmail?: string;
  /**
   * Create the CloudWatch dashboard.
   * @default true
   */
  readonly dashboard?: boolean;
}

const cap = (p: Priority) => p.charAt(0).toUpperCase() + p.slice(1);

/**
 * Dashboard and alarms of a Kaj deployment.
 *
 * Alarms: every DLQ not empty, every priority queue's oldest message older than a threshold,
 * consumer errors, consumer throttles, API and sweeper errors. With `alarmEmail`, an SNS topic
 * (TLS-only) mails every state change.
 *
 * Task metrics are emitted with EMF by the functions (Powertools) with a `TaskType` dimension; a
 * dashboard can only aggregate across unknown dimension values with a SEARCH expression, so the
 * task graphs use SEARCH (one line per type, plus their SUM).
 */
export class Observability extends Construct {
  /** Every alarm, by a stable key (e.g. `dlqNotEmpty-high`). */
  public readonly alarms: Readonly<Record<string, cloudwatch.Alarm>>;
  /** The SNS topic alarms notify, when `alarmEmail` is set. */
  public readonly alarmTopic: sns.Topic | undefined;
  /** The dashboard, unless disabled. */
  public readonly dashboard: cloudwatch.Dashboard | undefined;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const prefix = props.namePrefix;
    const fiveMinutes = Duration.minutes(5);
    const alarms: Record<string, cloudwatch.Alarm> = {};

    for (const p of PRIORITIES) {
      alarms[`dlqNotEmpty-${p}`] = new cloudwatch.Alarm(this, `${cap(p)}DlqNotEmpty`, {
        alarmName: `${prefix}-${p}-dlq-not-empty`,
        alarmDescription: `Dead tasks are waiting in the ${p} DLQ: inspect them, then redrive or purge.`,
        metric: props.deadLetterQueues[p].metricApproximateNumberOfMessagesVisible({
          period: fiveMinutes,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      alarms[`oldestMessageAge-${p}`] = new cloudwatch.Alarm(this, `${cap(p)}OldestMessageAge`, {
        alarmName: `${prefix}-${p}-oldest-message-age`,
        alarmDescription: `The ${p} queue is not keeping up: its oldest message is older than the threshold.`,
        metric: props.queues[p].metricApproximateAgeOfOldestMessage({
          period: fiveMinutes,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        threshold: (props.oldestMessageAgeThreshold ?? Duration.minutes(15)).toSeconds(),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    const functionAlarm = (key: string, cid: string, name: string, metric: cloudwatch.Metric, what: string) => {
      alarms[key] = new cloudwatch.Alarm(this, cid, {
        alarmName: `${prefix}-${name}`,
        alarmDescription: what,
        metric,
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    };
    const sum = { period: fiveMinutes, statistic: cloudwatch.Stats.SUM };
    functionAlarm(
      'consumerErrors',
      'ConsumerErrors',
      'consumer-errors',
      props.consumer.metricErrors(sum),
      'The consumer function failed (crash, timeout or unhandled error), not a task reporting failure.',
    );
    functionAlarm(
      'consumerThrottles',
      'ConsumerThrottles',
      'consumer-throttles',
      props.consumer.metricThrottles(sum),
      'The consumer was throttled: the account concurrency limit is exhausted (mapping maxConcurrency does not throttle).',
    );
    functionAlarm('apiErrors', 'ApiErrors', 'api-errors', props.api.metricErrors(sum), 'The API function failed.');
    functionAlarm(
      'sweeperErrors',
      'SweeperErrors',
      'sweeper-errors',
      props.sweeper.metricErrors(sum),
      'The outbox sweeper failed: delayed tasks and unconfirmed sends may be stuck.',
    );
    this.alarms = alarms;

    this.alarmTopic = undefined;
    if (props.alarmEmail !== undefined) {
      this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
        displayName: `Kaj alarms (${prefix})`,
        enforceSSL: true,
      });
      this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      Validations.of(this.alarmTopic).acknowledge({
        id: 'AwsSolutions-SNS2',
        reason:
          'Alarm notifications carry no task data. CloudWatch alarms cannot publish to a topic encrypted ' +
          'with the AWS managed key (aws/sns), and a customer managed key would cost $1/month at rest.',
      });
      const action = new cwActions.SnsAction(this.alarmTopic);
      for (const alarm of Object.values(alarms)) {
        alarm.addAlarmAction(action);
        alarm.addOkAction(action);
      }
    }

    this.dashboard = props.dashboard === false ? undefined : this.createDashboard(prefix, props);
  }

  private createDashboard(prefix: string, props: ObservabilityProps): cloudwatch.Dashboard {
    const minute = Duration.minutes(1);
    const perQueue = (
      queues: Readonly<Record<Priority, sqs.IQueue>>,
      metric: (q: sqs.IQueue, p: Priority) => cloudwatch.IMetric,
    ) => PRIORITIES.map((p) => metric(queues[p], p));

    const search = (metricName: string, stat: string) =>
      `SEARCH('Namespace="${METRICS.namespace}" MetricName="${metricName}"', '${stat}', 60)`;
    const taskCount = (metricName: string, label: string): cloudwatch.IMetric[] => [
      new cloudwatch.MathExpression({
        expression: `SUM(${search(metricName, 'Sum')})`,
        label: `${label} (all types)`,
        period: minute,
      }),
      new cloudwatch.SearchExpression({ expression: search(metricName, 'Sum'), period: minute }),
    ];

    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: prefix,
      defaultInterval: Duration.hours(3),
    });
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown:
          `# Kaj — ${prefix}\nQueues, dead letters and tasks. Task metrics come from EMF (namespace ` +
          `\`${METRICS.namespace}\`, dimension \`${METRICS.taskTypeDimension}\`), aggregated with SEARCH.`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Queue depth (visible messages)',
        left: perQueue(props.queues, (q, p) =>
          q.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum', label: p }),
        ),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Oldest message age (s)',
        left: perQueue(props.queues, (q, p) =>
          q.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum', label: p }),
        ),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'DLQ depth',
        left: perQueue(props.deadLetterQueues, (q, p) =>
          q.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum', label: `${p} DLQ` }),
        ),
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: 'Tasks succeeded', left: taskCount(METRICS.succeeded, 'succeeded'), width: 8 }),
      new cloudwatch.GraphWidget({ title: 'Tasks retried', left: taskCount(METRICS.retried, 'retried'), width: 8 }),
      new cloudwatch.GraphWidget({ title: 'Tasks failed', left: taskCount(METRICS.failed, 'failed'), width: 8 }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Task duration p50 / p99 (ms, per type)',
        left: [
          new cloudwatch.SearchExpression({ expression: search(METRICS.duration, 'p50'), label: 'p50', period: minute }),
          new cloudwatch.SearchExpression({ expression: search(METRICS.duration, 'p99'), label: 'p99', period: minute }),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Consumer errors / throttles / concurrency',
        left: [
          props.consumer.metricErrors({ period: minute, statistic: 'Sum', label: 'errors' }),
          props.consumer.metricThrottles({ period: minute, statistic: 'Sum', label: 'throttles' }),
        ],
        right: [
          props.consumer.metric('ConcurrentExecutions', { period: minute, statistic: 'Maximum', label: 'concurrency' }),
        ],
        width: 12,
      }),
    );
    return dashboard;
  }
}
