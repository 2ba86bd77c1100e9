/**
 * Which deployment `kaj` talks to: `--local` (a running `npm start`), `--stack NAME` (a deployed
 * CloudFormation stack, read through its outputs), or `--stack NAME --endpoint-url URL`
 * (LocalStack: one endpoint for every service).
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { parseStackOutputs } from '../infra/outputs.js';
import { LOCAL_STATE_FILE } from '../shared/config/local-state.js';
import {
  type ClientSettings,
  clientConfig,
  createClients,
  EMULATOR_CREDENTIALS,
  EMULATOR_REGION,
  emulatorClients,
  type KajResources,
  type LocalState,
  localStateSchema,
} from '../shared/aws/wiring.js';
import { runtimeSettings, type EnvironmentSettings, type RuntimeSettings } from '../shared/config/settings.js';
import { CliError, UsageError } from './errors.js';

/** Written by `npm start` (local/main.ts). */
export const LOCAL_STATE_PATH = LOCAL_STATE_FILE;

export interface TargetFlags {
  readonly stack?: string;
  readonly local?: boolean;
  readonly endpointUrl?: string;
  readonly region?: string;
  readonly profile?: string;
}

export interface Target {
  readonly kind: 'local' | 'stack';
  /** The CloudFormation stack's name (a stack target). */
  readonly stackName?: string;
  /** For messages: `local (npm start, pid 123)`, `stack kaj-prod`. */
  readonly label: string;
  readonly resources: KajResources;
  /** The deployment's settings, for the record writes the CLI makes through the domain (`deploymentSettings`). */
  readonly settings: RuntimeSettings;
  readonly apiUrl?: string;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /**
   * The endpoint answers receives exactly (the embedded emulator): one empty short poll means
   * the queue is empty. On AWS, receives sample and need a long poll.
   */
  readonly exactReceives: boolean;
  /** How the clients of a stack target were made (region, profile, endpoint): for more clients of the same (CloudWatch). */
  readonly clientSettings?: ClientSettings;
  close(): void;
}

export const TARGET_HELP = `Target (one is required):
  --local                 the Kaj that \`npm start\` runs in this directory (reads ${LOCAL_STATE_PATH})
  --stack NAME            a deployed stack, found with CloudFormation DescribeStacks and the
                          usual AWS credential chain (--profile, --region, or AWS_* variables)
  --stack NAME --endpoint-url URL
                          a stack deployed to LocalStack (one endpoint for all services)`;

/**
 * The settings of the deployment the CLI acts on (the retention of a discarded task, the due
 * times of outbox entries): what the deployment reports, Kaj's defaults for the rest. The one
 * place the CLI decides them.
 * - `--local`: `.kaj/local.json` may carry the settings `npm start` runs with (`settings`).
 * - `--stack`: the stack reports none. Its functions read KAJ_LEASE_SECONDS and KAJ_RETENTION_DAYS
 *   from their environment, which no stack output exposes (infra/outputs.ts), so the defaults apply.
 */
export function deploymentSettings(reported: EnvironmentSettings = {}): RuntimeSettings {
  return runtimeSettings(reported);
}

export function checkTargetFlags(f: TargetFlags): void {
  if (f.local === true && f.stack !== undefined) throw new UsageError('give either --local or --stack NAME, not both');
  if (f.local === true && (f.endpointUrl !== undefined || f.region !== undefined || f.profile !== undefined)) {
    throw new UsageError('--endpoint-url, --region and --profile go with --stack NAME, not with --local');
  }
  if (f.local !== true && f.stack === undefined) {
    throw new UsageError(
      f.endpointUrl !== undefined
        ? '--endpoint-url needs --stack NAME (the LocalStack stack to read the resources from)'
        : 'no target: give --local (a running `npm start`), --stack NAME (a deployed stack), or --stack NAME --endpoint-url URL (LocalStack)',
    );
  }
  if (f.endpointUrl !== undefined && !/^https?:\/\/[^/\s]+/.test(f.endpointUrl)) {
    throw new UsageError(`--endpoint-url must be an http(s) URL, got "${f.endpointUrl}"`);
  }
  if (f.stack !== undefined && !/^[A-Za-z][A-Za-z0-9-]{0,127}$/.test(f.stack) && !f.stack.startsWith('arn:')) {
    throw new UsageError(`--stack must be a CloudFormation stack name, got "${f.stack}"`);
  }
}

export async function resolveTarget(
  f: TargetFlags,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): Promise<Target> {
  checkTargetFlags(f);
  if (f.local === true) return localTarget(cwd);
  return stackTarget(f, env);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function localTarget(cwd: string): Target {
  const file = resolve(cwd, LOCAL_STATE_PATH);
  if (!existsSync(file)) {
    throw new CliError(
      `no local Kaj is running here: ${file} does not exist.\n  Start one with \`npm start\` in ${cwd} (then run kaj --local from the same directory).`,
    );
  }
  let state: LocalState;
  try {
    state = localStateSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (err) {
    throw new CliError(
      `${file} is not a state file written by \`npm start\`: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    );
  }
  if (!isAlive(state.pid)) {
    throw new CliError(
      `the local Kaj (npm start, pid ${state.pid}) is not running any more (stale ${LOCAL_STATE_PATH}).\n  Start it again with \`npm start\`.`,
    );
  }
  const settings = deploymentSettings(state.settings);
  const { sqs, dynamodb, destroy } = emulatorClients(state.endpoints, { maxAttempts: 2 });
  return {
    kind: 'local',
    label: `local (npm start, pid ${state.pid})`,
    resources: state.resources,
    settings,
    ...(state.apiUrl === undefined ? {} : { apiUrl: state.apiUrl }),
    sqs,
    dynamodb,
    exactReceives: true,
    close: destroy,
  };
}

async function stackTarget(f: TargetFlags, env: Readonly<Record<string, string | undefined>>): Promise<Target> {
  const stack = f.stack as string;
  const region =
    f.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? (f.endpointUrl !== undefined ? EMULATOR_REGION : undefined);
  // LocalStack accepts any key; use its conventional one when nothing else is configured.
  const useTestKeys =
    f.endpointUrl !== undefined &&
    f.profile === undefined &&
    env.AWS_ACCESS_KEY_ID === undefined &&
    env.AWS_PROFILE === undefined;
  const settings: ClientSettings = {
    ...(region === undefined ? {} : { region }),
    ...(f.profile === undefined ? {} : { profile: f.profile }),
    ...(f.endpointUrl === undefined ? {} : { endpoint: f.endpointUrl }),
    ...(useTestKeys ? { credentials: { ...EMULATOR_CREDENTIALS } } : {}),
  };
  const cfn = new CloudFormationClient(clientConfig(settings));
  let outputs;
  // The stack's name (also when --stack is its ARN): its metrics namespace is named after it.
  let stackName = stack;
  try {
    const out = await cfn.send(new DescribeStacksCommand({ StackName: stack }));
    const s = out.Stacks?.[0];
    if (s === undefined) throw new CliError(`stack ${stack} not found`);
    outputs = parseStackOutputs(s.Outputs ?? [], `stack ${stack}`);
    stackName = s.StackName ?? stack;
  } catch (err) {
    if (err instanceof CliError) throw err;
    if (err instanceof Error && /does not exist/.test(err.message)) {
      throw new CliError(
        `stack ${stack} does not exist${region === undefined ? '' : ` in ${region}`} (check --region / --profile)`,
        1,
        { cause: err },
      );
    }
    if (err instanceof Error && /is it a Kaj stack/.test(err.message))
      throw new CliError(err.message, 1, { cause: err });
    throw err;
  } finally {
    cfn.destroy();
  }
  const { sqs, dynamodb, destroy } = createClients(settings);
  return {
    kind: 'stack',
    stackName,
    label: `stack ${stack}${region === undefined ? '' : ` (${region})`}${f.endpointUrl === undefined ? '' : ` at ${f.endpointUrl}`}`,
    resources: {
      tableName: outputs.tableName,
      queueUrls: outputs.queueUrls,
      queueArns: outputs.queueArns,
      deadLetterQueueUrls: outputs.deadLetterQueueUrls,
      deadLetterQueueArns: outputs.deadLetterQueueArns,
      ...(outputs.historyTableName === undefined ? {} : { historyTableName: outputs.historyTableName }),
    },
    settings: deploymentSettings(),
    apiUrl: outputs.apiUrl,
    sqs,
    dynamodb,
    exactReceives: false,
    clientSettings: settings,
    close: destroy,
  };
}
