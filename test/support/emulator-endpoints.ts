/**
 * The endpoints of an emulator target (`targets()`), for suites that make their own clients: the
 * target's own, or (for the embedded target) those of the emulators started here in this process.
 *
 * @module
 */
import { EMULATOR_REGION, startEmulators } from '../../local/emulators.js';
import type { Target } from './targets.js';

export interface TargetEndpoints {
  readonly endpoints: { readonly sqs: string; readonly dynamodb: string };
  /** Stops the emulators started here, then the target. */
  stop(): Promise<void>;
}

/** Starts a target, and the embedded emulators when the target brings no endpoints of its own. */
export async function startEndpoints(target: Target): Promise<TargetEndpoints> {
  const t = await target.start();
  const embedded = t.endpoints === undefined ? await startEmulators().catch(stopAnd(t.stop)) : undefined;
  return {
    endpoints: t.endpoints ?? { sqs: embedded?.sqsEndpoint ?? '', dynamodb: embedded?.dynamoEndpoint ?? '' },
    stop: async () => {
      await embedded?.stop();
      await t.stop();
    },
  };
}

/** An SDK client configuration for an emulator endpoint: one attempt per request, so a test sees every error. */
export function emulatorClientConfig(endpoint?: string) {
  return {
    region: EMULATOR_REGION,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
    ...(endpoint === undefined ? {} : { endpoint }),
  };
}

/** A rejection handler that stops what was started, then rethrows. */
export function stopAnd(stop: () => Promise<void>): (err: unknown) => Promise<never> {
  return async (err) => {
    await stop().catch(() => undefined);
    throw err;
  };
}
