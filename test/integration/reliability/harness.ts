/**
 * What the reliability suite's files share: a local runtime (API + sweeper, usually without
 * consumers) on one target, worker child processes (`local/worker.ts`) to kill, an execution
 * log to count real handler runs across processes, and readers for the table and the queues.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChangeMessageVisibilityCommand, DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../../local/runtime.js';
import { PRIORITIES, type Priority } from '../../../shared/config/resources.js';
import { RecordingLogger } from '../../../shared/runtime/logger.js';
import type { TaskRecord, TaskView } from '../../../shared/task/model.js';
import type { Target } from '../../support/targets.js';
import { uniquePrefix, waitFor } from '../../support/wait.js';
import { createRegistry, readExecLog, type Execution } from './worker-tasks.js';

export const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
export const WORKER_TASKS_MODULE = 'test/integration/reliability/worker-tasks.ts';

export interface BenchOptions extends Omit<LocalRuntimeOptions, 'endpoints' | 'registry' | 'prefix' | 'port'> {
  readonly tag: string;
  /** Lease seconds, for the runtime and every worker. */
  readonly lease: number;
}

export interface StartedWorker {
  readonly label: string;
  readonly child: ChildProcess;
  /** stdout + stderr so far. */
  output(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  alive(): boolean;
  kill(signal?: NodeJS.Signals): void;
}

export interface WorkerOptions {
  readonly label?: string;
  /** Extra node flags, e.g. `--max-old-space-size=96`. */
  readonly nodeArgs?: readonly string[];
  /** Extra worker flags. */
  readonly args?: readonly string[];
  /** Wait for the worker's "ready" line. @default true */
  readonly waitReady?: boolean;
}

/** One target's runtime and everything a reliability test spawns against it. */
export class Bench {
  readonly workers = new Set<StartedWorker>();
  /** Every worker started since the last {@link resetDiagnostics}, for failure reports. */
  private spawned: StartedWorker[] = [];
  private workerSeq = 0;

  private constructor(
    readonly target: string,
    readonly runtime: LocalRuntime,
    readonly lease: number,
    readonly execLogPath: string,
    /** What the runtime (API, sweeper, in-process consumers) logged. */
    readonly log: RecordingLogger,
    private readonly tmp: string,
    private readonly stopTarget: () => Promise<void>,
  ) {}

  static async start(target: Target, o: BenchOptions): Promise<Bench> {
    const t = await target.start();
    const tmp = mkdtempSync(join(tmpdir(), `kaj-${o.tag}-`));
    const execLogPath = join(tmp, 'exec.log');
    const log = new RecordingLogger();
    try {
      const { tag, lease, ...rest } = o;
      const runtime = await startLocalRuntime({
        consumers: false,
        sweepIntervalMs: 500,
        waitTimeSeconds: 1,
        logger: log,
        ...rest,
        settings: { leaseSeconds: lease, ...rest.settings },
        registry: createRegistry({ execLog: execLogPath, label: 'in-process' }),
        prefix: uniquePrefix(tag),
        port: 0,
        ...(t.endpoints ? { endpoints: t.endpoints } : {}),
      });
      return new Bench(target.name, runtime, lease, execLogPath, log, tmp, t.stop);
    } catch (err) {
      await t.stop();
      throw err;
    }
  }

  get doc(): DynamoDBDocumentClient {
    return DynamoDBDocumentClient.from(this.runtime.clients.dynamodb);
  }

  /** Spawns `local/worker.ts` against this runtime's endpoints and resources. */
  async startWorker(o: WorkerOptions = {}): Promise<StartedWorker> {
    this.workerSeq += 1;
    const label = o.label ?? `w${this.workerSeq}`;
    const settings = this.runtime.config.settings;
    const child = spawn(
      process.execPath,
      [
        ...(o.nodeArgs ?? []),
        '--import',
        'tsx',
        'local/worker.ts',
        '--sqs',
        this.runtime.endpoints.sqs,
        '--dynamodb',
        this.runtime.endpoints.dynamodb,
        '--prefix',
        this.runtime.resources.prefix,
        '--lease',
        String(this.lease),
        '--outbox-grace',
        String(settings.outboxGraceSeconds),
        '--watchdog',
        String(settings.watchdogSeconds),
        '--crash-loop-receives',
        String(settings.crashLoopReceives),
        '--registry-module',
        WORKER_TASKS_MODULE,
        '--concurrency',
        '2',
        '--batch-size',
        '5',
        '--wait-seconds',
        '1',
        ...(o.args ?? []),
      ],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, KAJ_EXEC_LOG: this.execLogPath, KAJ_WORKER_LABEL: label },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    const append = (chunk: Buffer) => {
      out = (out + chunk.toString()).slice(-200_000);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) => {
      child.once('exit', (code, signal) => resolveExit({ code, signal }));
    });
    const worker: StartedWorker = {
      label,
      child,
      output: () => out,
      exited,
      alive: () => child.exitCode === null && child.signalCode === null,
      kill: (signal = 'SIGKILL') => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      },
    };
    this.workers.add(worker);
    this.spawned.push(worker);
    void exited.then(() => this.workers.delete(worker));
    if (o.waitReady !== false) {
      await waitFor(`worker ${label} to be ready`, () => {
        if (!worker.alive()) throw new Error(`worker ${label} exited during start-up:\n${out}`);
        return out.includes('worker ready') ? true : undefined;
      }, { timeoutMs: 60_000, intervalMs: 50 });
    }
    return worker;
  }

  /** What the workers of the current test printed and the runtime logged (warn and up). */
  diagnostics(): string {
    const workers = this.spawned.map((w) => `--- worker ${w.label} (pid ${w.child.pid})\n${w.output().slice(-6000)}`);
    const runtime = this.log.entries
      .filter((e) => e.level === 'warn' || e.level === 'error')
      .slice(-50)
      .map((e) => `${e.level} ${e.message} ${JSON.stringify(e.fields ?? {})}`);
    return [...workers, '--- runtime', ...runtime].join('\n');
  }

  /**
   * For `afterEach`: prints the diagnostics when the test failed, kills the workers, and starts
   * the next test's diagnostics afresh.
   */
  async afterEach(ctx: { task: { name: string; result?: { state?: string } } }): Promise<void> {
    if (ctx.task.result?.state === 'fail') {
      process.stderr.write(`\n===== diagnostics of "${ctx.task.name}" on ${this.target}\n${this.diagnostics()}\n`);
    }
    await this.killWorkers();
    this.spawned = [];
    this.log.entries.length = 0;
  }

  /** SIGKILLs every worker still running and waits for them to go. */
  async killWorkers(): Promise<void> {
    const all = [...this.workers];
    for (const w of all) w.kill('SIGKILL');
    await Promise.all(all.map((w) => w.exited));
  }

  async stop(): Promise<void> {
    await this.killWorkers();
    await this.runtime.stop(2_000).catch(() => undefined);
    await this.stopTarget();
    rmSync(this.tmp, { recursive: true, force: true });
  }

  /** Whether the runtime logged a line containing `text`. */
  logged(text: string): boolean {
    return this.log.entries.some((e) => e.message.includes(text));
  }

  /**
   * Keeps one worker running: starts another whenever it exits (crash tests), until the
   * returned stop function is called. Resolves `starts` with the number of workers started.
   */
  superviseWorker(o: WorkerOptions = {}): { stop(): Promise<number>; exits: { code: number | null; signal: string | null }[] } {
    let stopped = false;
    let starts = 0;
    const exits: { code: number | null; signal: string | null }[] = [];
    const loop = (async () => {
      while (!stopped) {
        const w = await this.startWorker({ ...o, waitReady: false });
        starts += 1;
        const e = await w.exited;
        if (!stopped) exits.push(e);
      }
    })();
    return {
      exits,
      stop: async () => {
        stopped = true;
        await this.killWorkers();
        await loop;
        return starts;
      },
    };
  }

  // --- the execution log ---------------------------------------------------------------------

  executions(taskId?: string): Execution[] {
    const all = readExecLog(this.execLogPath);
    return taskId === undefined ? all : all.filter((e) => e.taskId === taskId);
  }

  starts(taskId: string): Execution[] {
    return this.executions(taskId).filter((e) => e.event === 'S');
  }

  /** Waits until the task's handler has started `attempt` (default: any attempt). */
  async started(taskId: string, attempt?: number, timeoutMs = 30_000): Promise<Execution> {
    return waitFor(`task ${taskId} to start${attempt === undefined ? '' : ` attempt ${attempt}`}`, () =>
      this.starts(taskId).find((e) => attempt === undefined || e.attempt === attempt),
    { timeoutMs });
  }

  // --- the API -------------------------------------------------------------------------------

  async post(body: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${this.runtime.url}/api/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  /** Submits a task and returns its id (asserting 202). */
  async submit(type: string, payload: unknown, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await this.post({ type, payload, ...extra });
    if (res.status !== 202) throw new Error(`submit ${type} answered ${res.status}: ${JSON.stringify(res.json)}`);
    return res.json.task_id as string;
  }

  async view(taskId: string): Promise<TaskView> {
    const res = await fetch(`${this.runtime.url}/api/v1/tasks/${taskId}`);
    if (res.status !== 200) throw new Error(`GET ${taskId} answered ${res.status}`);
    return (await res.json()) as TaskView;
  }

  async cancel(taskId: string): Promise<{ status: number; json: any }> {
    const res = await fetch(`${this.runtime.url}/api/v1/tasks/${taskId}`, { method: 'DELETE' });
    return { status: res.status, json: await res.json() };
  }

  async until(taskId: string, statuses: readonly string[], timeoutMs = 30_000): Promise<TaskView> {
    return waitFor(
      `task ${taskId} to reach ${statuses.join('/')}`,
      async () => {
        const v = await this.view(taskId);
        return statuses.includes(v.status) ? v : undefined;
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  // --- the table and the queues ---------------------------------------------------------------

  /** Every task record (the whole table: tests use their own prefix). */
  async records(): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new ScanCommand({ TableName: this.runtime.resources.tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
      );
      out.push(...((page.Items ?? []) as TaskRecord[]));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return out;
  }

  async record(taskId: string): Promise<TaskRecord | undefined> {
    return this.runtime.kaj.store.get(taskId);
  }

  /** Visible + in flight + delayed messages of one queue. */
  async depth(queueUrl: string): Promise<number> {
    const a = await this.runtime.clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
      }),
    );
    return Object.values(a.Attributes ?? {}).reduce((s, v) => s + Number(v), 0);
  }

  /** Messages left on the three priority queues. */
  async queuedMessages(): Promise<number> {
    let n = 0;
    for (const p of PRIORITIES) n += await this.depth(this.runtime.resources.queueUrls[p]);
    return n;
  }

  /** Takes every message off the DLQ of `priority` (deleting them) and returns those of `taskId`. */
  async drainDeadLetters(priority: Priority, taskId: string): Promise<Message[]> {
    const url = this.runtime.resources.deadLetterQueueUrls[priority];
    const mine: Message[] = [];
    for (;;) {
      const out = await this.runtime.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], VisibilityTimeout: 30 }),
      );
      const batch = out.Messages ?? [];
      if (batch.length === 0) return mine;
      for (const m of batch) {
        if (m.MessageAttributes?.['kaj-task-id']?.StringValue === taskId) mine.push(m);
        await this.runtime.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
      }
    }
  }

  /**
   * Waits for the dead letter of `taskId` on the DLQ of `priority`. Messages of other tasks are
   * handed back at once; the one found is left invisible for a second only.
   */
  async deadLetter(priority: Priority, taskId: string, timeoutMs = 20_000): Promise<Message> {
    const url = this.runtime.resources.deadLetterQueueUrls[priority];
    return waitFor(`the dead letter of ${taskId}`, async () => {
      const out = await this.runtime.clients.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], VisibilityTimeout: 1 }),
      );
      const found = (out.Messages ?? []).find((m) => m.MessageAttributes?.['kaj-task-id']?.StringValue === taskId);
      for (const other of out.Messages ?? []) {
        if (other === found) continue;
        await this.runtime.clients.sqs
          .send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: other.ReceiptHandle, VisibilityTimeout: 0 }))
          .catch(() => undefined);
      }
      return found;
    }, { timeoutMs, intervalMs: 200 });
  }
}

/** Terminal statuses. */
export const FINISHED = ['succeeded', 'failed', 'cancelled'] as const;

/**
 * The invariant after the dust settles: every task finished and no outbox entry left on it (an
 * unfinished task must keep one — its watchdog — and a finished one keeps none once its dead
 * letter is out). With `queuesEmpty`, also no message left on the priority queues, visible or
 * in flight — only for tests that kill no process: a worker killed during a long poll can strand
 * a message in flight for the queue's visibility timeout (harmless: its claim drops it later).
 */
export async function expectSettled(
  bench: Bench,
  taskIds: readonly string[],
  { timeoutMs = 30_000, queuesEmpty = false }: { timeoutMs?: number; queuesEmpty?: boolean } = {},
): Promise<TaskRecord[]> {
  return waitFor(
    `tasks ${taskIds.join(', ')} to settle`,
    async () => {
      const records = await Promise.all(taskIds.map((id) => bench.record(id)));
      for (const [i, r] of records.entries()) {
        if (r === undefined) throw new Error(`task ${taskIds[i]} not found`);
        if (!(FINISHED as readonly string[]).includes(r.status)) throw new Error(`task ${r.task_id} is ${r.status}`);
        if (r.outbox_pk !== undefined) throw new Error(`task ${r.task_id} (${r.status}) still has outbox entry ${r.outbox_pk}`);
      }
      if (queuesEmpty) {
        const left = await bench.queuedMessages();
        if (left > 0) throw new Error(`${left} message(s) left on the priority queues`);
      }
      return records as TaskRecord[];
    },
    { timeoutMs, intervalMs: 250 },
  );
}
