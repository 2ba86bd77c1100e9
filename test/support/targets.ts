import { motoAvailable, startMoto } from '../../local/emulators.js';

/**
 * The emulators an integration suite runs against: the embedded ones always; moto when
 * `python3 -m moto.server` is available (CI installs it). `KAJ_TEST_ENDPOINT` points the
 * suite at one more endpoint (LocalStack) for users with Docker.
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
    list.push({ name: `endpoint ${external}`, start: async () => ({ endpoints: { sqs: external, dynamodb: external }, stop: async () => {} }) });
  }
  return list;
}
