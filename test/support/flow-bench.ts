/**
 * What the flow-control suites (test/integration/flow-control/) run on: a local runtime (API, sweeper, and, when
 * asked, the in-process consumers) on a target's endpoints with the limit task types of
 * `./limit-tasks.ts`, worker child processes (`local/worker.ts`) loading the same types, the
 * execution log they share, readers for the table, the limits table and the queues, and a tiny
 * HTTP provider that answers 429 + Retry-After.
 *
 * Like the reliability harness (testing/harness.ts), but with a registry that declares
 * limits and a lane, and one runtime per test (each with its own prefix) on a target started
 * once per suite.
 *
 * @module
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queueDepth } from '../../testing/harness.js';
import { spawnWorker, type WorkerProcess, waitWorkerReady } from '../../testing/worker-process.js';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { deleteResources } from '../../local/bootstrap.js';
import { startLocalRuntime, type LocalRuntime } from '../../local/runtime.js';
import { LOCAL_OWNER } from '../../shared/service/all-in-one.js';
import { PRIORITIES, type Priority } from '../../shared/config/resources.js';
import type { Endpoints } from '../../shared/aws/wiring.js';
import { emulatorClients } from '../../shared/aws/wiring.js';
import { RecordingLogger } from '../../shared/runtime/logger.js';
import type { TaskRecord } from '../../shared/task/model.js';
import type { SubmitRequest } from '../../shared/task/submit.js';
import type { Target } from './targets.js';
import { createRegistry, LANES, type LimitExecution, readLimitLog } from './limit-tasks.js';
import { uniquePrefix, waitFor } from '../../testing/wait.js';

export const LIMIT_TASKS_MODULE = 'test/support/limit-tasks.ts';
/** Long-poll wait of the workers' receives (`--wait-seconds`). */
export const WORKER_WAIT_SECONDS = 1;

export interface FlowBenchOptions {
  readonly tag: string;
  /** Lease seconds of the runtime and every worker (the limits' slot leases too). */
  readonly lease: number;
  /** The queues' redrive maxReceiveCount (and the in-process consumer's). @default 10 */
  readonly maxReceiveCount?: number;
  /** Run the runtime's own consumers (in-process). @default false: only workers consume */
  readonly consumers?: boolean;
  /** In-process consumer concurrency per priority (default lane). */
  readonly concurrency?: Partial<Record<Priority, number>>;
  /** For `provider_call` run in-process. */
  readonly providerUrl?: string;
}

export interface FlowWorkerOptions {
  readonly label?: string;
  /** `--concurrency` (per priority queue of each lane it polls). @default 20 */
  readonly concurrency?: number;
  /** `--lane` @default 'default' */
  readonly lane?: string;
  /** `--max-receive-count` (only when given). */
  readonly maxReceiveCount?: number;
  /** `--log-level` @default 'info' */
  readonly logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** `--batch-size` @default 10 */
  readonly batchSize?: number;
  /** For `provider_call`. */
  readonly providerUrl?: string;
}

export interface FlowWorker extends WorkerProcess {
  /** The `--counts-file` it writes (AWS requests made, metrics emitted) every second and at exit. */
  readonly countsFile: string;
  /** Its `--counts-file`, read now ({} before the first write). */
  counts(): { requests: Record<string, number>; metrics: Record<string, number> };
}

/** One runtime (its own prefix) on a target and the workers a test starts against it. */
export class FlowBench {
  readonly workers: FlowWorker[] = [];
  private seq = 0;

  private constructor(
    readonly runtime: LocalRuntime,
    readonly lease: number,
    readonly execLogPath: string,
    readonly log: RecordingLogger,
    private readonly external: Endpoints | undefined,
    private readonly tmp: string,
  ) {}

  /** Starts a runtime on `endpoints` (undefined: the embedded emulators, started by the runtime). */
  static async start(endpoints: Endpoints | undefined, o: FlowBenchOptions): Promise<FlowBench> {
    const tmp = mkdtempSync(join(tmpdir(), `kaj-${o.tag}-`));
    const execLogPath = join(tmp, 'exec.log');
    const log = new RecordingLogger();
    const runtime = await startLocalRuntime({
      consumers: o.consumers ?? false,
      ...(o.concurrency === undefined ? {} : { concurrency: o.concurrency }),
      sweepIntervalMs: 500,
      waitTimeSeconds: 1,
      logger: log,
      scheduler: false,
      ...(o.maxReceiveCount === undefined ? {} : { maxReceiveCount: o.maxReceiveCount }),
      // A message held by a lazy claim whose worker died comes back after the queue's visibility.
      settings: { leaseSeconds: o.lease, queueVisibilityTimeoutSeconds: 2 * o.lease },
      registry: createRegistry({
        execLog: execLogPath,
        label: 'in-process',
        ...(o.providerUrl === undefined ? {} : { providerUrl: o.providerUrl }),
      }),
      prefix: uniquePrefix(o.tag),
      port: 0,
      ...(endpoints === undefined ? {} : { endpoints }),
    });
    return new FlowBench(runtime, o.lease, execLogPath, log, endpoints, tmp);
  }

  get prefix(): string {
    return this.runtime.resources.prefix;
  }

  get doc(): DynamoDBDocumentClient {
    return DynamoDBDocumentClient.from(this.runtime.clients.dynamodb);
  }

  /** Spawns `local/worker.ts` with the limit task types against this runtime's resources. */
  async startWorker(o: FlowWorkerOptions = {}): Promise<FlowWorker> {
    this.seq += 1;
    const label = o.label ?? `w${this.seq}`;
    const countsFile = join(this.tmp, `counts-${label}.json`);
    const proc = spawnWorker({
      label,
      endpoints: this.runtime.endpoints,
      prefix: this.prefix,
      lease: this.lease,
      registryModule: LIMIT_TASKS_MODULE,
      args: [
        '--concurrency',
        String(o.concurrency ?? 20),
        '--lane',
        o.lane ?? 'default',
        '--batch-size',
        String(o.batchSize ?? 10),
        '--wait-seconds',
        String(WORKER_WAIT_SECONDS),
        '--log-level',
        o.logLevel ?? 'info',
        '--counts-file',
        countsFile,
        ...(o.maxReceiveCount === undefined ? [] : ['--max-receive-count', String(o.maxReceiveCount)]),
      ],
      env: {
        KAJ_LIMIT_LOG: this.execLogPath,
        KAJ_WORKER_LABEL: label,
        ...(o.providerUrl === undefined ? {} : { KAJ_PROVIDER_URL: o.providerUrl }),
      },
      keepOutputChars: 2_000_000,
    });
    const worker: FlowWorker = {
      ...proc,
      countsFile,
      counts: () => {
        try {
          return JSON.parse(readFileSync(countsFile, 'utf8')) as ReturnType<FlowWorker['counts']>;
        } catch {
          return { requests: {}, metrics: {} };
        }
      },
    };
    this.workers.push(worker);
    await waitWorkerReady(worker, 90_000);
    return worker;
  }

  /** Starts `n` workers at once. */
  startWorkers(n: number, o: FlowWorkerOptions = {}): Promise<FlowWorker[]> {
    return Promise.all(Array.from({ length: n }, () => this.startWorker(o)));
  }

  /**
   * SIGKILLs the workers still running and waits, past their last long poll, until none can take
   * a message any more (a poll outlives its client: see the reliability harness's `killWorkers`).
   */
  async killWorkers(): Promise<void> {
    const alive = this.workers.filter((w) => w.alive());
    if (alive.length === 0) return;
    for (const w of alive) w.kill('SIGKILL');
    const killedAt = Date.now();
    await Promise.all(alive.map((w) => w.exited));
    const pollsEnd = killedAt + WORKER_WAIT_SECONDS * 1000 + 500;
    if (Date.now() < pollsEnd) await new Promise((r) => setTimeout(r, pollsEnd - Date.now()));
  }

  /** What the workers printed and the runtime logged (warn and up), for a failure report. */
  diagnostics(): string {
    const workers = this.workers.map((w) => `--- worker ${w.label} (pid ${w.child.pid})\n${w.output().slice(-6000)}`);
    const runtime = this.log.entries
      .filter((e) => e.level === 'warn' || e.level === 'error')
      .slice(-50)
      .map((e) => `${e.level} ${e.message} ${JSON.stringify(e.fields ?? {})}`);
    return [...workers, '--- runtime', ...runtime].join('\n');
  }

  /**
   * Kills the workers, stops the runtime, deletes its resources on a shared endpoint (moto) and
   * the temporary files. Prints the diagnostics first when the test failed.
   */
  async stop(ctx?: { task: { name: string; result?: { state?: string } } }): Promise<void> {
    if (ctx?.task.result?.state === 'fail') {
      process.stderr.write(`\n===== diagnostics of "${ctx.task.name}" (${this.prefix})\n${this.diagnostics()}\n`);
    }
    await this.killWorkers();
    await this.runtime.stop(2_000).catch(() => undefined);
    if (this.external !== undefined) {
      const clients = emulatorClients(this.external);
      await deleteResources(clients, this.prefix, LANES).catch(() => undefined);
      clients.destroy();
    }
    rmSync(this.tmp, { recursive: true, force: true });
  }

  // --- tasks ---------------------------------------------------------------------------------

  /** Submits one task straight through the runtime's submitter (no HTTP) and returns its id. */
  async submit(type: string, payload: unknown, extra: Partial<SubmitRequest> = {}): Promise<string> {
    const { record } = await this.runtime.kaj.submitter.submit({ type, payload, ...extra }, { owner: LOCAL_OWNER });
    return record.task_id;
  }

  /** Submits `n` tasks, `chunk` at a time concurrently, in order of `i`. */
  async submitMany(
    n: number,
    task: (i: number) => { type: string; payload: unknown; extra?: Partial<SubmitRequest> },
    chunk = 50,
  ): Promise<string[]> {
    const ids: string[] = [];
    for (let from = 0; from < n; from += chunk) {
      const batch = Array.from({ length: Math.min(chunk, n - from) }, (_, k) => task(from + k));
      ids.push(...(await Promise.all(batch.map((t) => this.submit(t.type, t.payload, t.extra)))));
    }
    return ids;
  }

  record(taskId: string): Promise<TaskRecord | undefined> {
    return this.runtime.kaj.store.get(taskId);
  }

  /** Waits until every task succeeded (fails at once if one failed or was cancelled). */
  async succeeded(taskIds: readonly string[], timeoutMs: number): Promise<TaskRecord[]> {
    let pending = [...taskIds];
    const done = new Map<string, TaskRecord>();
    let fatal: string | undefined;
    await waitFor(
      `${taskIds.length} tasks to succeed`,
      async () => {
        const records = await Promise.all(pending.map((id) => this.record(id)));
        const still: string[] = [];
        records.forEach((r, i) => {
          const id = pending[i] as string;
          if (r?.status === 'failed' || r?.status === 'cancelled') {
            fatal ??= `task ${id} is ${r.status}: ${JSON.stringify(r.last_error)}`;
          } else if (r?.status === 'succeeded') done.set(id, r);
          else still.push(id);
        });
        pending = still;
        if (fatal !== undefined) return true;
        if (pending.length > 0) {
          const first = records.find((r) => r?.task_id === pending[0]);
          const where = first === undefined ? 'no record' : JSON.stringify({ ...first, payload: undefined });
          throw new Error(`${pending.length} not succeeded yet, e.g. ${pending[0]}: ${where}`);
        }
        return true;
      },
      { timeoutMs, intervalMs: 250 },
    );
    if (fatal !== undefined) throw new Error(fatal);
    return taskIds.map((id) => done.get(id) as TaskRecord);
  }

  /** The execution log so far. */
  exec(): LimitExecution[] {
    return readLimitLog(this.execLogPath);
  }

  // --- the limits table and the queues ---------------------------------------------------------

  /** Every item of the limits table, by `pk` (`c#pool`, `r#rated`, `c#per_tenant#quiet`...). */
  async limitItems(): Promise<Map<string, Record<string, unknown>>> {
    const table = this.runtime.resources.limitsTableName;
    if (table === undefined) throw new Error('the runtime has no limits table');
    const out = new Map<string, Record<string, unknown>>();
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: startKey }),
      );
      for (const item of page.Items ?? []) out.set(String(item.pk), item);
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return out;
  }

  /** The holders (holder id → lease end, epoch ms) of a concurrency item. */
  async holders(pk: string): Promise<Record<string, number>> {
    const item = (await this.limitItems()).get(pk);
    const raw = (item?.holders ?? {}) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(raw).map(([id, until]) => [id, Number(until)]));
  }

  /**
   * Resolves once the concurrency item holds no slot, within `timeoutMs`; else rejects naming
   * the holders left. A worker gives its slots back right after its outcome write, which the
   * records show first, so a test that saw every task finished waits for the releases here.
   */
  async slotsGivenBack(pk: string, timeoutMs = 10_000): Promise<void> {
    let left: Record<string, number> = {};
    try {
      await waitFor(
        `every slot of ${pk} given back`,
        async () => {
          left = await this.holders(pk);
          return Object.keys(left).length === 0 ? true : undefined;
        },
        { timeoutMs, intervalMs: 100 },
      );
    } catch (err) {
      throw new Error(`${pk} still holds ${JSON.stringify(left)} ${timeoutMs} ms after the tasks finished`, {
        cause: err,
      });
    }
  }

  /** Visible + in flight + delayed messages of one queue. */
  depth(queueUrl: string): Promise<number> {
    return queueDepth(this.runtime.clients.sqs, queueUrl);
  }

  /** Messages on the three DLQs (every lane's queues dead-letter there). */
  async deadLetters(): Promise<number> {
    let n = 0;
    for (const p of PRIORITIES) n += await this.depth(this.runtime.resources.deadLetterQueueUrls[p]);
    return n;
  }

  /** Messages on the default lane's three queues. */
  async queued(): Promise<number> {
    let n = 0;
    for (const p of PRIORITIES) n += await this.depth(this.runtime.resources.queueUrls[p]);
    return n;
  }
}

/** One request the provider answered. */
export interface ProviderCall {
  readonly at: number;
  readonly status: number;
  readonly task: string;
  readonly worker: string;
}

/** A tiny HTTP provider in the test process: a 429 with `Retry-After` for the first `throttled` calls, then 200. */
export interface Provider {
  readonly url: string;
  readonly calls: ProviderCall[];
  stop(): Promise<void>;
}

export async function startProvider(o: { retryAfterSeconds: number; throttled?: number }): Promise<Provider> {
  const calls: ProviderCall[] = [];
  const throttled = o.throttled ?? 1;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://provider');
    const status = calls.length < throttled ? 429 : 200;
    calls.push({
      at: Date.now(),
      status,
      task: url.searchParams.get('task') ?? '?',
      worker: url.searchParams.get('worker') ?? '?',
    });
    if (status === 429) res.writeHead(429, { 'retry-after': String(o.retryAfterSeconds) });
    else res.writeHead(200, { 'content-type': 'application/json' });
    res.end(status === 429 ? 'slow down' : '{"ok":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    stop: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** Lease of the runtime, the workers and the limits' slots: short, so a dead worker's slots come back soon. */
export const LEASE = 4;
/**
 * The cases with 60 pollers on moto, which serves one request at a time: 10–30 s quiet, minutes
 * under a full suite's load (each request waits its turn). Their waits take what is left of this budget
 * (`testBudget`): the guarantees are the limits held and every task finished, not the speed.
 */
export const SLOW_ON_MOTO_TIMEOUT_MS = 360_000;

/** What a flow-control test started, for {@link flowTarget}'s hooks to stop after it. */
export interface FlowTestState {
  /** The target's endpoints (undefined: the embedded emulators each runtime starts itself). */
  endpoints: Endpoints | undefined;
  bench?: FlowBench;
  provider?: Provider;
}

/**
 * The frame of a flow-control suite: starts `target` once for the suite (none: each runtime
 * starts its own embedded emulators), and after each test stops the bench and provider it put in
 * the returned state (a failed test's bench prints its logs first).
 */
export function flowTarget(target?: Target): FlowTestState {
  const state: FlowTestState = { endpoints: undefined };
  let stopTarget: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    if (!target) return;
    const t = await target.start();
    state.endpoints = t.endpoints;
    stopTarget = t.stop;
  });
  afterEach(async (ctx) => {
    await state.bench?.stop(ctx);
    state.bench = undefined;
    await state.provider?.stop();
    state.provider = undefined;
  });
  afterAll(async () => stopTarget?.());
  return state;
}

/** Polls `probe` (every 100 ms, at most 60 s) until it returns a value. */
export function waitForValue<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  return waitFor(what, probe, { timeoutMs, intervalMs: 100 });
}
