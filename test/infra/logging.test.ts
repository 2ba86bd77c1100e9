/**
 * Logging switches of the constructs, on small stacks of their own: the API's optional
 * access log (and its cdk-nag acknowledgment), and a function's log level filters.
 */
import { App, type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { SystemLogLevel } from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { LOG_LEVELS as CONFIG_LOG_LEVELS } from '../../infra/config.js';
import { NO_ACCESS_LOGS_REASON, SUBMIT_ROUTE_KEY, TaskApi } from '../../infra/constructs/api.js';
import { API_ROUTES } from '../../shared/service/api/routes.js';
import { METRICS } from '../../shared/config/metrics.js';
import { applicationLogLevelOf, KajFunction } from '../../infra/constructs/kaj-function.js';
import { TaskTable } from '../../infra/constructs/task-table.js';
import { ENV } from '../../shared/config/resources.js';
import { LOG_LEVELS } from '../../shared/service/observability.js';

/** A stack whose functions are not bundled (their code does not matter here; saves seconds). */
function emptyStack(): Stack {
  return new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'LoggingTest');
}

function apiStack(accessLogs: boolean | undefined): { stack: Stack; api: TaskApi } {
  const stack = emptyStack();
  const api = new TaskApi(stack, 'Api', {
    table: new TaskTable(stack, 'Tasks', { tableName: 'logging-tasks' }),
    queues: [new sqs.Queue(stack, 'Queue')],
    environment: {},
    idSecret: new secretsmanager.Secret(stack, 'Secret'),
    logRetention: logs.RetentionDays.ONE_WEEK,
    ...(accessLogs === undefined ? {} : { accessLogs }),
  });
  return { stack, api };
}

/** cdk-nag's unacknowledged findings on the API construct (the stand-in table, queue and secret are not under test). */
function apiFindings(stack: Stack): string[] {
  const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(stack);
  return report.violations
    .filter((v) => v.violatingResources.some((r) => (r.constructPath ?? '').includes('/Api/')))
    .map((v) => v.ruleName);
}

describe('TaskApi access logs', () => {
  it('on by default: the stage writes the slim line to a log group of its own; cdk-nag APIG1 is satisfied', () => {
    const { stack, api } = apiStack(undefined);
    const stage = Template.fromStack(stack).findResources('AWS::ApiGatewayV2::Stage');
    const [props] = Object.values(stage).map((r) => r.Properties as Record<string, any>);
    expect(api.accessLogGroup).toBeDefined();
    expect(Object.keys(JSON.parse(props!.AccessLogSettings.Format as string))).toEqual([
      'id',
      'ip',
      'who',
      'route',
      'status',
      'ms',
      'err',
    ]);
    expect(apiFindings(stack)).not.toContain('AwsSolutions-APIG1');
  });

  it('accessLogs: false writes none, and acknowledges cdk-nag APIG1 with the reason', () => {
    const { stack, api } = apiStack(false);
    const template = Template.fromStack(stack);
    const [props] = Object.values(template.findResources('AWS::ApiGatewayV2::Stage')).map(
      (r) => r.Properties as Record<string, unknown>,
    );
    expect(props!.AccessLogSettings).toBeUndefined();
    expect(api.accessLogGroup).toBeUndefined();
    // Only the function's own log group is left.
    expect(Object.keys(template.findResources('AWS::Logs::LogGroup'))).toHaveLength(1);
    expect(apiFindings(stack)).not.toContain('AwsSolutions-APIG1');
    const acks = api.stage.node.metadata
      .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
      .flatMap((m) => Object.entries(m.data as Record<string, string>));
    expect(acks).toContainEqual([expect.stringMatching(/AwsSolutions-APIG1$/), NO_ACCESS_LOGS_REASON]);
  });
});

describe('TaskApi submission count', () => {
  it('counts 202 answers of the submit route from the access log, so the API writes no metric line per request', () => {
    const { stack } = apiStack(undefined);
    const filters = Object.values(Template.fromStack(stack).findResources('AWS::Logs::MetricFilter'));
    expect(filters).toHaveLength(1);
    expect(filters[0]?.Properties).toMatchObject({
      FilterPattern: '{ ($.route = "POST /api/v1/tasks") && ($.status = "202") }',
      MetricTransformations: [{ MetricNamespace: METRICS.namespace, MetricName: METRICS.submitted, MetricValue: '1' }],
    });
    const submit = API_ROUTES.find((r) => r.name === 'submit');
    expect(SUBMIT_ROUTE_KEY).toBe(`${submit?.method} ${submit?.path}`);
  });

  it('has no filter (and no count) without access logs', () => {
    const { stack } = apiStack(false);
    Template.fromStack(stack).resourceCountIs('AWS::Logs::MetricFilter', 0);
  });
});

describe('KajFunction log levels', () => {
  it('maps every Kaj level to a Lambda application level that keeps the EMF lines (at most INFO)', () => {
    expect(Object.fromEntries(LOG_LEVELS.map((l) => [l, applicationLogLevelOf(l)]))).toEqual({
      TRACE: 'TRACE',
      DEBUG: 'DEBUG',
      INFO: 'INFO',
      WARN: 'INFO',
      ERROR: 'INFO',
      CRITICAL: 'INFO',
      SILENT: 'INFO',
    });
  });

  it('the runtime knows the same level names as the deployment configuration', () => {
    expect([...LOG_LEVELS]).toEqual([...CONFIG_LOG_LEVELS]);
  });

  it("reads the level from its environment's POWERTOOLS_LOG_LEVEL; Lambda's own lines at WARN unless told otherwise", () => {
    const stack = emptyStack();
    const fn = (id: string, level: string | undefined, systemLogLevel?: SystemLogLevel) =>
      new KajFunction(stack, id, {
        entryName: 'sweeper',
        description: id,
        timeout: Duration.seconds(10),
        environment: level === undefined ? {} : { [ENV.logLevel]: level },
        logRetention: logs.RetentionDays.ONE_DAY,
        ...(systemLogLevel === undefined ? {} : { systemLogLevel }),
      });
    const fns = [
      fn('Trace', 'trace'),
      fn('Warn', 'WARN'),
      fn('Unset', undefined),
      fn('Chatty', 'INFO', SystemLogLevel.INFO),
    ];
    const resources = (Template.fromStack(stack).toJSON() as { Resources: Record<string, { Properties: any }> })
      .Resources;
    const configs = fns.map(
      (f) =>
        resources[stack.resolve((f.node.defaultChild as CfnElement).logicalId) as string]!.Properties
          .LoggingConfig as Record<string, unknown>,
    );
    expect(configs.map((c) => [c.LogFormat, c.ApplicationLogLevel, c.SystemLogLevel])).toEqual([
      ['JSON', 'TRACE', 'WARN'],
      ['JSON', 'INFO', 'WARN'],
      ['JSON', 'INFO', 'WARN'],
      ['JSON', 'INFO', 'INFO'],
    ]);
  });
});
