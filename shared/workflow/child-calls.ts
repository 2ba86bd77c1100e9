/**
 * `wf.run` in one replay: a child's recorded end is returned (or thrown as `ChildFailedError`);
 * otherwise the child is created (idempotently, under an id derived from the run and the call's
 * name) and its start recorded, and the run waits for it — counted among the children whose
 * ends wake it. A child started long enough ago is looked up (in one batch per replay): an end
 * its writer died before recording is found so, and recorded by the run itself.
 *
 * @module
 */
import { DEFAULTS } from '../config/resources.js';
import { PermanentError } from '../retry/errors.js';
import type { AnyTaskDefinition } from '../task/define.js';
import { childTaskId } from '../task/child.js';
import { type ChildEnd, type ChildLook, childEndOf } from './children.js';
import type { ChildOptions } from './define.js';
import { ChildFailedError, ChildLimitError, ChildRunsMissingError, NonDeterminismError } from './errors.js';
import type { HistoryEntry } from './history-store.js';
import type { RunInvocation } from './invocation.js';

/** What a replay lends its child calls. */
export interface ReplayHost {
  readonly entries: ReadonlyMap<string, HistoryEntry>;
  readonly closed: boolean;
  /** The name checked and taken for this replay (unique per run). */
  claim(name: string): string;
  append(fields: Omit<HistoryEntry, 'run_id' | 'at' | 'lease_token' | 'expires_at'>): Promise<HistoryEntry>;
  /** Something runs: the run cannot suspend until `settled`. */
  begin(): void;
  settled(): void;
  /** Waits for `until` (the invocation ends, suspended, once nothing runs). */
  waitUntil(until: number): Promise<never>;
  /** A recorded entry was given back instead of run. */
  replayedEntry(at: number): void;
  now(): number;
  /** `until`, if it is before the end of the run's life. @throws RunExpiredError */
  withinRun(name: string, until: number): number;
}

export class ChildCalls {
  /** Children this replay waits for. */
  open = 0;
  private started: number;
  private batch: { id: string; resolve: (l: ChildLook) => void; reject: (e: unknown) => void }[] = [];

  constructor(
    private readonly r: ReplayHost,
    private readonly run: RunInvocation,
    private readonly checkMs: number,
  ) {
    this.started = [...r.entries.values()].filter((e) => e.kind === 'child_start').length;
  }

  async call(def: AnyTaskDefinition, payload: unknown, options: ChildOptions = {}): Promise<unknown> {
    const runId = this.run.runId;
    if (typeof def?.type !== 'string' || typeof def.schema?.safeParse !== 'function') {
      throw new PermanentError(
        'wf.run: the first argument must be a task or workflow type (defineTask / defineWorkflow)',
        {
          code: 'INVALID_CHILD',
          taskId: runId,
        },
      );
    }
    const name = this.r.claim(options.name ?? def.type);
    for (const other of [`step#${name}`, `fail#${name}#1`, `sleep#${name}`]) {
      if (this.r.entries.has(other)) {
        throw new NonDeterminismError(name, 'recorded as a step or sleep, asked for as a child', { taskId: runId });
      }
    }
    const ended = this.r.entries.get(`child#${name}`);
    if (ended !== undefined) return this.result(name, ended);
    if (this.r.closed) return never();
    const children = this.run.children;
    if (children === undefined) throw new ChildRunsMissingError(runId);
    this.r.begin();
    try {
      const now = this.r.now();
      let start = this.r.entries.get(`child_start#${name}`);
      if (start === undefined) {
        if (this.started >= this.run.def.maxChildren)
          throw new ChildLimitError(this.run.def.maxChildren, { taskId: runId });
        const parsed = def.schema.safeParse(payload);
        if (!parsed.success) {
          throw new PermanentError(
            `child "${name}": its payload does not fit type "${def.type}": ${parsed.error.message}`,
            {
              code: 'INVALID_CHILD_PAYLOAD',
              taskId: runId,
            },
          );
        }
        this.started += 1;
        // Created first, recorded second: a crash between leaves a child the replay creates
        // again idempotently (the same id), never a recorded start with no child.
        await children.start(name, def, payload, options);
        start = await this.r.append({
          key: `child_start#${name}`,
          kind: 'child_start',
          child_id: childTaskId(runId, name),
        });
      } else if (start.at + this.checkMs <= now) {
        const childId = start.child_id ?? childTaskId(runId, name);
        const look = await this.look(childId);
        if (look.kind !== 'open') {
          const end = look.kind === 'ended' ? childEndOf(look.record, name) : undefined;
          return this.result(name, await this.r.append(end ?? missingEnd(name, childId)));
        }
      }
      this.open += 1;
      return this.r.waitUntil(nextCheck(start.at, now, this.checkMs));
    } finally {
      this.r.settled();
    }
  }

  private result(name: string, entry: HistoryEntry): unknown {
    if (entry.kind !== 'child') {
      throw new NonDeterminismError(name, `recorded as a ${entry.kind}, asked for as a child`, {
        taskId: this.run.runId,
      });
    }
    this.r.replayedEntry(entry.at);
    if (entry.child_status === 'succeeded') return entry.value ?? null;
    throw new ChildFailedError(
      name,
      entry.child_id ?? '',
      entry.child_status === 'cancelled' ? 'cancelled' : 'failed',
      entry.error ?? { name: 'Error', message: 'the child task failed', retryable: false },
      { taskId: this.run.runId },
    );
  }

  /** Where a child stands: asked with the others of this replay in one lookup. */
  private look(id: string): Promise<ChildLook> {
    return new Promise((resolve, reject) => {
      this.batch.push({ id, resolve, reject });
      if (this.batch.length === 1) setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const batch = this.batch;
    this.batch = [];
    try {
      const found = await (this.run.children as NonNullable<RunInvocation['children']>).look(batch.map((b) => b.id));
      for (const b of batch) b.resolve(found.get(b.id) ?? { kind: 'missing' });
    } catch (err) {
      for (const b of batch) b.reject(err);
    }
  }
}

/**
 * When a waiting run next looks up a child started at `startAt`: `checkMs` after its start, then
 * at intervals as long as the child's age (a day-long child is looked at a few times a day), at
 * most `DEFAULTS.childCheckMaxMs`.
 */
export function nextCheck(startAt: number, now: number, checkMs: number): number {
  if (startAt + checkMs > now) return startAt + checkMs;
  return now + Math.min(Math.max(now - startAt, checkMs), DEFAULTS.childCheckMaxMs);
}

/** The end recorded for a child whose task is gone (expired before its end was recorded). */
function missingEnd(name: string, childId: string): ChildEnd {
  return {
    key: `child#${name}`,
    kind: 'child',
    child_id: childId,
    child_status: 'failed',
    error: { name: 'ChildMissingError', message: `child task ${childId} no longer exists`, retryable: false },
  };
}

function never(): Promise<never> {
  return new Promise<never>(() => {});
}
