/** Test helpers: reading a synthesized Kaj stack's template (resources, IAM statements, alarms, EMF). */
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { expect } from 'vitest';
import type { CfnResourceJson, SynthesizedKaj } from './synth.js';

/** Context that skips bundling the functions with esbuild (saves seconds where their code does not matter). */
export const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

export const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });

/** Every resource of a CloudFormation type, with its logical id. */
export const ofType = (s: SynthesizedKaj, type: string): [string, CfnResourceJson][] =>
  Object.entries(s.resources).filter(([, r]) => r.Type === type);

export interface Statement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
}

/** Every statement of the `AWS::IAM::Policy` resources attached to a role. */
export function policyStatements(s: SynthesizedKaj, roleId: string): Statement[] {
  return ofType(s, 'AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Statement[]);
}

/** The logical id of a function's execution role. */
export const roleOf = (fn: CfnResourceJson): string =>
  (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];

/** Every IAM statement attached to a function's execution role, which has no managed or inline policy. */
export function roleStatements(s: SynthesizedKaj, functionId: string): Statement[] {
  const fn = s.resources[functionId];
  expect(fn?.Type).toBe('AWS::Lambda::Function');
  const roleId = roleOf(fn!);
  const role = s.resources[roleId];
  expect(role?.Properties.ManagedPolicyArns, 'no AWS managed policy on the role').toBeUndefined();
  expect(role?.Properties.Policies, 'no inline policy on the role').toBeUndefined();
  return policyStatements(s, roleId);
}

/** A statement with its action and resource lists in a fixed order (IAM ignores their order; CDK sorts them). */
export function normalized(st: Statement): Statement {
  const sorted = (v: unknown) =>
    Array.isArray(v) ? [...v].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))) : v;
  return { ...st, Action: sorted(st.Action) as string | string[], Resource: sorted(st.Resource) };
}

export type AlarmProps = Record<string, any>;

/** The properties of one of the stack's alarms, by its key in `observability.alarms`. */
export function alarmProps(s: SynthesizedKaj, key: string): AlarmProps {
  const a = s.stack.observability.alarms[key];
  expect(a, key).toBeDefined();
  return s.resources[s.logicalId(a!)]!.Properties;
}

/** Expects exactly one queue policy on a queue, and that it denies every SQS action without TLS. */
export function expectTlsOnlyQueue(s: SynthesizedKaj, queueId: string, message?: string): void {
  const policies = ofType(s, 'AWS::SQS::QueuePolicy').filter(([, pol]) =>
    (pol.Properties.Queues as { Ref: string }[]).some((r) => r.Ref === queueId),
  );
  expect(policies, message).toHaveLength(1);
  expect(policies[0]![1].Properties.PolicyDocument.Statement).toContainEqual(
    expect.objectContaining({
      Effect: 'Deny',
      Action: 'sqs:*',
      Condition: { Bool: { 'aws:SecureTransport': 'false' } },
    }),
  );
}

/** A line of CloudWatch embedded metric format, as `createMetrics` writes it. */
export type EmfLine = {
  _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
} & Record<string, unknown>;

export type EmfDirective = EmfLine['_aws']['CloudWatchMetrics'][number];

/** Every metric directive among EMF lines that names the metric, with the line it stands in. */
export function emfDirectives(lines: readonly string[], metricName: string): { d: EmfDirective; emf: EmfLine }[] {
  return lines
    .map((l) => JSON.parse(l) as EmfLine)
    .flatMap((emf) => emf._aws.CloudWatchMetrics.map((d) => ({ d, emf })))
    .filter(({ d }) => d.Metrics.some((m) => m.Name === metricName));
}

/** A template value with every `{ Ref: id }` written as `<Ref id>`, so that its text can be read. */
export const templateText = (v: unknown): string => {
  if (typeof v === 'string') return v;
  const o = v as { Ref?: string; 'Fn::Join'?: [string, unknown[]] };
  if (o.Ref !== undefined) return `<Ref ${o.Ref}>`;
  if (o['Fn::Join'] !== undefined) return o['Fn::Join'][1].map(templateText).join(o['Fn::Join'][0]);
  return JSON.stringify(v);
};

/** cdk-nag AwsSolutions' unacknowledged findings in a scope, each as `<rule> at <construct paths>`, and the report. */
export function nagFindings(scope: IConstruct): { found: string[]; success: boolean } {
  const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(scope);
  const found = report.violations.map(
    (v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
  );
  return { found, success: report.success };
}

/** A construct's DynamoDB table resource, which the stack retains on delete and on replacement. */
export function retainedTable(s: SynthesizedKaj, table: IConstruct): CfnResourceJson {
  const resource = s.resources[s.logicalId(table)]!;
  expect(resource.Type).toBe('AWS::DynamoDB::Table');
  expect(resource.DeletionPolicy).toBe('Retain');
  expect(resource.UpdateReplacePolicy).toBe('Retain');
  return resource;
}

/** Every cdk-nag acknowledgment in a scope, as `[annotation id, reason]`, in construct order. */
export function acknowledgments(scope: IConstruct): [string, string][] {
  return scope.node
    .findAll()
    .flatMap((c) => c.node.metadata)
    .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
    .flatMap((m) => Object.entries(m.data as Record<string, string>));
}

/** The reason of the first acknowledgment of a cdk-nag rule (`AwsSolutions-L1`) in a scope. */
export const acknowledgment = (scope: IConstruct, rule: string): string | undefined =>
  acknowledgments(scope).find(([id]) => id === `Annotation::${rule}`)?.[1];

/** A table construct of Kaj's: a name, and the deletion settings it lets its user turn off. */
type TableConstruct = new (
  scope: IConstruct,
  id: string,
  props: { tableName: string; deletionProtection?: boolean; removalPolicy?: RemovalPolicy },
) => unknown;

/**
 * Expects a table construct to keep its table by default (`<name>-a`: Retain, deletion protection
 * on) and to give both up when told (`<name>-b`: Delete, protection off).
 */
export function expectRetainedUnlessTold(Table: TableConstruct, name: string): void {
  const stack = new Stack(new App(), 'RetentionTest');
  new Table(stack, 'Default', { tableName: `${name}-a` });
  new Table(stack, 'Scratch', {
    tableName: `${name}-b`,
    deletionProtection: false,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const tables = Object.values(Template.fromStack(stack).findResources('AWS::DynamoDB::Table'));
  expect(tables.map((t) => [t.Properties.TableName, t.DeletionPolicy, t.Properties.DeletionProtectionEnabled])).toEqual(
    [
      [`${name}-a`, 'Retain', true],
      [`${name}-b`, 'Delete', false],
    ],
  );
}
