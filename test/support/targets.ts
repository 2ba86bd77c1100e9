import { describe, it } from 'vitest';
import { deleteResources } from '../../local/bootstrap.js';
import { EMBEDDED_TARGET, type EmulatorTarget, emulatorTargets, MOTO_TARGET } from '../../local/emulators.js';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../local/runtime.js';
import { emulatorClients } from '../../shared/aws/wiring.js';

/**
 * The emulators an integration suite runs against (local/emulators.ts): the embedded ones always; moto when
 * `python3 -c "import moto"` succeeds (CI installs it), started through the launcher
 * `local/moto_server.py`, which serves one request at a time so that moto's conditional
 * writes are atomic and its reads isolated, as DynamoDB's are (see `./moto.ts`).
 * `KAJ_TEST_ENDPOINT` points the suite at one more endpoint (LocalStack) for users with Docker.
 */
export type Target = EmulatorTarget;
export const embedded: Target = EMBEDDED_TARGET;
export const moto: Target = MOTO_TARGET;

export function targets(): Target[] {
  return emulatorTargets(process.env.KAJ_TEST_ENDPOINT);
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
        const clients = emulatorClients(t.endpoints);
        await deleteResources(clients, runtime.resources.prefix).catch(() => {});
        clients.destroy();
      }
      await t.stop();
    },
  };
}

/**
 * Half of `targets()`: the embedded emulators, or every other target (moto, an endpoint). A slow
 * suite is split in two files over the same cases (`*.cases.ts`), one per half, so that two test
 * workers run it side by side instead of one running it twice.
 */
export function targetsHalf(half: 'embedded' | 'others'): Target[] {
  return targets().filter((t) => (t.name === EMBEDDED_TARGET.name) === (half === 'embedded'));
}

/**
 * `describe.each` over one half of the targets (`targetsHalf`). With no target in it (moto not
 * installed, no endpoint given), the suite is skipped, saying so, instead of leaving a test file
 * with no test.
 */
export function describeHalf(half: 'embedded' | 'others', title: string, cases: (target: Target) => void): void {
  const on = targetsHalf(half);
  if (on.length > 0) {
    describe.each(on)(title, cases);
    return;
  }
  // biome-ignore lint/plugin/no-conditional-skip: this half has no target here (moto not installed, no endpoint given)
  describe.skipIf(true)(`${title.replace(' on $name', '')} [skipped: moto is not installed here]`, () => {
    it('runs on moto', () => {});
  });
}
