/**
 * `wf.patched(id)`: how a run tells whether to take the code path of a change (a deploy that adds,
 * removes or reorders steps). A run that reaches the call with nothing recorded beyond it —
 * started after the change, or at the frontier of its history — records the patch marker
 * (`patch#<id>`, one write) and takes the new path, now and on every replay. A run that recorded
 * work past this point with the old code (a call of its history not reached yet) takes the old
 * path, and records nothing.
 *
 * @module
 */
import { checkName } from './checks.js';
import type { ReplayHost } from './child-calls.js';
import { failedStepOf, type HistoryEntry } from './history-store.js';

/** The names (as a replay claims them) of the calls the run itself recorded in `entries`. */
export function recordedCalls(entries: Iterable<HistoryEntry>): Set<string> {
  const calls = new Set<string>();
  for (const e of entries) {
    const name =
      e.kind === 'step'
        ? e.key.slice('step#'.length)
        : e.kind === 'step_failure'
          ? failedStepOf(e.key)
          : e.kind === 'sleep'
            ? e.key.slice('sleep#'.length)
            : e.kind === 'signal_wait'
              ? `signal:${e.key.slice('signal_wait#'.length)}`
              : e.kind === 'child_start'
                ? e.key.slice('child_start#'.length)
                : undefined;
    if (name !== undefined) calls.add(name);
  }
  return calls;
}

/**
 * Whether the run takes the new path of patch `id`.
 * @param reached whether the replay has reached a call of the given name yet
 */
export async function patched(
  r: ReplayHost,
  runId: string,
  id: string,
  recorded: ReadonlySet<string>,
  reached: (name: string) => boolean,
): Promise<boolean> {
  const key = `patch#${checkName(id, runId)}`;
  if (r.entries.has(key)) return true;
  for (const name of recorded) if (!reached(name)) return false;
  if (r.closed) return new Promise<never>(() => {});
  r.begin();
  try {
    await r.append({ key, kind: 'patch' });
    return true;
  } finally {
    r.settled();
  }
}
