import { DEFAULTS } from '../config/resources.js';
import type { ErrorInfo } from '../task/model.js';

/**
 * What an entry of a workflow run's history records:
 * - `step`: a step's result (`value`), recorded once the step succeeded, or its failure (`error`)
 *   once it ran out of attempts;
 * - `step_failure`: one failed attempt of a step that will be tried again (`error`, `attempt`);
 * - `sleep`: a durable timer (`until`), recorded when the run first reached it;
 * - `signal_wait`: the deadline (`until`) of a wait for a signal, recorded when the run first reached it;
 * - `signal`: a signal received (`value`: its payload, written by the signal route), or the end of
 *   its wait without one (no `value`, `until`: the deadline, written by the run) — whichever is
 *   written first is what every replay sees;
 * - `child_start`: a child task started by `wf.run` (`child_id`), recorded before it is created;
 * - `child`: the child's end (`child_status`, its result as `value` or its `error`), written by
 *   whoever sees it first: the write that ended the child, or the run looking it up;
 * - `patch`: the run took the new path of a change (`wf.patched(id)`);
 * - `admit`: the run took one of its type's active-run slots (`maxActiveRuns`), once per opening;
 * - `reopen`: an operator reopened the finished run (a pipeline's clear: `value` names the nodes
 *   run again); each opening of the run takes its slot anew.
 */
export type HistoryEntryKind =
  | 'step'
  | 'step_failure'
  | 'sleep'
  | 'signal_wait'
  | 'signal'
  | 'child_start'
  | 'child'
  | 'patch'
  | 'admit'
  | 'reopen';

/** How a child ended, as its run's history records it. */
export type ChildStatus = 'succeeded' | 'failed' | 'cancelled';

/**
 * One entry of a run's history. Entries are immutable: the first write of a key is the one
 * every replay sees (`HistoryStore.append`). The run's own record stays in the task table.
 */
export interface HistoryEntry {
  /** The run: the workflow task's id. */
  readonly run_id: string;
  /** Unique in the run, named by the code (`step#verify_documents`, `fail#charge#2`, `sleep#cool_off`). */
  readonly key: string;
  readonly kind: HistoryEntryKind;
  /** Epoch ms at which it was recorded (a step: when it ended). */
  readonly at: number;
  /** The fencing token of the attempt that wrote it (the run's `lease_token` then). */
  readonly lease_token: number;
  /** A step's result: storable JSON (≤ 32 KiB), `null` for a step that returned nothing. */
  readonly value?: unknown;
  /** Why a step (or one of its attempts) failed. */
  readonly error?: ErrorInfo;
  /** A step: epoch ms its recorded attempt started. */
  readonly started_at?: number;
  /** A step: how many attempts it took (`step`), or which attempt failed (`step_failure`). */
  readonly attempt?: number;
  /** A sleep: epoch ms at which the run may go on; a signal's wait: its deadline. */
  readonly until?: number;
  /** A child's task id (`child_start`, `child`). */
  readonly child_id?: string;
  /** How a child ended (`child`). */
  readonly child_status?: ChildStatus;
  /** The run's entries when the runner wrote it: orders entries written in the same millisecond. */
  readonly seq?: number;
  /** TTL, epoch seconds: when DynamoDB may delete the entry. */
  readonly expires_at?: number;
}

/** The step a `step_failure` entry's key (`fail#<step>#<attempt>`) belongs to, or undefined for another key. */
export function failedStepOf(key: string): string | undefined {
  return /^fail#(.*)#\d+$/s.exec(key)?.[1];
}

/** The name of the `wf.run` call a `child_start#<name>` / `child#<name>` key belongs to, or undefined. */
export function childNameOf(key: string): string | undefined {
  return /^child(?:_start)?#(.*)$/s.exec(key)?.[1];
}

/**
 * Which opening of the run the history is at: 1, plus one per `reopen` entry (an operator's clear).
 * Each opening takes its active-run slot anew (`admit#<opening>`).
 */
export function openingOf(entries: Iterable<Pick<HistoryEntry, 'kind'>>): number {
  let reopens = 0;
  for (const e of entries) if (e.kind === 'reopen') reopens += 1;
  return reopens + 1;
}

/** The key of the entry that records the admission of an opening of the run. */
export function admissionKey(opening: number): string {
  return `admit#${opening}`;
}

/** The answer of `append`: the entry stored under the key, and whether this call wrote it. */
export interface AppendResult {
  readonly written: boolean;
  /** This call's entry if it wrote it, else the one found under the key. */
  readonly entry: HistoryEntry;
}

/**
 * The storage contract of workflow histories: one partition per run, one small item per entry
 * (a step with a result under 1 KB costs one write unit), read back in one Query on a resume.
 * On AWS it is the history table (`<prefix>-history`, key `run_id` + `key`).
 */
export interface HistoryStore {
  /**
   * Every entry of the run, strongly consistent, in key order (all pages).
   * @throws StoreUnavailableError
   */
  read(runId: string): Promise<HistoryEntry[]>;
  /**
   * Writes the entry unless the run already has one under its key (a conditional put): the first
   * write wins and is never overwritten. Returns the entry stored under the key.
   * @throws StoreRejectedError (the entry can never be stored: too large, a value DynamoDB refuses), StoreUnavailableError
   */
  append(entry: HistoryEntry): Promise<AppendResult>;
}

/**
 * How long a history entry is kept after it is written (its TTL), in days: the longest a run of
 * the deployment may last (the largest `maxRunDays` of its workflow types), then as long as a
 * finished task is kept. Every writer of entries (the runner, the signal route, a child's end)
 * uses the same figure.
 */
export function historyRetentionDays(
  settings: { readonly retentionDays: number },
  registry?: { types(): string[]; get(type: string): unknown },
): number {
  let longest: number = DEFAULTS.maxRunDays;
  for (const type of registry?.types() ?? []) {
    const days = (registry?.get(type) as { maxRunDays?: unknown } | undefined)?.maxRunDays;
    if (typeof days === 'number' && days > longest) longest = days;
  }
  return settings.retentionDays + longest;
}
