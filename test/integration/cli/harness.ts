/** Runs `kaj` in-process against a local runtime, as `kaj --local` would find it. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll } from 'vitest';
import * as z from 'zod';
import { defaultContext, type CliContext } from '../../../cli/context.js';
import { runCli } from '../../../cli/program.js';
import { capturedIo } from '../../../testing/captured-io.js';
import type { Priority } from '../../../shared/config/resources.js';
import { defineTask, PermanentError, TaskRegistry } from '../../../shared/task/define.js';
import { defineWorkflow } from '../../../shared/workflow/define.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../../local/runtime.js';

export interface KajResult {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** A directory holding `.kaj/local.json` for `runtime`, as `npm start` writes it (this process stands in for it). */
export function localStateDir(runtime: LocalRuntime): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'kaj-cli-'));
  mkdirSync(join(dir, '.kaj'));
  writeFileSync(
    join(dir, '.kaj', 'local.json'),
    JSON.stringify({
      pid: process.pid,
      apiUrl: runtime.url,
      endpoints: runtime.endpoints,
      resources: runtime.resources,
    }),
  );
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A local runtime of `registry`, its `.kaj/local.json` directory and a `kaj` runner in it. */
export interface CliRuntime {
  readonly runtime: LocalRuntime;
  /** The directory holding `.kaj/local.json` (the working directory of `kaj --local`). */
  readonly dir: string;
  readonly kaj: ReturnType<typeof kajRunner>;
  /** Stops the runtime and removes the directory. */
  stop(): Promise<void>;
}

/**
 * Starts a local runtime (no emulator endpoints given: the embedded ones) with a prefix unique
 * to this process and `tag`, writes its `.kaj/local.json`, and returns a `kaj` runner there.
 * @param o.runtime more options of the runtime
 * @param o.cli the context of every `kaj` run @default the runtime's registry
 */
export async function startCliRuntime(
  registry: TaskRegistry,
  tag: string,
  o: { runtime?: LocalRuntimeOptions; cli?: Partial<CliContext> } = {},
): Promise<CliRuntime> {
  const runtime = await startLocalRuntime({
    registry,
    prefix: `${tag}-${process.pid}-${Date.now()}`.slice(0, 40),
    port: 0,
    waitTimeSeconds: 1,
    ...o.runtime,
  });
  const state = localStateDir(runtime);
  return {
    runtime,
    dir: state.dir,
    kaj: kajRunner(state.dir, o.cli ?? { registry: async () => registry }),
    stop: async () => {
      await runtime.stop(2_000);
      state.remove();
    },
  };
}

export { capturedIo };

export function kajRunner(cwd: string, base: Partial<CliContext> = {}) {
  return async (args: readonly string[], extra: Partial<CliContext> = {}): Promise<KajResult> => {
    const captured = capturedIo();
    const code = await runCli(
      args,
      defaultContext({
        io: captured.io,
        cwd,
        env: {},
        actor: 'tester',
        ...base,
        ...extra,
      }),
    );
    return { code, out: captured.out(), err: captured.err() };
  };
}

/** Task types for the CLI tests: one that always fails for good, one that fails until "fixed", a workflow waiting for a signal. */
export class Scenario {
  broken = true;
  readonly successes = new Map<string, number>();
  readonly runs = new Map<string, number>();

  registry(): TaskRegistry {
    const count = (m: Map<string, number>, id: string) => m.set(id, (m.get(id) ?? 0) + 1);
    return new TaskRegistry([
      defineTask({
        type: 'always_broken',
        schema: z.object({}),
        handler: async (_p, ctx) => {
          count(this.runs, ctx.taskId);
          throw new PermanentError('upstream rejects this forever', { code: 'HTTP_410' });
        },
      }),
      defineTask({
        type: 'fixable',
        schema: z.object({ n: z.number().optional() }),
        handler: async (_p, ctx) => {
          count(this.runs, ctx.taskId);
          if (this.broken) throw new PermanentError('config missing: SMTP_HOST', { code: 'CONFIG' });
          count(this.successes, ctx.taskId);
          return { ok: true };
        },
      }),
      defineWorkflow({
        type: 'approval_flow',
        schema: z.object({}),
        run: async (_p, wf) => {
          const checked = await wf.step('check', () => 'checked');
          const go = await wf.waitForSignal<{ ok: boolean }>('go', { timeout: '1h' });
          return { checked, go };
        },
      }),
    ]);
  }
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function submitMany(
  runtime: LocalRuntime,
  type: string,
  n: number,
  priority: Priority = 'normal',
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1) {
    const { record } = await runtime.kaj.submitter.submit({ type, payload: {}, priority }, { owner: 'local' });
    ids.push(record.task_id);
  }
  return ids;
}

export async function records(runtime: LocalRuntime, ids: readonly string[]): Promise<TaskRecord[]> {
  return Promise.all(ids.map(async (id) => (await runtime.kaj.store.get(id)) as TaskRecord));
}

export async function untilStatus(
  runtime: LocalRuntime,
  ids: readonly string[],
  status: TaskRecord['status'],
): Promise<TaskRecord[]> {
  return waitFor(`${ids.length} task(s) to be ${status}`, async () => {
    const rs = await records(runtime, ids);
    return rs.every((r) => r.status === status) ? rs : undefined;
  });
}

export async function dlqDepth(runtime: LocalRuntime, p: Priority): Promise<{ visible: number; inFlight: number }> {
  const out = await runtime.clients.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: runtime.resources.deadLetterQueueUrls[p],
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(out.Attributes?.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

/** Waits until the DLQ of `p` holds exactly `n` messages, all visible (dead letters are written after the failed write). */
export async function untilDlq(runtime: LocalRuntime, p: Priority, n: number): Promise<void> {
  await waitFor(`the ${p} DLQ to hold ${n} visible message(s)`, async () => {
    const d = await dlqDepth(runtime, p);
    return d.visible === n && d.inFlight === 0 ? true : undefined;
  });
}

/**
 * {@link startCliRuntime} for a scenario: the runtime runs its task types as they are at start,
 * each `kaj` run reads them anew (a test may fix them meanwhile).
 */
export function startScenarioRuntime(scenario: Scenario, tag: string): Promise<CliRuntime> {
  return startCliRuntime(scenario.registry(), tag, { cli: { registry: async () => scenario.registry() } });
}

/** A test file's runtime for a scenario whose task types are healthy: see {@link healthyScenarioSuite}. */
export interface HealthyScenarioSuite {
  readonly scenario: Scenario;
  /** The runtime, once the file's tests run (before: an error). */
  readonly runtime: LocalRuntime;
  /** The directory `kaj --local` runs in. */
  readonly dir: string;
  /** Runs `kaj` in `dir`. */
  readonly kaj: CliRuntime['kaj'];
}

/**
 * Starts a runtime for a new {@link Scenario} with its task types healthy (`broken` off) before
 * the file's tests, and stops it after them.
 */
export function healthyScenarioSuite(tag: string): HealthyScenarioSuite {
  const scenario = new Scenario();
  scenario.broken = false;
  let started: CliRuntime | undefined;
  const current = (): CliRuntime => {
    if (started === undefined) throw new Error('the runtime starts before the first test');
    return started;
  };
  beforeAll(async () => {
    started = await startScenarioRuntime(scenario, tag);
  });
  afterAll(() => started?.stop());
  return {
    scenario,
    get runtime() {
      return current().runtime;
    },
    get dir() {
      return current().dir;
    },
    kaj: (args, ...rest) => current().kaj(args, ...rest),
  };
}
