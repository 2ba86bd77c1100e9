import type { ErrorInfo } from '../task/model.js';
import { childNameOf, failedStepOf, type HistoryEntry } from './history-store.js';

/** A step or sleep of a run, as `GET /api/v1/tasks/{id}` shows it (`steps`). */
export interface StepView {
  readonly name: string;
  readonly kind: 'step' | 'sleep' | 'signal' | 'child';
  /**
   * A step: `succeeded`, `failed` (out of attempts; the run saw a `StepFailedError`) or
   * `retrying` (an attempt failed, the next waits for `next_attempt_at`). A sleep: `sleeping`
   * until `until`, then `done`. A signal's wait: `waiting` (until `until`), `received` or
   * `timed_out`. A child: `running` until it ends, then `succeeded`, `failed` or `cancelled`.
   */
  readonly status:
    | 'succeeded'
    | 'failed'
    | 'retrying'
    | 'sleeping'
    | 'done'
    | 'waiting'
    | 'received'
    | 'timed_out'
    | 'running'
    | 'cancelled';
  /** A child: its task id (`GET /api/v1/tasks/{child_id}`). */
  readonly child_id?: string;
  /** Attempts made so far. */
  readonly attempts?: number;
  readonly started_at?: string;
  readonly ended_at?: string;
  /** Bytes of the recorded result (its JSON). */
  readonly result_bytes?: number;
  readonly error?: ErrorInfo;
  readonly next_attempt_at?: string;
  readonly until?: string;
  /** A signal: when it was received. */
  readonly received_at?: string;
}

/** What a waiting run waits for, as GET shows it (`waiting_for`). */
export interface WaitingForView {
  /** When its timer fires: a sleep's end, a step's next attempt, or a signal's deadline. */
  readonly timer: string;
  /** The signals it waits for, with their deadlines. */
  readonly signals?: readonly { readonly name: string; readonly deadline: string }[];
  /** Its children that have not ended. */
  readonly children?: number;
}

/** What a `waiting` run waits for: its timer (`run_at`), and the signals it waits for. */
export function waitingFor(entries: readonly HistoryEntry[], runAt: string): WaitingForView {
  const keys = new Set(entries.map((e) => e.key));
  const signals = entries
    .filter((e) => e.kind === 'signal_wait' && !keys.has(`signal#${e.key.slice('signal_wait#'.length)}`))
    .map((e) => ({ name: e.key.slice('signal_wait#'.length), deadline: iso(e.until ?? e.at) }));
  const children = entries.filter((e) => e.kind === 'child_start' && !keys.has(`child#${childNameOf(e.key)}`)).length;
  return { timer: runAt, ...(signals.length === 0 ? {} : { signals }), ...(children === 0 ? {} : { children }) };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The steps and sleeps of a run's history, in the order they started. */
export function stepsView(entries: readonly HistoryEntry[], now: number): StepView[] {
  const steps = new Map<string, { view: StepView; order: number; seq: number }>();
  const failures = new Map<string, HistoryEntry[]>();
  const byKey = new Map(entries.map((e) => [e.key, e]));
  for (const e of entries) {
    if (e.kind === 'step_failure') {
      const name = failedStepOf(e.key);
      if (name !== undefined) failures.set(name, [...(failures.get(name) ?? []), e]);
    }
  }
  for (const e of entries) {
    if (e.kind === 'step') {
      const name = e.key.slice('step#'.length);
      const first = (failures.get(name) ?? []).reduce(
        (m, f) => Math.min(m, f.started_at ?? f.at),
        Number.POSITIVE_INFINITY,
      );
      const started = Math.min(first, e.started_at ?? e.at);
      steps.set(e.key, {
        seq: e.seq ?? 0,
        order: started,
        view: {
          name,
          kind: 'step',
          status: e.error === undefined ? 'succeeded' : 'failed',
          ...(e.attempt === undefined ? {} : { attempts: e.attempt }),
          started_at: iso(started),
          ended_at: iso(e.at),
          ...(e.error === undefined ? { result_bytes: Buffer.byteLength(JSON.stringify(e.value ?? null)) } : {}),
          ...(e.error === undefined ? {} : { error: e.error }),
        },
      });
    } else if (e.kind === 'signal_wait') {
      const name = e.key.slice('signal_wait#'.length);
      const got = byKey.get(`signal#${name}`);
      steps.set(e.key, {
        seq: e.seq ?? 0,
        order: e.at,
        view: {
          name,
          kind: 'signal',
          status: got === undefined ? 'waiting' : got.value === undefined ? 'timed_out' : 'received',
          started_at: iso(e.at),
          until: iso(e.until ?? e.at),
          ...(got !== undefined && got.value !== undefined ? { received_at: iso(got.at) } : {}),
        },
      });
    } else if (e.kind === 'child_start') {
      const name = childNameOf(e.key) ?? e.key;
      const end = byKey.get(`child#${name}`);
      steps.set(e.key, {
        seq: e.seq ?? 0,
        order: e.at,
        view: {
          name,
          kind: 'child',
          status: end?.child_status ?? 'running',
          ...(e.child_id === undefined ? {} : { child_id: e.child_id }),
          started_at: iso(e.at),
          ...(end === undefined ? {} : { ended_at: iso(end.at) }),
          ...(end?.child_status === 'succeeded'
            ? { result_bytes: Buffer.byteLength(JSON.stringify(end.value ?? null)) }
            : {}),
          ...(end?.error === undefined ? {} : { error: end.error }),
        },
      });
    } else if (e.kind === 'sleep') {
      const until = e.until ?? e.at;
      steps.set(e.key, {
        seq: e.seq ?? 0,
        order: e.at,
        view: {
          name: e.key.slice('sleep#'.length),
          kind: 'sleep',
          status: until > now ? 'sleeping' : 'done',
          started_at: iso(e.at),
          until: iso(until),
        },
      });
    }
  }
  for (const [name, list] of failures) {
    if (steps.has(`step#${name}`)) continue;
    const sorted = [...list].sort((a, b) => (a.attempt ?? 0) - (b.attempt ?? 0));
    const last = sorted.at(-1);
    const first = sorted[0];
    if (last === undefined || first === undefined) continue;
    steps.set(`step#${name}`, {
      seq: first.seq ?? 0,
      order: first.started_at ?? first.at,
      view: {
        name,
        kind: 'step',
        status: 'retrying',
        attempts: last.attempt ?? sorted.length,
        started_at: iso(first.started_at ?? first.at),
        ...(last.error === undefined ? {} : { error: last.error }),
        ...(last.until === undefined ? {} : { next_attempt_at: iso(last.until) }),
      },
    });
  }
  return [...steps.values()].sort((a, b) => a.order - b.order || a.seq - b.seq).map((s) => s.view);
}
