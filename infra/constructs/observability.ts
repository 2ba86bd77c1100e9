import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
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

/** Why the alarm topic is not encrypted by default (cdk-nag AwsSolutions-SNS2). */
export const UNENCRYPTED_ALARM_TOPIC_REASON =
  'Alarm notifications carry no task data (alarm names and metric values only). CloudWatch alarms cannot publish ' +
  'to a topic encrypted with the AWS managed key aws/sns, and a customer managed key costs $1/month (up to $3 after ' +
  "rotations) against Kaj's near-zero cost at rest. Set encryptAlarmTopic: true to encrypt it with one.";

const cap = (p: string) => p.charAt(0).toUpperCase() + p.slice(1);

/**
 * The dimension every EMF metric carries (`{ service: <serviceName> }`, see emfLines() in
 * shared/service/observability.ts). A count emitted without a TaskType has this dimension only, and
 * CloudWatch matches an alarm's dimensions exactly: the alarm must name it too.
 */
export const POWERTOOLS_SERVICE_DIMENSION = METRICS.serviceDimension;

/** A Kaj count emitted without a TaskType, with exactly the dimensions it is emitted with. */
function untypedCount(namespace: string, metricName: string, options: cloudwatch.MetricOptions): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace,
    metricName,
    dimensionsMap: { [POWERTOOLS_SERVICE_DIMENSION]: METRICS.serviceName },
    ...options,
  });
}

/**
 * Dashboard, alarms and the alarm topic of a Kaj deployment.
 *
 * Alarms: every DLQ not empty, every priority queue's oldest message older than a threshold (the
 * default lane's and every other lane's), consumer errors and throttles (each lane's consumer),
 * tasks deferred behind flow-control limits for 30 minutes, API and sweeper errors, API 5xx answers, the consumer's and
 * the sweeper's item failures (records and outbox entries they could not process: the function
 * itself succeeds, so Lambda's Errors metric never sees them), scheduler ticks that keep failing,
 * and schedules whose runs keep failing. Every alarm notifies one SNS topic
 * on ALARM and OK; the topic always exists (output `AlarmTopicArn`) so that any endpoint can
 * subscribe, and `alarmEmail` subscribes an address to it. The topic is TLS-only and unencrypted
 * unless `encryptTopic` (notifications carry alarm names and metric values, never task data).
 *
 * Task metrics are emitted with EMF by the functions with a `TaskType` dimension; a
 * dashboard can only aggregate across unknown dimension values with a SEARCH expression, so the
 * task graphs use SEARCH (one line per type, plus their SUM).
 */
export class Observability extends Construct {
  /** Every alarm, by a stable key (e.g. `dlqNotEmpty-high`). */
  public readonly alarms: Readonly<Record<string, cloudwatch.Alarm>>;
  /** The SNS topic every alarm notifies. */
  public readonly alarmTopic: sns.Topic;
  /**
   * The customer managed key that encrypts the topic (CloudWatch cannot use the AWS managed `aws/sns`),
   * with `encryptTopic` only.
   */
  public readonly alarmTopicKey: kms.Key | undefined;
  /** The dashboard, unless disabled. */
  public readonly dashboard: cloudwatch.Dashboard | undefined;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const prefix = props.namePrefix;
    const namespace = props.metricsNamespace ?? METRICS.namespace;
    const fiveMinutes = Duration.minutes(5);
    const alarms: Record<string, cloudwatch.Alarm> = {};
    /** Fires when a main queue's oldest message is older than the threshold. */
    const oldestAge = (key: string, cid: string, name: string, queue: sqs.IQueue, what: string) => {
      alarms[key] = new cloudwatch.Alarm(this, cid, {
        alarmName: `${prefix}-${name}-oldest-message-age`,
        alarmDescription: `${what} is not keeping up: its oldest message is older than the threshold.`,
        metric: queue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: cloudwatch.Stats.MAXIMUM }),
        threshold: (props.oldestMessageAgeThreshold ?? Duration.minutes(15)).toSeconds(),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    };

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
      oldestAge(`oldestMessageAge-${p}`, `${cap(p)}OldestMessageAge`, `${p}`, props.queues[p], `The ${p} queue`);
    }
    const lanes = Object.entries(props.lanes ?? {});
    for (const [lane, { queues }] of lanes) {
      for (const p of PRIORITIES) {
        oldestAge(
          `oldestMessageAge-${lane}-${p}`,
          `${cap(lane)}${cap(p)}OldestMessageAge`,
          `${lane}-lane-${p}`,
          queues[p],
          `The ${p} queue of lane ${lane}`,
        );
      }
    }
    /** Fires when the metric's 5-minute sum is above zero: each of these counts should be zero. */
    const anyAlarm = (key: string, cid: string, name: string, metric: cloudwatch.IMetric, what: string) => {
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
    anyAlarm(
      'consumerErrors',
      'ConsumerErrors',
      'consumer-errors',
      props.consumer.metricErrors(sum),
      'The consumer function failed (crash, timeout or unhandled error), not a task reporting failure.',
    );
    anyAlarm(
      'consumerThrottles',
      'ConsumerThrottles',
      'consumer-throttles',
      props.consumer.metricThrottles(sum),
      'The consumer was throttled: the account concurrency limit is exhausted (mapping maxConcurrency does not throttle).',
    );
    for (const [lane, { consumer }] of lanes) {
      anyAlarm(
        `consumerErrors-${lane}`,
        `Consumer${cap(lane)}Errors`,
        `${lane}-lane-consumer-errors`,
        consumer.metricErrors(sum),
        `The consumer of lane ${lane} failed (crash, timeout or unhandled error), not a task reporting failure.`,
      );
      anyAlarm(
        `consumerThrottles-${lane}`,
        `Consumer${cap(lane)}Throttles`,
        `${lane}-lane-consumer-throttles`,
        consumer.metricThrottles(sum),
        `The consumer of lane ${lane} was throttled: the account concurrency limit is exhausted ` +
          '(mapping maxConcurrency does not throttle).',
      );
    }
    anyAlarm('apiErrors', 'ApiErrors', 'api-errors', props.api.metricErrors(sum), 'The API function failed.');
    anyAlarm(
      'sweeperErrors',
      'SweeperErrors',
      'sweeper-errors',
      props.sweeper.metricErrors(sum),
      'The outbox sweeper failed: delayed tasks and unconfirmed sends may be stuck.',
    );
    anyAlarm(
      'api5xx',
      'Api5xx',
      'api-5xx',
      // The stage's metric (dimensions ApiId and Stage): what callers got, including API Gateway's
      // own 5xx (integration failures, a throttled function) and the handler's 500/503.
      props.apiStage.metricServerError(sum),
      'The task API answered 5xx: an unexpected error, a dependency unavailable (503), or API Gateway could not run the function.',
    );
    anyAlarm(
      'consumerItemFailures',
      'ConsumerItemFailures',
      'consumer-item-failures',
      untypedCount(namespace, METRICS.consumerItemFailures, sum),
      'The consumer left records on the queue after an infrastructure failure (DynamoDB/SQS); SQS redelivers them. ' +
        'Persistent failures end in the DLQ.',
    );
    anyAlarm(
      'sweeperItemFailures',
      'SweeperItemFailures',
      'sweeper-item-failures',
      untypedCount(namespace, METRICS.sweeperItemFailures, sum),
      'The outbox sweeper could not act on some outbox entries this run: their tasks wait for the next run.',
    );
    anyAlarm(
      'schedulerItemFailures',
      'SchedulerItemFailures',
      'scheduler-item-failures',
      untypedCount(namespace, METRICS.schedulerItemFailures, sum),
      'The scheduler could not advance some schedules this tick (DynamoDB or SQS failed for them): the next tick ' +
        'tries again with the same run ids (no duplicate). Persistent failures mean missed runs: read the ' +
        "scheduler's logs (each line names the schedule).",
    );
    // The scheduler runs every minute: one failed tick is covered by the next (the misfire grace
    // is two and a half ticks), two in three minutes mean runs may be missed.
    alarms.schedulerErrors = new cloudwatch.Alarm(this, 'SchedulerErrors', {
      alarmName: `${prefix}-scheduler-errors`,
      alarmDescription:
        'Scheduler ticks failed (crash, timeout or unhandled error) in 2 of the last 3 minutes: schedules may not ' +
        "be creating their runs. Read the scheduler function's logs for the error (a missing permission, the " +
        "schedules table or a queue unavailable); once ticks succeed again, missed times follow each schedule's " +
        'misfire policy.',
      metric: props.scheduler.metricErrors({ period: Duration.minutes(1), statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    // One failed run is the task's business (TasksFailed, the DLQ alarm); runs failing for 15 minutes
    // on end are a schedule that keeps creating runs that fail.
    alarms.scheduledRunsFailed = new cloudwatch.Alarm(this, 'ScheduledRunsFailed', {
      alarmName: `${prefix}-scheduled-runs-failed`,
      alarmDescription:
        'Runs created by schedules failed for good in each of the last three 5-minute periods: a schedule whose ' +
        "runs keep failing. The consumer's log lines for these failures name the schedule and the task: fix the " +
        'task type (or its arguments in the schedule), or pause the schedule until it is fixed.',
      metric: untypedCount(namespace, METRICS.scheduledRunsFailed, sum),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    if (props.limitAlarm === true) {
      // A deferral is flow control doing its job; deferrals in every period for half an hour are
      // a limit that cannot keep up with its tasks, or a provider that keeps pausing it.
      alarms.limitDeferrals = new cloudwatch.Alarm(this, 'LimitSaturated', {
        alarmName: `${prefix}-limit-saturated-30-minutes`,
        alarmDescription:
          'Tasks have been deferred behind a flow-control limit in every 5-minute period for 30 minutes: a limit ' +
          "is saturated (its concurrency or rate is below the load of the types that use it) or paused by a provider's " +
          'Retry-After (LimitPauses on the dashboard). The tasks are not failed: they wait, and their queue ages. ' +
          "A provider's pause is a consumer warning naming the limits; each deferral is a DEBUG line naming its " +
          'limit (logLevel DEBUG). Raise the limit in tasks/limits.ts if the provider allows, or expect the ' +
          'backlog to drain at the limit.',
        metric: new cloudwatch.MathExpression({
          expression: limitDeferralsQuery(namespace),
          period: fiveMinutes,
          label: 'deferrals (all types)',
        }),
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: LIMIT_SATURATED_PERIODS,
        datapointsToAlarm: LIMIT_SATURATED_PERIODS,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    this.alarms = alarms;

    const stack = Stack.of(this);
    // Only CloudWatch, on behalf of this stack's alarms (every alarm name starts with the prefix),
    // may publish (and use the key, when there is one): no other account's or service's alarm can
    // (confused deputy).
    const fromTheseAlarms = {
      StringEquals: { 'aws:SourceAccount': stack.account },
      ArnLike: {
        'aws:SourceArn': `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:${prefix}-*`,
      },
    };
    const cloudwatchAlarms = new iam.ServicePrincipal('cloudwatch.amazonaws.com');
    this.alarmTopicKey = undefined;
    if (props.encryptTopic === true) {
      this.alarmTopicKey = new kms.Key(this, 'AlarmTopicKey', {
        description: `Encrypts the ${prefix} alarm topic (CloudWatch alarms cannot publish to a topic under aws/sns)`,
        enableKeyRotation: true,
        // It protects notifications in flight, nothing stored: it goes with the stack, after KMS's minimum wait.
        removalPolicy: RemovalPolicy.DESTROY,
        pendingWindow: Duration.days(7),
      });
      this.alarmTopicKey.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'CloudWatchAlarmsUseTheKey',
          principals: [cloudwatchAlarms],
          actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          resources: ['*'],
          conditions: fromTheseAlarms,
        }),
      );
    }
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      topicName: `${prefix}-alarms`,
      displayName: `Kaj alarms (${prefix})`,
      ...(this.alarmTopicKey !== undefined ? { masterKey: this.alarmTopicKey } : {}),
      enforceSSL: true,
    });
    if (this.alarmTopicKey === undefined) {
      // Records the decision where cdk-nag looks for it. (The AwsSolutions pack of cdk-nag 3.0.2 has
      // no SNS2 rule any more, so today this acknowledges nothing; older and newer packs may.)
      Validations.of(this.alarmTopic).acknowledge({ id: 'AwsSolutions-SNS2', reason: UNENCRYPTED_ALARM_TOPIC_REASON });
    }
    this.alarmTopic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [cloudwatchAlarms],
        actions: ['sns:Publish'],
        resources: [this.alarmTopic.topicArn],
        conditions: fromTheseAlarms,
      }),
    );
    if (props.alarmEmail !== undefined) {
      this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    }
    const action = new cwActions.SnsAction(this.alarmTopic);
    for (const alarm of Object.values(alarms)) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }

    this.dashboard = props.dashboard === false ? undefined : this.createDashboard(prefix, props);
  }

  private createDashboard(prefix: string, props: ObservabilityProps): cloudwatch.Dashboard {
    const namespace = props.metricsNamespace ?? METRICS.namespace;
    const minute = Duration.minutes(1);
    const perQueue = (
      queues: Readonly<Record<Priority, sqs.IQueue>>,
      metric: (q: sqs.IQueue, p: Priority) => cloudwatch.IMetric,
    ) => PRIORITIES.map((p) => metric(queues[p], p));

    const search = (metricName: string, stat: string) =>
      `SEARCH('Namespace="${namespace}" MetricName="${metricName}"', '${stat}', 60)`;
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
          `\`${namespace}\`, dimension \`${METRICS.taskTypeDimension}\`), aggregated with SEARCH.`,
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
      new cloudwatch.GraphWidget({
        title: 'Tasks succeeded',
        left: taskCount(METRICS.succeeded, 'succeeded'),
        width: 8,
      }),
      new cloudwatch.GraphWidget({ title: 'Tasks retried', left: taskCount(METRICS.retried, 'retried'), width: 8 }),
      new cloudwatch.GraphWidget({ title: 'Tasks failed', left: taskCount(METRICS.failed, 'failed'), width: 8 }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Task duration p50 / p99 (ms, per type)',
        left: [
          new cloudwatch.SearchExpression({
            expression: search(METRICS.duration, 'p50'),
            label: 'p50',
            period: minute,
          }),
          new cloudwatch.SearchExpression({
            expression: search(METRICS.duration, 'p99'),
            label: 'p99',
            period: minute,
          }),
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
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'API 5xx answers',
        left: [props.apiStage.metricServerError({ period: minute, statistic: 'Sum', label: '5xx' })],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Item failures (records / outbox entries / schedules left for a retry)',
        left: [
          untypedCount(namespace, METRICS.consumerItemFailures, {
            period: minute,
            statistic: 'Sum',
            label: 'consumer',
          }),
          untypedCount(namespace, METRICS.sweeperItemFailures, { period: minute, statistic: 'Sum', label: 'sweeper' }),
          untypedCount(namespace, METRICS.schedulerItemFailures, {
            period: minute,
            statistic: 'Sum',
            label: 'scheduler',
          }),
        ],
        width: 12,
      }),
    );
    const lanes = Object.entries(props.lanes ?? {});
    if (lanes.length > 0) {
      const lanePerQueue = (metric: (q: sqs.IQueue, label: string) => cloudwatch.IMetric) =>
        lanes.flatMap(([lane, { queues }]) => PRIORITIES.map((p) => metric(queues[p], `${lane} ${p}`)));
      dashboard.addWidgets(
        new cloudwatch.GraphWidget({
          title: 'Lanes: queue depth (visible messages)',
          left: lanePerQueue((q, label) =>
            q.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum', label }),
          ),
          width: 8,
        }),
        new cloudwatch.GraphWidget({
          title: 'Lanes: oldest message age (s)',
          left: lanePerQueue((q, label) =>
            q.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum', label }),
          ),
          width: 8,
        }),
        new cloudwatch.GraphWidget({
          title: 'Lanes: consumer errors / throttles / concurrency',
          left: lanes.flatMap(([lane, { consumer }]) => [
            consumer.metricErrors({ period: minute, statistic: 'Sum', label: `${lane} errors` }),
            consumer.metricThrottles({ period: minute, statistic: 'Sum', label: `${lane} throttles` }),
          ]),
          right: lanes.map(([lane, { consumer }]) =>
            consumer.metric('ConcurrentExecutions', {
              period: minute,
              statistic: 'Maximum',
              label: `${lane} concurrency`,
            }),
          ),
          width: 8,
        }),
      );
    }
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Scheduler ticks: errors / throttles / duration',
        left: [
          props.scheduler.metricErrors({ period: minute, statistic: 'Sum', label: 'errors' }),
          props.scheduler.metricThrottles({ period: minute, statistic: 'Sum', label: 'throttles' }),
        ],
        right: [props.scheduler.metricDuration({ period: minute, statistic: 'Maximum', label: 'duration (ms)' })],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Scheduled runs: created / failed for good',
        left: [
          ...taskCount(METRICS.scheduledRunsCreated, 'created'),
          untypedCount(namespace, METRICS.scheduledRunsFailed, {
            period: minute,
            statistic: 'Sum',
            label: 'failed for good',
          }),
        ],
        width: 12,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Flow-control limits: tasks deferred / limits paused by a provider (Retry-After)',
        left: taskCount(METRICS.limitDeferrals, 'deferred'),
        right: taskCount(METRICS.limitPauses, 'paused'),
        width: 24,
      }),
    );
    return dashboard;
  }
}
