/**
 * What `cdk deploy` would create, read from the synthesized CloudFormation template.
 * Two stacks are synthesized once for the whole file (esbuild bundling takes seconds):
 * the default configuration, and a variant that changes every switch.
 */
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { API_ROUTES } from '../../infra/constructs/api.js';
import { ALL_OUTPUT_KEYS, OUTPUT_KEYS } from '../../infra/outputs.js';
import { METRICS, metricsNamespace } from '../../shared/config/metrics.js';
import { createMetrics } from '../../shared/service/observability.js';
import { DEVELOPMENT_ID_SECRET } from '../../shared/service/all-in-one.js';
import { DEFAULTS, ENV, PRIORITIES, TABLE_SCHEMA, resourceNames } from '../../shared/config/resources.js';
import { type CfnResourceJson, itPassesCfnLint, type SynthesizedKaj, synthKaj } from './synth.js';
import {
  acknowledgment,
  acknowledgments,
  alarmProps,
  type EmfLine,
  expectTlsOnlyQueue,
  getAtt,
  ofType,
  roleStatements,
  templateText,
} from './template.js';

const SYNTH_TIMEOUT = 180_000;

let base: SynthesizedKaj;
let variant: SynthesizedKaj;

beforeAll(() => {
  base = synthKaj();
  variant = synthKaj(
    {
      stackName: 'kaj-variant',
      authMode: 'none',
      alarmEmail: 'ops@example.com',
      concurrency: { high: 20, low: 3 },
      batchSize: { low: 50 },
      maxBatchingWindowSeconds: { low: 5 },
      consumerTimeoutSeconds: 600,
      queueVisibilityTimeoutSeconds: 900,
      retainData: false,
      deletionProtection: false,
      dashboard: false,
      encryptAlarmTopic: true,
      oldestMessageAgeAlarmSeconds: 300,
      throttling: { rateLimit: 25, burstLimit: 50 },
      logLevel: 'debug',
    },
    // The variant's function code is the base's: skip its esbuild bundling (saves seconds).
    { 'aws:cdk:bundling-stacks': [] },
  );
}, SYNTH_TIMEOUT);

afterAll(() => {
  base?.dispose();
  variant?.dispose();
});

function grantedActions(s: SynthesizedKaj, functionId: string): string[] {
  const actions = roleStatements(s, functionId).flatMap((st) => (Array.isArray(st.Action) ? st.Action : [st.Action]));
  return [...new Set(actions)].sort();
}

/** Resources of the statements that grant `action`. */
function resourcesOf(s: SynthesizedKaj, functionId: string, action: string): unknown[] {
  return roleStatements(s, functionId)
    .filter((st) => (Array.isArray(st.Action) ? st.Action : [st.Action]).includes(action))
    .flatMap((st) => (Array.isArray(st.Resource) ? st.Resource : [st.Resource]));
}

/** The lanes besides the default one (the stacks use the example deployment's, `tasks/lanes.ts`). */
const otherLanes = (s: SynthesizedKaj) => Object.keys(s.stack.laneQueues);
/** The main queues of every lane: the default lane's three, then three per other lane. */
const allMainQueueArns = (s: SynthesizedKaj) =>
  [s.stack.taskQueues, ...Object.values(s.stack.laneQueues)].flatMap((lane) =>
    PRIORITIES.map((p) => getAtt(s.logicalId(lane.queues[p]))),
  );
/** A list in a fixed order: CDK sorts a statement's resources once there are several. */
const sorted = (v: unknown[]) => [...v].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
/** Every consumer: the default lane's, then each other lane's. */
const consumers = (s: SynthesizedKaj) => [s.stack.consumer, ...Object.values(s.stack.laneConsumers)];

describe('queues', () => {
  it('one queue per priority, named from resourceNames, with its own DLQ and maxReceiveCount', () => {
    const names = resourceNames('kaj');
    for (const p of PRIORITIES) {
      const queueId = base.logicalId(base.stack.taskQueues.queues[p]);
      const dlqId = base.logicalId(base.stack.taskQueues.deadLetterQueues[p]);
      const queue = base.resources[queueId]!;
      const dlq = base.resources[dlqId]!;
      expect(queue.Properties.QueueName).toBe(names.queues[p]);
      expect(dlq.Properties.QueueName).toBe(names.deadLetterQueues[p]);
      expect(queue.Properties.RedrivePolicy).toEqual({
        deadLetterTargetArn: getAtt(dlqId),
        maxReceiveCount: DEFAULTS.maxReceiveCount,
      });
      expect(queue.Properties.MessageRetentionPeriod).toBe(DEFAULTS.queueRetentionSeconds);
      expect(dlq.Properties.MessageRetentionPeriod).toBe(DEFAULTS.dlqRetentionSeconds);
      expect(dlq.Properties.RedrivePolicy).toBeUndefined();
    }
  });

  it("each DLQ accepts only its own priority's queues as redrive sources: the default lane's, then each lane's", () => {
    expect(otherLanes(base).length).toBeGreaterThan(0);
    for (const p of PRIORITIES) {
      const dlq = base.resources[base.logicalId(base.stack.taskQueues.deadLetterQueues[p])]!;
      const policy = dlq.Properties.RedriveAllowPolicy as { redrivePermission: string; sourceQueueArns: unknown[] };
      expect(policy.redrivePermission).toBe('byQueue');
      expect(policy.sourceQueueArns).toHaveLength(1 + otherLanes(base).length);
      expect(JSON.stringify(policy.sourceQueueArns[0])).toContain(`:${resourceNames('kaj').queues[p]}"`);
      otherLanes(base).forEach((lane, i) => {
        expect(JSON.stringify(policy.sourceQueueArns[i + 1])).toContain(`:kaj-${lane}-lane-${p}"`);
      });
    }
  });

  it('every queue uses SSE-SQS and denies non-TLS access', () => {
    const queues = ofType(base, 'AWS::SQS::Queue');
    // Three DLQs, and three main queues per lane (the default one and each declared lane).
    expect(queues.length).toBe(PRIORITIES.length * (2 + otherLanes(base).length));
    for (const [id, q] of queues) {
      expect(q.Properties.SqsManagedSseEnabled, id).toBe(true);
      expectTlsOnlyQueue(base, id, id);
    }
  });

  it('DLQs are retained and priority queues deleted with the stack by default; retainData=false deletes both', () => {
    for (const p of PRIORITIES) {
      expect(base.resources[base.logicalId(base.stack.taskQueues.deadLetterQueues[p])]!.DeletionPolicy).toBe('Retain');
      expect(base.resources[base.logicalId(base.stack.taskQueues.queues[p])]!.DeletionPolicy).toBe('Delete');
      expect(variant.resources[variant.logicalId(variant.stack.taskQueues.deadLetterQueues[p])]!.DeletionPolicy).toBe(
        'Delete',
      );
    }
  });
});

describe('event source mappings', () => {
  it('report batch item failures and cap concurrency per priority', () => {
    for (const [s, expected] of [
      [base, DEFAULTS.concurrency],
      [variant, { high: 20, normal: DEFAULTS.concurrency.normal, low: 3 }],
    ] as const) {
      const consumerId = s.logicalId(s.stack.consumer.handler);
      for (const p of PRIORITIES) {
        const mapping = s.resources[s.logicalId(s.stack.consumer.mappings[p])]!;
        expect(mapping.Type).toBe('AWS::Lambda::EventSourceMapping');
        expect(mapping.Properties.EventSourceArn).toEqual(getAtt(s.logicalId(s.stack.taskQueues.queues[p])));
        expect(mapping.Properties.FunctionName).toEqual({ Ref: consumerId });
        expect(mapping.Properties.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
        expect(mapping.Properties.ScalingConfig).toEqual({ MaximumConcurrency: expected[p] });
        expect(mapping.Properties.ScalingConfig.MaximumConcurrency).toBeGreaterThanOrEqual(2);
      }
    }
  });

  it('batch size and batching window per priority', () => {
    const high = base.resources[base.logicalId(base.stack.consumer.mappings.high)]!;
    expect(high.Properties.BatchSize).toBe(DEFAULTS.batchSize);
    expect(high.Properties.MaximumBatchingWindowInSeconds).toBeUndefined();
    const low = variant.resources[variant.logicalId(variant.stack.consumer.mappings.low)]!;
    expect(low.Properties.BatchSize).toBe(50);
    expect(low.Properties.MaximumBatchingWindowInSeconds).toBe(5);
  });

  it('every mapped queue has a visibility timeout >= the function timeout (read from the template)', () => {
    for (const s of [base, variant]) {
      const mappings = ofType(s, 'AWS::Lambda::EventSourceMapping');
      expect(mappings).toHaveLength(PRIORITIES.length * (1 + otherLanes(s).length));
      for (const [, m] of mappings) {
        const queue = s.resources[(m.Properties.EventSourceArn as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]]!;
        const fn = s.resources[(m.Properties.FunctionName as { Ref: string }).Ref]!;
        expect(typeof fn.Properties.Timeout).toBe('number');
        expect(queue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(fn.Properties.Timeout as number);
      }
    }
    const consumer = base.resources[base.logicalId(base.stack.consumer.handler)]!;
    expect(consumer.Properties.Timeout).toBe(DEFAULTS.consumerTimeoutSeconds);
  });
});

describe('task table', () => {
  it('on-demand, key schema, outbox GSI, PITR, TTL, SSE, deletion protection, retained', () => {
    const id = base.logicalId(base.stack.taskTable.table);
    const table = base.resources[id]!;
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
    expect(table.Properties).toMatchObject({
      TableName: resourceNames('kaj').table,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: TABLE_SCHEMA.partitionKey, KeyType: 'HASH' }],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: TABLE_SCHEMA.ttlAttribute, Enabled: true },
      SSESpecification: { SSEEnabled: true },
      DeletionProtectionEnabled: true,
      GlobalSecondaryIndexes: [
        {
          IndexName: TABLE_SCHEMA.outboxIndex.name,
          KeySchema: [
            { AttributeName: TABLE_SCHEMA.outboxIndex.partitionKey, KeyType: 'HASH' },
            { AttributeName: TABLE_SCHEMA.outboxIndex.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
        {
          IndexName: TABLE_SCHEMA.listIndex.name,
          KeySchema: [
            { AttributeName: TABLE_SCHEMA.listIndex.partitionKey, KeyType: 'HASH' },
            { AttributeName: TABLE_SCHEMA.listIndex.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...TABLE_SCHEMA.listIndex.nonKeyAttributes] },
        },
      ],
    });
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: TABLE_SCHEMA.partitionKey, AttributeType: 'S' },
        { AttributeName: TABLE_SCHEMA.outboxIndex.partitionKey, AttributeType: 'S' },
        { AttributeName: TABLE_SCHEMA.outboxIndex.sortKey, AttributeType: 'N' },
        { AttributeName: TABLE_SCHEMA.listIndex.partitionKey, AttributeType: 'S' },
        { AttributeName: TABLE_SCHEMA.listIndex.sortKey, AttributeType: 'S' },
      ]),
    );
  });

  it('deletion protection and retention follow the config', () => {
    const table = variant.resources[variant.logicalId(variant.stack.taskTable.table)]!;
    expect(table.Properties.DeletionProtectionEnabled).toBe(false);
    expect(table.DeletionPolicy).toBe('Delete');
    expect(table.Properties.TableName).toBe('kaj-variant-tasks');
  });
});

describe('least privilege', () => {
  const LOGS = ['logs:CreateLogStream', 'logs:PutLogEvents'];

  it("the API can read/write single task items and schedules, read the listing (its index, the outbox index, a page's rows), list schedules, send to every lane's priority queues and (with a workflow type) read and append histories, nothing else", () => {
    const id = base.logicalId(base.stack.api.handler);
    // The history table exists when tasks/index.ts declares a workflow (test/infra/history-table.test.ts).
    const history = base.stack.historyTable;
    const historyArns = history === undefined ? [] : [getAtt(base.logicalId(history.table))];
    expect(grantedActions(base, id)).toEqual(
      [
        ...LOGS,
        'dynamodb:BatchGetItem',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:Scan',
        'dynamodb:UpdateItem',
        'sqs:SendMessage',
      ].sort(),
    );
    const tableArn = getAtt(base.logicalId(base.stack.taskTable.table));
    const schedulesArn = getAtt(base.logicalId(base.stack.scheduleTable.table));
    expect(resourcesOf(base, id, 'dynamodb:PutItem')).toEqual([tableArn, schedulesArn, ...historyArns]);
    expect(resourcesOf(base, id, 'dynamodb:UpdateItem')).toEqual([tableArn, schedulesArn]);
    expect(resourcesOf(base, id, 'dynamodb:BatchGetItem')).toEqual([tableArn]);
    expect(resourcesOf(base, id, 'dynamodb:DeleteItem')).toEqual([schedulesArn]);
    expect(sorted(resourcesOf(base, id, 'sqs:SendMessage'))).toEqual(sorted(allMainQueueArns(base)));
    // Nothing on the limits table: no API route reads it yet.
    expect(JSON.stringify(roleStatements(base, id))).not.toContain(base.logicalId(base.stack.limitTable.table));
  });

  it('the consumer can update tasks, lease/requeue/poll its queues, dead-letter and enforce limits (and, with a workflow type, read and append histories), but not PutItem a task', () => {
    const id = base.logicalId(base.stack.consumer.handler);
    // The history table exists when tasks/index.ts declares a workflow (test/infra/history-table.test.ts).
    const history = base.stack.historyTable;
    const historyArns = history === undefined ? [] : [getAtt(base.logicalId(history.table))];
    expect(grantedActions(base, id)).toEqual(
      [
        ...LOGS,
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        ...(history === undefined ? [] : ['dynamodb:Query']),
        'dynamodb:UpdateItem',
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:ReceiveMessage',
        'sqs:SendMessage',
      ].sort(),
    );
    const tableArn = getAtt(base.logicalId(base.stack.taskTable.table));
    const limitsArn = getAtt(base.logicalId(base.stack.limitTable.table));
    expect(resourcesOf(base, id, 'dynamodb:PutItem')).toEqual([limitsArn, ...historyArns]);
    expect(resourcesOf(base, id, 'dynamodb:Query')).toEqual(historyArns);
    expect(resourcesOf(base, id, 'dynamodb:UpdateItem')).toEqual([tableArn, limitsArn]);
    const dlqArns = PRIORITIES.map((p) => getAtt(base.logicalId(base.stack.taskQueues.deadLetterQueues[p])));
    expect(resourcesOf(base, id, 'sqs:SendMessage')).toEqual(expect.arrayContaining(dlqArns));
    expect(resourcesOf(base, id, 'sqs:SendMessage')).toEqual(expect.arrayContaining(allMainQueueArns(base)));
    for (const dlq of dlqArns) {
      expect(resourcesOf(base, id, 'sqs:ReceiveMessage')).not.toContainEqual(dlq);
      expect(resourcesOf(base, id, 'sqs:DeleteMessage')).not.toContainEqual(dlq);
    }
  });

  it('the sweeper can Query only the outbox index, update tasks, and send to queues and DLQs', () => {
    const id = base.logicalId(base.stack.sweeper.handler);
    expect(grantedActions(base, id)).toEqual(
      [...LOGS, 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'sqs:SendMessage'].sort(),
    );
    const tableId = base.logicalId(base.stack.taskTable.table);
    expect(resourcesOf(base, id, 'dynamodb:Query')).toEqual([
      { 'Fn::Join': ['', [getAtt(tableId), `/index/${TABLE_SCHEMA.outboxIndex.name}`]] },
    ]);
    expect(sorted(resourcesOf(base, id, 'sqs:SendMessage'))).toEqual(
      sorted([
        ...allMainQueueArns(base),
        ...PRIORITIES.map((p) => getAtt(base.logicalId(base.stack.taskQueues.deadLetterQueues[p]))),
      ]),
    );
  });

  it('the API can Query the listing and outbox indexes only (not the task table; with a workflow type, the history table); only the API and the scheduler can Scan, and only the schedules table', () => {
    const tableArn = getAtt(base.logicalId(base.stack.taskTable.table));
    const history = base.stack.historyTable;
    expect(resourcesOf(base, base.logicalId(base.stack.api.handler), 'dynamodb:Query')).toEqual([
      { 'Fn::Join': ['', [tableArn, `/index/${TABLE_SCHEMA.listIndex.name}`]] },
      { 'Fn::Join': ['', [tableArn, `/index/${TABLE_SCHEMA.outboxIndex.name}`]] },
      ...(history === undefined ? [] : [getAtt(base.logicalId(history.table))]),
    ]);
    for (const fn of [...consumers(base).map((c) => c.handler), base.stack.sweeper.handler]) {
      expect(grantedActions(base, base.logicalId(fn))).not.toContain('dynamodb:Scan');
    }
    const schedulesArn = getAtt(base.logicalId(base.stack.scheduleTable.table));
    for (const fn of [base.stack.api.handler, base.stack.scheduler.handler]) {
      expect(resourcesOf(base, base.logicalId(fn), 'dynamodb:Scan')).toEqual([schedulesArn]);
    }
  });

  it('no statement anywhere grants a wildcard action or resource, or deletes queues/tables/tasks (schedules only)', () => {
    const schedulesArn = getAtt(base.logicalId(base.stack.scheduleTable.table));
    const statements = ofType(base, 'AWS::IAM::Policy').flatMap(([, p]) => p.Properties.PolicyDocument.Statement) as {
      Action: string | string[];
      Resource: unknown;
      Effect: string;
    }[];
    expect(statements.length).toBeGreaterThan(0);
    for (const st of statements) {
      const actions = Array.isArray(st.Action) ? st.Action : [st.Action];
      const resources = Array.isArray(st.Resource) ? st.Resource : [st.Resource];
      for (const a of actions) {
        expect(a).not.toContain('*');
        expect(['sqs:DeleteQueue', 'sqs:PurgeQueue', 'dynamodb:DeleteTable']).not.toContain(a);
        // Schedules are deleted through the API; tasks never are (TTL removes finished ones).
        if (a === 'dynamodb:DeleteItem') expect(resources).toEqual([schedulesArn]);
      }
      for (const r of resources) expect(r).not.toBe('*');
    }
  });

  it('each function logs JSON to its own log group: application level from logLevel (never above INFO), Lambda lines at WARN', () => {
    for (const [s, level] of [
      [base, 'INFO'],
      [variant, 'DEBUG'],
    ] as const) {
      for (const fn of [s.stack.api.handler, ...consumers(s).map((c) => c.handler), s.stack.sweeper.handler]) {
        const config = s.resources[s.logicalId(fn)]!.Properties.LoggingConfig as Record<string, unknown>;
        expect(config).toEqual({
          LogFormat: 'JSON',
          ApplicationLogLevel: level,
          SystemLogLevel: 'WARN',
          LogGroup: { Ref: s.logicalId(fn.functionLogGroup) },
        });
      }
    }
  });

  it('each function writes only to its own log group', () => {
    for (const fn of [base.stack.api.handler, ...consumers(base).map((c) => c.handler), base.stack.sweeper.handler]) {
      const id = base.logicalId(fn);
      const logGroupId = (base.resources[id]!.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
      expect(base.resources[logGroupId]!.Properties.RetentionInDays).toBe(30);
      expect(resourcesOf(base, id, 'logs:PutLogEvents')).toEqual([getAtt(logGroupId)]);
    }
  });
});

describe('functions', () => {
  it('Node.js 22 on arm64, ESM bundle with source maps, and the runtime environment', () => {
    for (const s of [base, variant]) {
      const stack = s.stack;
      for (const fn of [stack.api.handler, ...consumers(s).map((c) => c.handler), stack.sweeper.handler]) {
        const props = s.resources[s.logicalId(fn)]!.Properties;
        expect(props.Runtime).toBe('nodejs22.x');
        expect(props.Architectures).toEqual(['arm64']);
        expect(props.Handler).toBe('index.handler');
        const env = props.Environment.Variables as Record<string, unknown>;
        expect(env.NODE_OPTIONS).toBe('--enable-source-maps');
        expect(env.POWERTOOLS_SERVICE_NAME).toBe(METRICS.serviceName);
        // The stack's own namespace: two stacks in one account and region never share a metric.
        expect(env.POWERTOOLS_METRICS_NAMESPACE).toBe(`Kaj/${s.stack.stackName}`);
        expect(env.POWERTOOLS_METRICS_NAMESPACE).toBe(metricsNamespace(s.stack.stackName));
        expect(env[ENV.tableName]).toEqual({ Ref: s.logicalId(stack.taskTable.table) });
        expect(env[ENV.leaseSeconds]).toBe(String(DEFAULTS.leaseSeconds));
        expect(env[ENV.retentionDays]).toBe(String(DEFAULTS.retentionDays));
        for (const p of PRIORITIES) {
          expect(env[ENV.queueUrl(p)]).toEqual({ Ref: s.logicalId(stack.taskQueues.queues[p]) });
          expect(env[ENV.dlqUrl(p)]).toEqual({ Ref: s.logicalId(stack.taskQueues.deadLetterQueues[p]) });
        }
        // Every lane's queue URLs, as JSON around the queues' Refs (test/infra/lanes.test.ts reads it).
        expect(env).toHaveProperty(ENV.laneQueueUrls);
      }
    }
    const baseEnv = base.resources[base.logicalId(base.stack.api.handler)]!.Properties.Environment.Variables;
    expect(baseEnv[ENV.logLevel]).toBe('INFO');
    const variantEnv =
      variant.resources[variant.logicalId(variant.stack.api.handler)]!.Properties.Environment.Variables;
    expect(variantEnv[ENV.logLevel]).toBe('DEBUG');
  });

  it('the sweeper runs every minute from EventBridge', () => {
    const sweeperId = base.logicalId(base.stack.sweeper.handler);
    const rule = base.resources[base.logicalId(base.stack.sweeper.rule)]!;
    expect(rule.Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(rule.Properties.State).toBe('ENABLED');
    expect(rule.Properties.Targets).toEqual([expect.objectContaining({ Arn: getAtt(sweeperId) })]);
    base.template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: getAtt(sweeperId),
      SourceArn: getAtt(base.logicalId(base.stack.sweeper.rule)),
    });
  });
});

describe('ID secret', () => {
  const SECRET_TYPE = 'AWS::SecretsManager::Secret';
  const secretId = (s: SynthesizedKaj) => s.logicalId(s.stack.idSecret.secret);
  const envOf = (s: SynthesizedKaj, fn: IConstruct) =>
    s.resources[s.logicalId(fn)]!.Properties.Environment.Variables as Record<string, unknown>;
  const text = templateText;

  it('one generated secret, <stack>-id-secret, 64 letters and digits (no punctuation, no spaces)', () => {
    for (const [s, name] of [
      [base, 'kaj-id-secret'],
      [variant, 'kaj-variant-id-secret'],
    ] as const) {
      const secrets = ofType(s, SECRET_TYPE);
      expect(secrets).toHaveLength(1);
      const [[id, secret]] = secrets as [[string, CfnResourceJson]];
      expect(id).toBe(secretId(s));
      expect(secret.Properties.Name).toBe(name);
      expect(secret.Properties.GenerateSecretString).toEqual({
        PasswordLength: 64,
        ExcludePunctuation: true,
        IncludeSpace: false,
      });
      // Generated by Secrets Manager at deploy time: no value in the template, no rotation.
      expect(secret.Properties.SecretString).toBeUndefined();
      expect(secret.Properties.KmsKeyId, 'the AWS managed key aws/secretsmanager').toBeUndefined();
      expect(ofType(s, 'AWS::SecretsManager::RotationSchedule')).toHaveLength(0);
    }
  });

  it('is retained or deleted with the stack exactly like the task table (retainData)', () => {
    for (const [s, policy] of [
      [base, 'Retain'],
      [variant, 'Delete'],
    ] as const) {
      const secret = s.resources[secretId(s)]!;
      const table = s.resources[s.logicalId(s.stack.taskTable.table)]!;
      expect(secret.DeletionPolicy).toBe(policy);
      expect(secret.UpdateReplacePolicy).toBe(policy);
      expect(secret.DeletionPolicy).toBe(table.DeletionPolicy);
      expect(secret.UpdateReplacePolicy).toBe(table.UpdateReplacePolicy);
    }
  });

  it('the API function gets KAJ_ID_SECRET as a {{resolve:secretsmanager:…}} dynamic reference to it', () => {
    for (const s of [base, variant]) {
      const value = envOf(s, s.stack.api.handler)[ENV.idSecret];
      expect(value).toEqual({
        'Fn::Join': ['', ['{{resolve:secretsmanager:', { Ref: secretId(s) }, ':SecretString:::}}']],
      });
      // The whole secret string, current version: what CloudFormation resolves at deploy time.
      expect(text(value)).toBe(`{{resolve:secretsmanager:<Ref ${secretId(s)}>:SecretString:::}}`);
    }
  });

  it('the consumer and the sweeper do not get it', () => {
    for (const s of [base, variant]) {
      for (const fn of [...consumers(s).map((c) => c.handler), s.stack.sweeper.handler]) {
        expect(Object.keys(envOf(s, fn))).not.toContain(ENV.idSecret);
        expect(JSON.stringify(s.resources[s.logicalId(fn)])).not.toContain('secretsmanager');
      }
    }
  });

  it('no function role may read the secret: CloudFormation resolves it at deploy time', () => {
    for (const s of [base, variant]) {
      for (const fn of [s.stack.api.handler, ...consumers(s).map((c) => c.handler), s.stack.sweeper.handler]) {
        expect(grantedActions(s, s.logicalId(fn)).filter((a) => a.startsWith('secretsmanager:'))).toEqual([]);
      }
    }
  });

  it("no plain secret value appears anywhere in the template, and the only reference is the API's", () => {
    for (const s of [base, variant]) {
      const json = JSON.stringify(s.template.toJSON());
      expect(json).not.toContain(DEVELOPMENT_ID_SECRET);
      expect(json).not.toContain('"SecretString"');
      // Exactly one dynamic reference, in the API function's environment.
      expect(json.split('{{resolve:secretsmanager:')).toHaveLength(2);
      expect(JSON.stringify(s.resources[s.logicalId(s.stack.api.handler)])).toContain('{{resolve:secretsmanager:');
      expect(json.split(`"${ENV.idSecret}"`)).toHaveLength(2);
    }
  });

  it('AwsSolutions-SMG4 (no rotation) is acknowledged on the secret with the reason', () => {
    expect(acknowledgment(base.stack.idSecret.secret, 'AwsSolutions-SMG4')).toBe(
      'rotating the key would give every idempotency key a new task id and break idempotency for keys in flight; see docs/security.md',
    );
  });
});

describe('HTTP API', () => {
  it('exactly the three routes, each with IAM (SigV4) authorization, payload format 2.0', () => {
    const routes = ofType(base, 'AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties);
    expect(routes.map((r) => r.RouteKey).sort()).toEqual(API_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    for (const r of routes) expect(r.AuthorizationType).toBe('AWS_IAM');
    const integrations = ofType(base, 'AWS::ApiGatewayV2::Integration');
    expect(integrations.length).toBeGreaterThan(0);
    for (const [, i] of integrations) {
      expect(i.Properties.IntegrationType).toBe('AWS_PROXY');
      expect(i.Properties.PayloadFormatVersion).toBe('2.0');
    }
  });

  it('authMode none removes authorization and warns at synth', () => {
    for (const [, r] of ofType(variant, 'AWS::ApiGatewayV2::Route'))
      expect(r.Properties.AuthorizationType).toBe('NONE');
    Annotations.fromStack(variant.stack).hasWarning('*', Match.stringLikeRegexp('authMode is "none"'));
    expect(Annotations.fromStack(base.stack).findWarning('*', Match.stringLikeRegexp('authMode'))).toHaveLength(0);
  });

  it('$default stage: auto-deploy, throttling, slim JSON access logs without bodies', () => {
    const [[, stage]] = ofType(base, 'AWS::ApiGatewayV2::Stage') as [[string, CfnResourceJson]];
    expect(stage.Properties.StageName).toBe('$default');
    expect(stage.Properties.AutoDeploy).toBe(true);
    expect(stage.Properties.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
    // Exactly the fields an operator needs: one line per request, so nothing more.
    const format = JSON.parse(stage.Properties.AccessLogSettings.Format as string) as Record<string, string>;
    expect(format).toEqual({
      id: '$context.requestId',
      ip: '$context.identity.sourceIp',
      who: '$context.identity.userArn',
      route: '$context.routeKey',
      status: '$context.status',
      ms: '$context.responseLatency',
      err: '$context.error.message',
    });
    expect(Object.values(format).join(' ')).not.toMatch(/body/i);
    const accessLogGroup = base.stack.api.accessLogGroup;
    expect(accessLogGroup, 'access logs are on by default').toBeDefined();
    expect(stage.Properties.AccessLogSettings.DestinationArn).toEqual(getAtt(base.logicalId(accessLogGroup!)));
    expect(base.resources[base.logicalId(accessLogGroup!)]!.Properties.RetentionInDays).toBe(30);
    const [[, variantStage]] = ofType(variant, 'AWS::ApiGatewayV2::Stage') as [[string, CfnResourceJson]];
    expect(variantStage.Properties.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 25, ThrottlingBurstLimit: 50 });
  });
});

describe('observability', () => {
  const alarm = alarmProps;

  it('an alarm per DLQ when it is not empty', () => {
    for (const p of PRIORITIES) {
      expect(alarm(base, `dlqNotEmpty-${p}`)).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [
          { Name: 'QueueName', Value: getAtt(base.logicalId(base.stack.taskQueues.deadLetterQueues[p]), 'QueueName') },
        ],
        Statistic: 'Maximum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it('an alarm per priority queue on the age of the oldest message (configurable threshold)', () => {
    for (const p of PRIORITIES) {
      const expected = {
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateAgeOfOldestMessage',
        ComparisonOperator: 'GreaterThanThreshold',
      };
      expect(alarm(base, `oldestMessageAge-${p}`)).toMatchObject({ ...expected, Threshold: 900 });
      expect(alarm(variant, `oldestMessageAge-${p}`)).toMatchObject({ ...expected, Threshold: 300 });
      expect(alarm(base, `oldestMessageAge-${p}`).Dimensions).toEqual([
        { Name: 'QueueName', Value: getAtt(base.logicalId(base.stack.taskQueues.queues[p]), 'QueueName') },
      ]);
    }
  });

  it('consumer errors and throttles alarms (and API/sweeper errors)', () => {
    const consumer = { Name: 'FunctionName', Value: { Ref: base.logicalId(base.stack.consumer.handler) } };
    expect(alarm(base, 'consumerErrors')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [consumer],
      Statistic: 'Sum',
      Threshold: 0,
    });
    expect(alarm(base, 'consumerThrottles')).toMatchObject({
      Namespace: 'AWS/Lambda',
      MetricName: 'Throttles',
      Dimensions: [consumer],
    });
    expect(alarm(base, 'sweeperErrors').Dimensions).toEqual([
      { Name: 'FunctionName', Value: { Ref: base.logicalId(base.stack.sweeper.handler) } },
    ]);
    expect(alarm(base, 'apiErrors').MetricName).toBe('Errors');
  });

  it("every alarm notifies the stack's alarm topic on ALARM and OK, with or without alarmEmail", () => {
    for (const s of [base, variant]) {
      const topicId = s.logicalId(s.stack.observability.alarmTopic);
      const keys = Object.keys(s.stack.observability.alarms);
      // 2 per priority, 4 function alarms, API 5xx, consumer, sweeper and scheduler item
      // failures, scheduler errors and scheduled runs failed; per other lane, an oldest-message
      // age per queue and its consumer's errors and throttles; and limits saturated for 30 minutes.
      expect(keys).toHaveLength(PRIORITIES.length * 2 + 10 + otherLanes(s).length * (PRIORITIES.length + 2) + 1);
      expect(keys).toHaveLength(22);
      expect(ofType(s, 'AWS::CloudWatch::Alarm')).toHaveLength(keys.length);
      for (const key of keys) {
        expect(alarm(s, key).AlarmActions, key).toEqual([{ Ref: topicId }]);
        expect(alarm(s, key).OKActions, key).toEqual([{ Ref: topicId }]);
        expect(alarm(s, key).AlarmName, key).toMatch(new RegExp(`^${s.stack.stackName}-`));
      }
    }
  });

  /** The condition that limits the topic (and the key, when there is one) to this stack's alarms. */
  const fromTheseAlarms = (prefix: string) => ({
    StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
    ArnLike: {
      'aws:SourceArn': {
        'Fn::Join': [
          '',
          [
            'arn:',
            { Ref: 'AWS::Partition' },
            ':cloudwatch:',
            { Ref: 'AWS::Region' },
            ':',
            { Ref: 'AWS::AccountId' },
            `:alarm:${prefix}-*`,
          ],
        ],
      },
    },
  });

  /** The topic's policy: TLS only, and publish only by CloudWatch for this stack's alarms. */
  function expectTopicPolicy(s: SynthesizedKaj, prefix: string): void {
    const topicId = s.logicalId(s.stack.observability.alarmTopic);
    const policies = ofType(s, 'AWS::SNS::TopicPolicy').filter(([, pol]) =>
      (pol.Properties.Topics as { Ref: string }[]).some((t) => t.Ref === topicId),
    );
    expect(policies).toHaveLength(1);
    const statements = policies[0]![1].Properties.PolicyDocument.Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({
        Effect: 'Deny',
        Action: 'sns:Publish',
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: 'sns:Publish',
        Resource: { Ref: topicId },
        Condition: fromTheseAlarms(prefix),
      }),
    );
  }

  it("by default the alarm topic is not encrypted (no KMS key), TLS-only, and only this stack's alarms may publish", () => {
    const topicId = base.logicalId(base.stack.observability.alarmTopic);
    expect(ofType(base, 'AWS::SNS::Topic')).toHaveLength(1);
    const topic = base.resources[topicId]!;
    expect(topic.Properties.TopicName).toBe('kaj-alarms');
    expect(topic.Properties.KmsMasterKeyId).toBeUndefined();
    expect(base.stack.observability.alarmTopicKey).toBeUndefined();
    expect(ofType(base, 'AWS::KMS::Key')).toHaveLength(0);
    expect(base.stack.config.encryptAlarmTopic).toBe(false);
    expectTopicPolicy(base, 'kaj');
  });

  it("the unencrypted topic's cdk-nag SNS2 finding is acknowledged with the reason; the encrypted one has none", () => {
    const reason = acknowledgment(base.stack.observability.alarmTopic, 'AwsSolutions-SNS2');
    expect(reason).toMatch(/no task data/);
    expect(reason).toMatch(/alarm names and metric values/);
    expect(reason).toMatch(/aws\/sns/);
    expect(reason).toMatch(/encryptAlarmTopic/);
    expect(acknowledgment(variant.stack.observability.alarmTopic, 'AwsSolutions-SNS2')).toBeUndefined();
  });

  it("encryptAlarmTopic: the topic is encrypted with a rotating customer managed key that only this stack's alarms may use", () => {
    const topicId = variant.logicalId(variant.stack.observability.alarmTopic);
    const key = variant.stack.observability.alarmTopicKey;
    expect(key).toBeDefined();
    const keyId = variant.logicalId(key!);
    expect(ofType(variant, 'AWS::SNS::Topic')).toHaveLength(1);
    expect(ofType(variant, 'AWS::KMS::Key')).toHaveLength(1);
    const topic = variant.resources[topicId]!;
    expect(topic.Properties.TopicName).toBe('kaj-variant-alarms');
    // Not the AWS managed alias/aws/sns: CloudWatch alarms cannot publish to a topic under it.
    expect(topic.Properties.KmsMasterKeyId).toEqual(getAtt(keyId));
    const keyResource = variant.resources[keyId]!;
    expect(keyResource.Type).toBe('AWS::KMS::Key');
    expect(keyResource.Properties.EnableKeyRotation).toBe(true);
    expect(keyResource.DeletionPolicy).toBe('Delete');
    expect(keyResource.Properties.PendingWindowInDays).toBe(7);
    expect(keyResource.Properties.KeyPolicy.Statement).toContainEqual(
      expect.objectContaining({
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Resource: '*',
        Condition: fromTheseAlarms('kaj-variant'),
      }),
    );
    expectTopicPolicy(variant, 'kaj-variant');
  });

  it('alarmEmail subscribes the address to the topic; without it the topic has no subscription', () => {
    expect(ofType(base, 'AWS::SNS::Subscription')).toHaveLength(0);
    expect(ofType(variant, 'AWS::SNS::Subscription')).toHaveLength(1);
    variant.template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
      TopicArn: { Ref: variant.logicalId(variant.stack.observability.alarmTopic) },
    });
  });

  it("an alarm on the HTTP API stage's 5xx answers", () => {
    expect(alarm(base, 'api5xx')).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
      Statistic: 'Sum',
      Period: 300,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    const dims = alarm(base, 'api5xx').Dimensions as { Name: string; Value: unknown }[];
    expect([...dims].sort((a, b) => a.Name.localeCompare(b.Name))).toEqual([
      { Name: 'ApiId', Value: { Ref: base.logicalId(base.stack.api.httpApi!) } },
      { Name: 'Stage', Value: '$default' },
    ]);
    expect(base.resources[base.logicalId(base.stack.api.stage)]!.Properties.StageName).toBe('$default');
  });

  it('consumer and sweeper item-failure alarms read exactly the metric the functions emit (EMF from createMetrics)', () => {
    // What a function writes for `metrics.count(name, undefined)`: the real EMF line, captured.
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      // In the namespace the stack gives its functions (POWERTOOLS_METRICS_NAMESPACE).
      const namespace = base.resources[base.logicalId(base.stack.consumer.handler)]!.Properties.Environment.Variables
        .POWERTOOLS_METRICS_NAMESPACE as string;
      const metrics = createMetrics({ namespace });
      metrics.count(METRICS.consumerItemFailures, undefined);
      metrics.count(METRICS.sweeperItemFailures, undefined);
      metrics.flush();
    } finally {
      spy.mockRestore();
    }
    const emitted = written
      .flatMap((w) => w.split('\n'))
      .filter((l) => l.includes('"_aws"'))
      .map((l) => JSON.parse(l) as EmfLine);
    for (const [key, name] of [
      ['consumerItemFailures', METRICS.consumerItemFailures],
      ['sweeperItemFailures', METRICS.sweeperItemFailures],
    ] as const) {
      const emf = emitted.find((e) => e._aws.CloudWatchMetrics[0]?.Metrics.some((m) => m.Name === name));
      expect(emf, `no EMF line for ${name}`).toBeDefined();
      const directive = emf!._aws.CloudWatchMetrics[0]!;
      expect(directive.Dimensions, 'one dimension set').toHaveLength(1);
      const emittedDims = directive.Dimensions[0]!.map((d) => ({ Name: d, Value: emf![d] })).sort((a, b) =>
        a.Name.localeCompare(b.Name),
      );
      const a = alarm(base, key);
      expect(a).toMatchObject({ Namespace: directive.Namespace, MetricName: name, Statistic: 'Sum', Threshold: 0 });
      expect([...(a.Dimensions as { Name: string }[])].sort((x, y) => x.Name.localeCompare(y.Name))).toEqual(
        emittedDims,
      );
      // That is the service dimension alone (METRICS.serviceDimension), and no TaskType.
      expect(emittedDims).toEqual([{ Name: 'service', Value: METRICS.serviceName }]);
    }
  });

  it("the dashboard graphs the new alarms' metrics: API 5xx and consumer/sweeper item failures", () => {
    const [[, dashboard]] = ofType(base, 'AWS::CloudWatch::Dashboard') as [[string, CfnResourceJson]];
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const m of [METRICS.consumerItemFailures, METRICS.sweeperItemFailures]) {
      expect(body).toContain(`[\\"Kaj/kaj\\",\\"${m}\\",\\"service\\",\\"${METRICS.serviceName}\\"`);
    }
    expect(body).toContain('[\\"AWS/ApiGateway\\",\\"5xx\\",\\"ApiId\\"');
    // No alarm status widget: it would reference the alarms by Fn::GetAtt, which moto (the deploy
    // rehearsal) cannot resolve because it skips alarms.
    expect(body).not.toContain('\\"type\\":\\"alarm\\"');
  });

  it('dashboard: queue/DLQ depth, oldest age, task outcomes by SEARCH, duration percentiles, consumer errors', () => {
    const [[, dashboard]] = ofType(base, 'AWS::CloudWatch::Dashboard') as [[string, CfnResourceJson]];
    expect(dashboard.Properties.DashboardName).toBe('kaj');
    // The body is an Fn::Join of literal pieces and references: keep the literal text.
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const m of ['ApproximateNumberOfMessagesVisible', 'ApproximateAgeOfOldestMessage', 'Errors', 'Throttles']) {
      expect(body).toContain(m);
    }
    for (const m of [METRICS.succeeded, METRICS.retried, METRICS.failed]) {
      expect(body).toContain(`SUM(SEARCH('Namespace=\\\\\\"Kaj/kaj\\\\\\" MetricName=\\\\\\"${m}\\\\\\"'`);
    }
    expect(body).toContain(`MetricName=\\\\\\"${METRICS.duration}\\\\\\"', 'p99'`);
    expect(body).toContain(`MetricName=\\\\\\"${METRICS.duration}\\\\\\"', 'p50'`);
    expect(ofType(variant, 'AWS::CloudWatch::Dashboard')).toHaveLength(0);
  });
});

describe('outputs', () => {
  it('every stable output key is emitted with the right value', () => {
    const outputs = (base.template.toJSON() as { Outputs: Record<string, { Value: unknown }> }).Outputs;
    for (const key of ALL_OUTPUT_KEYS) expect(outputs[key], key).toBeDefined();
    expect(outputs[OUTPUT_KEYS.tableName]!.Value).toEqual({ Ref: base.logicalId(base.stack.taskTable.table) });
    for (const p of PRIORITIES) {
      const q = base.logicalId(base.stack.taskQueues.queues[p]);
      const d = base.logicalId(base.stack.taskQueues.deadLetterQueues[p]);
      expect(outputs[OUTPUT_KEYS.queueUrl[p]]!.Value).toEqual({ Ref: q });
      expect(outputs[OUTPUT_KEYS.queueArn[p]]!.Value).toEqual(getAtt(q));
      expect(outputs[OUTPUT_KEYS.dlqUrl[p]]!.Value).toEqual({ Ref: d });
      expect(outputs[OUTPUT_KEYS.dlqArn[p]]!.Value).toEqual(getAtt(d));
    }
    expect(JSON.stringify(outputs[OUTPUT_KEYS.apiUrl]!.Value)).toContain('execute-api');
  });

  it('the alarm topic ARN is an output of every stack, with or without alarmEmail', () => {
    for (const s of [base, variant]) {
      const outputs = (s.template.toJSON() as { Outputs: Record<string, { Value: unknown }> }).Outputs;
      expect(outputs[OUTPUT_KEYS.alarmTopicArn]?.Value).toEqual({ Ref: s.logicalId(s.stack.observability.alarmTopic) });
    }
  });
});

describe('cdk-nag AwsSolutions', () => {
  for (const which of ['default', 'variant'] as const) {
    it(`no unacknowledged error or warning (${which} config)`, () => {
      const s = which === 'default' ? base : variant;
      const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(s.stack);
      const found = report.violations.map(
        (v) =>
          `${v.severity} ${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}: ${v.description}`,
      );
      expect(found).toEqual([]);
      expect(report.success).toBe(true);
    });
  }

  it('every acknowledgment carries a reason', () => {
    for (const s of [base, variant]) {
      const acks = acknowledgments(s.stack);
      expect(acks.length).toBeGreaterThan(0);
      for (const [id, reason] of acks) expect(reason.length, id).toBeGreaterThan(40);
    }
  });
});

describe('cfn-lint', () => {
  itPassesCfnLint('the synthesized templates pass cfn-lint', () => [
    ['default', base],
    ['variant', variant],
  ]);
});
