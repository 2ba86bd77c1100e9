/**
 * `api: 'rest'`: the stack with a REST API instead of the HTTP API, read from the
 * synthesized template. The same routes, authorization, Lambda integration, throttling, access
 * log, submission count, 5xx alarm and function permissions as the HTTP API stack
 * (`kaj-stack.test.ts`), cdk-nag clean and cfn-lint clean, with `authMode` `iam` and `none`.
 */
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCESS_LOG_FORMAT, REST_ACCESS_LOG_FORMAT, REST_STAGE_NAME } from '../../infra/constructs/api.js';
import { OUTPUT_KEYS } from '../../infra/outputs.js';
import { API_ROUTES, routeKey } from '../../shared/service/api/routes.js';
import { METRICS, metricsNamespace } from '../../shared/config/metrics.js';
import { type CfnResourceJson, itPassesCfnLint, type SynthesizedKaj, synthKaj } from './synth.js';
import { acknowledgments, nagFindings, NO_BUNDLING, ofType } from './template.js';

const SYNTH_TIMEOUT = 180_000;
/** The function code is the same in every stack here: skip esbuild bundling (saves seconds). */

let http: SynthesizedKaj;
let rest: SynthesizedKaj;
let restOpen: SynthesizedKaj;

beforeAll(() => {
  http = synthKaj(undefined, NO_BUNDLING);
  rest = synthKaj({ api: 'rest' }, NO_BUNDLING);
  restOpen = synthKaj(
    { api: 'rest', authMode: 'none', stackName: 'kaj-rest-open', throttling: { rateLimit: 25, burstLimit: 50 } },
    NO_BUNDLING,
  );
}, SYNTH_TIMEOUT);

afterAll(() => {
  for (const s of [http, rest, restOpen]) s?.dispose();
});

/** The full path of an `AWS::ApiGateway::Resource`, from its PathPart and its parents'. */
function resourcePath(s: SynthesizedKaj, resourceId: string): string {
  const r = s.resources[resourceId];
  expect(r?.Type).toBe('AWS::ApiGateway::Resource');
  const parent = r!.Properties.ParentId as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
  const prefix = parent.Ref === undefined ? '' : resourcePath(s, parent.Ref);
  return `${prefix}/${r!.Properties.PathPart as string}`;
}

/** Every REST method as `METHOD /path`, with its properties. */
function methods(s: SynthesizedKaj): { key: string; props: Record<string, any> }[] {
  return ofType(s, 'AWS::ApiGateway::Method').map(([, m]) => ({
    key: `${m.Properties.HttpMethod as string} ${resourcePath(s, (m.Properties.ResourceId as { Ref: string }).Ref)}`,
    props: m.Properties,
  }));
}

/** IAM actions granted to a function's execution role. */
function grantedActions(s: SynthesizedKaj, functionId: string): string[] {
  const roleId = (s.resources[functionId]!.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return [
    ...new Set(
      ofType(s, 'AWS::IAM::Policy')
        .filter(([, p]) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
        .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as { Action: string | string[] }[])
        .flatMap((st) => (Array.isArray(st.Action) ? st.Action : [st.Action])),
    ),
  ].sort();
}

const restApiId = (s: SynthesizedKaj) => s.logicalId(s.stack.api.restApi!);

describe('API kind', () => {
  it('http (the default) has the HTTP API and no REST API; rest the REST API and nothing of API Gateway v2', () => {
    expect(http.stack.api.kind).toBe('http');
    expect(ofType(http, 'AWS::ApiGateway::RestApi')).toHaveLength(0);
    expect(ofType(http, 'AWS::ApiGatewayV2::Api')).toHaveLength(1);
    for (const s of [rest, restOpen]) {
      expect(s.stack.api.kind).toBe('rest');
      expect(Object.values(s.resources).filter((r) => r.Type.startsWith('AWS::ApiGatewayV2::'))).toEqual([]);
      const [[, api]] = ofType(s, 'AWS::ApiGateway::RestApi') as [[string, CfnResourceJson]];
      expect(api.Properties.EndpointConfiguration).toEqual({ Types: ['REGIONAL'] });
      // Deleted with the stack (moto keeps it after a destroy; AWS deletes what is not retained).
      expect(api.DeletionPolicy).toBeUndefined();
      // No account-wide CloudWatch role: AWS::ApiGateway::Account is one per region, shared by every API.
      expect(ofType(s, 'AWS::ApiGateway::Account')).toHaveLength(0);
    }
    expect(ofType(rest, 'AWS::ApiGateway::RestApi')[0]?.[1].Properties.Name).toBe(`${rest.stack.stackName}-api`);
  });
});

describe('REST API routes', () => {
  it('exactly the routes of the table, one method each, every one AWS_IAM, a Lambda proxy integration to the API function', () => {
    const found = methods(rest);
    expect(found.map((m) => m.key).sort()).toEqual(API_ROUTES.map((r) => routeKey(r)).sort());
    const fnId = rest.logicalId(rest.stack.api.handler);
    for (const { key, props } of found) {
      expect(props.AuthorizationType, key).toBe('AWS_IAM');
      expect(props.Integration.Type, key).toBe('AWS_PROXY');
      expect(props.Integration.IntegrationHttpMethod, key).toBe('POST');
      expect(JSON.stringify(props.Integration.Uri), key).toContain(fnId);
      expect(props.RestApiId).toEqual({ Ref: restApiId(rest) });
    }
  });

  it('authMode none: every method NONE, the synth warning, and only there', () => {
    for (const { props } of methods(restOpen)) expect(props.AuthorizationType).toBe('NONE');
    Annotations.fromStack(restOpen.stack).hasWarning('*', Match.stringLikeRegexp('authMode is "none"'));
    expect(Annotations.fromStack(rest.stack).findWarning('*', Match.stringLikeRegexp('authMode'))).toHaveLength(0);
  });

  it('API Gateway may invoke the function for each method on the prod stage only: no test-invoke, no wildcard method', () => {
    const perms = ofType(rest, 'AWS::Lambda::Permission').map(([, p]) => p.Properties);
    const fnId = rest.logicalId(rest.stack.api.handler);
    const mine = perms.filter((p) => JSON.stringify(p.FunctionName).includes(fnId));
    expect(mine).toHaveLength(API_ROUTES.length);
    for (const p of mine) {
      expect(p.Action).toBe('lambda:InvokeFunction');
      expect(p.Principal).toBe('apigateway.amazonaws.com');
      const arn = JSON.stringify(p.SourceArn);
      expect(arn).not.toContain('test-invoke-stage');
      expect(arn).toContain(restApiId(rest));
    }
    const sourceArns = mine.map((p) => JSON.stringify(p.SourceArn));
    // Each names its stage, method and path (`/…/prod/POST/api/v1/tasks`).
    for (const r of API_ROUTES) {
      const suffix = `/${r.method}${r.path.replace(/\{[^}]+\}/g, '*')}`;
      expect(
        sourceArns.some((a) => a.includes(suffix) && a.includes('DeploymentStage')),
        suffix,
      ).toBe(true);
    }
  });
});

describe('REST API stage', () => {
  const stageOf = (s: SynthesizedKaj) => {
    const [[, stage]] = ofType(s, 'AWS::ApiGateway::Stage') as [[string, CfnResourceJson]];
    return stage.Properties;
  };

  it(`one stage, "${REST_STAGE_NAME}", throttled on every method like the HTTP API's $default`, () => {
    expect(ofType(rest, 'AWS::ApiGateway::Stage')).toHaveLength(1);
    expect(stageOf(rest).StageName).toBe(REST_STAGE_NAME);
    const throttle = (s: SynthesizedKaj) =>
      (stageOf(s).MethodSettings as Record<string, unknown>[]).map((m) => ({
        path: m.ResourcePath,
        method: m.HttpMethod,
        rate: m.ThrottlingRateLimit,
        burst: m.ThrottlingBurstLimit,
      }));
    expect(throttle(rest)).toEqual([{ path: '/*', method: '*', rate: 100, burst: 200 }]);
    expect(throttle(restOpen)).toEqual([{ path: '/*', method: '*', rate: 25, burst: 50 }]);
    const [[, httpStage]] = ofType(http, 'AWS::ApiGatewayV2::Stage') as [[string, CfnResourceJson]];
    expect(httpStage.Properties.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 });
  });

  it('writes the same slim access-log line (same keys; the route as METHOD /template) to its own log group', () => {
    const settings = stageOf(rest).AccessLogSetting as { DestinationArn: unknown; Format: string };
    const format = JSON.parse(settings.Format) as Record<string, string>;
    expect(format).toEqual(REST_ACCESS_LOG_FORMAT);
    expect(Object.keys(format)).toEqual(Object.keys(ACCESS_LOG_FORMAT));
    expect(format.route).toBe('$context.httpMethod $context.resourcePath');
    expect(Object.values(format).join(' ')).not.toMatch(/body/i);
    const group = rest.stack.api.accessLogGroup;
    expect(group).toBeDefined();
    expect(JSON.stringify(settings.DestinationArn)).toContain(`{"Ref":"${rest.logicalId(group!)}"}`);
  });

  it('counts submissions from that log with the same filter as the HTTP API (route POST /api/v1/tasks, status 202)', () => {
    const filters = (s: SynthesizedKaj) => ofType(s, 'AWS::Logs::MetricFilter').map(([, f]) => f.Properties);
    const [restFilter] = filters(rest);
    expect(filters(rest)).toHaveLength(1);
    expect(restFilter).toMatchObject({
      FilterPattern: '{ ($.route = "POST /api/v1/tasks") && ($.status = "202") }',
      MetricTransformations: [
        { MetricNamespace: metricsNamespace(rest.stack.stackName), MetricName: METRICS.submitted, MetricValue: '1' },
      ],
    });
    expect(filters(http)[0]?.FilterPattern).toBe(restFilter?.FilterPattern);
  });

  it("alarms on the REST stage's 5XXError (dimensions ApiName and Stage)", () => {
    const alarm = rest.resources[rest.logicalId(rest.stack.observability.alarms.api5xx!)]!.Properties;
    expect(alarm).toMatchObject({
      Namespace: 'AWS/ApiGateway',
      MetricName: '5XXError',
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    const dims = [...(alarm.Dimensions as { Name: string; Value: unknown }[])].sort((a, b) =>
      a.Name.localeCompare(b.Name),
    );
    expect(dims.map((d) => d.Name)).toEqual(['ApiName', 'Stage']);
    expect(JSON.stringify(dims)).toContain(REST_STAGE_NAME);
  });

  it('the ApiUrl output is the stage URL (…execute-api…/prod/), so clients resolve api/v1/tasks under it', () => {
    const outputs = (rest.template.toJSON() as { Outputs: Record<string, { Value: unknown }> }).Outputs;
    const url = JSON.stringify(outputs[OUTPUT_KEYS.apiUrl]!.Value);
    expect(url).toContain(restApiId(rest));
    expect(url).toContain('.execute-api.');
    expect(url).toMatch(/\/",\{"Ref":"[A-Za-z0-9]*DeploymentStage[A-Za-z0-9]*"\},"\/"/);
  });
});

describe('same function, same permissions', () => {
  it('the API function has exactly the permissions and environment it has behind the HTTP API', () => {
    const fn = (s: SynthesizedKaj) => s.resources[s.logicalId(s.stack.api.handler)]!.Properties;
    expect(grantedActions(rest, rest.logicalId(rest.stack.api.handler))).toEqual(
      grantedActions(http, http.logicalId(http.stack.api.handler)),
    );
    expect(Object.keys(fn(rest).Environment.Variables).sort()).toEqual(
      Object.keys(fn(http).Environment.Variables).sort(),
    );
    expect(fn(rest).Handler).toBe(fn(http).Handler);
  });
});

describe('cdk-nag AwsSolutions (REST API)', () => {
  for (const which of ['iam', 'none'] as const) {
    it(`no unacknowledged error or warning (authMode ${which})`, () => {
      const s = which === 'iam' ? rest : restOpen;
      const { found, success } = nagFindings(s.stack);
      expect(found).toEqual([]);
      expect(success).toBe(true);
    });
  }

  it('acknowledges exactly the REST-only rules, each with its reason', () => {
    const acks = (s: SynthesizedKaj) =>
      acknowledgments(s.stack.api)
        .map(([id, reason]) => [id.replace(/^.*(AwsSolutions-[A-Z]+\d+)$/, '$1'), reason] as const)
        // The functions' runtime pin (AwsSolutions-L1) is the stack's, the same for both kinds.
        .filter(([id]) => id !== 'AwsSolutions-L1');
    const ids = new Set(acks(rest).map(([id]) => id));
    expect([...ids].sort()).toEqual([
      'AwsSolutions-APIG2',
      'AwsSolutions-APIG3',
      'AwsSolutions-APIG6',
      'AwsSolutions-COG4',
    ]);
    for (const [id, reason] of acks(rest)) expect(reason.length, id).toBeGreaterThan(40);
    expect(new Set(acks(restOpen).map(([id]) => id))).toContain('AwsSolutions-APIG4');
    // The HTTP API stack acknowledges none of them.
    expect(acks(http)).toEqual([]);
  });
});

describe('cfn-lint (REST API)', () => {
  itPassesCfnLint('the REST API templates pass cfn-lint', () => [
    ['rest', rest],
    ['rest-open', restOpen],
  ]);
});
