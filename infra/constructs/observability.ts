import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { addAlarms } from './observability/alarms.js';
import { addDashboard } from './observability/dashboard.js';
import type { ObservabilityProps } from './observability/metrics.js';

export {
  LIMIT_SATURATED_PERIODS,
  type LaneResources,
  limitDeferralsQuery,
  type ObservabilityProps,
  POWERTOOLS_SERVICE_DIMENSION,
} from './observability/metrics.js';

/** Why the alarm topic is not encrypted by default (cdk-nag AwsSolutions-SNS2). */
export const UNENCRYPTED_ALARM_TOPIC_REASON =
  'Alarm notifications carry no task data (alarm names and metric values only). CloudWatch alarms cannot publish ' +
  'to a topic encrypted with the AWS managed key aws/sns, and a customer managed key costs $1/month (up to $3 after ' +
  "rotations) against Kaj's near-zero cost at rest. Set encryptAlarmTopic: true to encrypt it with one.";

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
 * The alarms (observability/alarms.ts) and the dashboard (observability/dashboard.ts) are made by
 * functions that create them in this construct, not by child constructs: their logical ids derive
 * from this construct's path, and a new level would make CloudFormation replace every one.
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
    this.alarms = addAlarms(this, props);

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
    for (const alarm of Object.values(this.alarms)) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }

    this.dashboard = props.dashboard === false ? undefined : addDashboard(this, prefix, props);
  }
}
