/**
 * CloudWatch EMF metric names the functions emit and the dashboard/alarms read.
 * One definition so that `infra/` and the functions cannot drift apart.
 */
export const METRICS = {
  namespace: 'Kaj',
  serviceName: 'kaj',
  /**
   * Dimension present on every metric, valued `serviceName` (Powertools' default dimension, kept so
   * the metrics and the alarms on them stayed the same when shared/service/observability.ts replaced it).
   */
  serviceDimension: 'service',
  /** Dimension present on every task metric. */
  taskTypeDimension: 'TaskType',
  /** Count metrics. */
  submitted: 'TasksSubmitted',
  succeeded: 'TasksSucceeded',
  retried: 'TasksRetried',
  failed: 'TasksFailed',
  cancelled: 'TasksCancelled',
  /** Handler duration, milliseconds. */
  duration: 'TaskDuration',
  /** Messages dropped because their claim failed (duplicates, cancelled, stale). */
  claimsRejected: 'ClaimsRejected',
  /** Writes rejected by the fencing token (a stale worker). */
  fencedWrites: 'FencedWrites',
  /** Outbox entries the sweeper had to send. */
  sweptMessages: 'SweptMessages',
  /** Consumer records left on the queue by an infrastructure failure (not Lambda errors: the batch still answers). */
  consumerItemFailures: 'ConsumerItemFailures',
  /** Outbox entries the sweeper could not act on this run. */
  sweeperItemFailures: 'SweeperItemFailures',
  /** Tasks created by a schedule that failed for good (no per-schedule dimension: the log line names it). */
  scheduledRunsFailed: 'ScheduledRunsFailed',
  /** Runs the scheduler created (task type dimension). */
  scheduledRunsCreated: 'ScheduledRunsCreated',
  /** Schedules a tick could not act on (store or queue failures; retried at the next tick). */
  schedulerItemFailures: 'SchedulerItemFailures',
  /** Messages deferred because a flow-control limit refused them (they come back later; not a failure). */
  limitDeferrals: 'LimitDeferrals',
  /** Limits paused for every worker because a provider answered with Retry-After (`learnRetryAfter`). */
  limitPauses: 'LimitPauses',
} as const;

/**
 * The CloudWatch namespace of one deployment's metrics: `Kaj/<stack name>`. Every metric, alarm,
 * dashboard line and metric filter of a stack is in its own namespace, so two stacks in one
 * account and region (staging and production) never count each other's tasks. Without a stack
 * (the local runtime, tests) the bare `Kaj`.
 */
export function metricsNamespace(stackName?: string): string {
  return stackName === undefined ? METRICS.namespace : `${METRICS.namespace}/${stackName}`;
}
