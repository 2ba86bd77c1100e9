/**
 * The API steps of `npm run localstack:smoke` (scripts/localstack-smoke.sh): find the deployed
 * API's URL on LocalStack, submit a task through it, wait for the task's status — with the same
 * `KajClient` users call the API with (SigV4-signed with `--region`, unsigned without).
 *
 *   tsx scripts/localstack-smoke-api.ts api-url --stack NAME --endpoint-url URL
 *       prints the stack's ApiUrl as LocalStack serves it without DNS:
 *       https://<id>.execute-api.<region>.amazonaws.com/<stage>/ → <endpoint>/restapis/<id>/<stage>/_user_request_/
 *   tsx scripts/localstack-smoke-api.ts submit --api-url URL [--region R] --type T [--payload JSON] [--max-attempts N]
 *       prints the task id
 *   tsx scripts/localstack-smoke-api.ts wait --api-url URL [--region R] --task-id ID --expect STATUS [--timeout-seconds S]
 *       exits 0 when the task ends in STATUS, 1 when it ends otherwise or does not end in time
 *
 * Credentials for signing: the usual chain (the smoke script exports LocalStack's test/test).
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { parseStackOutputs } from '../infra/outputs.js';
import { KajClient } from '../client/index.js';
import { clientConfig, EMULATOR_CREDENTIALS, EMULATOR_REGION } from '../shared/aws/wiring.js';

const EXECUTE_API_HOST = /^([a-z0-9]+)\.execute-api\.[a-z0-9-]+\.[a-z0-9.]+$/;

/**
 * The URL LocalStack serves a deployed API at, reached through its one endpoint (no DNS name for
 * the API's own host needed): `<endpoint>/restapis/<id>/<stage>/_user_request_/`. An HTTP API's
 * `$default` stage has no stage segment in its URL.
 * @throws Error when `apiUrl` is not an execute-api URL
 */
export function localstackApiUrl(apiUrl: string, endpoint: string): string {
  const u = new URL(apiUrl);
  const id = EXECUTE_API_HOST.exec(u.hostname)?.[1];
  if (id === undefined) throw new Error(`ApiUrl is not an execute-api URL: ${apiUrl}`);
  const stage = u.pathname.split('/').filter((s) => s !== '')[0] ?? '$default';
  return `${endpoint.replace(/\/+$/, '')}/restapis/${id}/${stage}/_user_request_/`;
}

/** The stack's ApiUrl output, read from LocalStack's CloudFormation. */
async function stackApiUrl(stack: string, endpoint: string): Promise<string> {
  const cfn = new CloudFormationClient(
    clientConfig({ endpoint, region: process.env.AWS_REGION ?? EMULATOR_REGION, credentials: EMULATOR_CREDENTIALS }),
  );
  try {
    const out = await cfn.send(new DescribeStacksCommand({ StackName: stack }));
    return parseStackOutputs(out.Stacks?.[0]?.Outputs ?? [], `stack ${stack}`).apiUrl;
  } finally {
    cfn.destroy();
  }
}

function client(url: string, region: string | undefined): KajClient {
  return new KajClient({ url, ...(region === undefined ? {} : { region }) });
}

const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);

/** Polls the task until it finishes (or `timeoutMs`); true when it ended in `expect`. */
export async function waitForStatus(
  kaj: KajClient,
  taskId: string,
  expect: string,
  o: { timeoutMs: number; pollMs?: number; log?: (line: string) => void },
): Promise<boolean> {
  const deadline = Date.now() + o.timeoutMs;
  let last = '';
  for (;;) {
    const task = await kaj.get(taskId);
    if (task.status !== last) o.log?.(`${taskId}: ${task.status} (attempts ${task.attempts})`);
    last = task.status;
    if (task.status === expect) return true;
    if (FINISHED.has(task.status) || Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, o.pollMs ?? 1_000));
  }
}

export async function main(
  argv: readonly string[],
  out: (s: string) => void = (s) => {
    process.stdout.write(s);
  },
): Promise<number> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      stack: { type: 'string' },
      'endpoint-url': { type: 'string' },
      'api-url': { type: 'string' },
      region: { type: 'string' },
      type: { type: 'string' },
      payload: { type: 'string' },
      'max-attempts': { type: 'string' },
      'task-id': { type: 'string' },
      expect: { type: 'string' },
      'timeout-seconds': { type: 'string' },
    },
  });
  const need = (name: keyof typeof values): string => {
    const v = values[name];
    if (typeof v !== 'string' || v === '') throw new Error(`${command}: --${name} is required`);
    return v;
  };
  switch (command) {
    case 'api-url':
      out(`${localstackApiUrl(await stackApiUrl(need('stack'), need('endpoint-url')), need('endpoint-url'))}\n`);
      return 0;
    case 'submit': {
      const maxAttempts = values['max-attempts'] === undefined ? undefined : Number(values['max-attempts']);
      const kaj = client(need('api-url'), values.region);
      const { task_id } = await kaj.submit(
        need('type') as never,
        (values.payload === undefined ? {} : JSON.parse(values.payload)) as never,
        maxAttempts === undefined ? {} : { maxAttempts },
      );
      out(`${task_id}\n`);
      return 0;
    }
    case 'wait': {
      const ok = await waitForStatus(client(need('api-url'), values.region), need('task-id'), need('expect'), {
        timeoutMs: Number(values['timeout-seconds'] ?? '120') * 1_000,
        log: (line) => process.stderr.write(`${line}\n`),
      });
      return ok ? 0 : 1;
    }
    default:
      throw new Error(`usage: localstack-smoke-api.ts api-url|submit|wait … (got ${JSON.stringify(command)})`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
