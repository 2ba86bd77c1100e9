import type { StepContext } from './define.js';
import { StepTimeoutError } from './errors.js';
import type { RunInvocation } from './invocation.js';

/** One attempt of a step's function, under its timeout and the run's signal. */
export async function attemptStep<T>(
  run: Pick<RunInvocation, 'runId' | 'signal'>,
  name: string,
  fn: (s: StepContext) => Promise<T> | T,
  attempt: number,
  timeoutMs: number,
): Promise<T> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(run.signal.reason);
  run.signal.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new StepTimeoutError(name, timeoutMs / 1000, { taskId: run.runId });
      controller.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    const ctx: StepContext = { key: `${run.runId}/${name}`, attempt, signal: controller.signal };
    return await Promise.race([Promise.resolve().then(() => fn(ctx)), timedOut]);
  } finally {
    clearTimeout(timer);
    run.signal.removeEventListener('abort', onAbort);
  }
}
