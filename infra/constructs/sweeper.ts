import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { grantQueues } from './grants.js';
import { KajFunction } from './kaj-function.js';
import { scheduleRule } from './schedule-rule.js';
import type { TaskTable } from './task-table.js';

export interface OutboxSweeperProps {
  /** The task table: the sweeper may Query its outbox index (no other index) and get and update items. */
  readonly table: TaskTable;
  /** The main queues of every lane (a due task is sent to its type's lane). */
  readonly queues: readonly sqs.IQueue[];
  readonly deadLetterQueues: readonly sqs.IQueue[];
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
  /**
   * How often the sweeper runs.
   * @default events.Schedule.rate(Duration.minutes(1))
   */
  readonly schedule?: events.Schedule;
}

/**
 * The outbox sweeper: every minute, sends the messages the table says are due (delays beyond SQS's
 * 15 minutes, submits whose send was not confirmed, dead letters not yet written).
 *
 * No reserved concurrency (it would fail to deploy on new accounts whose concurrency quota is 10);
 * an overlapping run is harmless because every outbox write is conditional.
 */
export class OutboxSweeper extends Construct {
  public readonly handler: KajFunction;
  public readonly rule: events.Rule;

  constructor(scope: Construct, id: string, props: OutboxSweeperProps) {
    super(scope, id);
    this.handler = new KajFunction(this, 'Handler', {
      entryName: 'sweeper',
      description: 'Kaj sweeper: sends the outbox entries that are due',
      timeout: Duration.seconds(55),
      environment: props.environment,
      logRetention: props.logRetention,
    });
    const role = this.handler.executionRole;
    props.table.grantOutboxQuery(role);
    props.table.grantItems(role, 'TaskTableItems', ['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    grantQueues(role, 'SendDue', ['sqs:SendMessage'], [...props.queues, ...props.deadLetterQueues]);

    // A missed run is covered by the next one a minute later.
    this.rule = scheduleRule(
      this,
      this.handler,
      'Runs the Kaj outbox sweeper',
      props.schedule ?? events.Schedule.rate(Duration.minutes(1)),
    );
  }
}
