import { Annotations, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { API_ROUTES } from '../../shared/service/api/routes.js';
import { METRICS } from '../../shared/config/metrics.js';
import { ENV } from '../../shared/config/resources.js';
import type { ApiKind, AuthMode } from '../config.js';
import { grantQueues } from './grants.js';
import { KajFunction } from './kaj-function.js';
import type { HistoryTable } from './history-table.js';
import type { ScheduleTable } from './schedule-table.js';
import type { TaskTable } from './task-table.js';

/** The access log's `routeKey` of a submit: what the submission count filters on. */
export const SUBMIT_ROUTE_KEY = 'POST /api/v1/tasks';

/** The routes of the task API: the table the handler's router matches requests against. */
export { API_ROUTES };

/**
 * The access-log line: who called which route and how it went, never the request body. Only what
 * an operator needs, under short keys, because every request writes one: HTTP API access logs
 * cannot be sampled (a stage's access log settings are a destination and a format, nothing else),
 * so the line is kept small instead (`npm run bench:logs` prices it per task).
 *
 * `err` is API Gateway's own error message: why it answered 403 (signature), 429 (throttled) or
 * 5xx (integration failure) for requests the function never saw; `-` when there was none.
 */
export const ACCESS_LOG_FORMAT = {
  id: '$context.requestId',
  ip: '$context.identity.sourceIp',
  /** The IAM principal (the task owner is its role or user, docs/security.md). */
  who: '$context.identity.userArn',
  route: '$context.routeKey',
  status: '$context.status',
  /** Response latency, milliseconds. */
  ms: '$context.responseLatency',
  err: '$context.error.message',
} as const satisfies Readonly<Record<string, string>>;

/**
 * The REST API's access-log line: the same keys as {@link ACCESS_LOG_FORMAT}. REST APIs have no
 * `$context.routeKey`; the method and the resource path make the same `POST /api/v1/tasks`.
 */
export const REST_ACCESS_LOG_FORMAT = {
  ...ACCESS_LOG_FORMAT,
  route: '$context.httpMethod $context.resourcePath',
} as const satisfies Readonly<Record<string, string>>;

/** The REST API's stage: its URL is `https://<id>.execute-api.<region>.amazonaws.com/prod/`. */
export const REST_STAGE_NAME = 'prod';

/** Why access logging may be off (cdk-nag AwsSolutions-APIG1), recorded where cdk-nag looks for it. */
export const NO_ACCESS_LOGS_REASON =
  'accessLogs: false was set explicitly, to save the ingestion of the access-log line every request ' +
  "writes. The function's own logs and metrics still cover every request that reaches it; requests API Gateway " +
  'refuses itself (403, 429) are only counted by its stage metrics.';

export interface TaskApiProps {
  /**
   * The task table: the function gets, puts and updates items, and lists tasks
   * (`GET /api/v1/tasks?status=…`) with Query on the listing and outbox indexes (not the table)
   * and BatchGetItem on the table (`TaskTable.grantListing`).
   */
  readonly table: TaskTable;
  /**
   * The schedules table: schedules are managed through the API (`/api/v1/schedules…`), so the
   * function may get, put, delete and list (Scan) them, and gets its name as `KAJ_SCHEDULES_TABLE_NAME`.
   * @default - no schedules: no permission on a schedules table and no `KAJ_SCHEDULES_TABLE_NAME`
   */
  readonly schedulesTable?: ScheduleTable;
  /**
   * The history table: the function reads a workflow run's history to show its steps, records the
   * signals sent to it and the ends of the children a cancel stops (`HistoryTable.grantAppend`),
   * and gets its name as `KAJ_HISTORY_TABLE_NAME`.
   * @default - no workflows: no permission on a history table and no `KAJ_HISTORY_TABLE_NAME`
   */
  readonly historyTable?: HistoryTable;
  /**
   * The namespace of the submissions metric (counted from the access log): the stack's
   * (`metricsNamespace(stackName)`), where its alarms and dashboard read.
   * @default METRICS.namespace (`Kaj`)
   */
  readonly metricsNamespace?: string;
  /** The main queues the API submits to: the three priority queues of every lane. */
  readonly queues: readonly sqs.IQueue[];
  /** Environment of the function. */
  readonly environment: Readonly<Record<string, string>>;
  /**
   * The deployment's ID secret (`IdSecret`): the function derives task ids from idempotency keys
   * with it and refuses to start without it. It gets the value as `KAJ_ID_SECRET`, a
   * `{{resolve:secretsmanager:…}}` dynamic reference CloudFormation resolves at deploy time: the
   * value is never in the template, and the function's role gets no permission on the secret.
   */
  readonly idSecret: secretsmanager.ISecret;
  /**
   * `http`: an HTTP API (payload format 2.0). `rest`: a REST API (payload format 1.0), for
   * LocalStack's free edition and for what only REST APIs offer (API keys, usage plans, request
   * validation, WAF, private endpoints). The function serves both formats (`shared/service/api/rest-event.ts`).
   * @default 'http'
   */
  readonly kind?: ApiKind;
  /**
   * `iam`: every route requires a SigV4-signed request from a principal allowed `execute-api:Invoke`.
   * `none`: no authorization at all (a synth warning says so).
   * @default 'iam'
   */
  readonly authMode?: AuthMode;
  /**
   * Default route throttling of the stage (every method of the REST API's).
   * @default { rateLimit: 100, burstLimit: 200 }
   */
  readonly throttling?: { readonly rateLimit: number; readonly burstLimit: number };
  /** Retention of the function's and the access logs' log groups. */
  readonly logRetention: logs.RetentionDays;
  /**
   * Write one access-log line per request ({@link ACCESS_LOG_FORMAT}, ~150 bytes) to a log group of
   * its own.
   * @default true - the only record of who called and of the requests API Gateway answers itself
   * (unsigned or forbidden 403, throttled 429, integration 5xx), which never reach the function;
   * cdk-nag AwsSolutions-APIG1 requires it. `false` saves its ingestion and acknowledges APIG1 with
   * {@link NO_ACCESS_LOGS_REASON}.
   */
  readonly accessLogs?: boolean;
  /**
   * Name of the HTTP or REST API.
   * @default - generated by CloudFormation
   */
  readonly apiName?: string;
}

/**
 * The task API: an API Gateway HTTP API (payload format 2.0) or REST API (payload format 1.0) in
 * front of the `api` function, with the same routes, authorization, throttling, access log and
 * submission count.
 *
 * The 64 KiB request limit (DEFAULTS.maxRequestBytes) is enforced by the handler: neither API
 * kind has a request-size setting of its own below its fixed 10 MB.
 */
export class TaskApi extends Construct {
  /** Which API Gateway API this is. */
  public readonly kind: ApiKind;
  /** The HTTP API (`kind` `http`). */
  public readonly httpApi: apigwv2.HttpApi | undefined;
  /** The REST API (`kind` `rest`). */
  public readonly restApi: apigw.RestApi | undefined;
  /** The stage callers reach: the HTTP API's `$default`, or the REST API's {@link REST_STAGE_NAME}. */
  public readonly stage: apigwv2.HttpStage | apigw.Stage;
  public readonly handler: KajFunction;
  /** The access logs' log group, unless `accessLogs` is false. */
  public readonly accessLogGroup: logs.LogGroup | undefined;
  /** One per entry of {@link API_ROUTES}: HTTP API routes, or REST API methods. */
  public readonly routes: readonly (apigwv2.HttpRoute | apigw.Method)[];
  /** Base URL of the API (ends with `/`; a REST API's includes its stage, `…/prod/`). */
  public readonly url: string;

  constructor(scope: Construct, id: string, props: TaskApiProps) {
    super(scope, id);
    this.kind = props.kind ?? 'http';
    const authMode = props.authMode ?? 'iam';
    const throttling = props.throttling ?? { rateLimit: 100, burstLimit: 200 };

    this.handler = new KajFunction(this, 'Handler', {
      entryName: 'api',
      description: 'Kaj task API: submit, read and cancel tasks',
      timeout: Duration.seconds(10),
      environment: {
        ...props.environment,
        // The whole secret string, current version: `{{resolve:secretsmanager:<ARN>:SecretString:::}}`.
        [ENV.idSecret]: props.idSecret.secretValue.unsafeUnwrap(),
        ...(props.schedulesTable !== undefined
          ? { [ENV.schedulesTableName]: props.schedulesTable.table.tableName }
          : {}),
        ...(props.historyTable !== undefined ? { [ENV.historyTableName]: props.historyTable.table.tableName } : {}),
      },
      logRetention: props.logRetention,
    });
    const role = this.handler.executionRole;
    props.table.grantItems(role, 'TaskTableItems', ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    props.table.grantListing(role);
    // Scan lists the schedules (GET /api/v1/schedules); the rest work on one schedule by name.
    // UpdateItem: a caller's create and delete change its count item (`#owner:<owner>`) in the
    // same TransactWriteItems (which IAM authorizes as its items' PutItem/DeleteItem/UpdateItem).
    props.schedulesTable?.grantItems(role, 'ScheduleTableItems', [
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:DeleteItem',
      'dynamodb:UpdateItem',
      'dynamodb:Scan',
    ]);
    grantQueues(role, 'SubmitToQueues', ['sqs:SendMessage'], props.queues);
    props.historyTable?.grantAppend(role);

    this.accessLogGroup =
      props.accessLogs === false
        ? undefined
        : new logs.LogGroup(this, 'AccessLogs', {
            retention: props.logRetention,
            removalPolicy: RemovalPolicy.DESTROY,
          });
    if (this.kind === 'rest') {
      const rest = this.restApiOf(props, authMode, throttling);
      this.restApi = rest.api;
      this.stage = rest.api.deploymentStage;
      this.routes = rest.methods;
      this.url = rest.api.url;
    } else {
      const http = this.httpApiOf(props, authMode, throttling);
      this.httpApi = http.api;
      this.stage = http.stage;
      this.routes = http.routes;
      this.url = http.stage.url;
    }
    if (this.accessLogGroup === undefined) {
      Validations.of(this.stage).acknowledge({ id: 'AwsSolutions-APIG1', reason: NO_ACCESS_LOGS_REASON });
    } else {
      // Submissions are counted from the access log (a metric filter costs nothing per line), so
      // the API function writes no metric line of its own per request. Both formats write the
      // route as `METHOD /path/template`.
      new logs.MetricFilter(this, 'SubmittedFilter', {
        logGroup: this.accessLogGroup,
        metricNamespace: props.metricsNamespace ?? METRICS.namespace,
        metricName: METRICS.submitted,
        filterPattern: logs.FilterPattern.all(
          logs.FilterPattern.stringValue('$.route', '=', SUBMIT_ROUTE_KEY),
          logs.FilterPattern.stringValue('$.status', '=', '202'),
        ),
        metricValue: '1',
      });
    }

    if (authMode === 'none') {
      Annotations.of(this).addWarningV2(
        'kaj:api-auth-none',
        'authMode is "none": anyone who knows the API URL can submit, read and cancel tasks. ' +
          'Use "iam" (the default) unless the API is protected some other way.',
      );
      for (const route of this.routes) {
        Validations.of(route).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: 'authMode "none" was chosen explicitly in the Kaj configuration (a synth warning says so).',
        });
      }
    }
  }

  /** An HTTP API (payload format 2.0) with a `$default` stage. */
  private httpApiOf(
    props: TaskApiProps,
    authMode: AuthMode,
    throttling: { readonly rateLimit: number; readonly burstLimit: number },
  ): { api: apigwv2.HttpApi; stage: apigwv2.HttpStage; routes: apigwv2.HttpRoute[] } {
    const api = new apigwv2.HttpApi(this, 'HttpApi', {
      ...(props.apiName !== undefined ? { apiName: props.apiName } : {}),
      description: 'Kaj task API',
      createDefaultStage: false,
      defaultAuthorizer: authMode === 'iam' ? new HttpIamAuthorizer() : new apigwv2.HttpNoneAuthorizer(),
    });
    const stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle: throttling,
      ...(this.accessLogGroup === undefined
        ? {}
        : {
            accessLogSettings: {
              destination: new apigwv2.LogGroupLogDestination(this.accessLogGroup),
              format: apigw.AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FORMAT)),
            },
          }),
    });
    const integration = new HttpLambdaIntegration('Handler', this.handler, {
      payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
    });
    const routes = API_ROUTES.flatMap((r) =>
      api.addRoutes({ path: r.path, methods: [apigwv2.HttpMethod[r.method]], integration }),
    );
    return { api, stage, routes };
  }

  /**
   * A regional REST API (Lambda proxy integration, payload format 1.0) with one deployment stage,
   * {@link REST_STAGE_NAME}: a resource per path of {@link API_ROUTES}, a method per route.
   */
  private restApiOf(
    props: TaskApiProps,
    authMode: AuthMode,
    throttling: { readonly rateLimit: number; readonly burstLimit: number },
  ): { api: apigw.RestApi; methods: apigw.Method[] } {
    const api = new apigw.RestApi(this, 'RestApi', {
      ...(props.apiName !== undefined ? { restApiName: props.apiName } : {}),
      description: 'Kaj task API',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      // No account-wide CloudWatch role (AWS::ApiGateway::Account is one per region, shared by every
      // REST API of the account): the stage writes access logs, not execution logs.
      cloudWatchRole: false,
      deployOptions: {
        stageName: REST_STAGE_NAME,
        throttlingRateLimit: throttling.rateLimit,
        throttlingBurstLimit: throttling.burstLimit,
        ...(this.accessLogGroup === undefined
          ? {}
          : {
              accessLogDestination: new apigw.LogGroupLogDestination(this.accessLogGroup),
              accessLogFormat: apigw.AccessLogFormat.custom(JSON.stringify(REST_ACCESS_LOG_FORMAT)),
            }),
      },
    });
    // Scoped to each method and to the deployment stage (no test-invoke permission): API Gateway may
    // invoke the function for exactly the routes of the table.
    const integration = new apigw.LambdaIntegration(this.handler, { proxy: true, allowTestInvoke: false });
    const authorizationType = authMode === 'iam' ? apigw.AuthorizationType.IAM : apigw.AuthorizationType.NONE;
    const methods = API_ROUTES.map((r) =>
      api.root.resourceForPath(r.path).addMethod(r.method, integration, { authorizationType }),
    );
    for (const method of methods) {
      Validations.of(method).acknowledge({
        id: 'AwsSolutions-COG4',
        reason:
          authMode === 'iam'
            ? 'Callers are AWS principals authenticated with SigV4 (AWS_IAM authorization on every method), not Cognito users.'
            : 'authMode "none" was chosen explicitly in the Kaj configuration (a synth warning says so).',
      });
    }
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG2',
      reason:
        'The handler validates every request against the zod schemas the OpenAPI document is generated from ' +
        '(422 naming the field, 400/413/415 for the body); an API Gateway model would be a second copy of them.',
    });
    Validations.of(api.deploymentStage).acknowledge({
      id: 'AwsSolutions-APIG3',
      reason:
        'No WAF web ACL by default: callers are IAM principals and the stage is throttled; a web ACL costs $5/month ' +
        'plus per request. Associate one with the stage (AWS::WAFv2::WebACLAssociation) where it is needed.',
    });
    Validations.of(api.deploymentStage).acknowledge({
      id: 'AwsSolutions-APIG6',
      reason:
        'Execution logging needs the account-wide API Gateway CloudWatch role (AWS::ApiGateway::Account, one per ' +
        "region, shared by every REST API of the account) and writes several lines per request; the stage's access " +
        "log and the function's own logs record every request instead.",
    });
    return { api, methods };
  }
}
