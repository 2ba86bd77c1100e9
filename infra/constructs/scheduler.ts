import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULTS, ENV } from '../../shared/config/resources.js';
import { grantQueues } from './grants.js';
import { KajFunction } from './kaj-function.js';
import { scheduleRule } from './schedule-rule.js';
import type { ScheduleTable } from './schedule-table.js';
import type { TaskTable } from './task-table.js';

export interface SchedulerProps {
  /**
   * The schedules table: the function reads and writes whole schedules there, and may Query its
   * `due` index (no other index).
   */
  readonly schedulesTable: ScheduleTable;
  /** The task table: the scheduler creates the runs' tasks there (and cancels one to `replace` it). */
  readonly taskTable: TaskTable;
  /** The main queues the runs are sent to: the three priority queues of every lane (not the DLQs). */
  readonly queues: readonly sqs.IQueue[];
  /**
   * Environment shared by every function (`functionEnvironment()` plus Powertools' settings);
   * `KAJ_SCHEDULES_TABLE_NAME` is added here.
   */
  readonly environment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
  /**
   * How often the tick runs. Each tick creates the runs due before the next one, so a schedule
   * other than `DEFAULTS.scheduleTickSeconds` (what the tick assumes) makes runs late or early.
   * @default events.Schedule.rate(Duration.seconds(DEFAULTS.scheduleTickSeconds)) - `rate(1 minute)`
   */
  readonly schedule?: events.Schedule;
  /**
   * Memory in MiB, and with it the CPU share (1,769 MiB = one vCPU). A fire costs ≈ 1.6 ms of CPU
   * (four AWS requests through the SDK; `npm run bench:schedules`), so 10,000 schedules due in the
   * same minute need ≈ 16 s of one vCPU: at 1,024 MiB (0.58 vCPU) one tick hands them all over
   * within its budget; at 256 MiB it would take three ticks. An idle tick is ≈ 10 ms either way.
   * @default 1024
   */
  readonly memorySize?: number;
}

/**
 * The scheduler: every minute, a tick creates the runs of the schedules due before the next tick
 * (tasks in the task table, sent to their queue with `DelaySeconds` for their exact second), and
 * at a cold start it syncs the schedules declared in code into the schedules table.
 *
 * No reserved concurrency (it would fail to deploy on new accounts whose concurrency quota is 10):
 * two ticks that overlap (EventBridge delivers at least once and may start a tick late) are
 * harmless by design: every schedule write is conditional on the version it read, and a run's task
 * id is derived by the scheduler itself, so a run two ticks both create exists once.
 */
export class Scheduler extends Construct {
  public readonly handler: KajFunction;
  public readonly rule: events.Rule;

  constructor(scope: Construct, id: string, props: SchedulerProps) {
    super(scope, id);
    this.handler = new KajFunction(this, 'Handler', {
      entryName: 'scheduler',
      description: 'Kaj scheduler: creates the runs of the schedules due before the next tick',
      timeout: Duration.seconds(55),
      memorySize: props.memorySize ?? 1024,
      environment: { ...props.environment, [ENV.schedulesTableName]: props.schedulesTable.table.tableName },
      logRetention: props.logRetention,
    });
    const role = this.handler.executionRole;
    props.schedulesTable.grantDueQuery(role);
    // GetItem: the tick reads each due schedule (the index projects keys only); PutItem: its
    // conditional writes; Scan and DeleteItem: the cold start's sync of the schedules declared
    // in code (a schedule removed from the code is deleted).
    props.schedulesTable.grantItems(role, 'ScheduleTableItems', [
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:DeleteItem',
      'dynamodb:Scan',
    ]);
    // PutItem creates a run's task; GetItem and UpdateItem cancel the running one `replace` replaces.
    props.taskTable.grantItems(role, 'TaskTableItems', ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    grantQueues(role, 'SendRuns', ['sqs:SendMessage'], props.queues);

    // A missed tick is covered by the next one (misfire grace).
    this.rule = scheduleRule(
      this,
      this.handler,
      'Runs the Kaj scheduler tick',
      props.schedule ?? events.Schedule.rate(Duration.seconds(DEFAULTS.scheduleTickSeconds)),
    );
  }
}
