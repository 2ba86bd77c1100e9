import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { METRICS } from '../../../shared/config/metrics.js';
import { PRIORITIES, type Priority } from '../../../shared/config/resources.js';
import { type ObservabilityProps, untypedCount } from './metrics.js';

/**
 * The CloudWatch dashboard of a Kaj deployment, named `prefix`, created in `scope` (the
 * `Observability` construct: its logical id derives from it). Task metrics carry a `TaskType`
 * dimension; a dashboard can only aggregate across unknown dimension values with a SEARCH
 * expression, so the task graphs use SEARCH (one line per type, plus their SUM).
 */
export function addDashboard(scope: Construct, prefix: string, props: ObservabilityProps): cloudwatch.Dashboard {
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

  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
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
