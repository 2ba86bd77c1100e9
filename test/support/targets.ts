import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { deleteResources } from '../../local/bootstrap.js';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../local/runtime.js';
import { motoAvailable, startMoto } from './moto.js';

/**
 * The emulators an integration suite runs against: the embedded ones always; moto when
 * `python3 -c "import moto"` succeeds (CI installs it), started through the launcher
 * `test/support/moto_server.py`, which serves one request at a time so that moto's conditional
 * writes are atomic and its reads isolated, as DynamoDB's are (see `./moto.ts`).
 * `KAJ_TEST_ENDPOINT` points the suite at one more endpoint (LocalStack) for users with Docker.
 */
export interface Target {
  readonly name: string;
  /** Starts the backing emulator if any; returns the endpoints (undefined = embedded). */
  start(): Promise<{ endpoints?: { sqs: string; dynamodb: string }; stop(): Promise<void> }>;
}

export const embedded: Target = {
  name: 'embedded',
  start: async () => ({ stop: async () => {} }),
};

export const moto: Target = {
  name: 'moto',
  start: async () => {
    const m = await startMoto();
    return { endpoints: { sqs: m.endpoint, dynamodb: m.endpoint }, stop: () => m.stop() };
  },
};

const external = process.env.KAJ_TEST_ENDPOINT;

export function targets(): Target[] {
  const list = [embedded];
  if (motoAvailable()) list.push(moto);
  if (external) {
    list.push({
      name: `endpoint ${external}`,
      start: async () => ({ endpoints: { sqs: external, dynamodb: external }, stop: async () => {} }),
    });
  }
  return list;
}

/**
 * Starts the local runtime on a target, with everything the suite needs; `stop()` stops the
 * runtime, deletes the resources it made on a shared endpoint, and stops the target.
 */
export async function startOnTarget(
  target: Target,
  options: LocalRuntimeOptions,
): Promise<{ runtime: LocalRuntime; stop(): Promise<void> }> {
  const t = await target.start();
  const runtime = await startLocalRuntime({ ...options, ...(t.endpoints ? { endpoints: t.endpoints } : {}) });
  return {
    runtime,
    stop: async () => {
      await runtime.stop(5_000);
      if (t.endpoints) {
        const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
        const sqs = new SQSClient({ region: 'us-east-1', endpoint: t.endpoints.sqs, credentials });
        const dynamodb = new DynamoDBClient({ region: 'us-east-1', endpoint: t.endpoints.dynamodb, credentials });
        await deleteResources({ sqs, dynamodb }, runtime.resources.prefix).catch(() => {});
        sqs.destroy();
        dynamodb.destroy();
      }
      await t.stop();
    },
  };
}
