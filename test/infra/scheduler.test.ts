/**
 * Schedules on AWS, read from the synthesized template: the schedules table and its `due` index,
 * the scheduler function with its EventBridge rule, exactly the permissions it and the API get
 * for schedules, their environment, the two scheduler alarms, the dashboard and the outputs.
 *
 * The stacks are synthesized without bundling the functions (their code does not matter here;
 * test/infra/kaj-stack.test.ts synthesizes the bundled stack, and `npm run synth` bundles all four).
 */
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScheduleTable } from '../../infra/constructs/schedule-table.js';
import { Scheduler } from '../../infra/constructs/scheduler.js';
import { TaskTable } from '../../infra/constructs/task-table.js';
import { ALL_OUTPUT_KEYS, OUTPUT_KEYS, parseStackOutputs } from '../../infra/outputs.js';
import { METRICS, metricsNamespace } from '../../shared/config/metrics.js';
import { ENV, PRIORITIES, SCHEDULE_TABLE_SCHEMA, resourceNames } from '../../shared/config/resources.js';
import { createMetrics } from '../../shared/service/observability.js';
import { type CfnResourceJson, type SynthesizedKaj, synthKaj } from './synth.js';
import {
  acknowledgment,
  alarmProps,
  emfDirectives,
  getAtt,
  nagFindings,
  NO_BUNDLING,
  normalized,
  ofType,
  retainedTable,
  roleStatements,
} from './template.js';

const SYNTH_TIMEOUT = 120_000;

let base: SynthesizedKaj;
let variant: SynthesizedKaj;

beforeAll(() => {
  base = synthKaj(undefined, NO_BUNDLING);
  variant = synthKaj(
    {
      stackName: 'kaj-variant',
      retainData: false,
      deletionProtection: false,
      dashboard: false,
      logLevel: 'debug',
      scheduleMinIntervalSeconds: 1,
      scheduleAllowSecondsField: true,
      scheduleMaxPerOwner: 5,
    },
    NO_BUNDLING,
  );
}, SYNTH_TIMEOUT);

afterAll(() => {
  base?.dispose();
  variant?.dispose();
});

const envOf = (s: SynthesizedKaj, fn: Parameters<SynthesizedKaj['logicalId']>[0]) =>
  s.resources[s.logicalId(fn)]!.Properties.Environment.Variables as Record<string, unknown>;

describe('schedules table', () => {
  it('named <stack>-schedules, key `name`, on-demand, PITR, SSE with the AWS managed key, deletion protection, retained, no TTL', () => {
    const table = retainedTable(base, base.stack.scheduleTable.table);
    expect(table.Properties.TableName).toBe(resourceNames('kaj').schedules);
    expect(table.Properties.TableName).toBe('kaj-schedules');
    expect(table.Properties.KeySchema).toEqual([{ AttributeName: 'name', KeyType: 'HASH' }]);
    expect(SCHEDULE_TABLE_SCHEMA.partitionKey).toBe('name');
    expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table.Properties.ProvisionedThroughput).toBeUndefined();
    expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    // SSEEnabled without a key: the AWS managed key aws/dynamodb (not the AWS owned default).
    expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: true });
    expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table.Properties.TimeToLiveSpecification).toBeUndefined();
    expect(table.Properties.StreamSpecification).toBeUndefined();
  });

  it('one sparse GSI `due` on (due_pk S, due_at N), projecting what SCHEDULE_TABLE_SCHEMA says (keys only)', () => {
    const table = base.resources[base.logicalId(base.stack.scheduleTable.table)]!;
    expect(table.Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'due',
        KeySchema: [
          { AttributeName: 'due_pk', KeyType: 'HASH' },
          { AttributeName: 'due_at', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: SCHEDULE_TABLE_SCHEMA.dueIndex.projection },
      },
    ]);
    // The tick reads each due schedule itself (shared/config/resources.ts): keys are all it needs.
    expect(SCHEDULE_TABLE_SCHEMA.dueIndex).toMatchObject({
      name: 'due',
      partitionKey: 'due_pk',
      sortKey: 'due_at',
      projection: 'KEYS_ONLY',
    });
    expect(
      [...(table.Properties.AttributeDefinitions as { AttributeName: string }[])].sort((a, b) =>
        a.AttributeName.localeCompare(b.AttributeName),
      ),
    ).toEqual([
      { AttributeName: 'due_at', AttributeType: 'N' },
      { AttributeName: 'due_pk', AttributeType: 'S' },
      { AttributeName: 'name', AttributeType: 'S' },
    ]);
  });

  it('deletion protection and removal follow the task table (deletionProtection, retainData)', () => {
    for (const [s, policy, protection] of [
      [base, 'Retain', true],
      [variant, 'Delete', false],
    ] as const) {
      const schedules = s.resources[s.logicalId(s.stack.scheduleTable.table)]!;
      const tasks = s.resources[s.logicalId(s.stack.taskTable.table)]!;
      expect(schedules.DeletionPolicy).toBe(policy);
      expect(schedules.UpdateReplacePolicy).toBe(policy);
      expect(schedules.Properties.DeletionProtectionEnabled).toBe(protection);
      expect(schedules.DeletionPolicy).toBe(tasks.DeletionPolicy);
      expect(schedules.UpdateReplacePolicy).toBe(tasks.UpdateReplacePolicy);
      expect(schedules.Properties.DeletionProtectionEnabled).toBe(tasks.Properties.DeletionProtectionEnabled);
    }
    expect(variant.resources[variant.logicalId(variant.stack.scheduleTable.table)]!.Properties.TableName).toBe(
      'kaj-variant-schedules',
    );
  });

  it('the construct alone defaults to deletion protection and RETAIN', () => {
    const stack = new Stack(new App(), 'ScheduleTableTest');
    const construct = new ScheduleTable(stack, 'Schedules', { tableName: 'x-schedules' });
    const [table] = Object.values(Template.fromStack(stack).findResources('AWS::DynamoDB::Table'));
    expect(table?.DeletionPolicy).toBe('Retain');
    expect(table?.Properties.DeletionProtectionEnabled).toBe(true);
    expect(stack.resolve(construct.dueIndexArn)).toEqual({
      'Fn::Join': [
        '',
        [getAtt(stack.resolve((construct.table.node.defaultChild as dynamodb.CfnTable).logicalId)), '/index/due'],
      ],
    });
  });
});

describe('scheduler function', () => {
  it('Node.js 22 on arm64, 55 s timeout, its description, no reserved concurrency, JSON logs to its own group', () => {
    for (const [s, level] of [
      [base, 'INFO'],
      [variant, 'DEBUG'],
    ] as const) {
      const fn = s.stack.scheduler.handler;
      const props = s.resources[s.logicalId(fn)]!.Properties;
      expect(props.Runtime).toBe('nodejs22.x');
      expect(props.Architectures).toEqual(['arm64']);
      expect(props.Handler).toBe('index.handler');
      expect(props.Timeout).toBe(55);
      expect(props.MemorySize).toBe(1024);
      expect(props.Description).toBe('Kaj scheduler: creates the runs of the schedules due before the next tick');
      expect(props.ReservedConcurrentExecutions).toBeUndefined();
      expect(props.LoggingConfig).toEqual({
        LogFormat: 'JSON',
        ApplicationLogLevel: level,
        SystemLogLevel: 'WARN',
        LogGroup: { Ref: s.logicalId(fn.functionLogGroup) },
      });
      expect(s.resources[s.logicalId(fn.functionLogGroup)]!.Properties.RetentionInDays).toBe(30);
    }
  });

  it('runs every minute from EventBridge, without retries, and EventBridge may invoke it', () => {
    const fnId = base.logicalId(base.stack.scheduler.handler);
    const ruleId = base.logicalId(base.stack.scheduler.rule);
    const rule = base.resources[ruleId]!;
    expect(rule.Type).toBe('AWS::Events::Rule');
    expect(rule.Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(rule.Properties.State).toBe('ENABLED');
    expect(rule.Properties.Targets).toEqual([
      {
        Id: expect.any(String),
        Arn: getAtt(fnId),
        RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
      },
    ]);
    base.template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: getAtt(fnId),
      SourceArn: getAtt(ruleId),
    });
    // Its own rule, beside the sweeper's.
    expect(ruleId).not.toBe(base.logicalId(base.stack.sweeper.rule));
    expect(ofType(base, 'AWS::Events::Rule')).toHaveLength(2);
  });

  it('the tick period is configurable (the `schedule` prop)', () => {
    const stack = new Stack(new App({ context: NO_BUNDLING }), 'SchedulerTest');
    const scheduler = new Scheduler(stack, 'Scheduler', {
      schedulesTable: new ScheduleTable(stack, 'Schedules', { tableName: 't-schedules' }),
      taskTable: new TaskTable(stack, 'Tasks', { tableName: 't-tasks' }),
      queues: [new sqs.Queue(stack, 'Q')],
      environment: {},
      logRetention: logs.RetentionDays.ONE_DAY,
      schedule: events.Schedule.rate(Duration.minutes(5)),
    });
    const rules = Template.fromStack(stack).findResources('AWS::Events::Rule');
    expect(Object.values(rules).map((r) => r.Properties.ScheduleExpression)).toEqual(['rate(5 minutes)']);
    expect(scheduler.rule).toBeDefined();
  });

  it("the environment of every function plus KAJ_SCHEDULES_TABLE_NAME and the deployment's schedule rules; no ID secret", () => {
    const rules = {
      base: { min: '60', seconds: 'false', max: '1000' },
      variant: { min: '1', seconds: 'true', max: '5' },
    };
    for (const [s, r] of [
      [base, rules.base],
      [variant, rules.variant],
    ] as const) {
      const env = envOf(s, s.stack.scheduler.handler);
      const sweeperEnv = envOf(s, s.stack.sweeper.handler);
      expect(env).toEqual({
        ...sweeperEnv,
        [ENV.schedulesTableName]: { Ref: s.logicalId(s.stack.scheduleTable.table) },
        [ENV.scheduleMinIntervalSeconds]: r.min,
        [ENV.scheduleAllowSecondsField]: r.seconds,
        [ENV.scheduleMaxPerOwner]: r.max,
      });
      // The API checks the rules when a schedule is made; the consumers and the sweeper never need them.
      expect(envOf(s, s.stack.api.handler)).toMatchObject({
        [ENV.scheduleMinIntervalSeconds]: r.min,
        [ENV.scheduleAllowSecondsField]: r.seconds,
        [ENV.scheduleMaxPerOwner]: r.max,
      });
      for (const other of [sweeperEnv, envOf(s, s.stack.consumer.handler)]) {
        expect(Object.keys(other).filter((k) => k.startsWith('KAJ_SCHEDULE_'))).toEqual([]);
      }
      expect(env[ENV.tableName]).toEqual({ Ref: s.logicalId(s.stack.taskTable.table) });
      for (const p of PRIORITIES) {
        expect(env[ENV.queueUrl(p)]).toEqual({ Ref: s.logicalId(s.stack.taskQueues.queues[p]) });
      }
      expect(env).not.toHaveProperty(ENV.idSecret);
      expect(JSON.stringify(s.resources[s.logicalId(s.stack.scheduler.handler)])).not.toContain('secretsmanager');
    }
  });

  it('cdk-nag L1 (runtime) is acknowledged on it with the same reason as the other functions', () => {
    const ack = (fn: IConstruct) => acknowledgment(fn, 'AwsSolutions-L1');
    const reason = ack(base.stack.scheduler.handler);
    expect(reason).toMatch(/nodejs22\.x/);
    expect(reason).toBe(ack(base.stack.sweeper.handler));
  });
});

describe('least privilege (schedules)', () => {
  it("the scheduler's statements, exactly: Query the due index; get/put/scan schedules; get/put/update tasks; send to every lane's three queues", () => {
    const fn = base.stack.scheduler.handler;
    const schedulesId = base.logicalId(base.stack.scheduleTable.table);
    const tasksId = base.logicalId(base.stack.taskTable.table);
    expect(roleStatements(base, base.logicalId(fn)).map(normalized)).toEqual(
      [
        {
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: getAtt(base.logicalId(fn.functionLogGroup)),
        },
        {
          Sid: 'QueryDue',
          Effect: 'Allow',
          Action: 'dynamodb:Query',
          Resource: { 'Fn::Join': ['', [getAtt(schedulesId), '/index/due']] },
        },
        {
          Sid: 'ScheduleTableItems',
          Effect: 'Allow',
          Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:Scan'],
          Resource: getAtt(schedulesId),
        },
        {
          Sid: 'TaskTableItems',
          Effect: 'Allow',
          Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          Resource: getAtt(tasksId),
        },
        {
          Sid: 'SendRuns',
          Effect: 'Allow',
          Action: 'sqs:SendMessage',
          Resource: [base.stack.taskQueues, ...Object.values(base.stack.laneQueues)].flatMap((lane) =>
            PRIORITIES.map((p) => getAtt(base.logicalId(lane.queues[p]))),
          ),
        },
      ].map(normalized),
    );
  });

  it("the API additionally gets, puts, deletes, updates (its callers' count items) and scans schedules (one statement, the schedules table only), and their table name", () => {
    const id = base.logicalId(base.stack.api.handler);
    const schedulesId = base.logicalId(base.stack.scheduleTable.table);
    const statements = roleStatements(base, id);
    expect(statements.filter((st) => st.Sid === 'ScheduleTableItems').map(normalized)).toEqual([
      normalized({
        Sid: 'ScheduleTableItems',
        Effect: 'Allow',
        Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:UpdateItem', 'dynamodb:Scan'],
        Resource: getAtt(schedulesId),
      }),
    ]);
    // Nothing else of the API's names the schedules table, and its Queries are the task listing's (list and outbox indexes).
    const others = statements.filter((st) => st.Sid !== 'ScheduleTableItems');
    expect(JSON.stringify(others)).not.toContain(schedulesId);
    const queries = statements.filter((st) => JSON.stringify(st).includes('/index/'));
    expect(queries.map((st) => st.Sid)).toEqual(['TaskListingQuery']);
    expect(envOf(base, base.stack.api.handler)[ENV.schedulesTableName]).toEqual({ Ref: schedulesId });
  });

  it('the consumer and the sweeper get nothing for schedules: no permission, no table name', () => {
    for (const s of [base, variant]) {
      const schedulesId = s.logicalId(s.stack.scheduleTable.table);
      for (const fn of [s.stack.consumer.handler, s.stack.sweeper.handler]) {
        expect(JSON.stringify(roleStatements(s, s.logicalId(fn)))).not.toContain(schedulesId);
        expect(envOf(s, fn)).not.toHaveProperty(ENV.schedulesTableName);
      }
    }
  });

  it('no schedule statement has a wildcard action or resource', () => {
    for (const fn of [base.stack.scheduler.handler, base.stack.api.handler]) {
      for (const st of roleStatements(base, base.logicalId(fn))) {
        for (const a of Array.isArray(st.Action) ? st.Action : [st.Action]) expect(a).not.toContain('*');
        for (const r of Array.isArray(st.Resource) ? st.Resource : [st.Resource]) {
          expect(JSON.stringify(r)).not.toContain('*');
        }
      }
    }
  });
});

describe('scheduler alarms', () => {
  const alarm = alarmProps;

  it('a tick that errors: scheduler Errors >= 1 in 2 of 3 one-minute periods, to the alarm topic on ALARM and OK', () => {
    for (const s of [base, variant]) {
      const topic = { Ref: s.logicalId(s.stack.observability.alarmTopic) };
      const a = alarm(s, 'schedulerErrors');
      expect(a).toMatchObject({
        AlarmName: `${s.stack.stackName}-scheduler-errors`,
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: s.logicalId(s.stack.scheduler.handler) } }],
        Statistic: 'Sum',
        Period: 60,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 2,
        TreatMissingData: 'notBreaching',
        AlarmActions: [topic],
        OKActions: [topic],
      });
      expect(a.AlarmDescription).toMatch(/logs/);
    }
  });

  it('a schedule whose runs keep failing: ScheduledRunsFailed >= 1 in 3 consecutive 5-minute periods', () => {
    for (const s of [base, variant]) {
      const topic = { Ref: s.logicalId(s.stack.observability.alarmTopic) };
      const a = alarm(s, 'scheduledRunsFailed');
      expect(a).toMatchObject({
        AlarmName: `${s.stack.stackName}-scheduled-runs-failed`,
        Namespace: metricsNamespace(s.stack.stackName),
        MetricName: 'ScheduledRunsFailed',
        Dimensions: [{ Name: METRICS.serviceDimension, Value: METRICS.serviceName }],
        Statistic: 'Sum',
        Period: 300,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
        TreatMissingData: 'notBreaching',
        AlarmActions: [topic],
        OKActions: [topic],
      });
      expect(a.AlarmDescription).toMatch(/pause the schedule/);
    }
  });

  it('schedules a tick could not advance: SchedulerItemFailures > 0 in 5 minutes', () => {
    const a = alarm(base, 'schedulerItemFailures');
    expect(a).toMatchObject({
      AlarmName: `${base.stack.stackName}-scheduler-item-failures`,
      Namespace: metricsNamespace(base.stack.stackName),
      MetricName: 'SchedulerItemFailures',
      Dimensions: [{ Name: METRICS.serviceDimension, Value: METRICS.serviceName }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
    });
  });

  it('the ScheduledRunsFailed alarm reads exactly the metric createMetrics emits for it (beside a typed TasksFailed)', () => {
    const lines: string[] = [];
    const namespace = base.resources[base.logicalId(base.stack.consumer.handler)]!.Properties.Environment.Variables
      .POWERTOOLS_METRICS_NAMESPACE as string;
    const metrics = createMetrics({ write: (l) => lines.push(l), namespace });
    // What the consumer records when a scheduled run fails for good: the typed failure and the untyped count.
    metrics.count(METRICS.failed, 'send-report');
    metrics.count(METRICS.scheduledRunsFailed, undefined);
    metrics.flush();
    const directives = emfDirectives(lines, METRICS.scheduledRunsFailed);
    expect(directives).toHaveLength(1);
    const { d, emf } = directives[0]!;
    expect(d.Dimensions).toHaveLength(1);
    const emitted = d.Dimensions[0]!.map((name) => ({ Name: name, Value: emf[name] }));
    const a = alarm(base, 'scheduledRunsFailed');
    expect(a.Namespace).toBe(d.Namespace);
    expect(a.Dimensions).toEqual(emitted);
  });

  it('no throttles alarm for the scheduler (the sweeper has none either): only the consumers of each lane have one', () => {
    const keys = Object.keys(base.stack.observability.alarms);
    expect(keys.filter((k) => /throttle/i.test(k))).toEqual([
      'consumerThrottles',
      ...Object.keys(base.stack.laneConsumers).map((lane) => `consumerThrottles-${lane}`),
    ]);
  });
});

describe('dashboard', () => {
  it('graphs the scheduler (errors, throttles, duration), scheduled runs created/failed and its item failures', () => {
    const [[, dashboard]] = ofType(base, 'AWS::CloudWatch::Dashboard') as [[string, CfnResourceJson]];
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    const fnRef = JSON.stringify({ Ref: base.logicalId(base.stack.scheduler.handler) });
    for (const m of ['Errors', 'Throttles', 'Duration']) {
      expect(body).toContain(`[\\"AWS/Lambda\\",\\"${m}\\",\\"FunctionName\\",\\"",${fnRef}`);
    }
    for (const m of [METRICS.scheduledRunsFailed, METRICS.schedulerItemFailures]) {
      expect(body).toContain(
        `[\\"${metricsNamespace(base.stack.stackName)}\\",\\"${m}\\",\\"service\\",\\"${METRICS.serviceName}\\"`,
      );
    }
    expect(body).toContain(`MetricName=\\\\\\"${METRICS.scheduledRunsCreated}\\\\\\"'`);
    expect(body).not.toContain('\\"type\\":\\"alarm\\"');
  });
});

describe('outputs', () => {
  it('SchedulesTableName and SchedulerFunctionName; the required keys are unchanged', () => {
    const outputs = (base.template.toJSON() as { Outputs: Record<string, { Value: unknown }> }).Outputs;
    expect(OUTPUT_KEYS.schedulesTableName).toBe('SchedulesTableName');
    expect(OUTPUT_KEYS.schedulerFunctionName).toBe('SchedulerFunctionName');
    expect(outputs.SchedulesTableName?.Value).toEqual({ Ref: base.logicalId(base.stack.scheduleTable.table) });
    expect(outputs.SchedulerFunctionName?.Value).toEqual({ Ref: base.logicalId(base.stack.scheduler.handler) });
    // Optional for the CLI: stacks deployed before schedules still parse.
    expect(ALL_OUTPUT_KEYS).not.toContain('SchedulesTableName');
    expect(ALL_OUTPUT_KEYS).not.toContain('SchedulerFunctionName');
    expect(ALL_OUTPUT_KEYS).toHaveLength(2 + PRIORITIES.length * 4);
  });

  it('parseStackOutputs reads them when present and leaves them out when not', () => {
    const required = ALL_OUTPUT_KEYS.map((k) => ({ OutputKey: k, OutputValue: `v-${k}` }));
    expect(parseStackOutputs(required)).not.toHaveProperty('schedulesTableName');
    expect(parseStackOutputs(required)).not.toHaveProperty('schedulerFunctionName');
    const parsed = parseStackOutputs([
      ...required,
      { OutputKey: 'SchedulesTableName', OutputValue: 'kaj-schedules' },
      { OutputKey: 'SchedulerFunctionName', OutputValue: 'kaj-SchedulerHandler' },
    ]);
    expect(parsed.schedulesTableName).toBe('kaj-schedules');
    expect(parsed.schedulerFunctionName).toBe('kaj-SchedulerHandler');
  });
});

describe('cdk-nag AwsSolutions', () => {
  it('no unacknowledged finding on the schedules table, the scheduler or the stack (both configs)', () => {
    for (const s of [base, variant]) {
      expect(nagFindings(s.stack).found).toEqual([]);
    }
  });
});
