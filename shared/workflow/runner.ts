/**
 * Runs one invocation of a workflow run: reads its history once, calls the workflow's code from
 * the start, and answers each `wf.step` / `wf.sleep` from the history where it is recorded —
 * running (and recording) only what is not. The invocation ends when the code returns or throws,
 * or, once nothing is running any more, when the code waits for a time still to come: the run
 * is then suspended until the earliest such time (`WorkflowOutcome.suspended`), and the next
 * invocation replays it.
 *
 * Steps are memoized by name, not by position: a deploy that adds, removes or reorders steps
 * re-runs none that are recorded. A step's entry is written once (the first write wins); a
 * worker whose write finds an entry of a newer lease has lost the run and stops.
 *
 * @module
 */
import type { RunInvocation, RunnerDeps, WorkflowOutcome } from './invocation.js';
import { classifyError } from '../retry/classify.js';
import { LeaseLostError } from '../task/errors.js';
import { Replay } from './replay.js';
import { RunExpiredError } from './errors.js';
import { DEFAULTS } from '../config/resources.js';
import { admissionKey, type HistoryEntry, openingOf } from './history-store.js';

export type { RunInvocation, RunnerDeps, StepCounts, WorkflowOutcome } from './invocation.js';

/** Runs one invocation of `run`'s workflow: every ending of its code is an outcome; it rejects only when the history cannot be read. */
export async function runWorkflow(d: RunnerDeps, run: RunInvocation): Promise<WorkflowOutcome> {
  const end = run.createdAt + run.def.maxRunDays * 86_400_000;
  if (d.clock.now() > end) {
    // Its history starts to expire: the run ends here rather than replay from a partial one.
    const error = new RunExpiredError(
      `the run is older than its type's maxRunDays (${run.def.maxRunDays}): it ended ${new Date(end).toISOString()}`,
      { taskId: run.runId },
    );
    await releaseSlot(d, run);
    return { kind: 'failed', error };
  }
  const entries = new Map((await d.history.read(run.runId)).map((e) => [e.key, e]));
  const admission = await admit(d, run, entries);
  if (admission !== undefined) return admission;
  const replay = new Replay(d, run, entries);
  const ended = Promise.resolve()
    .then(() => run.def.run(run.input, replay.context))
    .then(
      (value): WorkflowOutcome => ({ kind: 'completed', value }),
      (error: unknown): WorkflowOutcome => ({ kind: 'failed', error }),
    );
  let outcome = await Promise.race([ended, replay.suspended]);
  if (outcome.kind === 'failed' && !run.signal.aborted && failsTheRun(outcome.error, run.finalAttempt === true)) {
    // The run fails for good: undo what its steps did first (durable steps: they may suspend it).
    const failure = outcome;
    const compensated = replay.compensate().then(
      (): WorkflowOutcome => failure,
      (error: unknown): WorkflowOutcome => ({ kind: 'failed', error }),
    );
    outcome = await Promise.race([compensated, replay.suspended]);
  }
  replay.close();
  if (outcome.kind === 'suspended') return { ...outcome, steps: replay.counts() };
  if (outcome.kind === 'completed' || failsTheRun(outcome.error, run.finalAttempt === true)) {
    await releaseSlot(d, run);
  }
  return outcome;
}

/**
 * A run of a type with `maxActiveRuns` takes its slot before its code runs, once per opening of
 * the run (`admit#<n>`: a reopened run takes one anew). Undefined once it holds one; without a
 * free slot, the run is suspended to look again later (nothing recorded).
 */
async function admit(
  d: RunnerDeps,
  run: RunInvocation,
  entries: Map<string, HistoryEntry>,
): Promise<WorkflowOutcome | undefined> {
  const max = run.def.maxActiveRuns;
  if (max === undefined || d.activeRuns === undefined) return undefined;
  const key = admissionKey(openingOf(entries.values()));
  if (entries.has(key)) return undefined;
  const slot = {
    type: run.def.type,
    owner: run.owner ?? 'anonymous',
    runId: run.runId,
    max: Math.min(max, run.def.activeRunsCapOf?.(run.input) ?? max),
    leaseUntil: run.createdAt + run.def.maxRunDays * 86_400_000,
  };
  const now = d.clock.now();
  if (!(await d.activeRuns.admit(slot))) {
    const poll = d.admitPollMs ?? DEFAULTS.admitPollMs;
    // Jitter spreads the waiting runs of a backfill over the poll, so they do not ask at once.
    return {
      kind: 'suspended',
      wakeAt: now + Math.round(poll * (0.75 + d.random.next() * 0.5)),
      childrenOpen: 0,
      steps: { replayed: 0, ran: 0, recorded: 0 },
    };
  }
  const token = run.leaseToken();
  const result = await d.history.append({
    run_id: run.runId,
    key,
    kind: 'admit',
    at: now,
    lease_token: token,
    seq: entries.size,
    expires_at: Math.floor(now / 1000) + d.historyRetentionDays * 86_400,
  });
  if (!result.written && result.entry.lease_token > token) {
    return { kind: 'failed', error: new LeaseLostError(run.runId, token) };
  }
  entries.set(key, result.entry);
  return undefined;
}

/** The run's code has ended: its slot goes back (a failure here leaves it to the next admission's lookup). */
async function releaseSlot(d: RunnerDeps, run: RunInvocation): Promise<void> {
  if (run.def.maxActiveRuns === undefined || d.activeRuns === undefined) return;
  try {
    await d.activeRuns.release({ type: run.def.type, owner: run.owner ?? 'anonymous', runId: run.runId });
  } catch (err) {
    run.logger.warn('active-run slot not released; the next admission finds the run ended', {
      error: err instanceof Error ? err.name : String(err),
    });
  }
}

/** Whether an error thrown by the run's code ends the run (not a lost lease, not an abort, not a retry). */
function failsTheRun(error: unknown, finalAttempt: boolean): boolean {
  if (error instanceof LeaseLostError) return false;
  return !classifyError(error).retryable || finalAttempt;
}
