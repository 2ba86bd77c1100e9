import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { METRICS } from '../shared/config/metrics.js';
import { ENV, PRIORITIES, type Priority, resourceNames, type ResourceNames } from '../shared/config/resources.js';
import { functionEnvironment } from '../shared/config/settings.js';
import { type KajConfig, type KajConfigInput, resolveConfig } from './config.js';
import { TaskApi } from './constructs/api.js';
import { TaskConsumer } from './constructs/consumer.js';
import { IdSecret } from './constructs/id-secret.js';
import { LAMBDA_RUNTIME } from './constructs/kaj-function.js';
import { Observability } from './constructs/observability.js';
import { ScheduleTable } from './constructs/schedule-table.js';
import { Scheduler } from './constructs/scheduler.js';
import { OutboxSweeper } from './constructs/sweeper.js';
import { TaskQueues } from './constructs/task-queues.js';
import { TaskTable } from './constructs/task-table.js';
import { InvalidConfigError } from './errors.js';
import { OUTPUT_KEYS } from './outputs.js';

export interface KajStackProps extends StackProps {
  /**
   * Settings that override the `kaj:config` context (cdk.json, `-c kaj:<key>=...`), key by key.
   * @default - the context's settings, then the built-in defaults (see docs/deploy.md)
   */
  readonly config?: KajConfigInput;
}

/**
 * A Kaj deployment: three priority queues with their DLQs, the task table, the schedules table,
 * the API, the consumer, the outbox sweeper, the scheduler, and their dashboard and alarms.
 * Resource names derive from the stack name.
 */
export class KajStack extends Stack {
  /** The configuration the stack was built with, defaults applied. */
  public readonly config: KajConfig;
  /** Physical names of the queues and the tables. */
  public readonly names: ResourceNames;
  public readonly taskQueues: TaskQueues;
  public readonly taskTable: TaskTable;
  public readonly scheduleTable: ScheduleTable;
  /** The key of task ids derived from idempotency keys (the API function's only). */
  public readonly idSecret: IdSecret;
  public readonly api: TaskApi;
  public readonly consumer: TaskConsumer;
  public readonly sweeper: OutboxSweeper;
  public readonly scheduler: Scheduler;
  public readonly observability: Observability;

  constructor(scope: Construct, id: string, props: KajStackProps = {}) {
    // Resolved before super(): the stack name comes from the configuration.
    const config = resolveConfig(scope.node, props.config);
    const stackName = props.stackName ?? config.stackName;
    super(scope, id, {
      description: 'Kaj: serverless background-task queue (API Gateway, SQS, Lambda, DynamoDB)',
      ...props,
      stackName,
    });
    let names: ResourceNames;
    try {
      names = resourceNames(this.stackName);
    } catch (e) {
      throw new InvalidConfigError('stackName', [{ key: 'stackName', message: (e as Error).message }]);
    }
    this.config = config;
    this.names = names;
    const retain = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const logRetention = config.logRetentionDays as logs.RetentionDays;

    this.taskQueues = new TaskQueues(this, 'Queues', {
      names,
      visibilityTimeout: Duration.seconds(config.queueVisibilityTimeoutSeconds),
      deadLetterRemovalPolicy: retain,
    });
    this.taskTable = new TaskTable(this, 'Tasks', {
      tableName: names.table,
      deletionProtection: config.deletionProtection,
      removalPolicy: retain,
      outboxIndexProjection: config.outboxIndexProjection,
    });
    // Kept exactly like the task table: schedules made through the API exist nowhere else.
    this.scheduleTable = new ScheduleTable(this, 'Schedules', {
      tableName: names.schedules,
      deletionProtection: config.deletionProtection,
      removalPolicy: retain,
    });
    // Retained with the table (retainData): a retained table holds task ids derived under it.
    this.idSecret = new IdSecret(this, 'IdSecret', {
      secretName: `${this.stackName}-id-secret`,
      removalPolicy: retain,
    });

    const { queues, deadLetterQueues } = this.taskQueues;
    // Every function gets the same environment: the runtime's inverse of loadFunctionConfig(),
    // plus Powertools' settings. The API function alone adds KAJ_ID_SECRET (TaskApi); the API and
    // the scheduler add KAJ_SCHEDULES_TABLE_NAME (TaskApi, Scheduler), the consumer and the
    // sweeper never touch schedules.
    const perPriority = (f: (p: Priority) => string) =>
      Object.fromEntries(PRIORITIES.map((p) => [p, f(p)])) as Record<Priority, string>;
    const environment: Record<string, string> = {
      ...functionEnvironment({
        tableName: this.taskTable.table.tableName,
        queueUrls: perPriority((p) => queues[p].queueUrl),
        deadLetterQueueUrls: perPriority((p) => deadLetterQueues[p].queueUrl),
        leaseSeconds: config.leaseSeconds,
        retentionDays: config.retentionDays,
      }),
      [ENV.logLevel]: config.logLevel,
      POWERTOOLS_SERVICE_NAME: METRICS.serviceName,
      POWERTOOLS_METRICS_NAMESPACE: METRICS.namespace,
    };

    this.api = new TaskApi(this, 'Api', {
      apiName: `${this.stackName}-api`,
      table: this.taskTable.table,
      schedulesTable: this.scheduleTable.table,
      queues: this.taskQueues.allQueues,
      environment,
      idSecret: this.idSecret.secret,
      authMode: config.authMode,
      throttling: config.throttling,
      logRetention,
    });
    this.consumer = new TaskConsumer(this, 'Consumer', {
      table: this.taskTable.table,
      queues,
      deadLetterQueues,
      mappings: {
        high: this.mappingSettings('high'),
        normal: this.mappingSettings('normal'),
        low: this.mappingSettings('low'),
      },
      environment,
      timeout: Duration.seconds(config.consumerTimeoutSeconds),
      memorySize: config.consumerMemoryMiB,
      logRetention,
    });
    this.sweeper = new OutboxSweeper(this, 'Sweeper', {
      table: this.taskTable.table,
      outboxIndexArn: this.taskTable.outboxIndexArn,
      queues: this.taskQueues.allQueues,
      deadLetterQueues: this.taskQueues.allDeadLetterQueues,
      environment,
      logRetention,
    });
    this.scheduler = new Scheduler(this, 'Scheduler', {
      schedulesTable: this.scheduleTable.table,
      dueIndexArn: this.scheduleTable.dueIndexArn,
      taskTable: this.taskTable.table,
      queues: this.taskQueues.allQueues,
      environment,
      logRetention,
    });
    this.observability = new Observability(this, 'Observability', {
      namePrefix: this.stackName,
      queues,
      deadLetterQueues,
      consumer: this.consumer.handler,
      api: this.api.handler,
      apiStage: this.api.stage,
      sweeper: this.sweeper.handler,
      scheduler: this.scheduler.handler,
      oldestMessageAgeThreshold: Duration.seconds(config.oldestMessageAgeAlarmSeconds),
      ...(config.alarmEmail !== undefined ? { alarmEmail: config.alarmEmail } : {}),
      dashboard: config.dashboard,
      encryptTopic: config.encryptAlarmTopic,
    });

    this.addOutputs();
    this.addNagSuppressions();
  }

  private mappingSettings(p: Priority) {
    return {
      maxConcurrency: this.config.concurrency[p],
      batchSize: this.config.batchSize[p],
      maxBatchingWindowSeconds: this.config.maxBatchingWindowSeconds[p],
    };
  }

  private addOutputs(): void {
    const output = (key: string, value: string, description: string) => {
      const o = new CfnOutput(this, key, { value, description });
      o.overrideLogicalId(key);
    };
    output(OUTPUT_KEYS.apiUrl, this.api.url, 'Base URL of the task API (routes under /api/v1/tasks)');
    output(OUTPUT_KEYS.tableName, this.taskTable.table.tableName, 'DynamoDB task table');
    for (const p of PRIORITIES) {
      const q = this.taskQueues.queues[p];
      const dlq = this.taskQueues.deadLetterQueues[p];
      output(OUTPUT_KEYS.queueUrl[p], q.queueUrl, `URL of the ${p} priority queue`);
      output(OUTPUT_KEYS.queueArn[p], q.queueArn, `ARN of the ${p} priority queue`);
      output(OUTPUT_KEYS.dlqUrl[p], dlq.queueUrl, `URL of the ${p} dead-letter queue`);
      output(OUTPUT_KEYS.dlqArn[p], dlq.queueArn, `ARN of the ${p} dead-letter queue`);
    }
    output(
      OUTPUT_KEYS.schedulesTableName,
      this.scheduleTable.table.tableName,
      'DynamoDB schedules table (one item per schedule)',
    );
    output(
      OUTPUT_KEYS.schedulerFunctionName,
      this.scheduler.handler.functionName,
      'Name of the scheduler function (EventBridge runs one tick of it a minute)',
    );
    output(
      OUTPUT_KEYS.alarmTopicArn,
      this.observability.alarmTopic.topicArn,
      'SNS topic every alarm notifies (ALARM and OK): subscribe email, chat or paging endpoints to it',
    );
  }

  /** Stack-wide cdk-nag suppressions, each with its reason and as narrow as cdk-nag allows. */
  private addNagSuppressions(): void {
    for (const fn of [this.api.handler, this.consumer.handler, this.sweeper.handler, this.scheduler.handler]) {
      Validations.of(fn).acknowledge({
        id: 'AwsSolutions-L1',
        reason:
          `Pinned to ${LAMBDA_RUNTIME.name} on purpose: the newest Node.js LTS the project builds and tests ` +
          'on; moving to a newer runtime is a deliberate change (one constant in infra/constructs/kaj-function.ts).',
      });
    }
  }
}
