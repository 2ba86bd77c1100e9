import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { METRICS } from '../../../shared/config/metrics.js';
import { PRIORITIES } from '../../../shared/config/resources.js';
import { cap, LIMIT_SATURATED_PERIODS, limitDeferralsQuery, type ObservabilityProps, untypedCount } from './metrics.js';

/**
 * The alarms of a Kaj deployment, created in `scope` (the `Observability` construct: their
 * logical ids derive from it), by a stable key (e.g. `dlqNotEmpty-high`). They notify nobody yet:
 * the construct adds the topic's actions to each.
 */
export function addAlarms(scope: Construct, props: ObservabilityProps): Record<string, cloudwatch.Alarm> {
  const prefix = props.namePrefix;
  const namespace = props.metricsNamespace ?? METRICS.namespace;
  const fiveMinutes = Duration.minutes(5);
  const alarms: Record<string, cloudwatch.Alarm> = {};
  /** Fires when a main queue's oldest message is older than the threshold. */
  const oldestAge = (key: string, cid: string, name: string, queue: sqs.IQueue, what: string) => {
    alarms[key] = new cloudwatch.Alarm(scope, cid, {
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
    alarms[`dlqNotEmpty-${p}`] = new cloudwatch.Alarm(scope, `${cap(p)}DlqNotEmpty`, {
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
    alarms[key] = new cloudwatch.Alarm(scope, cid, {
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
  alarms.schedulerErrors = new cloudwatch.Alarm(scope, 'SchedulerErrors', {
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
  alarms.scheduledRunsFailed = new cloudwatch.Alarm(scope, 'ScheduledRunsFailed', {
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
    alarms.limitDeferrals = new cloudwatch.Alarm(scope, 'LimitSaturated', {
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
  return alarms;
}
