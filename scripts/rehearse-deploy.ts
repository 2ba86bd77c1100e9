/**
 * Deploy rehearsal without an AWS account: `npm run rehearse:deploy`.
 *
 * Starts moto (`python3 local/moto_server.py`: moto's server, one request at a time) on a
 * free local port, points the real CDK CLI at it with dummy credentials, and runs the whole life
 * cycle a user runs:
 *   cdk bootstrap → cdk deploy (create) → check → cdk deploy (update) → check → cdk destroy → check
 *   → delete what the stack retains (the documented teardown).
 * Checks read the deployed resources back through the AWS SDK. Prints timings; exits non-zero on any
 * failure; always stops moto.
 *
 * What moto does not emulate is reported as NOT EMULATED (never as a pass): see docs/deploy.md.
 *
 * Options: `--api rest` (or KAJ_REHEARSAL_API=rest) rehearses the REST API variant (`api: 'rest'`)
 * instead of the HTTP API: moto emulates REST APIs, their resources, methods and
 * integrations (not their stages), so the routes, their IAM authorization and their Lambda proxy
 * integrations are read back too. `npm run rehearse:deploy -- --api rest`.
 *
 * Environment:
 *   KAJ_REHEARSAL_KEEP=1   keep the scratch folder (cdk.out, moto.log) for inspection
 *   KAJ_REHEARSAL_PYTHON   python interpreter (default python3)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CloudFormationClient,
  DescribeStackResourcesCommand,
  DescribeStacksCommand,
  type StackResource,
} from '@aws-sdk/client-cloudformation';
import {
  DeleteTableCommand,
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  UpdateTableCommand,
} from '@aws-sdk/client-dynamodb';
import { DeleteQueueCommand, GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SignatureV4 } from '@smithy/signature-v4';
import { Sha256, signedHeaders } from '../client/sign.js';
import { API_KINDS, type ApiKind, DEFAULT_CONFIG, laneSettings } from '../infra/config.js';
import { API_ROUTES, routeKey } from '../shared/service/api/routes.js';
import { type KajStackOutputs, parseStackOutputs } from '../infra/outputs.js';
// moto's server run one request at a time, as the integration suites and the soak start it.
import { MOTO_LAUNCHER } from '../local/emulators.js';
import { laneQueueNames } from '../shared/config/lanes.js';
import {
  DEFAULTS,
  ENV,
  HISTORY_TABLE_SCHEMA,
  LIMIT_TABLE_SCHEMA,
  PRIORITIES,
  type Priority,
  SCHEDULE_TABLE_SCHEMA,
  TABLE_SCHEMA,
  resourceNames,
} from '../shared/config/resources.js';
import {
  clientConfig,
  EMULATOR_ACCOUNT_ID,
  EMULATOR_CREDENTIALS,
  EMULATOR_REGION,
  emulatorSettings,
} from '../shared/aws/wiring.js';
// The stack deploys the example deployment's lanes (`cpu`): the checks read what it declares.
import { lanes as LANES } from '../tasks/lanes.js';
// And its task types: with a workflow among them, the stack has the history table.
import { registry as REGISTRY } from '../tasks/index.js';
import { hasWorkflows } from '../shared/workflow/define.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ACCOUNT = EMULATOR_ACCOUNT_ID;
const REGION = EMULATOR_REGION;
/** The API kind rehearsed: `--api rest|http` or KAJ_REHEARSAL_API, else the default (http). */
const API: ApiKind = apiKindOf(process.argv.slice(2), process.env.KAJ_REHEARSAL_API);
const STACK = 'kaj-rehearsal';
const NAMES = resourceNames(STACK);
/** The lanes besides the default one, in the stack's order (by name), with their queue names. */
const LANE_NAMES = Object.keys(LANES).sort();
const LANE_QUEUES = Object.fromEntries(LANE_NAMES.map((lane) => [lane, laneQueueNames(STACK, lane)]));
/** Whether the example deployment has a workflow type, and so the stack a history table. */
const WORKFLOWS = hasWorkflows(REGISTRY);
/**
 * The update changes these settings, so that the second deploy really updates resources (and
 * turns `encryptAlarmTopic` on: the KMS key is added to a deployed stack).
 */
const UPDATED_HIGH_CONCURRENCY = DEFAULT_CONFIG.concurrency.high + 2;
const UPDATED_LOG_LEVEL = 'DEBUG';

function apiKindOf(argv: readonly string[], env: string | undefined): ApiKind {
  const at = argv.indexOf('--api');
  const value =
    at >= 0 ? argv[at + 1] : (argv.find((a) => a.startsWith('--api='))?.slice(6) ?? env ?? DEFAULT_CONFIG.api);
  if (!(API_KINDS as readonly string[]).includes(value ?? '')) {
    console.error(`--api must be one of ${API_KINDS.join(', ')}, got ${JSON.stringify(value)}`);
    process.exit(2);
  }
  return value as ApiKind;
}

// ---------------------------------------------------------------------------------------------
// Results and timings

type Outcome = 'PASS' | 'FAIL' | 'NOT EMULATED';
const results: { phase: string; name: string; outcome: Outcome; detail: string }[] = [];
const timings: [string, number][] = [];
let phase = 'setup';

function record(name: string, outcome: Outcome, detail = ''): void {
  results.push({ phase, name, outcome, detail });
  const mark = outcome === 'PASS' ? 'ok  ' : outcome === 'FAIL' ? 'FAIL' : 'n/e ';
  console.log(`  [${mark}] ${name}${detail ? ` — ${detail}` : ''}`);
}

/** A check moto can answer: pass or fail. */
function check(name: string, ok: boolean, detail = ''): void {
  record(name, ok ? 'PASS' : 'FAIL', detail);
}

/**
 * A check of a property moto drops silently. `present` = moto reported the property at all;
 * if it did, it must be right.
 */
function checkIfEmulated(name: string, present: boolean, ok: boolean, detail = ''): void {
  if (!present) record(name, 'NOT EMULATED', 'moto does not keep this property');
  else check(name, ok, detail);
}

async function timed<T>(label: string, f: () => Promise<T>): Promise<T> {
  const start = performance.now();
  try {
    return await f();
  } finally {
    timings.push([label, (performance.now() - start) / 1000]);
  }
}

// ---------------------------------------------------------------------------------------------
// Processes

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd = REPO_ROOT): Promise<void> {
  console.log(`\n$ ${[path.basename(command), ...args].join(' ')}`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(command)} ${args[0]} exited with ${code ?? signal}`)),
    );
  });
}

async function waitForMoto(endpoint: string, moto: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (moto.exitCode !== null) {
      throw new Error(`moto exited with ${moto.exitCode}:\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    }
    try {
      const res = await fetch(`${endpoint}/moto-api/`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`moto did not answer on ${endpoint} within 60 s`);
}

async function stopMoto(moto: ChildProcess | undefined): Promise<void> {
  if (!moto || moto.exitCode !== null || moto.signalCode !== null) return;
  const exited = new Promise<void>((r) => moto.once('exit', () => r()));
  moto.kill('SIGTERM');
  const timer = setTimeout(() => moto.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// AWS access

interface Clients {
  readonly endpoint: string;
  readonly cfn: CloudFormationClient;
  readonly sqs: SQSClient;
  readonly ddb: DynamoDBClient;
}

function clients(endpoint: string): Clients {
  const common = clientConfig(emulatorSettings(endpoint));
  return {
    endpoint,
    cfn: new CloudFormationClient(common),
    // The stack's queue URLs name the real SQS host: keep requests on the emulator.
    sqs: new SQSClient({ ...common, useQueueUrlAsEndpoint: false }),
    ddb: new DynamoDBClient(common),
  };
}

/**
 * SigV4 headers (`authorization`, `x-amz-date`, `x-amz-content-sha256`, and `headers`, signed) for
 * the few REST/JSON/query calls the project has no SDK client for.
 */
async function signed(
  method: string,
  url: URL,
  service: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<Record<string, string>> {
  const signer = new SignatureV4({ service, region: REGION, credentials: { ...EMULATOR_CREDENTIALS }, sha256: Sha256 });
  return signedHeaders(signer, method, url, headers, body);
}

/**
 * Lambda API read, as a SigV4-signed REST call: the project has no @aws-sdk/client-lambda
 * dependency, and the rehearsal only needs two GETs.
 */
async function lambdaGet(c: Clients, apiPath: string): Promise<Record<string, any>> {
  const url = new URL(apiPath, c.endpoint);
  const res = await fetch(url, { headers: await signed('GET', url, 'lambda') });
  const body = await res.text();
  if (!res.ok) throw new Error(`GET ${apiPath}: ${res.status} ${body.slice(0, 300)}`);
  return JSON.parse(body) as Record<string, any>;
}

/** API Gateway (REST APIs) read, as a SigV4-signed REST call (no @aws-sdk/client-api-gateway dependency). */
async function apigatewayGet(c: Clients, apiPath: string): Promise<Record<string, any>> {
  const url = new URL(apiPath, c.endpoint);
  const res = await fetch(url, { headers: await signed('GET', url, 'apigateway') });
  const body = await res.text();
  if (!res.ok) throw new Error(`GET ${apiPath}: ${res.status} ${body.slice(0, 300)}`);
  return JSON.parse(body) as Record<string, any>;
}

/** The stack's REST API (`<stack>-api`), or undefined. */
async function restApiOf(c: Clients): Promise<{ id: string; name: string } | undefined> {
  const apis = (await apigatewayGet(c, '/restapis')).item as { id: string; name: string }[] | undefined;
  return (apis ?? []).find((a) => a.name === `${STACK}-api`);
}

/**
 * `api: 'rest'`: the REST API moto created from the template — one method per route of the table,
 * each AWS_IAM with a Lambda proxy integration to the API function — and the ApiUrl output naming it.
 */
async function checkRestApi(c: Clients, outputs: KajStackOutputs, apiFunctionName: string | undefined): Promise<void> {
  const api = await restApiOf(c);
  check(`REST API ${STACK}-api created`, api !== undefined, api?.id);
  if (api === undefined) return;
  const resources = ((await apigatewayGet(c, `/restapis/${api.id}/resources`)).item ?? []) as {
    id: string;
    path: string;
  }[];
  const found: string[] = [];
  const problems: string[] = [];
  for (const r of API_ROUTES) {
    const resource = resources.find((x) => x.path === r.path);
    if (resource === undefined) {
      problems.push(`no resource ${r.path}`);
      continue;
    }
    let method: Record<string, any>;
    try {
      method = await apigatewayGet(c, `/restapis/${api.id}/resources/${resource.id}/methods/${r.method}`);
    } catch (e) {
      problems.push(`${routeKey(r)}: ${(e as Error).message}`);
      continue;
    }
    found.push(routeKey(r));
    const integration = (method.methodIntegration ?? {}) as Record<string, unknown>;
    if (method.authorizationType !== 'AWS_IAM')
      problems.push(`${routeKey(r)} authorization ${method.authorizationType}`);
    if (integration.type !== 'AWS_PROXY' || integration.httpMethod !== 'POST') {
      problems.push(`${routeKey(r)} integration ${integration.type} ${integration.httpMethod}`);
    }
    const uri = String(integration.uri ?? '');
    if (apiFunctionName === undefined || !uri.includes(`:function:${apiFunctionName}/invocations`)) {
      problems.push(`${routeKey(r)} integration uri ${uri}`);
    }
  }
  check(
    `every route of the table is a REST method (${API_ROUTES.length}), AWS_IAM, a Lambda proxy integration to the API function`,
    problems.length === 0 && found.length === API_ROUTES.length,
    problems.join('; ') || `${found.length} methods`,
  );
  check('ApiUrl output names the REST API', outputs.apiUrl.includes(`//${api.id}.execute-api.`), outputs.apiUrl);
  const stages = ((await apigatewayGet(c, `/restapis/${api.id}/stages`)).item ?? []) as { stageName: string }[];
  if (stages.some((st) => st.stageName === 'prod')) check('REST API stage prod', true);
  else
    record(
      'REST API stage prod, its throttling and access log',
      'NOT EMULATED',
      'moto has no CloudFormation model for AWS::ApiGateway::Stage',
    );
}

/** A Secrets Manager call (JSON 1.1 protocol); `undefined` when the secret does not exist. */
async function secretsManager(
  c: Clients,
  action: string,
  request: Record<string, unknown>,
): Promise<Record<string, any> | undefined> {
  const url = new URL('/', c.endpoint);
  const body = JSON.stringify(request);
  const headers = { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `secretsmanager.${action}` };
  const res = await fetch(url, {
    method: 'POST',
    headers: await signed('POST', url, 'secretsmanager', headers, body),
    body,
  });
  const text = await res.text();
  if (!res.ok && text.includes('ResourceNotFoundException')) return undefined;
  if (!res.ok) throw new Error(`secretsmanager ${action}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, any>;
}

/** An EventBridge call (JSON 1.1 protocol, the project has no @aws-sdk/client-eventbridge dependency). */
async function eventBridge(c: Clients, action: string, request: Record<string, unknown>): Promise<Record<string, any>> {
  const url = new URL('/', c.endpoint);
  const body = JSON.stringify(request);
  const headers = { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `AWSEvents.${action}` };
  const res = await fetch(url, { method: 'POST', headers: await signed('POST', url, 'events', headers, body), body });
  const text = await res.text();
  if (!res.ok) throw new Error(`events ${action}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, any>;
}

/** An SNS topic's attributes (query protocol, XML answer). */
async function topicAttributes(c: Clients, topicArn: string): Promise<Record<string, string>> {
  const url = new URL('/', c.endpoint);
  const body = new URLSearchParams({
    Action: 'GetTopicAttributes',
    Version: '2010-03-31',
    TopicArn: topicArn,
  }).toString();
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  const res = await fetch(url, { method: 'POST', headers: await signed('POST', url, 'sns', headers, body), body });
  const xml = await res.text();
  if (!res.ok) throw new Error(`sns GetTopicAttributes: ${res.status} ${xml.slice(0, 300)}`);
  const attributes: Record<string, string> = {};
  for (const m of xml.matchAll(/<entry>\s*<key>([^<]*)<\/key>\s*<value>([^<]*)<\/value>\s*<\/entry>/g))
    attributes[m[1]!] = m[2]!;
  return attributes;
}

async function stackResources(c: Clients): Promise<StackResource[]> {
  const out = await c.cfn.send(new DescribeStackResourcesCommand({ StackName: STACK }));
  return out.StackResources ?? [];
}

async function queueAttributes(c: Clients, url: string): Promise<Record<string, string>> {
  const out = await c.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
  return out.Attributes ?? {};
}

async function queueUrl(c: Clients, name: string): Promise<string> {
  const { QueueUrl } = await c.sqs.send(new GetQueueUrlCommand({ QueueName: name }));
  if (QueueUrl === undefined) throw new Error(`no URL for queue ${name}`);
  return QueueUrl;
}

async function queueExists(c: Clients, name: string): Promise<boolean> {
  try {
    await c.sqs.send(new GetQueueUrlCommand({ QueueName: name }));
    return true;
  } catch (e) {
    if ((e as Error).name.includes('NonExistentQueue') || (e as Error).name === 'QueueDoesNotExist') return false;
    throw e;
  }
}

async function tableExists(c: Clients, name: string): Promise<boolean> {
  try {
    await c.ddb.send(new DescribeTableCommand({ TableName: name }));
    return true;
  } catch (e) {
    if ((e as Error).name === 'ResourceNotFoundException') return false;
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------
// Checks

interface Expected {
  readonly concurrency: Readonly<Record<Priority, number>>;
  readonly logLevel: string;
  /** `encryptAlarmTopic`: the topic is under the stack's own KMS key. */
  readonly encryptAlarmTopic: boolean;
}

/** The ID secret's name and what Secrets Manager generates for it (infra/constructs/id-secret.ts). */
const ID_SECRET_NAME = `${STACK}-id-secret`;
const ID_SECRET_VALUE = /^[A-Za-z0-9]{64}$/;
/** Whether moto created the ID secret in the last deploy (moto 5.2.1 has no CloudFormation model for it). */
let idSecretEmulated = false;

async function checkDeployed(c: Clients, templateFile: string, expected: Expected): Promise<void> {
  // Stack and outputs.
  const stacks = await c.cfn.send(new DescribeStacksCommand({ StackName: STACK }));
  const stack = stacks.Stacks?.[0];
  check(
    'stack is complete',
    /_COMPLETE$/.test(stack?.StackStatus ?? '') && !/ROLLBACK/.test(stack?.StackStatus ?? ''),
    stack?.StackStatus,
  );
  let outputs: KajStackOutputs;
  try {
    outputs = parseStackOutputs(stack?.Outputs ?? [], STACK);
    check('every output key (OUTPUT_KEYS) is present', true);
  } catch (e) {
    check('every output key (OUTPUT_KEYS) is present', false, (e as Error).message);
    return;
  }
  check('TableName output', outputs.tableName === NAMES.table, outputs.tableName);
  check('SchedulesTableName output', outputs.schedulesTableName === NAMES.schedules, outputs.schedulesTableName);
  check('LimitsTableName output', outputs.limitsTableName === NAMES.limits, outputs.limitsTableName);
  if (WORKFLOWS) {
    check('HistoryTableName output', outputs.historyTableName === NAMES.history, outputs.historyTableName);
  } else {
    check('no HistoryTableName output (no workflow type)', outputs.historyTableName === undefined);
  }
  // Each lane as the stack sizes it under the configuration deployed (lanes/settings in infra/config.ts).
  const laneExpected = Object.fromEntries(
    LANE_NAMES.map((lane) => [
      lane,
      laneSettings({ ...DEFAULT_CONFIG, concurrency: expected.concurrency }, LANES[lane as keyof typeof LANES]),
    ]),
  );
  // Each lane's queues as deployed: URL and attributes, by lane and priority.
  const laneQueues: Record<string, Record<Priority, { url: string; attributes: Record<string, string> }>> = {};
  for (const lane of LANE_NAMES) {
    const byPriority = {} as Record<Priority, { url: string; attributes: Record<string, string> }>;
    for (const p of PRIORITIES) {
      const url = await queueUrl(c, LANE_QUEUES[lane]![p]);
      byPriority[p] = { url, attributes: await queueAttributes(c, url) };
    }
    laneQueues[lane] = byPriority;
  }

  // What moto created vs what the template asks for.
  const template = JSON.parse(readFileSync(templateFile, 'utf8')) as { Resources: Record<string, { Type: string }> };
  const resources = await stackResources(c);
  const created = new Set(resources.map((r) => r.LogicalResourceId).filter((id): id is string => id !== undefined));
  const skipped = new Map<string, number>();
  for (const [id, r] of Object.entries(template.Resources)) {
    if (!created.has(id) && r.Type !== 'AWS::CDK::Metadata') skipped.set(r.Type, (skipped.get(r.Type) ?? 0) + 1);
  }
  const mustExist = [
    'AWS::SQS::Queue',
    'AWS::DynamoDB::Table',
    'AWS::Lambda::Function',
    'AWS::Lambda::EventSourceMapping',
    'AWS::IAM::Role',
    'AWS::IAM::Policy',
    'AWS::Events::Rule',
    'AWS::Logs::LogGroup',
    'AWS::SNS::Topic',
    'AWS::KMS::Key',
  ];
  const templateTypes = new Set(Object.values(template.Resources).map((r) => r.Type));
  for (const type of mustExist.filter((t) => templateTypes.has(t))) {
    check(`every ${type} was created`, !skipped.has(type), skipped.has(type) ? `${skipped.get(type)} missing` : '');
  }
  for (const [type, n] of skipped) {
    if (!mustExist.includes(type)) record(`${type} (${n})`, 'NOT EMULATED', 'moto skipped the resource type silently');
  }

  // Alarm topic: every stack has one, and its ARN is an output (the alarms are not emulated).
  const topics = resources.filter((r) => r.ResourceType === 'AWS::SNS::Topic');
  check(
    'one alarm topic, its ARN the AlarmTopicArn output',
    topics.length === 1 &&
      outputs.alarmTopicArn !== undefined &&
      topics[0]?.PhysicalResourceId === outputs.alarmTopicArn,
    outputs.alarmTopicArn,
  );
  const keys = resources.filter((r) => r.ResourceType === 'AWS::KMS::Key');
  const topicKey =
    outputs.alarmTopicArn === undefined ? undefined : (await topicAttributes(c, outputs.alarmTopicArn)).KmsMasterKeyId;
  if (expected.encryptAlarmTopic) {
    const keyId = keys[0]?.PhysicalResourceId ?? '';
    check(
      "alarm topic encrypted with the stack's own KMS key (encryptAlarmTopic)",
      keys.length === 1 && keyId !== '' && (topicKey === keyId || topicKey?.endsWith(`:key/${keyId}`) === true),
      `KmsMasterKeyId=${topicKey ?? '-'}`,
    );
  } else {
    check(
      'alarm topic unencrypted and no KMS key (the default)',
      keys.length === 0 && (topicKey ?? '') === '',
      `KmsMasterKeyId=${topicKey || '-'}`,
    );
  }

  // ID secret: generated by Secrets Manager, resolved into the API function's environment by
  // CloudFormation. moto 5.2.1 has no CloudFormation model for the secret and does not resolve
  // {{resolve:secretsmanager:…}}: each check below says NOT EMULATED when moto skipped it.
  idSecretEmulated = resources.some((r) => r.ResourceType === 'AWS::SecretsManager::Secret');
  let idSecretValue: string | undefined;
  if (idSecretEmulated) {
    idSecretValue = (await secretsManager(c, 'GetSecretValue', { SecretId: ID_SECRET_NAME }))?.SecretString as
      | string
      | undefined;
    check(
      `ID secret ${ID_SECRET_NAME}: generated, 64 letters and digits`,
      ID_SECRET_VALUE.test(idSecretValue ?? ''),
      `${idSecretValue?.length ?? 0} characters`,
    );
  } else {
    record(
      `ID secret ${ID_SECRET_NAME} (generated, 64 letters and digits)`,
      'NOT EMULATED',
      'moto has no CloudFormation support for AWS::SecretsManager::Secret',
    );
  }

  // Queues.
  for (const p of PRIORITIES) {
    const q = await queueAttributes(c, outputs.queueUrls[p]);
    const dlq = await queueAttributes(c, outputs.deadLetterQueueUrls[p]);
    const redrive = JSON.parse(q.RedrivePolicy ?? '{}') as {
      deadLetterTargetArn?: string;
      maxReceiveCount?: number | string;
    };
    check(
      `${p}: redrive to its own DLQ after ${DEFAULTS.maxReceiveCount} receives`,
      redrive.deadLetterTargetArn === outputs.deadLetterQueueArns[p] &&
        Number(redrive.maxReceiveCount) === DEFAULTS.maxReceiveCount,
      q.RedrivePolicy,
    );
    check(
      `${p}: visibility timeout ${DEFAULTS.queueVisibilityTimeoutSeconds} s`,
      Number(q.VisibilityTimeout) === DEFAULTS.queueVisibilityTimeoutSeconds,
      q.VisibilityTimeout,
    );
    check(
      `${p}: retention`,
      Number(q.MessageRetentionPeriod) === DEFAULTS.queueRetentionSeconds &&
        Number(dlq.MessageRetentionPeriod) === DEFAULTS.dlqRetentionSeconds,
    );
    check(`${p}: SSE-SQS on queue and DLQ`, q.SqsManagedSseEnabled === 'true' && dlq.SqsManagedSseEnabled === 'true');
    const allow = JSON.parse(dlq.RedriveAllowPolicy ?? 'null') as {
      redrivePermission?: string;
      sourceQueueArns?: string[];
    } | null;
    const sources = [outputs.queueArns[p], ...LANE_NAMES.map((lane) => laneQueues[lane]?.[p].attributes.QueueArn)];
    checkIfEmulated(
      `${p}: DLQ redrive allow policy (byQueue, the ${p} queue of every lane: ${1 + LANE_NAMES.length})`,
      allow !== null,
      allow?.redrivePermission === 'byQueue' && JSON.stringify(allow.sourceQueueArns) === JSON.stringify(sources),
      JSON.stringify(allow?.sourceQueueArns),
    );
  }

  // Lane queues: the default queues' settings, the lane's visibility timeout, the shared DLQs.
  for (const lane of LANE_NAMES) {
    for (const p of PRIORITIES) {
      const q = laneQueues[lane]?.[p].attributes ?? {};
      const redrive = JSON.parse(q.RedrivePolicy ?? '{}') as {
        deadLetterTargetArn?: string;
        maxReceiveCount?: number | string;
      };
      const visibility = laneExpected[lane]?.visibilityTimeoutSeconds;
      check(
        `lane ${lane} ${p} (${LANE_QUEUES[lane]?.[p]}): redrive to the shared ${p} DLQ after ${DEFAULTS.maxReceiveCount} receives, visibility ${visibility} s, retention, SSE-SQS`,
        redrive.deadLetterTargetArn === outputs.deadLetterQueueArns[p] &&
          Number(redrive.maxReceiveCount) === DEFAULTS.maxReceiveCount &&
          Number(q.VisibilityTimeout) === visibility &&
          Number(q.MessageRetentionPeriod) === DEFAULTS.queueRetentionSeconds &&
          q.SqsManagedSseEnabled === 'true',
        `${q.RedrivePolicy} visibility ${q.VisibilityTimeout}`,
      );
    }
  }

  // Table.
  const table = (await c.ddb.send(new DescribeTableCommand({ TableName: outputs.tableName }))).Table;
  check(
    'table: partition key',
    table?.KeySchema?.length === 1 && table.KeySchema[0]?.AttributeName === TABLE_SCHEMA.partitionKey,
  );
  check('table: on-demand', table?.BillingModeSummary?.BillingMode === 'PAY_PER_REQUEST');
  check('table: deletion protection', table?.DeletionProtectionEnabled === true);
  const gsi = table?.GlobalSecondaryIndexes?.find((i) => i.IndexName === TABLE_SCHEMA.outboxIndex.name);
  check(
    `table: outbox GSI (pk, sk, ${TABLE_SCHEMA.outboxIndex.projection})`,
    gsi?.KeySchema?.[0]?.AttributeName === TABLE_SCHEMA.outboxIndex.partitionKey &&
      gsi.KeySchema[1]?.AttributeName === TABLE_SCHEMA.outboxIndex.sortKey &&
      gsi.Projection?.ProjectionType === TABLE_SCHEMA.outboxIndex.projection,
  );
  checkIfEmulated(
    'table: SSE with the AWS managed key',
    table?.SSEDescription !== undefined,
    table?.SSEDescription?.SSEType === 'KMS',
  );
  const ttl = (await c.ddb.send(new DescribeTimeToLiveCommand({ TableName: outputs.tableName }))).TimeToLiveDescription;
  checkIfEmulated(
    `table: TTL on ${TABLE_SCHEMA.ttlAttribute}`,
    ttl?.TimeToLiveStatus === 'ENABLED' || ttl?.AttributeName !== undefined,
    ttl?.AttributeName === TABLE_SCHEMA.ttlAttribute,
  );
  const backups = (await c.ddb.send(new DescribeContinuousBackupsCommand({ TableName: outputs.tableName })))
    .ContinuousBackupsDescription;
  const pitr = backups?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus;
  checkIfEmulated('table: point-in-time recovery', pitr === 'ENABLED', true, pitr);

  // Schedules table (follows the task table's deletion protection and retention).
  const schedulesName = outputs.schedulesTableName ?? NAMES.schedules;
  const schedules = (await c.ddb.send(new DescribeTableCommand({ TableName: schedulesName }))).Table;
  check(
    'schedules table: partition key',
    schedules?.KeySchema?.length === 1 &&
      schedules.KeySchema[0]?.AttributeName === SCHEDULE_TABLE_SCHEMA.partitionKey &&
      schedules.KeySchema[0]?.KeyType === 'HASH',
  );
  check('schedules table: on-demand', schedules?.BillingModeSummary?.BillingMode === 'PAY_PER_REQUEST');
  check('schedules table: deletion protection', schedules?.DeletionProtectionEnabled === true);
  const due = SCHEDULE_TABLE_SCHEMA.dueIndex;
  const dueIndex = schedules?.GlobalSecondaryIndexes?.find((i) => i.IndexName === due.name);
  const attributeType = (name: string) =>
    schedules?.AttributeDefinitions?.find((a) => a.AttributeName === name)?.AttributeType;
  check(
    `schedules table: ${due.name} GSI (${due.partitionKey} S, ${due.sortKey} N, ${due.projection}), the only one`,
    schedules?.GlobalSecondaryIndexes?.length === 1 &&
      dueIndex?.KeySchema?.[0]?.AttributeName === due.partitionKey &&
      dueIndex.KeySchema[1]?.AttributeName === due.sortKey &&
      dueIndex.Projection?.ProjectionType === due.projection &&
      attributeType(due.partitionKey) === 'S' &&
      attributeType(due.sortKey) === 'N',
    JSON.stringify(dueIndex?.KeySchema),
  );
  checkIfEmulated(
    'schedules table: SSE with the AWS managed key',
    schedules?.SSEDescription !== undefined,
    schedules?.SSEDescription?.SSEType === 'KMS',
  );
  const schedulesPitr = (await c.ddb.send(new DescribeContinuousBackupsCommand({ TableName: schedulesName })))
    .ContinuousBackupsDescription?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus;
  checkIfEmulated('schedules table: point-in-time recovery', schedulesPitr === 'ENABLED', true, schedulesPitr);

  // Limits table (follows the task table's deletion protection and retention).
  const limitsName = outputs.limitsTableName ?? NAMES.limits;
  const limits = (await c.ddb.send(new DescribeTableCommand({ TableName: limitsName }))).Table;
  check(
    `limits table: partition key ${LIMIT_TABLE_SCHEMA.partitionKey} (S), no index`,
    limits?.KeySchema?.length === 1 &&
      limits.KeySchema[0]?.AttributeName === LIMIT_TABLE_SCHEMA.partitionKey &&
      limits.KeySchema[0]?.KeyType === 'HASH' &&
      limits.AttributeDefinitions?.[0]?.AttributeType === 'S' &&
      (limits.GlobalSecondaryIndexes ?? []).length === 0,
  );
  check('limits table: on-demand', limits?.BillingModeSummary?.BillingMode === 'PAY_PER_REQUEST');
  check('limits table: deletion protection', limits?.DeletionProtectionEnabled === true);
  checkIfEmulated(
    'limits table: SSE with the AWS managed key',
    limits?.SSEDescription !== undefined,
    limits?.SSEDescription?.SSEType === 'KMS',
  );
  const limitsTtl = (await c.ddb.send(new DescribeTimeToLiveCommand({ TableName: limitsName }))).TimeToLiveDescription;
  checkIfEmulated(
    `limits table: TTL on ${LIMIT_TABLE_SCHEMA.ttlAttribute}`,
    limitsTtl?.TimeToLiveStatus === 'ENABLED' || limitsTtl?.AttributeName !== undefined,
    limitsTtl?.AttributeName === LIMIT_TABLE_SCHEMA.ttlAttribute,
  );
  const limitsPitr = (await c.ddb.send(new DescribeContinuousBackupsCommand({ TableName: limitsName })))
    .ContinuousBackupsDescription?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus;
  checkIfEmulated('limits table: point-in-time recovery', limitsPitr === 'ENABLED', true, limitsPitr);
  await checkHistoryTable(c, outputs);

  // Event source mappings (Lambda API).
  const mappingIds = resources
    .filter((r) => r.ResourceType === 'AWS::Lambda::EventSourceMapping')
    .map((r) => r.PhysicalResourceId ?? '');
  check(
    `three event source mappings per lane (default, ${LANE_NAMES.join(', ')})`,
    mappingIds.length === PRIORITIES.length * (1 + LANE_NAMES.length),
    String(mappingIds.length),
  );
  /** The function behind each lane's mappings, by lane. */
  const functionsOfLane = new Map<string, Set<string>>();
  for (const id of mappingIds) {
    const m = await lambdaGet(c, `/2015-03-31/event-source-mappings/${encodeURIComponent(id)}`);
    const lane = LANE_NAMES.find((l) =>
      PRIORITIES.some((x) => laneQueues[l]?.[x].attributes.QueueArn === m.EventSourceArn),
    );
    const fns = functionsOfLane.get(lane ?? 'default') ?? new Set<string>();
    fns.add(String(m.FunctionArn));
    functionsOfLane.set(lane ?? 'default', fns);
    if (lane !== undefined) {
      const p = PRIORITIES.find((x) => laneQueues[lane]?.[x].attributes.QueueArn === m.EventSourceArn) as Priority;
      const s = laneExpected[lane]?.mappings[p];
      check(
        `lane ${lane} ${p} mapping: ReportBatchItemFailures, batch ${s?.batchSize}, max concurrency ${s?.maxConcurrency}, enabled`,
        (m.FunctionResponseTypes as string[] | undefined)?.includes('ReportBatchItemFailures') === true &&
          m.BatchSize === s?.batchSize &&
          m.ScalingConfig?.MaximumConcurrency === s?.maxConcurrency &&
          m.State === 'Enabled',
        JSON.stringify({ BatchSize: m.BatchSize, ScalingConfig: m.ScalingConfig, State: m.State }),
      );
      continue;
    }
    const p = PRIORITIES.find((x) => outputs.queueArns[x] === m.EventSourceArn);
    if (!p) {
      check(`mapping ${id} reads a priority queue`, false, String(m.EventSourceArn));
      continue;
    }
    check(
      `${p} mapping: ReportBatchItemFailures, batch ${DEFAULT_CONFIG.batchSize[p]}, max concurrency ${expected.concurrency[p]}, enabled`,
      (m.FunctionResponseTypes as string[] | undefined)?.includes('ReportBatchItemFailures') === true &&
        m.BatchSize === DEFAULT_CONFIG.batchSize[p] &&
        m.ScalingConfig?.MaximumConcurrency === expected.concurrency[p] &&
        m.State === 'Enabled',
      JSON.stringify({
        FunctionResponseTypes: m.FunctionResponseTypes,
        BatchSize: m.BatchSize,
        ScalingConfig: m.ScalingConfig,
        State: m.State,
      }),
    );
  }
  const consumerArns = [...functionsOfLane.values()].flatMap((fns) => [...fns]);
  check(
    "one consumer function behind each lane's three mappings, a different one per lane",
    functionsOfLane.size === 1 + LANE_NAMES.length &&
      [...functionsOfLane.values()].every((fns) => fns.size === 1) &&
      new Set(consumerArns).size === consumerArns.length,
    JSON.stringify(Object.fromEntries([...functionsOfLane].map(([l, fns]) => [l, [...fns]]))),
  );
  // As CloudFormation resolves a queue's Ref (the outputs' form, which may differ from the
  // emulator's GetQueueUrl): the default queue's URL with the lane queue's name.
  const laneQueueUrls = Object.fromEntries(
    LANE_NAMES.map((lane) => [
      lane,
      Object.fromEntries(
        PRIORITIES.map((p) => [p, outputs.queueUrls[p].replace(/[^/]+$/, LANE_QUEUES[lane]?.[p] ?? '')]),
      ),
    ]),
  );

  // Functions.
  const fnIds = resources
    .filter((r) => r.ResourceType === 'AWS::Lambda::Function')
    .map((r) => r.PhysicalResourceId ?? '');
  check(
    `four functions and a consumer per lane (${LANE_NAMES.join(', ')})`,
    fnIds.length === 4 + LANE_NAMES.length,
    String(fnIds.length),
  );
  let schedulerArn: string | undefined;
  for (const name of fnIds) {
    const f = await lambdaGet(c, `/2015-03-31/functions/${encodeURIComponent(name)}/configuration`);
    const env = (f.Environment?.Variables ?? {}) as Record<string, string>;
    const short = name.replace(`${STACK}-`, '').replace(/Handler.*/, '');
    check(
      `${short}: nodejs22.x, index.handler, environment wired to the stack's resources`,
      f.Runtime === 'nodejs22.x' &&
        f.Handler === 'index.handler' &&
        env[ENV.tableName] === outputs.tableName &&
        PRIORITIES.every(
          (p) => env[ENV.queueUrl(p)] === outputs.queueUrls[p] && env[ENV.dlqUrl(p)] === outputs.deadLetterQueueUrls[p],
        ) &&
        env[ENV.logLevel] === expected.logLevel &&
        env.NODE_OPTIONS === '--enable-source-maps',
      `${f.Runtime} ${ENV.logLevel}=${env[ENV.logLevel]}`,
    );
    if (short === 'Consumer')
      check('consumer timeout', f.Timeout === DEFAULTS.consumerTimeoutSeconds, String(f.Timeout));
    const lane = LANE_NAMES.find((l) => short === `Consumer${l.charAt(0).toUpperCase()}${l.slice(1)}`);
    if (lane !== undefined) {
      const s = laneExpected[lane];
      check(
        `lane ${lane} consumer: timeout ${s?.timeoutSeconds} s, memory ${s?.memoryMiB} MiB`,
        f.Timeout === s?.timeoutSeconds && f.MemorySize === s?.memoryMiB,
        `${f.Timeout} s, ${f.MemorySize} MiB`,
      );
    }
    const lanesEnv = env[ENV.laneQueueUrls];
    check(
      `${short}: ${ENV.laneQueueUrls} names every lane's queues`,
      lanesEnv !== undefined && JSON.stringify(JSON.parse(lanesEnv)) === JSON.stringify(laneQueueUrls),
      lanesEnv,
    );
    const limitsEnv = env[ENV.limitsTableName];
    if (short.startsWith('Consumer')) {
      check(`${short}: ${ENV.limitsTableName} is the limits table`, limitsEnv === NAMES.limits, limitsEnv);
    } else {
      check(`${short}: no ${ENV.limitsTableName} (the consumers only)`, limitsEnv === undefined);
    }
    const historyEnv = env[ENV.historyTableName];
    if (!WORKFLOWS) {
      check(`${short}: no ${ENV.historyTableName} (no workflow type)`, historyEnv === undefined);
    } else if (short.startsWith('Consumer') || short === 'Api') {
      check(`${short}: ${ENV.historyTableName} is the history table`, historyEnv === NAMES.history, historyEnv);
    } else {
      check(`${short}: no ${ENV.historyTableName} (the consumers and the API only)`, historyEnv === undefined);
    }
    const schedulesEnv = env[ENV.schedulesTableName];
    if (short === 'Api' || short === 'Scheduler') {
      check(
        `${short}: ${ENV.schedulesTableName} is the schedules table`,
        schedulesEnv === NAMES.schedules,
        schedulesEnv,
      );
    } else {
      check(`${short}: no ${ENV.schedulesTableName} (API and scheduler only)`, schedulesEnv === undefined);
    }
    if (short === 'Scheduler') {
      schedulerArn = String(f.FunctionArn);
      check('scheduler: timeout 55 s', f.Timeout === 55, String(f.Timeout));
      check(
        'SchedulerFunctionName output',
        outputs.schedulerFunctionName === f.FunctionName,
        outputs.schedulerFunctionName,
      );
    }
    const idSecret = env[ENV.idSecret];
    if (short !== 'Api') {
      check(`${short}: no ${ENV.idSecret} (the API function's only)`, idSecret === undefined);
    } else if (idSecret === undefined || idSecret === '') {
      check(`Api: ${ENV.idSecret} set`, false, 'missing: the API function refuses to start without it');
    } else if (idSecret.startsWith('{{resolve:secretsmanager:')) {
      // What moto passes through: the reference itself (with "None" for the skipped secret's ARN).
      check(`Api: ${ENV.idSecret} set (to a secretsmanager dynamic reference)`, true);
      record(
        `Api: ${ENV.idSecret} resolved from the ID secret at deploy time`,
        'NOT EMULATED',
        `moto does not resolve dynamic references (got ${idSecret})`,
      );
    } else {
      check(
        `Api: ${ENV.idSecret} resolved from the ID secret at deploy time`,
        idSecretValue !== undefined ? idSecret === idSecretValue : ID_SECRET_VALUE.test(idSecret),
        `${idSecret.length} characters`,
      );
    }
    checkIfEmulated(
      `${short}: arm64`,
      Array.isArray(f.Architectures) && f.Architectures[0] !== 'x86_64',
      (f.Architectures as string[])[0] === 'arm64',
    );
  }
  check('one scheduler function', schedulerArn !== undefined);

  // EventBridge rules: the sweeper's and the scheduler's, each every minute.
  const ruleNames = resources
    .filter((r) => r.ResourceType === 'AWS::Events::Rule')
    .map((r) => r.PhysicalResourceId ?? '');
  check('two EventBridge rules (sweeper, scheduler)', ruleNames.length === 2, String(ruleNames.length));
  let schedulerRules = 0;
  for (const name of ruleNames) {
    const rule = await eventBridge(c, 'DescribeRule', { Name: name });
    const targets = ((await eventBridge(c, 'ListTargetsByRule', { Rule: name })).Targets ?? []) as { Arn?: string }[];
    if (!targets.some((t) => t.Arn === schedulerArn)) continue;
    schedulerRules += 1;
    check(
      'scheduler rule: rate(1 minute), enabled, targets the scheduler function alone',
      rule.ScheduleExpression === 'rate(1 minute)' && rule.State === 'ENABLED' && targets.length === 1,
      `${String(rule.ScheduleExpression)} ${String(rule.State)} ${targets.length} target(s)`,
    );
  }
  check('one rule targets the scheduler', schedulerRules === 1, String(schedulerRules));

  if (API === 'rest') {
    await checkRestApi(
      c,
      outputs,
      fnIds.find((n) => n.replace(`${STACK}-`, '').startsWith('ApiHandler')),
    );
  }
}

/**
 * The history table, made only when a task type is a workflow (follows the task table's deletion
 * protection and retention); without one, that the stack made none.
 */
async function checkHistoryTable(c: Clients, outputs: KajStackOutputs): Promise<void> {
  if (!WORKFLOWS) {
    check('no history table (no workflow type)', !(await tableExists(c, NAMES.history)));
    return;
  }
  const name = outputs.historyTableName ?? NAMES.history;
  const history = (await c.ddb.send(new DescribeTableCommand({ TableName: name }))).Table;
  const { partitionKey, sortKey, ttlAttribute } = HISTORY_TABLE_SCHEMA;
  const type = (attribute: string) =>
    history?.AttributeDefinitions?.find((a) => a.AttributeName === attribute)?.AttributeType;
  check(
    `history table: partition key ${partitionKey} (S), sort key ${sortKey} (S), no index`,
    history?.KeySchema?.length === 2 &&
      history.KeySchema[0]?.AttributeName === partitionKey &&
      history.KeySchema[0]?.KeyType === 'HASH' &&
      history.KeySchema[1]?.AttributeName === sortKey &&
      history.KeySchema[1]?.KeyType === 'RANGE' &&
      type(partitionKey) === 'S' &&
      type(sortKey) === 'S' &&
      (history.GlobalSecondaryIndexes ?? []).length === 0 &&
      (history.LocalSecondaryIndexes ?? []).length === 0,
    JSON.stringify(history?.KeySchema),
  );
  check('history table: on-demand', history?.BillingModeSummary?.BillingMode === 'PAY_PER_REQUEST');
  check('history table: deletion protection', history?.DeletionProtectionEnabled === true);
  checkIfEmulated(
    'history table: SSE with the AWS managed key',
    history?.SSEDescription !== undefined,
    history?.SSEDescription?.SSEType === 'KMS',
  );
  const ttl = (await c.ddb.send(new DescribeTimeToLiveCommand({ TableName: name }))).TimeToLiveDescription;
  checkIfEmulated(
    `history table: TTL on ${ttlAttribute}`,
    ttl?.TimeToLiveStatus === 'ENABLED' || ttl?.AttributeName !== undefined,
    ttl?.AttributeName === ttlAttribute,
  );
  const pitr = (await c.ddb.send(new DescribeContinuousBackupsCommand({ TableName: name })))
    .ContinuousBackupsDescription?.PointInTimeRecoveryDescription?.PointInTimeRecoveryStatus;
  checkIfEmulated('history table: point-in-time recovery', pitr === 'ENABLED', true, pitr);
}

async function checkDestroyed(c: Clients): Promise<void> {
  let gone = false;
  try {
    const s = await c.cfn.send(new DescribeStacksCommand({ StackName: STACK }));
    gone = s.Stacks?.[0]?.StackStatus === 'DELETE_COMPLETE';
  } catch (e) {
    gone = /does not exist/.test((e as Error).message);
  }
  check('stack deleted', gone);
  for (const p of PRIORITIES) {
    check(`${p} queue deleted with the stack`, !(await queueExists(c, NAMES.queues[p])));
    check(`${p} DLQ retained (dead tasks survive cdk destroy)`, await queueExists(c, NAMES.deadLetterQueues[p]));
  }
  for (const lane of LANE_NAMES) {
    for (const p of PRIORITIES) {
      const name = LANE_QUEUES[lane]?.[p] ?? '';
      check(`lane ${lane} ${p} queue deleted with the stack`, !(await queueExists(c, name)), name);
    }
  }
  check('task table retained', await tableExists(c, NAMES.table));
  check('schedules table retained', await tableExists(c, NAMES.schedules));
  check('limits table retained', await tableExists(c, NAMES.limits));
  if (WORKFLOWS) check('history table retained', await tableExists(c, NAMES.history));
  if (idSecretEmulated) {
    const secret = await secretsManager(c, 'DescribeSecret', { SecretId: ID_SECRET_NAME });
    check('ID secret retained (retainData, like the table)', secret !== undefined && secret.DeletedDate === undefined);
  } else record('ID secret retained (retainData, like the table)', 'NOT EMULATED', 'moto never created it');
  if (API === 'rest') {
    // moto 5.2.1's REST API model has no delete_from_cloudformation_json: it keeps the API after
    // the stack is gone. The template gives it no retain policy (test/infra/rest-api.test.ts).
    if ((await restApiOf(c)) === undefined) check('REST API deleted with the stack', true);
    else
      record(
        'REST API deleted with the stack',
        'NOT EMULATED',
        'moto does not delete AWS::ApiGateway::RestApi with its stack',
      );
  }
}

/** The teardown documented in docs/deploy.md: delete what `cdk destroy` keeps. */
async function deleteRetained(c: Clients): Promise<void> {
  for (const table of [NAMES.table, NAMES.schedules, NAMES.limits, ...(WORKFLOWS ? [NAMES.history] : [])]) {
    await c.ddb.send(new UpdateTableCommand({ TableName: table, DeletionProtectionEnabled: false }));
    await c.ddb.send(new DeleteTableCommand({ TableName: table }));
  }
  for (const p of PRIORITIES) {
    const { QueueUrl } = await c.sqs.send(new GetQueueUrlCommand({ QueueName: NAMES.deadLetterQueues[p] }));
    await c.sqs.send(new DeleteQueueCommand({ QueueUrl }));
  }
  check('table deleted after turning deletion protection off', !(await tableExists(c, NAMES.table)));
  check('schedules table deleted after turning deletion protection off', !(await tableExists(c, NAMES.schedules)));
  check('limits table deleted after turning deletion protection off', !(await tableExists(c, NAMES.limits)));
  if (WORKFLOWS) {
    check('history table deleted after turning deletion protection off', !(await tableExists(c, NAMES.history)));
  }
  for (const p of PRIORITIES) check(`${p} DLQ deleted`, !(await queueExists(c, NAMES.deadLetterQueues[p])));
  if (idSecretEmulated) {
    await secretsManager(c, 'DeleteSecret', { SecretId: ID_SECRET_NAME, ForceDeleteWithoutRecovery: true });
    check(
      'ID secret deleted (without recovery window)',
      (await secretsManager(c, 'DescribeSecret', { SecretId: ID_SECRET_NAME })) === undefined,
    );
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = performance.now();
  const scratch = mkdtempSync(path.join(tmpdir(), 'kaj-rehearsal-'));
  const home = path.join(scratch, 'home');
  mkdirSync(home);
  const logFile = path.join(scratch, 'moto.log');
  let moto: ChildProcess | undefined;
  const stop = () => {
    void stopMoto(moto).then(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  try {
    const port = await freePort();
    // moto routes S3 virtual-host requests only for "localhost", not for 127.0.0.1.
    const endpoint = `http://localhost:${port}`;
    const c = clients(endpoint);

    await timed('start moto', async () => {
      const log = openSync(logFile, 'w');
      // The same launcher as the integration suites: moto's server, one request at a time, so that
      // its conditional writes are atomic and its reads isolated (see that file).
      moto = spawn(
        process.env.KAJ_REHEARSAL_PYTHON ?? 'python3',
        [MOTO_LAUNCHER, '-H', '127.0.0.1', '-p', String(port)],
        {
          env: { ...process.env, MOTO_ACCOUNT_ID: ACCOUNT },
          stdio: ['ignore', log, log],
        },
      );
      closeSync(log);
      await waitForMoto(endpoint, moto, logFile);
    });
    console.log(`moto ${endpoint} (pid ${moto?.pid}); scratch ${scratch}`);

    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: home,
      CDK_HOME: home,
      AWS_ENDPOINT_URL: endpoint,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: REGION,
      AWS_DEFAULT_REGION: REGION,
      CDK_DISABLE_CLI_TELEMETRY: 'true',
      NPM_CONFIG_UPDATE_NOTIFIER: 'false',
      AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE: '1',
      NODE_NO_WARNINGS: '1',
    };
    for (const k of [
      'AWS_PROFILE',
      'AWS_SESSION_TOKEN',
      'AWS_DEFAULT_PROFILE',
      'AWS_CONFIG_FILE',
      'AWS_SHARED_CREDENTIALS_FILE',
    ])
      delete env[k];
    const cdk = path.join(REPO_ROOT, 'node_modules', '.bin', 'cdk');
    const out1 = path.join(scratch, 'cdk.out.create');
    const out2 = path.join(scratch, 'cdk.out.update');
    const common = ['--no-notices', '--context', `kaj:stackName=${STACK}`, '--context', `kaj:api=${API}`];
    console.log(`API kind: ${API}`);
    // moto can't run change sets for the app stack: deploy directly, and pass the bootstrap
    // version parameter (its SSM-parameter default is not resolved by moto).
    const deployArgs = [
      '--require-approval',
      'never',
      '--method=direct',
      '--parameters',
      'BootstrapVersion=/cdk-bootstrap/hnb659fds/version',
    ];

    phase = 'bootstrap';
    // Run outside the repository (no cdk.json): with an explicit environment, bootstrap needs no
    // synth of the app, which would bundle the functions for nothing.
    await timed('cdk bootstrap', () =>
      run(cdk, ['bootstrap', `aws://${ACCOUNT}/${REGION}`, '--no-notices'], env, home),
    );

    phase = 'create';
    await timed('cdk deploy (create)', () =>
      run(cdk, ['deploy', STACK, ...common, '--output', out1, ...deployArgs], env),
    );
    console.log('\nChecks after create:');
    await timed('checks (create)', () =>
      checkDeployed(c, path.join(out1, `${STACK}.template.json`), {
        concurrency: DEFAULT_CONFIG.concurrency,
        logLevel: DEFAULT_CONFIG.logLevel,
        encryptAlarmTopic: DEFAULT_CONFIG.encryptAlarmTopic,
      }),
    );

    phase = 'update';
    const updated = { ...DEFAULT_CONFIG.concurrency, high: UPDATED_HIGH_CONCURRENCY };
    await timed('cdk deploy (update)', () =>
      run(
        cdk,
        [
          'deploy',
          STACK,
          ...common,
          '--context',
          `kaj:concurrency=${JSON.stringify({ high: UPDATED_HIGH_CONCURRENCY })}`,
          '--context',
          `kaj:logLevel=${UPDATED_LOG_LEVEL}`,
          '--context',
          'kaj:encryptAlarmTopic=true',
          '--output',
          out2,
          ...deployArgs,
        ],
        env,
      ),
    );
    console.log(
      `\nChecks after update (high concurrency ${UPDATED_HIGH_CONCURRENCY}, log level ${UPDATED_LOG_LEVEL}, encryptAlarmTopic):`,
    );
    await timed('checks (update)', () =>
      checkDeployed(c, path.join(out2, `${STACK}.template.json`), {
        concurrency: updated,
        logLevel: UPDATED_LOG_LEVEL,
        encryptAlarmTopic: true,
      }),
    );

    phase = 'destroy';
    // Destroy the assembly just deployed: no second synth.
    await timed('cdk destroy', () => run(cdk, ['destroy', STACK, '--force', '--no-notices', '--app', out2], env));
    console.log('\nChecks after destroy:');
    await timed('checks (destroy)', () => checkDestroyed(c));

    phase = 'teardown';
    console.log('\nDeleting what the stack retains (docs/deploy.md, Teardown):');
    await timed('delete retained', () => deleteRetained(c));
  } catch (e) {
    record(`${phase} step`, 'FAIL', (e as Error).message);
    if (existsSync(logFile)) console.error(`\nmoto log tail:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
  } finally {
    await stopMoto(moto);
    if (process.env.KAJ_REHEARSAL_KEEP === '1') console.log(`\nkept ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
  timings.push(['total', (performance.now() - started) / 1000]);

  const failed = results.filter((r) => r.outcome === 'FAIL');
  const notEmulated = results.filter((r) => r.outcome === 'NOT EMULATED');
  console.log('\nTimings:');
  for (const [label, s] of timings) console.log(`  ${label.padEnd(22)} ${s.toFixed(1).padStart(6)} s`);
  console.log(
    `\nNot emulated by moto (proved by test/infra instead): ${[...new Set(notEmulated.map((r) => r.name))].join('; ') || 'none'}`,
  );
  console.log(
    `\nRehearsal: ${results.filter((r) => r.outcome === 'PASS').length} passed, ${failed.length} failed, ${notEmulated.length} not emulated`,
  );
  for (const f of failed) console.log(`  FAILED [${f.phase}] ${f.name}: ${f.detail}`);
  return failed.length === 0 ? 0 : 1;
}

process.exitCode = await main();
