/**
 * Direct submit on AWS, read from the synthesized templates: `KajStack.grantSubmit` gives a
 * producer's role exactly what the submit path uses (and what `get`, `waitFor` and `cancel` use)
 * and nothing more — in the stack, and across stacks of one app —, the `ProducerConfig` output
 * holds what `kaj/client/direct` reads, and cdk-nag stays clean with a granted role.
 *
 * The stacks are synthesized without bundling the functions (their code does not matter here).
 */
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { CfnElement } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { KajStack } from '../../infra/kaj-stack.js';
import { OUTPUT_KEYS, parseStackOutputs } from '../../infra/outputs.js';
import type { LaneDeclarations } from '../../shared/config/lanes.js';
import { parseProducerConfig } from '../../shared/config/producer.js';
import { PRIORITIES } from '../../shared/config/resources.js';
import { type CfnResourceJson, cdkJsonContext } from './synth.js';

const SYNTH_TIMEOUT = 120_000;
const LANES = { io: { memoryMiB: 512 }, cpu: { memoryMiB: 3008 } } as const satisfies LaneDeclarations;
const RETENTION_DAYS = 3;

interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
}

let kaj: KajStack;
let producers: Stack;
let template: Record<string, any>;
let producersTemplate: Record<string, any>;
let localRole: iam.Role;
let remoteRole: iam.Role;

beforeAll(() => {
  const app = new App({ context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] } });
  kaj = new KajStack(app, 'KajTest', {
    lanes: LANES,
    limits: {},
    config: { retentionDays: RETENTION_DAYS },
    env: { account: '123456789012', region: 'eu-west-1' },
  });
  // A producer in the Kaj stack itself, and one in a stack of its own (the usual layout).
  localRole = new iam.Role(kaj, 'LocalProducer', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
  kaj.grantSubmit(localRole);
  producers = new Stack(app, 'Producers', { env: { account: '123456789012', region: 'eu-west-1' } });
  remoteRole = new iam.Role(producers, 'Producer', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
  kaj.grantSubmit(remoteRole);
  new lambda.Function(producers, 'ProducerFn', {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('export const handler = async () => {};'),
    role: remoteRole,
    environment: { KAJ_PRODUCER_CONFIG: kaj.producerConfig },
  });
  template = Template.fromStack(kaj).toJSON();
  producersTemplate = Template.fromStack(producers).toJSON();
}, SYNTH_TIMEOUT);

const logicalId = (c: IConstruct): string => {
  const child = (c.node.defaultChild ?? c) as CfnElement;
  return Stack.of(child).resolve(child.logicalId) as string;
};
const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);
const sorted = (v: unknown[]) => [...v].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

/** Every statement of the policies attached to a role of `t`. */
function statementsOf(t: Record<string, any>, roleId: string): Statement[] {
  return (Object.values(t.Resources) as CfnResourceJson[])
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}

/** `{ action: [resources] }` over statements, each list sorted. */
function grants(statements: readonly Statement[]): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const st of statements) {
    expect(st.Effect).toBe('Allow');
    for (const a of list(st.Action) as string[]) (out[a] ??= []).push(...list(st.Resource));
  }
  return Object.fromEntries(Object.entries(out).map(([a, r]) => [a, sorted(r)]));
}

/** The main queues of every lane (default first), by logical id. */
const mainQueueIds = () =>
  [kaj.taskQueues, ...Object.values(kaj.laneQueues)].flatMap((lane) =>
    PRIORITIES.map((p) => logicalId(lane.queues[p])),
  );

describe('KajStack.grantSubmit', () => {
  it("grants PutItem/GetItem/UpdateItem on the task table, SendMessage on every lane's main queue and GetSecretValue on the id secret: nothing else", () => {
    const table = getAtt(logicalId(kaj.taskTable.table));
    const secret = { Ref: logicalId(kaj.idSecret.secret) };
    expect(mainQueueIds()).toHaveLength(PRIORITIES.length * 3);
    expect(grants(statementsOf(template, logicalId(localRole)))).toEqual({
      'dynamodb:GetItem': [table],
      'dynamodb:PutItem': [table],
      'dynamodb:UpdateItem': [table],
      'sqs:SendMessage': sorted(mainQueueIds().map((id) => getAtt(id))),
      'secretsmanager:GetSecretValue': [secret],
    });
  });

  it('no DLQ, no index, no other table, no KMS key, no wildcard', () => {
    const text = JSON.stringify(statementsOf(template, logicalId(localRole)));
    for (const p of PRIORITIES) expect(text).not.toContain(logicalId(kaj.taskQueues.deadLetterQueues[p]));
    for (const t of [kaj.scheduleTable.table, kaj.limitTable.table]) expect(text).not.toContain(logicalId(t));
    expect(text).not.toContain('/index/');
    expect(text).not.toContain('kms:');
    expect(text).not.toContain('*');
  });

  it("is no more than the API function's own role may do on the task table and the queues", () => {
    const api = grants(statementsOf(template, logicalId(kaj.api.handler.role as iam.Role)));
    const mine = grants(statementsOf(template, logicalId(localRole)));
    for (const [action, resources] of Object.entries(mine)) {
      if (action.startsWith('secretsmanager:')) continue; // the API gets the value at deploy time instead
      expect(api[action], action).toEqual(expect.arrayContaining(resources));
    }
  });

  it('a role in another stack of the app gets the same grants, through cross-stack references', () => {
    const remote = grants(statementsOf(producersTemplate, logicalId(remoteRole)));
    expect(Object.keys(remote).sort()).toEqual([
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'secretsmanager:GetSecretValue',
      'sqs:SendMessage',
    ]);
    expect(remote['sqs:SendMessage']).toHaveLength(PRIORITIES.length * 3);
    // Each resource is the Kaj stack's, referenced across stacks (an export, or a stack output read).
    const crossStack = /"Fn::(ImportValue|GetStackOutput)"/;
    for (const resources of Object.values(remote))
      for (const r of resources) expect(JSON.stringify(r)).toMatch(crossStack);
    // …and the producer function gets the config as JSON around the imported values.
    const fn = (Object.values(producersTemplate.Resources) as CfnResourceJson[]).find(
      (r) => r.Type === 'AWS::Lambda::Function',
    );
    expect(JSON.stringify(fn?.Properties.Environment.Variables.KAJ_PRODUCER_CONFIG)).toMatch(crossStack);
  });

  it('cdk-nag AwsSolutions: no unacknowledged finding on a granted role or its policy, in either stack', () => {
    const roles = [localRole.node.path, remoteRole.node.path];
    for (const stack of [kaj, producers]) {
      const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(stack);
      const found = report.violations
        .filter((v) =>
          v.violatingResources.some((r) => roles.some((path) => r.constructPath?.startsWith(`${path}/`) === true)),
        )
        .map((v) => `${v.severity} ${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);
      expect(found).toEqual([]);
    }
    const kajReport = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(kaj);
    expect(kajReport.violations.map((v) => v.ruleName)).toEqual([]);
    // The control: the same filter does report a role with a wildcard grant (AwsSolutions-IAM5).
    const control = new Stack(new App(), 'Control');
    const wide = new iam.Role(control, 'Wide', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    wide.addToPolicy(new iam.PolicyStatement({ actions: ['dynamodb:*'], resources: ['*'] }));
    const controlReport = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(control);
    expect(
      controlReport.violations
        .filter((v) => v.violatingResources.some((r) => r.constructPath?.startsWith(`${wide.node.path}/`) === true))
        .map((v) => v.ruleName),
    ).toEqual(expect.arrayContaining([expect.stringMatching(/^AwsSolutions-IAM5/)]));
  });
});

/** A template value as text, each `{ Ref }` and `{ Fn::GetAtt }` written as `<id>` / `<id.Attr>`. */
function rendered(v: unknown): string {
  if (typeof v === 'string') return v;
  const o = v as { Ref?: string; 'Fn::GetAtt'?: [string, string]; 'Fn::Join'?: [string, unknown[]] };
  if (o.Ref !== undefined) return `<${o.Ref}>`;
  if (o['Fn::GetAtt'] !== undefined) return `<${o['Fn::GetAtt'].join('.')}>`;
  if (o['Fn::Join'] !== undefined) return o['Fn::Join'][1].map(rendered).join(o['Fn::Join'][0]);
  throw new Error(`unexpected template value ${JSON.stringify(v)}`);
}

describe('the ProducerConfig output', () => {
  it('is the JSON kaj/client/direct reads: region, task table, every lane’s queue URLs, id secret ARN, retention', () => {
    const output = template.Outputs[OUTPUT_KEYS.producerConfig] as { Value: unknown; Description: string };
    expect(OUTPUT_KEYS.producerConfig).toBe('ProducerConfig');
    expect(output.Description).toMatch(/grantSubmit/);
    const config = parseProducerConfig(rendered(output.Value));
    const url = (q: IConstruct) => `<${logicalId(q)}>`;
    expect(config).toEqual({
      version: 1,
      region: 'eu-west-1',
      tableName: `<${logicalId(kaj.taskTable.table)}>`,
      queueUrls: Object.fromEntries(PRIORITIES.map((p) => [p, url(kaj.taskQueues.queues[p])])),
      laneQueueUrls: Object.fromEntries(
        Object.keys(LANES).map((lane) => [
          lane,
          Object.fromEntries(PRIORITIES.map((p) => [p, url(kaj.laneQueues[lane]!.queues[p])])),
        ]),
      ),
      idSecretArn: `<${logicalId(kaj.idSecret.secret)}>`,
      retentionDays: RETENTION_DAYS,
    });
    // No secret value, no DLQ.
    expect(JSON.stringify(output.Value)).not.toContain('resolve:secretsmanager');
    for (const p of PRIORITIES) {
      expect(JSON.stringify(output.Value)).not.toContain(logicalId(kaj.taskQueues.deadLetterQueues[p]));
    }
  });

  it(
    'with an environment-agnostic stack the region is the deployment’s (AWS::Region)',
    () => {
      const app = new App({ context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] } });
      const agnostic = new KajStack(app, 'KajAgnostic', { lanes: {}, limits: {} });
      const value = Template.fromStack(agnostic).toJSON().Outputs[OUTPUT_KEYS.producerConfig].Value;
      const config = parseProducerConfig(rendered(value));
      expect(config.region).toBe('<AWS::Region>');
      expect(config.laneQueueUrls).toEqual({});
    },
    SYNTH_TIMEOUT,
  );

  it('parseStackOutputs reads it when present and leaves it out on stacks deployed before it', () => {
    const required = Object.keys(template.Outputs as Record<string, unknown>)
      .filter((k) => k !== OUTPUT_KEYS.producerConfig)
      .map((k) => ({ OutputKey: k, OutputValue: `v-${k}` }));
    expect(parseStackOutputs(required)).not.toHaveProperty('producerConfig');
    expect(
      parseStackOutputs([...required, { OutputKey: OUTPUT_KEYS.producerConfig, OutputValue: '{"version":1}' }])
        .producerConfig,
    ).toBe('{"version":1}');
  });
});
