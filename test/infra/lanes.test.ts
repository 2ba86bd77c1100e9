/**
 * Lanes and the limits table on AWS, read from the synthesized template: each lane's queues
 * (dead-lettering into the shared DLQs, which list every lane's queue as a redrive source), its
 * consumer function and event source mappings, exactly the permissions each consumer gets, every
 * function's `KAJ_LANE_QUEUE_URLS`, the limits table and who may touch it, the lanes' alarms and
 * the limit alarm, the synth-time checks on lanes, and that a stack without lanes keeps its default
 * lane exactly as it was (same logical ids and properties: existing stacks update in place).
 *
 * The stacks are synthesized without bundling the functions (their code does not matter here;
 * `npm run synth` bundles them all).
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_CONFIG,
  largestEnvironmentBytes,
  MAX_LAMBDA_ENVIRONMENT_BYTES,
  MAX_LANES,
} from '../../infra/config.js';
import { LimitTable } from '../../infra/constructs/limit-table.js';
import { limitDeferralsQuery } from '../../infra/constructs/observability.js';
import { TaskQueues } from '../../infra/constructs/task-queues.js';
import { InvalidConfigError } from '../../infra/errors.js';
import { KajStack, type KajStackProps } from '../../infra/kaj-stack.js';
import { OUTPUT_KEYS, parseStackOutputs } from '../../infra/outputs.js';
import { type LaneDeclarations, laneQueueNames } from '../../shared/config/lanes.js';
import { METRICS, metricsNamespace } from '../../shared/config/metrics.js';
import {
  DEFAULTS,
  ENV,
  LIMIT_TABLE_SCHEMA,
  PRIORITIES,
  resourceNames,
  TABLE_SCHEMA,
} from '../../shared/config/resources.js';
import type { LimitDeclarations } from '../../shared/limit/declaration.js';
import { TaskRegistry } from '../../shared/task/define.js';
import { createMetrics } from '../../shared/service/observability.js';
import { lanes as exampleLanes } from '../../tasks/lanes.js';
import { type CfnResourceJson, REPO_ROOT, type SynthesizedKaj, cdkJsonContext, synthKaj } from './synth.js';
import {
  acknowledgment,
  alarmProps,
  emfDirectives,
  expectTlsOnlyQueue,
  getAtt,
  NO_BUNDLING,
  nagFindings,
  normalized,
  ofType,
  policyStatements,
  roleOf,
  retainedTable,
  type Statement,
  templateText,
  expectRetainedUnlessTold,
} from './template.js';

const SYNTH_TIMEOUT = 120_000;

const LANES = {
  io: { memoryMiB: 512, concurrency: { high: 50, normal: 50, low: 10 } },
  cpu: { memoryMiB: 3008, timeoutSeconds: 600, architecture: 'x86_64', batchSize: 1 },
} as const satisfies LaneDeclarations;
/** Declared here rather than read from tasks/limits.ts: the stack only needs to know there is one. */
const LIMITS: LimitDeclarations = { email_provider: { rate: '50/s', concurrency: 20, learnRetryAfter: true } };
/**
 * Task types without a workflow, whatever tasks/index.ts declares: these stacks have no history
 * table (test/infra/history-table.test.ts has one).
 */
const NO_WORKFLOWS = new TaskRegistry([]);
/** The lanes in the stack's order: by name. */
const LANE_NAMES = ['cpu', 'io'] as const;

/**
 * The resources of the stack before lanes and limits, as it was synthesized then (without the
 * functions' code and the dashboard's body): test/infra/fixtures/before-lanes.template.json.
 */
const BEFORE = inStackNamespace(
  (
    JSON.parse(readFileSync(path.join(REPO_ROOT, 'test/infra/fixtures/before-lanes.template.json'), 'utf8')) as {
      Resources: Record<string, CfnResourceJson>;
    }
  ).Resources,
);

/**
 * The fixture with the one change made since that is not the lanes': metrics moved from the
 * shared namespace `Kaj` to the stack's own (`metricsNamespace('kaj')`, `Kaj/kaj`), in the
 * functions' POWERTOOLS_METRICS_NAMESPACE, the metric filter and the alarms.
 */
function inStackNamespace<T>(value: T): T {
  const keys = new Set(['POWERTOOLS_METRICS_NAMESPACE', 'MetricNamespace', 'Namespace']);
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [
        k,
        keys.has(k) && x === METRICS.namespace ? metricsNamespace('kaj') : walk(x),
      ]),
    );
  };
  return walk(value) as T;
}

let laned: SynthesizedKaj;
let plain: SynthesizedKaj;

beforeAll(() => {
  laned = synthKaj(undefined, NO_BUNDLING, { lanes: LANES, limits: LIMITS, registry: NO_WORKFLOWS });
  plain = synthKaj(undefined, NO_BUNDLING, { lanes: {}, limits: {}, registry: NO_WORKFLOWS });
}, SYNTH_TIMEOUT);

afterAll(() => {
  laned?.dispose();
  plain?.dispose();
});

const props = (s: SynthesizedKaj, c: IConstruct) => s.resources[s.logicalId(c)]!.Properties;
const arn = (s: SynthesizedKaj, c: IConstruct) => getAtt(s.logicalId(c));

const text = templateText;

/** Every IAM statement attached to a function's execution role. */
const roleStatements = (s: SynthesizedKaj, fn: IConstruct): Statement[] =>
  policyStatements(s, roleOf(s.resources[s.logicalId(fn)]!));

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);
const resourcesOf = (s: SynthesizedKaj, fn: IConstruct, action: string): unknown[] =>
  roleStatements(s, fn)
    .filter((st) => list(st.Action).includes(action))
    .flatMap((st) => list(st.Resource));

/** A lane's queues (the default lane's are the stack's own `taskQueues`). */
const queuesOf = (s: SynthesizedKaj, lane: string) =>
  lane === 'default' ? s.stack.taskQueues.queues : s.stack.laneQueues[lane]!.queues;
const consumerOf = (s: SynthesizedKaj, lane: string) =>
  lane === 'default' ? s.stack.consumer : s.stack.laneConsumers[lane]!;
const queueArns = (s: SynthesizedKaj, lane: string) => PRIORITIES.map((p) => arn(s, queuesOf(s, lane)[p]));
const allLanes = ['default', ...LANE_NAMES] as const;

describe('lane queues', () => {
  it('three per lane, named <stack>-<lane>-lane-<priority>: SSE-SQS, TLS only, the main queues’ retention, deleted with the stack', () => {
    for (const lane of LANE_NAMES) {
      const names = laneQueueNames('kaj', lane);
      for (const p of PRIORITIES) {
        const queue = queuesOf(laned, lane)[p];
        const id = laned.logicalId(queue);
        const resource = laned.resources[id]!;
        expect(resource.Properties.QueueName).toBe(`kaj-${lane}-lane-${p}`);
        expect(resource.Properties.QueueName).toBe(names[p]);
        expect(resource.Properties.SqsManagedSseEnabled).toBe(true);
        expect(resource.Properties.MessageRetentionPeriod).toBe(DEFAULTS.queueRetentionSeconds);
        expect(resource.DeletionPolicy).toBe('Delete');
        expectTlsOnlyQueue(laned, id);
      }
    }
  });

  it("no DLQs of their own: every lane's priority-p queue dead-letters into the deployment's priority-p DLQ after maxReceiveCount receives", () => {
    // Three DLQs, and three main queues per lane (default, cpu, io).
    expect(ofType(laned, 'AWS::SQS::Queue')).toHaveLength(PRIORITIES.length * (1 + allLanes.length));
    for (const lane of allLanes) {
      for (const p of PRIORITIES) {
        expect(props(laned, queuesOf(laned, lane)[p]).RedrivePolicy, `${lane} ${p}`).toEqual({
          deadLetterTargetArn: arn(laned, laned.stack.taskQueues.deadLetterQueues[p]),
          maxReceiveCount: DEFAULTS.maxReceiveCount,
        });
      }
    }
  });

  it("each DLQ's RedriveAllowPolicy lists exactly its priority's queues: the default lane's, then each lane's by name", () => {
    for (const p of PRIORITIES) {
      const policy = props(laned, laned.stack.taskQueues.deadLetterQueues[p]).RedriveAllowPolicy as {
        redrivePermission: string;
        sourceQueueArns: unknown[];
      };
      expect(policy.redrivePermission).toBe('byQueue');
      const at = 'arn:<Ref AWS::Partition>:sqs:<Ref AWS::Region>:<Ref AWS::AccountId>:';
      expect(policy.sourceQueueArns.map(text)).toEqual([
        `${at}kaj-${p}`,
        `${at}kaj-cpu-lane-${p}`,
        `${at}kaj-io-lane-${p}`,
      ]);
    }
  });

  it("a lane's queues hide a message at least as long as its consumer runs: max(queueVisibilityTimeoutSeconds, timeout + 30)", () => {
    const visibility = (lane: string) =>
      PRIORITIES.map((p) => props(laned, queuesOf(laned, lane)[p]).VisibilityTimeout as number);
    expect(visibility('default')).toEqual([330, 330, 330]);
    expect(visibility('io')).toEqual([330, 330, 330]);
    expect(visibility('cpu')).toEqual([630, 630, 630]);
    // Read from the template: every mapping's queue outlasts the function the mapping invokes.
    const mappings = ofType(laned, 'AWS::Lambda::EventSourceMapping');
    expect(mappings).toHaveLength(PRIORITIES.length * allLanes.length);
    for (const [id, m] of mappings) {
      const queue = laned.resources[(m.Properties.EventSourceArn as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]]!;
      const fn = laned.resources[(m.Properties.FunctionName as { Ref: string }).Ref]!;
      expect(queue.Properties.VisibilityTimeout, id).toBeGreaterThanOrEqual(fn.Properties.Timeout as number);
    }
  });
});

describe('lane consumers', () => {
  it("each lane's function has its memory, timeout and architecture, the same code and runtime as the default consumer", () => {
    const expected = {
      default: { MemorySize: 256, Timeout: 300, Architectures: ['arm64'] },
      io: { MemorySize: 512, Timeout: 300, Architectures: ['arm64'] },
      cpu: { MemorySize: 3008, Timeout: 600, Architectures: ['x86_64'] },
    };
    for (const lane of allLanes) {
      const fn = props(laned, consumerOf(laned, lane).handler);
      expect(fn, lane).toMatchObject({ ...expected[lane], Runtime: 'nodejs22.x', Handler: 'index.handler' });
      expect(fn.ReservedConcurrentExecutions).toBeUndefined();
    }
    expect(props(laned, laned.stack.laneConsumers.cpu!.handler).Description).toBe(
      "Kaj consumer of lane cpu: runs the tasks of the lane's three priority queues",
    );
    expect(props(laned, laned.stack.consumer.handler).Description).toBe(
      'Kaj consumer: runs the tasks of the three priority queues',
    );
    // One function per lane, each its own log group and role.
    expect(ofType(laned, 'AWS::Lambda::Function')).toHaveLength(3 + allLanes.length);
    const logGroups = allLanes.map((lane) => laned.logicalId(consumerOf(laned, lane).handler.functionLogGroup));
    expect(new Set(logGroups).size).toBe(allLanes.length);
  });

  it("each lane's mappings: one per priority on its own queues, its batch size and maximum concurrency, partial batch responses", () => {
    const expected = {
      default: { batch: [10, 10, 10], concurrency: [10, 5, 2] },
      io: { batch: [10, 10, 10], concurrency: [50, 50, 10] },
      cpu: { batch: [1, 1, 1], concurrency: [10, 5, 2] },
    };
    expect(DEFAULT_CONFIG.batchSize).toEqual({ high: 10, normal: 10, low: 10 });
    expect(DEFAULT_CONFIG.concurrency).toEqual(DEFAULTS.concurrency);
    for (const lane of allLanes) {
      const consumer = consumerOf(laned, lane);
      PRIORITIES.forEach((p, i) => {
        expect(props(laned, consumer.mappings[p]), `${lane} ${p}`).toMatchObject({
          EventSourceArn: arn(laned, queuesOf(laned, lane)[p]),
          FunctionName: { Ref: laned.logicalId(consumer.handler) },
          BatchSize: expected[lane].batch[i],
          ScalingConfig: { MaximumConcurrency: expected[lane].concurrency[i] },
          FunctionResponseTypes: ['ReportBatchItemFailures'],
        });
      });
    }
  });

  it("every mapping of a function reads its own lane's queues, and no other function reads them", () => {
    for (const lane of allLanes) {
      const fnRef = { Ref: laned.logicalId(consumerOf(laned, lane).handler) };
      const sources = ofType(laned, 'AWS::Lambda::EventSourceMapping')
        .filter(([, m]) => JSON.stringify(m.Properties.FunctionName) === JSON.stringify(fnRef))
        .map(([, m]) => m.Properties.EventSourceArn);
      expect(sources, lane).toEqual(queueArns(laned, lane));
    }
  });

  it("each consumer's statements, exactly: its own lane's queues to poll and lease, every lane's to requeue, the DLQs, the task and limits tables", () => {
    const tasks = arn(laned, laned.stack.taskTable.table);
    const limits = arn(laned, laned.stack.limitTable.table);
    const dlqs = PRIORITIES.map((p) => arn(laned, laned.stack.taskQueues.deadLetterQueues[p]));
    for (const lane of allLanes) {
      const fn = consumerOf(laned, lane).handler;
      const own = queueArns(laned, lane);
      const others = allLanes.filter((l) => l !== lane).flatMap((l) => queueArns(laned, l));
      expect(roleStatements(laned, fn).map(normalized), lane).toEqual(
        [
          {
            Effect: 'Allow',
            Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
            Resource: arn(laned, fn.functionLogGroup),
          },
          {
            Sid: 'TaskTableItems',
            Effect: 'Allow',
            Action: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
            Resource: tasks,
          },
          {
            Sid: 'LeaseAndRequeue',
            Effect: 'Allow',
            Action: ['sqs:ChangeMessageVisibility', 'sqs:SendMessage'],
            Resource: own,
          },
          { Sid: 'RequeueToOtherLanes', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: others },
          { Sid: 'DeadLetter', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: dlqs },
          {
            Sid: 'PollQueues',
            Effect: 'Allow',
            Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'],
            Resource: own,
          },
          {
            Sid: 'LimitTableItems',
            Effect: 'Allow',
            Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
            Resource: limits,
          },
        ].map(normalized),
      );
      // Spelled out: no receive, delete or lease on another lane's queues, no read of a DLQ.
      for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']) {
        for (const q of [...others, ...dlqs]) expect(resourcesOf(laned, fn, action)).not.toContainEqual(q);
      }
    }
  });

  it('the API, the sweeper and the scheduler may send to every lane’s queues (the sweeper to the DLQs too)', () => {
    const main = allLanes.flatMap((lane) => queueArns(laned, lane));
    const dlqs = PRIORITIES.map((p) => arn(laned, laned.stack.taskQueues.deadLetterQueues[p]));
    // CDK sorts a statement's resources: compare them as sets.
    const sorted = (v: unknown[]) => [...v].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    const sends = (fn: IConstruct) => sorted(resourcesOf(laned, fn, 'sqs:SendMessage'));
    expect(sends(laned.stack.api.handler)).toEqual(sorted(main));
    expect(sends(laned.stack.scheduler.handler)).toEqual(sorted(main));
    expect(sends(laned.stack.sweeper.handler)).toEqual(sorted([...main, ...dlqs]));
    for (const fn of [laned.stack.api.handler, laned.stack.scheduler.handler, laned.stack.sweeper.handler]) {
      expect(resourcesOf(laned, fn, 'sqs:ReceiveMessage')).toEqual([]);
    }
  });
});

describe('environment', () => {
  const functions = (s: SynthesizedKaj) => [
    s.stack.api.handler,
    s.stack.consumer.handler,
    ...Object.values(s.stack.laneConsumers).map((c) => c.handler),
    s.stack.sweeper.handler,
    s.stack.scheduler.handler,
  ];
  const envOf = (s: SynthesizedKaj, fn: IConstruct) => props(s, fn).Environment.Variables as Record<string, unknown>;

  it("every function gets KAJ_LANE_QUEUE_URLS: JSON of each lane's queue URLs (the queues' Refs)", () => {
    const expected = Object.fromEntries(
      LANE_NAMES.map((lane) => [
        lane,
        Object.fromEntries(PRIORITIES.map((p) => [p, `<Ref ${laned.logicalId(queuesOf(laned, lane)[p])}>`])),
      ]),
    );
    expect(functions(laned)).toHaveLength(6);
    for (const fn of functions(laned)) {
      const value = envOf(laned, fn)[ENV.laneQueueUrls];
      expect(value, fn.node.path).toBeDefined();
      expect(JSON.parse(text(value))).toEqual(expected);
    }
  });

  it('KAJ_LIMITS_TABLE_NAME for the consumers only', () => {
    const limits = { Ref: laned.logicalId(laned.stack.limitTable.table) };
    for (const lane of allLanes)
      expect(envOf(laned, consumerOf(laned, lane).handler)[ENV.limitsTableName]).toEqual(limits);
    for (const fn of [laned.stack.api.handler, laned.stack.sweeper.handler, laned.stack.scheduler.handler]) {
      expect(envOf(laned, fn)).not.toHaveProperty(ENV.limitsTableName);
    }
  });

  it('the largest environment a function can get stays under Lambda’s 4 KB with the example lanes and with nine short ones', () => {
    expect(MAX_LAMBDA_ENVIRONMENT_BYTES).toBe(4096);
    expect(largestEnvironmentBytes('kaj', Object.keys(exampleLanes))).toBeLessThan(2000);
    expect(largestEnvironmentBytes('kaj', ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'])).toBeLessThanOrEqual(4096);
  });
});

describe('limits table', () => {
  it('named <stack>-limits, key `pk`, on-demand, TTL on expires_at, PITR, SSE with the AWS managed key, deletion protection, retained', () => {
    const table = retainedTable(laned, laned.stack.limitTable.table);
    expect(table.Properties).toEqual({
      TableName: resourceNames('kaj').limits,
      KeySchema: [{ AttributeName: LIMIT_TABLE_SCHEMA.partitionKey, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      TimeToLiveSpecification: { AttributeName: LIMIT_TABLE_SCHEMA.ttlAttribute, Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
      DeletionProtectionEnabled: true,
    });
    expect(LIMIT_TABLE_SCHEMA).toEqual({ partitionKey: 'pk', ttlAttribute: 'expires_at' });
    expect(table.Properties.TableName).toBe('kaj-limits');
  });

  it("keeps the task table's deletion protection and removal policy (retainData)", () => {
    const tasks = laned.resources[laned.logicalId(laned.stack.taskTable.table)]!;
    const limits = laned.resources[laned.logicalId(laned.stack.limitTable.table)]!;
    expect(limits.DeletionPolicy).toBe(tasks.DeletionPolicy);
    expect(limits.Properties.DeletionProtectionEnabled).toBe(tasks.Properties.DeletionProtectionEnabled);
    expectRetainedUnlessTold(LimitTable, 'limits');
  });

  it('only the consumers may touch it: get, put and update items, nothing else; not the API, the sweeper or the scheduler', () => {
    const id = laned.logicalId(laned.stack.limitTable.table);
    for (const lane of allLanes) {
      const statements = roleStatements(laned, consumerOf(laned, lane).handler).filter((st) =>
        JSON.stringify(st.Resource).includes(id),
      );
      expect(statements.map(normalized)).toEqual([
        normalized({
          Sid: 'LimitTableItems',
          Effect: 'Allow',
          Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          Resource: getAtt(id),
        }),
      ]);
    }
    for (const fn of [laned.stack.api.handler, laned.stack.sweeper.handler, laned.stack.scheduler.handler]) {
      expect(JSON.stringify(roleStatements(laned, fn))).not.toContain(id);
    }
  });

  it('output LimitsTableName, which the CLI reads when present (stacks deployed before it still parse)', () => {
    const outputs = (laned.template.toJSON() as { Outputs: Record<string, { Value: unknown }> }).Outputs;
    expect(OUTPUT_KEYS.limitsTableName).toBe('LimitsTableName');
    expect(outputs.LimitsTableName?.Value).toEqual({ Ref: laned.logicalId(laned.stack.limitTable.table) });
    const required = Object.keys(outputs)
      .filter((k) => k !== 'LimitsTableName')
      .map((k) => ({ OutputKey: k, OutputValue: `v-${k}` }));
    expect(parseStackOutputs(required)).not.toHaveProperty('limitsTableName');
    expect(
      parseStackOutputs([...required, { OutputKey: 'LimitsTableName', OutputValue: 'kaj-limits' }]).limitsTableName,
    ).toBe('kaj-limits');
  });
});

describe('alarms', () => {
  const alarm = alarmProps;
  const topic = () => [{ Ref: laned.logicalId(laned.stack.observability.alarmTopic) }];

  it("per lane: each queue's oldest message age, and the consumer's errors and throttles, named after the lane", () => {
    for (const lane of LANE_NAMES) {
      const fn = { Name: 'FunctionName', Value: { Ref: laned.logicalId(laned.stack.laneConsumers[lane]!.handler) } };
      expect(alarm(laned, `consumerErrors-${lane}`)).toMatchObject({
        AlarmName: `kaj-${lane}-lane-consumer-errors`,
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [fn],
        Statistic: 'Sum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        AlarmActions: topic(),
        OKActions: topic(),
      });
      expect(alarm(laned, `consumerThrottles-${lane}`)).toMatchObject({
        AlarmName: `kaj-${lane}-lane-consumer-throttles`,
        MetricName: 'Throttles',
        Dimensions: [fn],
      });
      for (const p of PRIORITIES) {
        expect(alarm(laned, `oldestMessageAge-${lane}-${p}`)).toMatchObject({
          AlarmName: `kaj-${lane}-lane-${p}-oldest-message-age`,
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateAgeOfOldestMessage',
          Dimensions: [{ Name: 'QueueName', Value: getAtt(laned.logicalId(queuesOf(laned, lane)[p]), 'QueueName') }],
          Statistic: 'Maximum',
          Threshold: DEFAULT_CONFIG.oldestMessageAgeAlarmSeconds,
          ComparisonOperator: 'GreaterThanThreshold',
          AlarmActions: topic(),
        });
      }
    }
    // The DLQ alarms stay one per priority: the DLQs are shared.
    expect(Object.keys(laned.stack.observability.alarms).filter((k) => k.startsWith('dlqNotEmpty'))).toHaveLength(3);
  });

  it('a limit saturated or paused for 30 minutes: LimitDeferrals of any task type > 0 in 6 consecutive 5-minute periods', () => {
    const a = alarm(laned, 'limitDeferrals');
    expect(a).toMatchObject({
      AlarmName: 'kaj-limit-saturated-30-minutes',
      Metrics: [{ Expression: limitDeferralsQuery('Kaj/kaj'), Id: expect.any(String), Period: 300, ReturnData: true }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 6,
      DatapointsToAlarm: 6,
      TreatMissingData: 'notBreaching',
      AlarmActions: topic(),
      OKActions: topic(),
    });
    expect(a.Metrics).toHaveLength(1);
    expect(limitDeferralsQuery('Kaj/kaj')).toBe(`SELECT SUM(LimitDeferrals) FROM "Kaj/kaj" WHERE service = 'kaj'`);
    expect(a.AlarmDescription).toMatch(/saturated/);
    expect(a.AlarmDescription).toMatch(/Retry-After/);
    expect(a.AlarmDescription).toMatch(/tasks\/limits\.ts/);
  });

  it('the query matches what the functions emit for a deferral, with a TaskType or without', () => {
    const lines: string[] = [];
    // In the stack's namespace, as its functions are told (POWERTOOLS_METRICS_NAMESPACE).
    const metrics = createMetrics({ write: (l) => lines.push(l), namespace: metricsNamespace('kaj') });
    metrics.count(METRICS.limitDeferrals, 'send-email');
    metrics.count(METRICS.limitDeferrals, undefined);
    metrics.flush();
    const directives = emfDirectives(lines, 'LimitDeferrals');
    expect(directives).toHaveLength(2);
    for (const { d, emf } of directives) {
      // FROM "Kaj/kaj" WHERE service = 'kaj': the namespace, and the service dimension whatever else.
      expect(d.Namespace).toBe('Kaj/kaj');
      expect(d.Dimensions[0]).toContain('service');
      expect(emf.service).toBe('kaj');
    }
  });

  it('how many: the 16 of a stack without lanes, 5 per lane, and the limit alarm when there is a limit', () => {
    expect(Object.keys(laned.stack.observability.alarms)).toHaveLength(16 + 2 * 5 + 1);
    expect(ofType(laned, 'AWS::CloudWatch::Alarm')).toHaveLength(27);
    expect(Object.keys(plain.stack.observability.alarms)).toHaveLength(16);
    expect(plain.stack.observability.alarms.limitDeferrals).toBeUndefined();
  });

  it('dashboard: the lanes’ queues and consumers, and deferrals and pauses of every type', () => {
    const [[, dashboard]] = ofType(laned, 'AWS::CloudWatch::Dashboard') as [[string, CfnResourceJson]];
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const m of [METRICS.limitDeferrals, METRICS.limitPauses]) {
      expect(body).toContain(`SUM(SEARCH('Namespace=\\\\\\"Kaj/kaj\\\\\\" MetricName=\\\\\\"${m}\\\\\\"'`);
    }
    for (const lane of LANE_NAMES) {
      expect(body).toContain(JSON.stringify(getAtt(laned.logicalId(queuesOf(laned, lane).high), 'QueueName')));
      expect(body).toContain(JSON.stringify({ Ref: laned.logicalId(laned.stack.laneConsumers[lane]!.handler) }));
    }
  });
});

describe('validation', () => {
  const build = (p: Pick<KajStackProps, 'lanes' | 'limits'>, stackName?: string) =>
    new KajStack(new App({ context: { ...cdkJsonContext(), ...NO_BUNDLING } }), 'LaneCheck', {
      ...p,
      ...(stackName === undefined ? {} : { config: { stackName } }),
    });
  const failure = (f: () => unknown): InvalidConfigError => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidConfigError);
      return e as InvalidConfigError;
    }
    throw new Error('did not throw');
  };
  const lanesNamed = (names: string[]) => Object.fromEntries(names.map((n) => [n, {}]));

  it('more than nine lanes fail synth, naming `lanes` and why (SQS: ten redrive sources per DLQ)', () => {
    expect(MAX_LANES).toBe(9);
    const e = failure(() => build({ lanes: lanesNamed(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']) }));
    expect(e.key).toBe('lanes');
    expect(e.message).toMatch(/10 lanes .*at most 9/);
    expect(e.message).toMatch(/at most 10\s+source queues/);
  });

  it('nine lanes are fine: nine more consumers, and ten sources per DLQ', () => {
    const stack = build({ lanes: lanesNamed(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']) });
    expect(Object.keys(stack.laneConsumers)).toHaveLength(9);
    const dlq =
      Template.fromStack(stack).toJSON().Resources[
        stack.resolve((stack.taskQueues.deadLetterQueues.high.node.defaultChild as sqs.CfnQueue).logicalId) as string
      ];
    expect(dlq.Properties.RedriveAllowPolicy.sourceQueueArns).toHaveLength(10);
  });

  it('the TaskQueues construct refuses more than nine other lanes itself', () => {
    const stack = new Stack(new App(), 'QueuesTest');
    const names = resourceNames('x');
    const laneQueueNamesOf = Object.fromEntries(
      ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].map((l) => [l, laneQueueNames('x', l)]),
    );
    expect(() => new TaskQueues(stack, 'Queues', { names, laneQueueNames: laneQueueNamesOf })).toThrow(/at most 9/);
  });

  it('a bad lane name fails synth naming `lanes`: upper case, the default lane, a dash, too long', () => {
    for (const name of ['Cpu', 'default', 'gpu-big', 'abcdefghijklm', '1cpu']) {
      const e = failure(() => build({ lanes: { [name]: {} } }));
      expect(e.key, name).toBe('lanes');
      expect(e.message, name).toContain(name);
    }
  });

  it('a bad lane setting fails synth naming the lane and the option', () => {
    const e = failure(() => build({ lanes: { cpu: { memoryMiB: 64 } } }));
    expect(e.key).toBe('lanes.cpu.memoryMiB');
    expect(e.message).toMatch(/lane "cpu": memoryMiB must be an integer in \[128, 10240\]/);
    expect(failure(() => build({ lanes: { cpu: { concurrency: { low: 1 } } } })).key).toBe('lanes.cpu.concurrency.low');
  });

  it("lanes whose URLs would not fit in a function's 4 KB environment fail synth naming `lanes`", () => {
    const long = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((c) => c.repeat(12));
    const stackName = `k${'x'.repeat(39)}`;
    expect(largestEnvironmentBytes(stackName, long)).toBeGreaterThan(4096);
    const e = failure(() => build({ lanes: lanesNamed(long) }, stackName));
    expect(e.key).toBe('lanes');
    expect(e.message).toMatch(/above Lambda's 4096/);
  });

  it('by default, the lanes of tasks/lanes.ts and the limits of tasks/limits.ts', () => {
    const stack = build({});
    expect(Object.keys(stack.laneConsumers)).toEqual(Object.keys(exampleLanes));
    expect(stack.lanes).toBe(exampleLanes);
    expect(stack.observability.alarms.limitDeferrals).toBeDefined();
  });
});

describe('a stack without lanes', () => {
  const CONSUMER = 'ConsumerHandler5D2FFBD7';
  const CONSUMER_POLICY = 'ConsumerHandlerRoleDefaultPolicyB013E4BD';
  const DASHBOARD = 'ObservabilityDashboard9A1D08B3';
  const TASK_TABLE = 'TasksTable45D1B62D';
  const API_POLICY = Object.keys(BEFORE).find((id) => id.startsWith('ApiHandlerRoleDefaultPolicy')) as string;
  const API = 'ApiHandler8AD6A8DF';
  const SCHEDULER = 'SchedulerHandler63D99A45';
  /** Added since: the schedule rules in the API's and the scheduler's environment, UpdateItem on the schedules table (owners' counts). */
  const SCHEDULE_RULES: string[] = [
    ENV.scheduleMinIntervalSeconds,
    ENV.scheduleAllowSecondsField,
    ENV.scheduleMaxPerOwner,
  ];
  const withoutScheduleCounts = (statements: Statement[]): Statement[] =>
    statements.map((st) =>
      st.Sid === 'ScheduleTableItems' && Array.isArray(st.Action)
        ? { ...st, Action: st.Action.filter((a) => a !== 'dynamodb:UpdateItem') }
        : st,
    );

  it('keeps every resource of the stack before lanes under the same logical id and type, and adds the limits table and the API routes added since', () => {
    for (const [id, resource] of Object.entries(BEFORE)) expect(plain.resources[id]?.Type, id).toBe(resource.Type);
    const added = Object.keys(plain.resources).filter((id) => !(id in BEFORE) && id !== 'CDKMetadata');
    // The batch submit, listing, signal, pipeline and OpenAPI document routes: a route and its invoke permission each.
    expect(added.sort()).toEqual(
      [
        plain.logicalId(plain.stack.limitTable.table),
        'ApiHttpApiGETapiv1tasks6C16210F',
        'ApiHttpApiGETapiv1tasksHandlerPermission158F9F99',
        'ApiHttpApiPOSTapiv1tasksbatchD1262B09',
        'ApiHttpApiPOSTapiv1tasksbatchHandlerPermissionFF7169D8',
        'ApiHttpApiGETapiv1openapijsonFC7BB767',
        'ApiHttpApiGETapiv1openapijsonHandlerPermissionF9BAC9A6',
        'ApiHttpApiPOSTapiv1tasksidsignalsname628E82E4',
        'ApiHttpApiPOSTapiv1tasksidsignalsnameHandlerPermissionA87DAC38',
        'ApiHttpApiDELETEapiv1pipelinesnamerunslogicaldate1BF01E49',
        'ApiHttpApiDELETEapiv1pipelinesnamerunslogicaldateHandlerPermissionF7E14797',
        'ApiHttpApiGETapiv1pipelines44FE9271',
        'ApiHttpApiGETapiv1pipelinesHandlerPermissionE791305F',
        'ApiHttpApiGETapiv1pipelinesname94DE9F9D',
        'ApiHttpApiGETapiv1pipelinesnameHandlerPermission4BBBC98F',
        'ApiHttpApiGETapiv1pipelinesnameruns2550B9CA',
        'ApiHttpApiGETapiv1pipelinesnamerunsHandlerPermission78445DBF',
        'ApiHttpApiGETapiv1pipelinesnamerunslogicaldate1F146804',
        'ApiHttpApiGETapiv1pipelinesnamerunslogicaldateHandlerPermission44C081D2',
        'ApiHttpApiPOSTapiv1pipelinesnamebackfillC261F95E',
        'ApiHttpApiPOSTapiv1pipelinesnamebackfillHandlerPermission189679DA',
        'ApiHttpApiPOSTapiv1pipelinesnamerunsAA3E0CCB',
        'ApiHttpApiPOSTapiv1pipelinesnamerunsHandlerPermission20D6E245',
        'ApiHttpApiPOSTapiv1pipelinesnamerunslogicaldateclear6FBED54A',
        'ApiHttpApiPOSTapiv1pipelinesnamerunslogicaldateclearHandlerPermissionFC304E1F',
      ].sort(),
    );
    // The default lane through the stack's own handles.
    expect(plain.logicalId(plain.stack.taskQueues.queues.high)).toBe('QueuesHighQueueA74530F4');
    expect(plain.logicalId(plain.stack.taskQueues.deadLetterQueues.low)).toBe('QueuesLowDlq6C242E06');
    expect(plain.logicalId(plain.stack.consumer.handler)).toBe(CONSUMER);
    expect(plain.logicalId(plain.stack.consumer.mappings.normal)).toBe('ConsumerHandlerNormalMappingF9F0999E');
  });

  it('leaves every one of them exactly as it was (queues, DLQs, mappings, every function, policy and alarm) but three', () => {
    for (const [id, before] of Object.entries(BEFORE)) {
      if ([CONSUMER, CONSUMER_POLICY, DASHBOARD, TASK_TABLE, API_POLICY, API, SCHEDULER].includes(id)) continue;
      const now = structuredClone(plain.resources[id]) as CfnResourceJson & { Metadata?: unknown };
      if (now.Type === 'AWS::Lambda::Function') delete now.Properties.Code;
      delete now.Metadata;
      expect(now, id).toEqual(before);
    }
  });

  it('the three: the consumer gets the limits table (its name, one statement on it); the dashboard a limits widget', () => {
    const { Code: _code, Environment: env, ...fn } = plain.resources[CONSUMER]!.Properties;
    const { Environment: envBefore, ...fnBefore } = BEFORE[CONSUMER]!.Properties;
    expect(fn).toEqual(fnBefore);
    expect(env.Variables).toEqual({
      ...envBefore.Variables,
      [ENV.limitsTableName]: { Ref: plain.logicalId(plain.stack.limitTable.table) },
    });
    const statements = plain.resources[CONSUMER_POLICY]!.Properties.PolicyDocument.Statement as Statement[];
    const before = BEFORE[CONSUMER_POLICY]!.Properties.PolicyDocument.Statement as Statement[];
    expect(statements.filter((st) => st.Sid !== 'LimitTableItems')).toEqual(before);
    expect(statements.filter((st) => st.Sid === 'LimitTableItems')).toHaveLength(1);
    const { DashboardBody: body, ...dashboard } = plain.resources[DASHBOARD]!.Properties;
    expect(dashboard).toEqual(BEFORE[DASHBOARD]!.Properties);
    expect(JSON.stringify(body)).toContain(METRICS.limitDeferrals);
  });

  it("the API and scheduler functions: the deployment's schedule rules added to their environment, nothing else", () => {
    for (const id of [API, SCHEDULER]) {
      const { Code: _code, Environment: env, ...fn } = plain.resources[id]!.Properties;
      const { Environment: envBefore, ...fnBefore } = BEFORE[id]!.Properties;
      expect(fn, id).toEqual(fnBefore);
      expect(env.Variables, id).toEqual({
        ...envBefore.Variables,
        [ENV.scheduleMinIntervalSeconds]: '60',
        [ENV.scheduleAllowSecondsField]: 'false',
        [ENV.scheduleMaxPerOwner]: '1000',
      });
      expect(Object.keys(envBefore.Variables).filter((k) => SCHEDULE_RULES.includes(k))).toEqual([]);
    }
  });

  it('the listing: the task table gains the listing GSI (nothing else changes), the API a Query on the listing and outbox indexes and a BatchGetItem on the table', () => {
    const table = structuredClone(plain.resources[TASK_TABLE]) as CfnResourceJson;
    const list = TABLE_SCHEMA.listIndex;
    const p = table.Properties as {
      GlobalSecondaryIndexes: { IndexName: string }[];
      AttributeDefinitions: { AttributeName: string }[];
    };
    expect(p.GlobalSecondaryIndexes.map((g) => g.IndexName)).toContain(list.name);
    p.GlobalSecondaryIndexes = p.GlobalSecondaryIndexes.filter((g) => g.IndexName !== list.name);
    p.AttributeDefinitions = p.AttributeDefinitions.filter(
      (a) => a.AttributeName !== list.partitionKey && a.AttributeName !== list.sortKey,
    );
    delete (table as { Metadata?: unknown }).Metadata;
    expect(table).toEqual(BEFORE[TASK_TABLE]);
    const statements = plain.resources[API_POLICY]!.Properties.PolicyDocument.Statement as Statement[];
    const before = BEFORE[API_POLICY]!.Properties.PolicyDocument.Statement as Statement[];
    const listing = new Set(['TaskListingQuery', 'TaskListingRows']);
    expect(withoutScheduleCounts(statements.filter((st) => !listing.has(st.Sid as string)))).toEqual(before);
    const query = statements.filter((st) => st.Sid === 'TaskListingQuery');
    expect(query).toHaveLength(1);
    expect(query[0]?.Action).toBe('dynamodb:Query');
    const indexes = JSON.stringify(query[0]?.Resource);
    expect(indexes).toContain(`/index/${list.name}`);
    expect(indexes).toContain(`/index/${TABLE_SCHEMA.outboxIndex.name}`);
    expect(query[0]?.Resource).toHaveLength(2);
    const rows = statements.filter((st) => st.Sid === 'TaskListingRows');
    expect(rows).toHaveLength(1);
    expect(rows[0]?.Action).toBe('dynamodb:BatchGetItem');
    expect(JSON.stringify(rows[0]?.Resource)).not.toContain('/index/');
  });

  it('no function gets KAJ_LANE_QUEUE_URLS', () => {
    for (const [id, fn] of ofType(plain, 'AWS::Lambda::Function')) {
      expect(fn.Properties.Environment.Variables, id).not.toHaveProperty(ENV.laneQueueUrls);
    }
  });
});

describe('cdk-nag AwsSolutions', () => {
  it('no unacknowledged finding with lanes (one on x86_64) and the limits table, nor without lanes', () => {
    for (const s of [laned, plain]) {
      expect(nagFindings(s.stack).found).toEqual([]);
    }
  });

  it('the runtime (L1) is acknowledged on every lane consumer with the reason the other functions carry', () => {
    const ack = (fn: IConstruct) => acknowledgment(fn, 'AwsSolutions-L1');
    for (const lane of LANE_NAMES) {
      expect(ack(laned.stack.laneConsumers[lane]!.handler)).toBe(ack(laned.stack.consumer.handler));
    }
  });
});
