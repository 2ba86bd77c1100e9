/**
 * `wf.waitForSignal` in one replay: the signal if it is recorded (sent before or during the
 * wait); else the deadline recorded when the wait was first reached; past it, the end of the
 * wait is recorded (the first write of `signal#name` wins: a signal written first is returned
 * instead).
 *
 * @module
 */
import { checkSignalName } from './checks.js';
import type { ReplayHost } from './child-calls.js';
import { NonDeterminismError } from './errors.js';
import type { HistoryEntry } from './history-store.js';
import type { RunInvocation } from './invocation.js';

export async function waitForSignal(
  r: ReplayHost,
  run: Pick<RunInvocation, 'runId'>,
  name: string,
  ms: number,
): Promise<unknown> {
  checkSignalName(name, run.runId);
  r.claim(`signal:${name}`);
  const key = `signal#${name}`;
  const received = r.entries.get(key);
  if (received !== undefined) return signalResult(r, run, received);
  if (r.closed) return new Promise<never>(() => {});
  r.begin();
  try {
    const waitKey = `signal_wait#${name}`;
    const wait =
      r.entries.get(waitKey) ??
      (await r.append({ key: waitKey, kind: 'signal_wait', until: r.withinRun(name, r.now() + ms) }));
    const until = wait.until ?? wait.at;
    if (until > r.now()) return r.waitUntil(until);
    // The deadline has passed: the wait ends without the signal, unless it was written first.
    return signalResult(r, run, await r.append({ key, kind: 'signal', until }));
  } finally {
    r.settled();
  }
}

function signalResult(r: ReplayHost, run: Pick<RunInvocation, 'runId'>, entry: HistoryEntry): unknown {
  if (entry.kind !== 'signal') {
    throw new NonDeterminismError(entry.key, `recorded as a ${entry.kind}, asked for as a signal`, {
      taskId: run.runId,
    });
  }
  r.replayedEntry(entry.value === undefined ? (entry.until ?? entry.at) : entry.at);
  return entry.value === undefined ? null : entry.value;
}
