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
    return { kind: 'failed', error };
  }
  const entries = new Map((await d.history.read(run.runId)).map((e) => [e.key, e]));
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
  return outcome.kind === 'suspended' ? { ...outcome, steps: replay.counts() } : outcome;
}

/** Whether an error thrown by the run's code ends the run (not a lost lease, not an abort, not a retry). */
function failsTheRun(error: unknown, finalAttempt: boolean): boolean {
  if (error instanceof LeaseLostError) return false;
  return !classifyError(error).retryable || finalAttempt;
}
