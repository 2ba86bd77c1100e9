/**
 * One replay of a workflow run: the context (`wf`) its code is given over the history read at the
 * invocation's start — recorded steps and sleeps answered from it, the others run and recorded —
 * and the moment the run can be suspended (its code waits only for times to come, nothing runs).
 *
 * @module
 */
import { DEFAULTS } from '../config/resources.js';
import { classifyError, type Classification } from '../retry/classify.js';
import { afterFailure } from '../retry/decide.js';
import { PermanentError } from '../retry/errors.js';
import { resolvePolicy } from '../task/define.js';
import { LeaseLostError } from '../task/errors.js';
import { checkJsonValue } from '../task/json-value.js';
import type { Duration, StepContext, StepOptions, WorkflowContext } from './define.js';
import { checkedDate, checkName, durationMs } from './checks.js';
import { draws, randomOf, uuidOf } from './deterministic.js';
import {
  DuplicateStepError,
  HistoryLimitError,
  NonDeterminismError,
  CompensationRequestedError,
  RunExpiredError,
  StepFailedError,
  WorkflowError,
} from './errors.js';
import { failedStepOf, type HistoryEntry, type HistoryEntryKind } from './history-store.js';
import { ChildCalls, type ReplayHost } from './child-calls.js';
import { waitForSignal } from './signal-wait.js';
import { patched, recordedCalls } from './patches.js';
import { attemptStep } from './step-attempt.js';
import { RUN_RECORDS } from './run-records.js';

import type { RunInvocation, RunnerDeps, StepCounts, WorkflowOutcome } from './invocation.js';

/** One replay of a run: the context its code is given, over the history read at the start. */
export class Replay {
  readonly context: WorkflowContext;
  /** Resolves once the code waits only for times to come and nothing runs. */
  readonly suspended: Promise<WorkflowOutcome>;
  private resolveSuspended!: (o: WorkflowOutcome) => void;
  private readonly used = new Set<string>();
  /** The recorded failed attempts of each step (`fail#<step>#<n>` entries) in attempt order, by step name. */
  private readonly failures = new Map<string, HistoryEntry[]>();
  /** The compensations of the steps that succeeded, in the order they succeeded. */
  private readonly compensations: { readonly name: string; readonly undo: (s: StepContext) => unknown }[] = [];
  /** Wake times the code waits for. */
  private readonly waits: number[] = [];
  /** Steps and writes in progress. */
  private inflight = 0;
  private closed = false;
  private logicalNow: number;
  private replayed = 0;
  private ran = 0;
  private recorded = 0;
  /** Entries that count towards the run's limit (its children's are limited apart). */
  private counted = 0;
  private readonly children: ChildCalls;
  /** What the replay lends `wf.run` and `wf.waitForSignal`. */
  private readonly host: ReplayHost;
  /** The calls the run had recorded when this replay began (`wf.patched`). */
  private readonly recordedCalls: ReadonlySet<string>;

  constructor(
    private readonly d: RunnerDeps,
    private readonly run: RunInvocation,
    private readonly entries: Map<string, HistoryEntry>,
  ) {
    this.logicalNow = run.createdAt;
    for (const entry of entries.values()) this.index(entry);
    this.counted = [...entries.values()].filter((e) => countsTowardLimit(e.kind)).length;
    this.recordedCalls = recordedCalls(entries.values());
    const self = this;
    this.host = {
      entries,
      get closed() {
        return self.closed;
      },
      claim: (name) => this.claim(name),
      append: (fields) => this.append(fields),
      begin: () => void this.inflight++,
      settled: () => this.settled(),
      waitUntil: (until) => this.waitUntil(until),
      replayedEntry: (at) => {
        this.replayed += 1;
        this.advance(at);
      },
      now: () => this.d.clock.now(),
      withinRun: (name, until) => this.withinRun(name, until),
    };
    this.children = new ChildCalls(this.host, run, d.childCheckMs ?? DEFAULTS.childCheckMs);
    this.suspended = new Promise((resolve) => {
      this.resolveSuspended = resolve;
    });
    const draw = draws(run.runId);
    const ctx: WorkflowContext = {
      runId: run.runId,
      attempt: run.attempt,
      logger: run.logger,
      signal: run.signal,
      ...(run.scheduledTime === undefined ? {} : { scheduledTime: run.scheduledTime }),
      ...(run.logicalDate === undefined ? {} : { logicalDate: run.logicalDate }),
      ...(run.dataInterval === undefined ? {} : { dataInterval: run.dataInterval }),
      step: (name, fn, options) => this.step(name, fn, options),
      compensate: (reason) => {
        throw new CompensationRequestedError(reason ?? 'the workflow asked to compensate', { taskId: run.runId });
      },
      stepKey: (name) => `${run.runId}/${checkName(name, run.runId)}`,
      sleep: (name, duration) => this.sleep(name, durationMs(duration, name, run.runId)),
      sleepUntil: (name, at) => this.sleepUntil(name, at),
      waitForSignal: <T>(name: string, options: { readonly timeout: Duration }) =>
        waitForSignal(this.host, run, name, durationMs(options?.timeout, name, run.runId)) as Promise<T | null>,
      patched: (id) => patched(this.host, run.runId, id, this.recordedCalls, (name) => this.used.has(name)),
      // biome-ignore lint/suspicious/noExplicitAny: the child's result type is the caller's R
      run: (def, payload, options) => this.children.call(def as never, payload, options) as Promise<any>,
      now: () => new Date(this.logicalNow),
      random: () => randomOf(draw()),
      uuid: () => uuidOf(draw()),
    };
    this.context = ctx;
    Object.defineProperty(ctx, RUN_RECORDS, { value: { entries: () => [...entries.values()] }, enumerable: false });
  }

  close(): void {
    this.closed = true;
  }

  counts(): StepCounts {
    return { replayed: this.replayed, ran: this.ran, recorded: this.recorded };
  }

  private async step<T>(
    name: string,
    fn: (s: StepContext) => Promise<T> | T,
    options: StepOptions<T> = {},
  ): Promise<T> {
    const value = await this.runStep(name, fn, options);
    const undo = options.compensate;
    if (undo !== undefined) this.compensations.push({ name, undo: (s) => undo(value, s) });
    return value;
  }

  /**
   * After the run's code failed for good: the compensations of the steps that succeeded, newest
   * first, each a step of its own (recorded once, retried by the workflow's policy). One that
   * fails for good does not stop the others. Resolves once all are recorded.
   */
  async compensate(): Promise<void> {
    for (const c of [...this.compensations].reverse()) {
      try {
        await this.runStep(`compensate:${c.name}`, c.undo, {});
      } catch (err) {
        if (!(err instanceof StepFailedError)) throw err;
      }
    }
  }

  private async runStep<T>(name: string, fn: (s: StepContext) => Promise<T> | T, options: StepOptions<T>): Promise<T> {
    const key = `step#${this.claim(name)}`;
    const recorded = this.recordedEntry(key, 'step', name);
    if (recorded !== undefined) return this.stepResult(name, recorded) as T;
    const def = this.run.def;
    const policy = resolvePolicy({
      maxAttempts: options.maxAttempts ?? def.maxAttempts,
      timeoutSeconds: options.timeoutSeconds ?? def.timeoutSeconds,
      backoff: { ...def.backoff, ...options.backoff },
    });
    const failures = this.failures.get(name) ?? [];
    const last = failures.at(-1);
    if (last?.until !== undefined && last.until > this.d.clock.now()) return this.waitUntil(last.until);
    if (last !== undefined) this.advance(last.until ?? last.at);
    if (this.closed) return never();
    this.throwIfAborted();
    const timeoutMs = policy.timeoutSeconds * 1000;
    // A step that might not finish before the invocation must end continues in the next one.
    if (this.d.clock.now() + timeoutMs > this.run.deadline) return this.waitUntil(this.d.clock.now());
    const attempt = failures.length + 1;
    this.inflight += 1;
    try {
      const started = this.d.clock.now();
      this.ran += 1;
      let failure: Classification;
      try {
        const value = await attemptStep(this.run, name, fn, attempt, timeoutMs);
        const checked = checkJsonValue(value, `step "${name}" result`, DEFAULTS.maxResultBytes);
        if (checked.ok) {
          const entry = await this.append({
            key,
            kind: 'step',
            value: checked.value === undefined ? null : checked.value,
            started_at: started,
            attempt,
          });
          return this.stepResult(name, entry) as T;
        }
        failure = classifyError(
          new PermanentError(`${checked.path}: ${checked.reason} (store large data elsewhere and return its key)`, {
            code: 'UNSTORABLE_RESULT',
          }),
        );
      } catch (err) {
        if (err instanceof LeaseLostError || err instanceof WorkflowError || this.run.signal.aborted) throw err;
        failure = classifyError(err);
      }
      const next = afterFailure(attempt, policy.maxAttempts, failure, policy.backoff, this.d.random);
      if (next.kind === 'retry') {
        const now = this.d.clock.now();
        const entry = await this.append({
          key: `fail#${name}#${attempt}`,
          kind: 'step_failure',
          error: failure.info,
          started_at: started,
          attempt,
          until: now + next.delayMs,
        });
        this.run.logger.warn('workflow step attempt failed; retried', {
          step: name,
          attempt,
          error: failure.info.name,
          retryable: failure.retryable,
        });
        return this.waitUntil(entry.until ?? now);
      }
      const entry = await this.append({ key, kind: 'step', error: failure.info, started_at: started, attempt });
      return this.stepResult(name, entry) as T;
    } finally {
      this.settled();
    }
  }

  private stepResult(name: string, entry: HistoryEntry): unknown {
    this.advance(entry.at);
    if (entry.error !== undefined) throw new StepFailedError(name, entry.error, { taskId: this.run.runId });
    return entry.value ?? null;
  }

  private sleep(name: string, ms: number): Promise<void> {
    return this.sleepTo(name, () => this.d.clock.now() + ms);
  }

  /** A sleep named `name`: its recorded end, or `until()` recorded when first reached. */
  private async sleepTo(name: string, until: () => number): Promise<void> {
    const key = `sleep#${this.claim(name)}`;
    const recorded = this.recordedEntry(key, 'sleep', name);
    if (recorded !== undefined) return this.sleepOver(recorded);
    if (this.closed) return never();
    this.inflight += 1;
    try {
      return this.sleepOver(await this.append({ key, kind: 'sleep', until: this.withinRun(name, until()) }));
    } finally {
      this.settled();
    }
  }

  private sleepUntil(name: string, at: Date): Promise<void> {
    const until = checkedDate(at, name).getTime();
    return this.sleepTo(name, () => until);
  }

  private sleepOver(entry: HistoryEntry): Promise<void> {
    const until = entry.until ?? entry.at;
    if (until > this.d.clock.now()) return this.waitUntil(until);
    this.advance(until);
    return Promise.resolve();
  }

  /** The name checked and taken for this replay. */
  private claim(name: string): string {
    const checked = checkName(name, this.run.runId);
    if (this.used.has(checked)) throw new DuplicateStepError(checked, { taskId: this.run.runId });
    this.used.add(checked);
    return checked;
  }

  /**
   * The entry recorded under `key`, if any. Steps and sleeps share one namespace of names: a name
   * recorded as the other kind means the history no longer fits the code.
   */
  private recordedEntry(key: string, kind: HistoryEntryKind, name: string): HistoryEntry | undefined {
    const other = [
      ...(kind === 'sleep' ? [`step#${name}`, `fail#${name}#1`] : [`sleep#${name}`]),
      `child_start#${name}`,
    ];
    const found = other.map((k) => this.entries.get(k)).find((e) => e !== undefined);
    if (found !== undefined) {
      throw new NonDeterminismError(
        name,
        `recorded as a ${found.kind === 'sleep' ? 'sleep' : 'step'}, asked for as a ${kind}`,
        {
          taskId: this.run.runId,
        },
      );
    }
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.replayed += 1;
    return entry;
  }

  /** Files a `step_failure` entry under its step, in attempt order (at the start, then as appended). */
  private index(entry: HistoryEntry): void {
    const step = entry.kind === 'step_failure' ? failedStepOf(entry.key) : undefined;
    if (step === undefined) return;
    const list = [...(this.failures.get(step) ?? []), entry];
    this.failures.set(
      step,
      list.sort((a, b) => (a.attempt ?? 0) - (b.attempt ?? 0)),
    );
  }

  /**
   * Writes an entry (the first write of a key wins) and returns the one stored. An entry found
   * written under a newer lease means another worker has the run now: this one stops.
   */
  private async append(
    fields: Omit<HistoryEntry, 'run_id' | 'at' | 'lease_token' | 'expires_at'>,
  ): Promise<HistoryEntry> {
    const counts = countsTowardLimit(fields.kind);
    if (counts && this.counted >= this.run.def.maxHistoryEntries) {
      throw new HistoryLimitError(this.run.def.maxHistoryEntries, { taskId: this.run.runId });
    }
    const now = this.d.clock.now();
    const token = this.run.leaseToken();
    const entry: HistoryEntry = {
      ...fields,
      run_id: this.run.runId,
      seq: this.entries.size,
      at: now,
      lease_token: token,
      expires_at: Math.floor(now / 1000) + this.d.historyRetentionDays * 86_400,
    };
    const result = await this.d.history.append(entry);
    if (!result.written && result.entry.lease_token > token) {
      throw new LeaseLostError(this.run.runId, token);
    }
    if (result.written) this.recorded += 1;
    if (counts && !this.entries.has(result.entry.key)) this.counted += 1;
    this.entries.set(result.entry.key, result.entry);
    this.index(result.entry);
    return result.entry;
  }

  /** Waits for `until`: the invocation ends (suspended) once nothing else runs. */
  private waitUntil(until: number): Promise<never> {
    this.waits.push(until);
    this.check();
    return never();
  }

  private settled(): void {
    this.inflight -= 1;
    this.check();
  }

  /** After the code's pending reactions have run: suspend if it only waits. */
  private check(): void {
    setImmediate(() => {
      if (this.closed || this.inflight > 0 || this.waits.length === 0) return;
      this.closed = true;
      this.resolveSuspended({
        kind: 'suspended',
        wakeAt: Math.min(...this.waits),
        // Code that races its children (a pipeline) is woken by the first end.
        childrenOpen: this.run.def.wakeOnEachChild === true ? Math.min(this.children.open, 1) : this.children.open,
        steps: this.counts(),
      });
    });
  }

  /** `until`, if it is before the end of the run's life (`maxRunDays`). @throws RunExpiredError */
  withinRun(name: string, until: number): number {
    const end = this.run.createdAt + this.run.def.maxRunDays * 86_400_000;
    if (until > end) {
      throw new RunExpiredError(
        `"${name}" would wait until ${new Date(until).toISOString()}, after the run's end of life (${new Date(end).toISOString()}: maxRunDays ${this.run.def.maxRunDays})`,
        { taskId: this.run.runId },
      );
    }
    return until;
  }

  private advance(at: number): void {
    if (at > this.logicalNow) this.logicalNow = at;
  }

  private throwIfAborted(): void {
    if (this.run.signal.aborted) throw this.run.signal.reason ?? new Error('aborted');
  }
}

/** Whether an entry of `kind` counts towards the run's `maxHistoryEntries` (its children's are limited apart). */
function countsTowardLimit(kind: HistoryEntryKind): boolean {
  return kind !== 'child_start' && kind !== 'child';
}

function never(): Promise<never> {
  return new Promise<never>(() => {});
}
