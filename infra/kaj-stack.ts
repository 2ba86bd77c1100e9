import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Architecture } from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { lanes as declaredLanes } from '../tasks/lanes.js';
import { limits as declaredLimits } from '../tasks/limits.js';
import { registry as declaredRegistry } from '../tasks/index.js';
import { type LaneDeclarations, type LaneQueueUrls, laneQueueNames } from '../shared/config/lanes.js';
import { METRICS, metricsNamespace } from '../shared/config/metrics.js';
import { producerConfig } from '../shared/config/producer.js';
import { ENV, PRIORITIES, type Priority, resourceNames, type ResourceNames } from '../shared/config/resources.js';
import { functionEnvironment, scheduleRulesEnvironment } from '../shared/config/settings.js';
import type { LimitDeclarations } from '../shared/limit/declaration.js';
import { hasWorkflows } from '../shared/workflow/define.js';
import {
  checkLanes,
  checkLaneEnvironmentSize,
  type KajConfig,
  type KajConfigInput,
  laneSettings,
  resolveConfig,
  scheduleRulesOf,
} from './config.js';
import { TaskApi } from './constructs/api.js';
import { type PriorityMappingSettings, TaskConsumer } from './constructs/consumer.js';
import { IdSecret } from './constructs/id-secret.js';
import { LAMBDA_RUNTIME } from './constructs/kaj-function.js';
import { HistoryTable } from './constructs/history-table.js';
import { LaneQueues } from './constructs/lane-queues.js';
import { LimitTable } from './constructs/limit-table.js';
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
  /**
   * Lanes besides the default one: each gets its own three queues (dead-lettering into the
   * deployment's DLQs) and its own consumer function, sized by the lane. At most nine (SQS lets a
   * DLQ name ten redrive sources: the default lane's queue and one per lane).
   * @default - the lanes of `tasks/lanes.ts`, which the local runtime reads too
   */
  readonly lanes?: LaneDeclarations;
  /**
   * The deployment's flow-control limits. The limits table exists either way (removing the last
   * limit must not orphan a retained table that a later deploy could not create again); with at
   * least one limit the stack also alarms when tasks stay deferred behind one.
   * @default - the limits of `tasks/limits.ts`
   */
  readonly limits?: LimitDeclarations;
  /**
   * The deployment's task types. The stack reads one thing of them: whether any is a workflow
   * (`defineWorkflow`), which needs the history table (the consumers append to it, the API reads it).
   * @default - the registry of `tasks/index.ts`
   */
  readonly registry?: Parameters<typeof hasWorkflows>[0];
}

/**
 * A Kaj deployment: three priority queues with their DLQs, the task table, the schedules table,
 * the limits table, the API, the consumer, the outbox sweeper, the scheduler, and their dashboard
 * and alarms; per declared lane three more queues (sharing the DLQs) and a consumer of its own;
 * and the history table when a task type is a workflow. Resource names derive from the stack name.
 */
export class KajStack extends Stack {
  /** The configuration the stack was built with, defaults applied. */
  public readonly config: KajConfig;
  /** Physical names of the queues and the tables. */
  public readonly names: ResourceNames;
  /** The lanes besides the default one, as declared. */
  public readonly lanes: LaneDeclarations;
  /** The default lane's queues and the deployment's DLQs (shared by every lane). */
  public readonly taskQueues: TaskQueues;
  /** The queues of each lane besides the default one, by lane name. */
  public readonly laneQueues: Readonly<Record<string, LaneQueues>>;
  public readonly taskTable: TaskTable;
  public readonly scheduleTable: ScheduleTable;
  /** The shared state of the flow-control limits. */
  public readonly limitTable: LimitTable;
  /** The histories of workflow runs: present when a task type is a workflow. */
  public readonly historyTable: HistoryTable | undefined;
  /** The key of task ids derived from idempotency keys (the API function's only). */
  public readonly idSecret: IdSecret;
  public readonly api: TaskApi;
  /** The default lane's consumer. */
  public readonly consumer: TaskConsumer;
  /** The consumer of each lane besides the default one, by lane name. */
  public readonly laneConsumers: Readonly<Record<string, TaskConsumer>>;
  public readonly sweeper: OutboxSweeper;
  public readonly scheduler: Scheduler;
  public readonly observability: Observability;
  /**
   * What a producer that submits directly needs (`kaj/client/direct`): region, task table, every
   * lane's queue URLs, the id secret's ARN, as JSON (with CloudFormation tokens until deployed).
   * Also the `ProducerConfig` output. Hand it to a producer in the same app as an environment
   * variable, with {@link grantSubmit} on its role.
   */
  public readonly producerConfig: string;
  /** The main queues of every lane: where a submit sends. */
  private readonly submitQueues: readonly sqs.IQueue[];

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
    const lanes: LaneDeclarations = props.lanes ?? declaredLanes;
    const limits: LimitDeclarations = props.limits ?? declaredLimits;
    checkLanes(lanes);
    // Lanes in a stable order (by name): it orders their queues in policies and DLQ sources.
    const declared = Object.entries(lanes)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, declaration]) => ({
        name,
        queueNames: laneQueueNames(this.stackName, name),
        settings: laneSettings(config, declaration),
      }));
    checkLaneEnvironmentSize(
      this.stackName,
      declared.map((l) => l.name),
    );
    this.config = config;
    this.names = names;
    this.lanes = lanes;
    const retain = config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const logRetention = config.logRetentionDays as logs.RetentionDays;

    this.taskQueues = new TaskQueues(this, 'Queues', {
      names,
      laneQueueNames: Object.fromEntries(declared.map((l) => [l.name, l.queueNames])),
      visibilityTimeout: Duration.seconds(config.queueVisibilityTimeoutSeconds),
      deadLetterRemovalPolicy: retain,
    });
    const withQueues = declared.map((l) => ({
      ...l,
      queues: new LaneQueues(this, `Queues${capitalized(l.name)}`, {
        names: l.queueNames,
        deadLetterQueues: this.taskQueues.deadLetterQueues,
        visibilityTimeout: Duration.seconds(l.settings.visibilityTimeoutSeconds),
      }),
    }));
    this.laneQueues = Object.fromEntries(withQueues.map((l) => [l.name, l.queues]));
    // Every function may send to every lane's main queues: the API and the scheduler submit into a
    // type's lane, the sweeper sends due tasks there, a consumer retries a task in its lane.
    const allMainQueues: sqs.Queue[] = [...this.taskQueues.allQueues, ...withQueues.flatMap((l) => l.queues.allQueues)];
    this.submitQueues = allMainQueues;
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
    this.limitTable = new LimitTable(this, 'Limits', {
      tableName: names.limits,
      deletionProtection: config.deletionProtection,
      removalPolicy: retain,
    });
    // Only with a workflow type: a stack without workflows stays exactly as it was. Kept like the
    // task table: a running workflow's history is the only record of the steps it has done.
    this.historyTable = hasWorkflows(props.registry ?? declaredRegistry)
      ? new HistoryTable(this, 'History', {
          tableName: names.history,
          deletionProtection: config.deletionProtection,
          removalPolicy: retain,
        })
      : undefined;
    // Retained with the table (retainData): a retained table holds task ids derived under it.
    this.idSecret = new IdSecret(this, 'IdSecret', {
      secretName: `${this.stackName}-id-secret`,
      removalPolicy: retain,
    });

    const { queues, deadLetterQueues } = this.taskQueues;
    // Every function gets the same environment: the runtime's inverse of loadFunctionConfig(),
    // plus Powertools' settings. The API function alone adds KAJ_ID_SECRET (TaskApi); the API and
    // the scheduler add KAJ_SCHEDULES_TABLE_NAME (TaskApi, Scheduler), the consumer and the
    // sweeper never touch schedules; the consumers add KAJ_LIMITS_TABLE_NAME (TaskConsumer); with
    // workflows, the consumers and the API add KAJ_HISTORY_TABLE_NAME (TaskConsumer, TaskApi).
    // KAJ_LANE_QUEUE_URLS (only with lanes) is JSON around the queues' URL tokens.
    const perPriority = (f: (p: Priority) => string) =>
      Object.fromEntries(PRIORITIES.map((p) => [p, f(p)])) as Record<Priority, string>;
    const laneQueueUrls: LaneQueueUrls = Object.fromEntries(
      withQueues.map((l) => [l.name, perPriority((p) => l.queues.queues[p].queueUrl)]),
    );
    this.producerConfig = this.toJsonString(
      producerConfig({
        region: this.region,
        tableName: this.taskTable.table.tableName,
        queueUrls: perPriority((p) => queues[p].queueUrl),
        laneQueueUrls,
        idSecretArn: this.idSecret.secret.secretArn,
        retentionDays: config.retentionDays,
      }),
    );
    const environment: Record<string, string> = {
      ...functionEnvironment({
        tableName: this.taskTable.table.tableName,
        laneQueueUrls,
        queueUrls: perPriority((p) => queues[p].queueUrl),
        deadLetterQueueUrls: perPriority((p) => deadLetterQueues[p].queueUrl),
        leaseSeconds: config.leaseSeconds,
        retentionDays: config.retentionDays,
      }),
      [ENV.logLevel]: config.logLevel,
      POWERTOOLS_SERVICE_NAME: METRICS.serviceName,
      POWERTOOLS_METRICS_NAMESPACE: metricsNamespace(this.stackName),
    };

    // The functions that create or check schedules (the API, the scheduler) get the schedule rules.
    const scheduleEnvironment = { ...environment, ...scheduleRulesEnvironment(scheduleRulesOf(config)) };

    this.api = new TaskApi(this, 'Api', {
      apiName: `${this.stackName}-api`,
      table: this.taskTable,
      metricsNamespace: metricsNamespace(this.stackName),
      schedulesTable: this.scheduleTable,
      ...(this.historyTable === undefined ? {} : { historyTable: this.historyTable }),
      queues: allMainQueues,
      environment: scheduleEnvironment,
      idSecret: this.idSecret.secret,
      kind: config.api,
      authMode: config.authMode,
      throttling: config.throttling,
      logRetention,
    });
    const mainQueuesBut = (own: readonly sqs.Queue[]) => allMainQueues.filter((q) => !own.includes(q));
    this.consumer = new TaskConsumer(this, 'Consumer', {
      table: this.taskTable,
      queues,
      deadLetterQueues,
      otherLaneQueues: mainQueuesBut(this.taskQueues.allQueues),
      limitsTable: this.limitTable,
      ...(this.historyTable === undefined ? {} : { historyTable: this.historyTable }),
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
    const laneResources = withQueues.map(({ name, settings, queues: laneQueues }) => ({
      name,
      queues: laneQueues.queues,
      consumer: new TaskConsumer(this, `Consumer${capitalized(name)}`, {
        lane: name,
        table: this.taskTable,
        queues: laneQueues.queues,
        deadLetterQueues,
        otherLaneQueues: mainQueuesBut(laneQueues.allQueues),
        limitsTable: this.limitTable,
        ...(this.historyTable === undefined ? {} : { historyTable: this.historyTable }),
        mappings: settings.mappings,
        environment,
        timeout: Duration.seconds(settings.timeoutSeconds),
        memorySize: settings.memoryMiB,
        architecture: settings.architecture === 'x86_64' ? Architecture.X86_64 : Architecture.ARM_64,
        logRetention,
      }),
    }));
    this.laneConsumers = Object.fromEntries(laneResources.map((l) => [l.name, l.consumer]));
    this.sweeper = new OutboxSweeper(this, 'Sweeper', {
      table: this.taskTable,
      queues: allMainQueues,
      deadLetterQueues: this.taskQueues.allDeadLetterQueues,
      environment,
      logRetention,
    });
    this.scheduler = new Scheduler(this, 'Scheduler', {
      schedulesTable: this.scheduleTable,
      taskTable: this.taskTable,
      queues: allMainQueues,
      environment: scheduleEnvironment,
      logRetention,
    });
    this.observability = new Observability(this, 'Observability', {
      namePrefix: this.stackName,
      metricsNamespace: metricsNamespace(this.stackName),
      queues,
      deadLetterQueues,
      consumer: this.consumer.handler,
      lanes: Object.fromEntries(laneResources.map((l) => [l.name, { queues: l.queues, consumer: l.consumer.handler }])),
      limitAlarm: Object.keys(limits).length > 0,
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

  /**
   * Lets `grantee` (a producer's role: a Lambda function's, an ECS task's) submit directly
   * (`kaj/client/direct`), and read, wait for and cancel its tasks, with exactly what the API
   * function's submit path uses (least privilege, this account):
   * - `dynamodb:PutItem` (the submit), `GetItem` (a replay's existing task where a put's failed
   *   condition returns no item; `get`, `waitFor`, `cancel`) and `UpdateItem` (a replay finishing
   *   an earlier send that failed, which removes the task's outbox entry; `cancel`) on the task
   *   table only: no Query, no Scan, no index, nothing on the other tables;
   * - `sqs:SendMessage` (which also allows `SendMessageBatch`) on the main queues of every lane
   *   and priority; none on the DLQs: a submit never writes a dead letter;
   * - `secretsmanager:GetSecretValue` on the id secret (the HMAC key of task ids).
   * `sts:GetCallerIdentity` (the owner) needs no permission. No KMS grant: the table and the secret
   * use the AWS managed keys `aws/dynamodb`, `aws/secretsmanager`, the queues SSE-SQS, which any
   * principal of the account allowed the service action may use (and which no other account can:
   * producers live in the deployment's account).
   *
   * IAM cannot scope the table to the producer's own tasks (the owner is an attribute, not the
   * key): a direct producer is trusted like the API function, and with the id secret it could
   * derive any owner's idempotent task ids. Grant it to your own services, never to outside callers
   * (they use the API, where the owner is the verified caller).
   */
  public grantSubmit(grantee: iam.IGrantable): iam.Grant {
    const grant = (actions: string[], resourceArns: string[]) =>
      iam.Grant.addToPrincipal({ grantee, actions, resourceArns });
    return grant(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], [this.taskTable.table.tableArn])
      .combine(
        grant(
          ['sqs:SendMessage'],
          this.submitQueues.map((q) => q.queueArn),
        ),
      )
      .combine(grant(['secretsmanager:GetSecretValue'], [this.idSecret.secret.secretArn]));
  }

  private mappingSettings(p: Priority): PriorityMappingSettings {
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
      OUTPUT_KEYS.limitsTableName,
      this.limitTable.table.tableName,
      'DynamoDB limits table (the shared state of the flow-control limits)',
    );
    if (this.historyTable !== undefined) {
      output(
        OUTPUT_KEYS.historyTableName,
        this.historyTable.table.tableName,
        'DynamoDB history table (the recorded steps of workflow runs)',
      );
    }
    output(
      OUTPUT_KEYS.schedulerFunctionName,
      this.scheduler.handler.functionName,
      'Name of the scheduler function (EventBridge runs one tick of it a minute)',
    );
    output(
      OUTPUT_KEYS.producerConfig,
      this.producerConfig,
      'What a producer that submits directly needs (kaj/client/direct), as JSON; grant its role with KajStack.grantSubmit',
    );
    output(
      OUTPUT_KEYS.alarmTopicArn,
      this.observability.alarmTopic.topicArn,
      'SNS topic every alarm notifies (ALARM and OK): subscribe email, chat or paging endpoints to it',
    );
  }

  /** Stack-wide cdk-nag suppressions, each with its reason and as narrow as cdk-nag allows. */
  private addNagSuppressions(): void {
    const functions = [
      this.api.handler,
      this.consumer.handler,
      ...Object.values(this.laneConsumers).map((c) => c.handler),
      this.sweeper.handler,
      this.scheduler.handler,
    ];
    for (const fn of functions) {
      Validations.of(fn).acknowledge({
        id: 'AwsSolutions-L1',
        reason:
          `Pinned to ${LAMBDA_RUNTIME.name} on purpose: the newest Node.js LTS the project builds and tests ` +
          'on; moving to a newer runtime is a deliberate change (one constant in infra/constructs/kaj-function.ts).',
      });
    }
  }
}

/** `cpu` → `Cpu`: lane names in construct ids. */
function capitalized(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}
