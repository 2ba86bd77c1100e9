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
import { Replay } from './replay.js';

export type { RunInvocation, RunnerDeps, StepCounts, WorkflowOutcome } from './invocation.js';

/** Runs one invocation of `run`'s workflow: every ending of its code is an outcome; it rejects only when the history cannot be read. */
export async function runWorkflow(d: RunnerDeps, run: RunInvocation): Promise<WorkflowOutcome> {
  const entries = new Map((await d.history.read(run.runId)).map((e) => [e.key, e]));
  const replay = new Replay(d, run, entries);
  const ended = Promise.resolve()
    .then(() => run.def.run(run.input, replay.context))
    .then(
      (value): WorkflowOutcome => ({ kind: 'completed', value }),
      (error: unknown): WorkflowOutcome => ({ kind: 'failed', error }),
    );
  const outcome = await Promise.race([ended, replay.suspended]);
  replay.close();
  return outcome.kind === 'suspended' ? { ...outcome, steps: replay.counts() } : outcome;
}
