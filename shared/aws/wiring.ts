/**
 * Wiring: how the processes outside Lambda — the local runtime and its workers, the admin CLI,
 * the tests, the benchmarks and the scripts — get AWS SDK clients for an endpoint, a region and
 * credentials, and the one shape of a deployment's resources (table, queues, DLQs: names, URLs,
 * ARNs).
 *
 * No local-only code here (no emulator, no file system): the CLI imports it as well.
 *
 * @module
 */
import { ConfigError } from '../config/errors.js';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type ClientTuning, createDynamoDbClient, createSqsClient } from './clients.js';
import * as z from 'zod';
import { type LaneDeclarations, laneQueueNames } from '../config/lanes.js';
import { PRIORITIES, type Priority, resourceNames } from '../config/resources.js';

// ---------------------------------------------------------------------------------------------
// Clients

/** One endpoint per service (the embedded emulators listen on two ports). */
export interface Endpoints {
  readonly sqs: string;
  readonly dynamodb: string;
}

export interface StaticCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** Region of the emulators (embedded, moto, LocalStack) and of the queue ARNs they hand out. */
export const EMULATOR_REGION = 'us-east-1';
/** Account id of the emulators' queue URLs and ARNs (moto's `MOTO_ACCOUNT_ID`). */
export const EMULATOR_ACCOUNT_ID = '000000000000';
/** What emulators accept as credentials (any key works; these are the conventional ones). */
export const EMULATOR_CREDENTIALS: StaticCredentials = { accessKeyId: 'test', secretAccessKey: 'test' };

/** Where and as whom the clients talk. Everything unset is the SDK's default (chain, AWS endpoints). */
export interface ClientSettings {
  /** One endpoint for every service (LocalStack, moto), or one per service. */
  readonly endpoint?: string | Endpoints;
  readonly region?: string;
  /** A shared-config profile (`--profile`). */
  readonly profile?: string;
  readonly credentials?: StaticCredentials;
  /** SDK attempts per request. @default the SDK's (3) */
  readonly maxAttempts?: number;
}

/** The settings of an emulator on `endpoint`: the emulator region and test credentials. */
export function emulatorSettings(
  endpoint: string | Endpoints,
  extra: Pick<ClientSettings, 'maxAttempts'> = {},
): ClientSettings {
  // A copy per call: the SDK may annotate the credentials object it is given.
  return { endpoint, region: EMULATOR_REGION, credentials: { ...EMULATOR_CREDENTIALS }, ...extra };
}

/** The SDK client configuration of `settings` for one service (any client: SQS, DynamoDB, CloudFormation...). */
export function clientConfig(
  settings: ClientSettings,
  service?: keyof Endpoints,
): {
  region?: string;
  profile?: string;
  endpoint?: string;
  credentials?: StaticCredentials;
  maxAttempts?: number;
} {
  const e = settings.endpoint;
  const endpoint = typeof e === 'string' || e === undefined ? e : service === undefined ? undefined : e[service];
  if (e !== undefined && typeof e !== 'string' && service === undefined) {
    throw new ConfigError('endpoint', 'per-service endpoints need the service they are for');
  }
  return {
    ...(settings.region === undefined ? {} : { region: settings.region }),
    ...(settings.profile === undefined ? {} : { profile: settings.profile }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(settings.credentials === undefined ? {} : { credentials: settings.credentials }),
    ...(settings.maxAttempts === undefined ? {} : { maxAttempts: settings.maxAttempts }),
  };
}

/** The two clients Kaj's data lives behind. */
export interface KajClients {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /** Destroys both clients (closes their sockets). */
  destroy(): void;
}

/**
 * The clients' per-request tuning outside Lambda (`shared/aws/clients.ts`): the signer is
 * reused, but each request resolves its middleware stack, because here middleware is added to
 * running clients (fault injection in the tests, request counters in the benchmarks), which
 * `cacheMiddleware` would ignore for commands already sent.
 */
export const WIRED_CLIENT_TUNING: ClientTuning = { cacheMiddleware: false, reuseSigner: true };

export function createClients(settings: ClientSettings): KajClients {
  const sqs = createSqsClient(clientConfig(settings, 'sqs'), WIRED_CLIENT_TUNING);
  const dynamodb = createDynamoDbClient(clientConfig(settings, 'dynamodb'), WIRED_CLIENT_TUNING);
  return {
    sqs,
    dynamodb,
    destroy: () => {
      sqs.destroy();
      dynamodb.destroy();
    },
  };
}

/** Clients for emulators on `endpoints` (embedded, moto, LocalStack): emulator region, test credentials. */
export function emulatorClients(
  endpoints: string | Endpoints,
  extra: Pick<ClientSettings, 'maxAttempts'> = {},
): KajClients {
  return createClients(emulatorSettings(endpoints, extra));
}

// ---------------------------------------------------------------------------------------------
// Resources

type PerPriority = Readonly<Record<Priority, string>>;

/**
 * A deployment's resources: the one spelling of them (the local runtime's, the state file of
 * `npm start`, the functions' `FunctionConfig`).
 */
export interface KajResources {
  readonly tableName: string;
  readonly queueUrls: PerPriority;
  readonly queueArns: PerPriority;
  readonly deadLetterQueueUrls: PerPriority;
  readonly deadLetterQueueArns: PerPriority;
  /** The limits table (flow control), when the deployment has one. */
  readonly limitsTableName?: string;
  /** The history table (workflow runs' histories), when the deployment has one. */
  readonly historyTableName?: string;
  /** The queues of the lanes other than the default one (`tasks/lanes.ts`), by lane. */
  readonly lanes?: Readonly<Record<string, { readonly queueUrls: PerPriority; readonly queueArns: PerPriority }>>;
}

/** The lanes' queue URLs as the functions take them (`FunctionConfig.laneQueueUrls`). */
export function laneQueueUrlsOf(r: KajResources): Record<string, PerPriority> {
  return Object.fromEntries(Object.entries(r.lanes ?? {}).map(([lane, q]) => [lane, q.queueUrls]));
}

/** Resources made or found by name, from a prefix (stack name): see `resourceNames`. */
export interface PrefixedResources extends KajResources {
  readonly prefix: string;
}

/** A queue as found or made: its URL and ARN. */
export interface QueueRef {
  readonly url: string;
  readonly arn: string;
}

/** The queues of a prefix as found or made: each priority's main queue and DLQ, and each lane's main queues. */
export interface PrefixedQueues {
  readonly queues: Record<Priority, QueueRef>;
  readonly deadLetterQueues: Record<Priority, QueueRef>;
  readonly lanes: Record<string, Record<Priority, QueueRef>>;
}

/**
 * The resources of `prefix`: its table (`resourceNames`), its queues, and the limits and history
 * tables when there are.
 */
export function prefixedResources(
  prefix: string,
  q: PrefixedQueues,
  limitsTableName?: string,
  historyTableName?: string,
): PrefixedResources {
  const urls = (r: Record<Priority, QueueRef>) => perPriorityOf(r, (x) => x.url);
  const arns = (r: Record<Priority, QueueRef>) => perPriorityOf(r, (x) => x.arn);
  const lanes = Object.entries(q.lanes).map(([lane, r]) => [lane, { queueUrls: urls(r), queueArns: arns(r) }]);
  return {
    prefix,
    tableName: resourceNames(prefix).table,
    queueUrls: urls(q.queues),
    queueArns: arns(q.queues),
    deadLetterQueueUrls: urls(q.deadLetterQueues),
    deadLetterQueueArns: arns(q.deadLetterQueues),
    ...(limitsTableName === undefined ? {} : { limitsTableName }),
    ...(historyTableName === undefined ? {} : { historyTableName }),
    ...(lanes.length === 0 ? {} : { lanes: Object.fromEntries(lanes) }),
  };
}

const perPriorityOf = <T>(r: Record<Priority, T>, f: (x: T) => string): PerPriority =>
  Object.fromEntries(PRIORITIES.map((p) => [p, f(r[p])])) as Record<Priority, string>;

const perPriority = z.object({ high: z.string(), normal: z.string(), low: z.string() });

/** {@link KajResources} as JSON (e.g. in the state file of `npm start`). */
export const kajResourcesSchema = z.object({
  tableName: z.string(),
  queueUrls: perPriority,
  queueArns: perPriority,
  deadLetterQueueUrls: perPriority,
  deadLetterQueueArns: perPriority,
  limitsTableName: z.string().optional(),
  historyTableName: z.string().optional(),
  lanes: z.record(z.string(), z.object({ queueUrls: perPriority, queueArns: perPriority })).optional(),
});

/** What a running `npm start` writes to `LOCAL_STATE_FILE` for the admin CLI's `--local`. */
export const localStateSchema = z.object({
  /** The settings `npm start` runs with (KAJ_LEASE_SECONDS, KAJ_RETENTION_DAYS), so the CLI acts with them. */
  settings: z.object({ leaseSeconds: z.number().optional(), retentionDays: z.number().optional() }).optional(),
  pid: z.number().int(),
  apiUrl: z.string().optional(),
  endpoints: z.object({ sqs: z.string(), dynamodb: z.string() }),
  resources: kajResourcesSchema,
});
export type LocalState = z.infer<typeof localStateSchema>;

/** Queue URLs of the resources as `SqsTaskQueue` takes them. */
export function taskQueueUrls(r: KajResources): { queues: PerPriority; deadLetterQueues: PerPriority } {
  return { queues: r.queueUrls, deadLetterQueues: r.deadLetterQueueUrls };
}

/** The URL of a queue, by name. */
async function queueUrlOf(sqs: SQSClient, name: string): Promise<string> {
  const out = await sqs.send(new GetQueueUrlCommand({ QueueName: name }));
  if (!out.QueueUrl) throw new Error(`queue ${name} has no URL`);
  return out.QueueUrl;
}

/** The ARN of a queue, by URL. */
export async function queueArnOf(sqs: SQSClient, url: string): Promise<string> {
  const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  const arn = out.Attributes?.QueueArn;
  if (!arn) throw new Error(`queue ${url} has no QueueArn`);
  return arn;
}

/**
 * Finds the queues and table of `prefix` by their names, and the limits and history tables when
 * they exist; never creates anything.
 * @throws if a queue or the table does not exist
 */
export async function findResources(
  clients: Pick<KajClients, 'sqs' | 'dynamodb'>,
  prefix: string,
  lanes: LaneDeclarations = {},
): Promise<PrefixedResources> {
  const names = resourceNames(prefix);
  const queues = {} as Record<Priority, QueueRef>;
  const deadLetterQueues = {} as Record<Priority, QueueRef>;
  for (const p of PRIORITIES) {
    const url = await queueUrlOf(clients.sqs, names.queues[p]);
    const dlqUrl = await queueUrlOf(clients.sqs, names.deadLetterQueues[p]);
    queues[p] = { url, arn: await queueArnOf(clients.sqs, url) };
    deadLetterQueues[p] = { url: dlqUrl, arn: await queueArnOf(clients.sqs, dlqUrl) };
  }
  await clients.dynamodb.send(new DescribeTableCommand({ TableName: names.table }));
  const laneQueues: Record<string, Record<Priority, QueueRef>> = {};
  for (const lane of Object.keys(lanes)) {
    const laneNames = laneQueueNames(prefix, lane);
    const refs = {} as Record<Priority, QueueRef>;
    for (const p of PRIORITIES) {
      const url = await queueUrlOf(clients.sqs, laneNames[p]);
      refs[p] = { url, arn: await queueArnOf(clients.sqs, url) };
    }
    laneQueues[lane] = refs;
  }
  const limitsTableName = await existingTable(clients.dynamodb, names.limits);
  const historyTableName = await existingTable(clients.dynamodb, names.history);
  return prefixedResources(prefix, { queues, deadLetterQueues, lanes: laneQueues }, limitsTableName, historyTableName);
}

/** `tableName` when the table exists, else undefined (a deployment without it). */
async function existingTable(dynamodb: DynamoDBClient, tableName: string): Promise<string | undefined> {
  try {
    await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    return tableName;
  } catch (err) {
    if (!(err instanceof Error && err.name === 'ResourceNotFoundException')) throw err;
    return undefined;
  }
}
