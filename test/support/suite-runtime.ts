/**
 * The local runtime on an emulator target for the tests of one `describe` block.
 *
 * @module
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { KajClient } from '../../client/index.js';
import type { LocalRuntime, LocalRuntimeOptions } from '../../local/runtime.js';
import { uniquePrefix } from '../../testing/wait.js';
import { startOnTarget, type Target } from './targets.js';
import type { testRegistry } from './test-tasks.js';

/**
 * Starts the runtime on `target` in the block's `beforeAll`, on a free port with a prefix unique
 * to `tag`, and hands it to `started`; stops it (see `startOnTarget`) in the block's `afterAll`.
 * Call it inside the `describe`.
 * @param timeoutMs of both hooks @default vitest's hook timeout
 */
export function runtimeForSuite(
  target: Target,
  tag: string,
  options: Omit<LocalRuntimeOptions, 'prefix' | 'port'>,
  started: (runtime: LocalRuntime) => void,
  timeoutMs?: number,
): void {
  let stop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    const s = await startOnTarget(target, { ...options, prefix: uniquePrefix(tag), port: 0 });
    stop = s.stop;
    started(s.runtime);
  }, timeoutMs);
  afterAll(() => stop(), timeoutMs);
}

/** One call of the runtime's API, with a JSON body when one is given: the status and the JSON answer. */
export async function callApi(
  runtime: LocalRuntime,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${runtime.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * Expects the idempotency key a client generated for the `echo` task `r` (payload `{ value: 'once' }`)
 * to be that task's: a submit with it through the API is the same task, replayed.
 */
export async function expectKeyIsTheTask(
  runtime: LocalRuntime,
  r: { readonly task_id: string; readonly idempotencyKey: string },
): Promise<void> {
  const again = await new KajClient<ReturnType<typeof testRegistry>>({ url: runtime.url }).submit(
    'echo',
    { value: 'once' },
    { idempotencyKey: r.idempotencyKey },
  );
  expect(again).toMatchObject({ task_id: r.task_id, replayed: true });
}
