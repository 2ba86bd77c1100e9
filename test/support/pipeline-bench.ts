/**
 * What the pipeline suites (test/integration/pipelines/) share: the local runtime (API and
 * sweeper; no scheduler, no consumers) on one target with the registry of `./pipeline-tasks.ts`,
 * worker processes (`local/worker.ts`) loading that registry, the node log, flag files, and the
 * pipeline routes.
 *
 * The workers start from the test run's worker bundle when it holds `./pipeline-tasks.ts`, else
 * from a bundle built here once per file (a second or so: the global setup bundles the reliability
 * and flow-control registries only).
 *
 * @module
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { LocalRuntime } from '../../local/runtime.js';
import type { RunState, RunView } from '../../shared/pipeline/view.js';
import type { TaskRecord } from '../../shared/task/model.js';
import type { HistoryEntry } from '../../shared/workflow/history-store.js';
import { WORKER_WAIT_SECONDS } from '../../testing/harness.js';
import { uniquePrefix, waitFor } from '../../testing/wait.js';
import { bundledPath, buildWorkerBundle, WORKER_BUNDLE_ENV } from '../../testing/worker-bundle.js';
import { spawnWorker, type WorkerProcess, waitWorkerReady } from '../../testing/worker-process.js';
import { createRegistry, flagName, type NodeEvent, PIPELINE_TASKS_MODULE, readNodeLog } from './pipeline-tasks.js';
import { callApi } from './suite-runtime.js';
import { startOnTarget, type Target } from './targets.js';

/** Lease seconds of the runtime and its workers: a dead worker's messages come back within about one. */
const LEASE = 3;

/** The worker bundle holding `./pipeline-tasks.ts`: the test run's, or one built here (removed by `remove`). */
async function pipelineBundle(): Promise<{ dir: string; remove(): Promise<void> }> {
  const shared = process.env[WORKER_BUNDLE_ENV];
  if (shared !== undefined && existsSync(bundledPath(shared, PIPELINE_TASKS_MODULE))) {
    return { dir: shared, remove: async () => {} };
  }
  return buildWorkerBundle([PIPELINE_TASKS_MODULE]);
}

/** Each node's state, by name. */
export const nodeStates = (run: RunView): Record<string, string> =>
  Object.fromEntries(run.nodes.map((n) => [n.name, n.state]));

/** How many times each node started, by name. */
export function startsByNode(events: readonly NodeEvent[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of events) if (e.event === 'S') out[e.node] = (out[e.node] ?? 0) + 1;
  return out;
}

/** One target's runtime and the workers a pipeline test starts against it. */
export class PipelineBench {
  readonly workers = new Set<WorkerProcess>();
  private spawned: WorkerProcess[] = [];
  private seq = 0;

  private constructor(
    readonly target: string,
    readonly runtime: LocalRuntime,
    /** The node log, the flags and the partitions live here. */
    readonly dir: string,
    private readonly bundle: { dir: string; remove(): Promise<void> },
    private readonly stopRuntime: () => Promise<void>,
  ) {}

  static async start(target: Target, tag: string): Promise<PipelineBench> {
    const dir = mkdtempSync(join(tmpdir(), `kaj-${tag}-`));
    for (const sub of ['flags', 'partitions']) mkdirSync(join(dir, sub));
    const bundle = await pipelineBundle();
    try {
      const s = await startOnTarget(target, {
        registry: createRegistry({ graph: 'a' }),
        consumers: false,
        // Runs are made through the API here, never by the schedules declared in code.
        scheduler: false,
        sweepIntervalMs: 500,
        settings: {
          leaseSeconds: LEASE,
          queueVisibilityTimeoutSeconds: 2 * LEASE,
          sendFirstWindowSeconds: 2 * LEASE,
          outboxGraceSeconds: 1,
        },
        prefix: uniquePrefix(tag),
        port: 0,
      });
      return new PipelineBench(target.name, s.runtime, dir, bundle, s.stop);
    } catch (err) {
      await bundle.remove();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  get logPath(): string {
    return join(this.dir, 'nodes.log');
  }

  get partitionsDir(): string {
    return join(this.dir, 'partitions');
  }

  /** Spawns a worker with the pipeline registry (`env` added to what the bench sets) and waits until it is ready. */
  async startWorker(o: { label?: string; env?: Readonly<Record<string, string>> } = {}): Promise<WorkerProcess> {
    this.seq += 1;
    const label = o.label ?? `w${this.seq}`;
    const s = this.runtime.config.settings;
    // spawnWorker takes the bundle from the environment: this one, for the length of the (synchronous) spawn.
    const before = process.env[WORKER_BUNDLE_ENV];
    process.env[WORKER_BUNDLE_ENV] = this.bundle.dir;
    let worker: WorkerProcess;
    try {
      worker = spawnWorker({
        label,
        endpoints: this.runtime.endpoints,
        prefix: this.runtime.resources.prefix,
        lease: s.leaseSeconds,
        registryModule: PIPELINE_TASKS_MODULE,
        args: [
          ...['--send-first-window', String(s.sendFirstWindowSeconds), '--outbox-grace', String(s.outboxGraceSeconds)],
          ...['--concurrency', '4', '--wait-seconds', String(WORKER_WAIT_SECONDS)],
        ],
        env: {
          KAJ_PIPELINE_LOG: this.logPath,
          KAJ_PIPELINE_FLAGS: join(this.dir, 'flags'),
          KAJ_PARTITIONS_DIR: this.partitionsDir,
          KAJ_WORKER_LABEL: label,
          ...o.env,
        },
      });
    } finally {
      if (before === undefined) delete process.env[WORKER_BUNDLE_ENV];
      else process.env[WORKER_BUNDLE_ENV] = before;
    }
    this.workers.add(worker);
    this.spawned.push(worker);
    void worker.exited.then(() => this.workers.delete(worker));
    await waitWorkerReady(worker);
    return worker;
  }

  /** The flag file that makes a `pl_probe` node of a date fail (`fail`) or wait (`hold`). */
  flag(kind: 'fail' | 'hold', nodeName: string, date: string): { raise(): void; lower(): void } {
    const path = join(this.dir, 'flags', flagName(kind, nodeName, date));
    return { raise: () => writeFileSync(path, ''), lower: () => unlinkSync(path) };
  }

  /** The node log's lines of one logical date. */
  nodeLog(date: string): NodeEvent[] {
    return readNodeLog(this.logPath).filter((e) => e.date === date);
  }

  /** Waits until node `nodeName` of `date` has started. */
  started(nodeName: string, date: string, timeoutMs = 30_000): Promise<NodeEvent> {
    return waitFor(
      `node ${nodeName} of ${date} to start`,
      () => this.nodeLog(date).find((e) => e.event === 'S' && e.node === nodeName),
      { timeoutMs },
    );
  }

  api(method: string, path: string, body?: unknown): ReturnType<typeof callApi> {
    return callApi(this.runtime, method, path, body);
  }

  /** The run of `date` as `GET …/runs/{date}` shows it. */
  async view(pipeline: string, date: string): Promise<RunView> {
    const res = await this.api('GET', `/api/v1/pipelines/${pipeline}/runs/${date}`);
    if (res.status !== 200)
      throw new Error(`GET the run of ${pipeline} ${date}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as unknown as RunView;
  }

  /** Waits until the run of `date` is in one of `statuses`; on a timeout, says where it was. */
  async until(pipeline: string, date: string, statuses: readonly RunState[], timeoutMs: number): Promise<RunView> {
    let last: RunView | undefined;
    try {
      return await waitFor(
        `the run of ${pipeline} ${date} to be ${statuses.join('/')}`,
        async () => {
          last = await this.view(pipeline, date);
          return statuses.includes(last.status) ? last : undefined;
        },
        { timeoutMs, intervalMs: 100 },
      );
    } catch (err) {
      const record = last === undefined ? undefined : await this.runtime.kaj.store.get(last.run_id);
      const entries = last === undefined ? [] : await this.history(last.run_id);
      const where = [
        `last seen: ${JSON.stringify(last)}`,
        `record: ${JSON.stringify(record)}`,
        `history: ${entries.map((e) => `${e.key}@${e.at}`).join(' ')}`,
        `nodes: ${this.nodeLog(date)
          .map((e) => `${e.event}:${e.node}@${e.at}`)
          .join(' ')}`,
      ];
      throw new Error(`${(err as Error).message}\n  ${where.join('\n  ')}`, { cause: err });
    }
  }

  /** A run's history entries. */
  history(runId: string): Promise<HistoryEntry[]> {
    const history = this.runtime.kaj.history;
    if (history === undefined) throw new Error('the runtime has no history table');
    return history.read(runId);
  }

  /** Every task record of `type` (a consistent Scan of the table: each suite has its own prefix). */
  async records(type: string): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    const pages = paginateScan(
      { client: DynamoDBDocumentClient.from(this.runtime.clients.dynamodb) },
      {
        TableName: this.runtime.resources.tableName,
        ConsistentRead: true,
        FilterExpression: '#type = :type',
        ExpressionAttributeNames: { '#type': 'type' },
        ExpressionAttributeValues: { ':type': type },
      },
    );
    for await (const page of pages) out.push(...((page.Items ?? []) as TaskRecord[]));
    return out;
  }

  /** For `afterEach`: the workers' output when the test failed; with `kill`, the workers killed. */
  async afterEach(ctx: { task: { name: string; result?: { state?: string } } }, kill: boolean): Promise<void> {
    if (ctx.task.result?.state === 'fail') {
      const out = this.spawned.map((w) => `--- worker ${w.label} (pid ${w.child.pid})\n${w.output().slice(-6000)}`);
      process.stderr.write(`\n===== workers of "${ctx.task.name}" on ${this.target}\n${out.join('\n')}\n`);
    }
    if (!kill) return;
    await this.killWorkers();
    this.spawned = [];
  }

  /**
   * SIGKILLs the workers still running and waits for them, then for the long polls they had open
   * to end (the emulator hands a message that arrives meanwhile to the dead poll: see
   * `Bench.killWorkers` in testing/harness.ts).
   */
  async killWorkers(): Promise<void> {
    const all = [...this.workers];
    for (const w of all) w.kill('SIGKILL');
    const pollsEnd = Date.now() + WORKER_WAIT_SECONDS * 1000 + 500;
    await Promise.all(all.map((w) => w.exited));
    if (all.length > 0) await new Promise((r) => setTimeout(r, Math.max(0, pollsEnd - Date.now())));
  }

  async stop(): Promise<void> {
    await this.killWorkers();
    await this.stopRuntime();
    await this.bundle.remove();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * For a `describe` block: the bench on `target`, started in its `beforeAll` (with one worker of
 * environment `worker`, unless `worker` is false), the workers' output printed after a failed
 * test (and the workers killed after each test with `killAfterEach`), stopped in its `afterAll`.
 * Returns the bench as the block's tests see it (it forwards to the bench once started).
 */
export function benchForSuite(
  target: Target,
  tag: string,
  o: { readonly worker: Readonly<Record<string, string>> | false; readonly killAfterEach?: boolean },
): PipelineBench {
  let bench: PipelineBench | undefined;
  beforeAll(async () => {
    bench = await PipelineBench.start(target, tag);
    if (o.worker !== false) await bench.startWorker({ env: o.worker });
  });
  afterEach(async (ctx) => bench?.afterEach(ctx, o.killAfterEach === true));
  afterAll(async () => bench?.stop());
  return new Proxy({} as PipelineBench, {
    get: (_, key) => {
      if (bench === undefined) throw new Error('the bench is not started: use it inside the tests');
      const value = Reflect.get(bench, key, bench) as unknown;
      return typeof value === 'function' ? value.bind(bench) : value;
    },
  });
}
