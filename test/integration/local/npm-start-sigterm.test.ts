/**
 * A supervisor that stops `npm start` with SIGTERM must see the process it
 * started exit last — after the runtime has drained its running tasks — and with status 0.
 * Before the fix npm's script shell died at once on SIGTERM, npm exited with it while the
 * runtime, which never got the signal, was still running.
 */
import { describe, expect, it } from 'vitest';
import { alive, localState, sandboxPerTest, type Started, startNpm } from './sandbox.js';

const run = sandboxPerTest();

/** `npm start` in a sandbox, with one slow task running. */
async function startWithSlowTask(): Promise<{ npm: Started; state: ReturnType<typeof localState>; taskId: string }> {
  const npm = await startNpm(run);
  const state = localState(npm.dir);
  const res = await fetch(`${state.apiUrl}/api/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'send_email',
      payload: { to: 'ada@example.com', subject: 'slow', simulate: { latency_ms: 4000 } },
    }),
  });
  expect(res.status).toBe(202);
  const { task_id: taskId } = (await res.json()) as { task_id: string };
  // The consumer's long poll hands it over within milliseconds; its claim is lazy (written at the
  // first heartbeat, 20 s), so the record still says queued while the 4 s handler runs. Its first
  // second is well inside the handler.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const view = (await (await fetch(`${state.apiUrl}/api/v1/tasks/${taskId}`)).json()) as { status: string };
  expect(view.status).toBe('queued');
  return { npm, state, taskId };
}

/** The task ran to the end, then the runtime reported the drain (nothing cut off). */
function expectDrained(out: string, taskId: string): void {
  // The handler's own last line (per-task bookkeeping lines are debug).
  const succeeded = out.indexOf(`email sent  task_id=${taskId}`);
  const drained = out.indexOf('drained; bye');
  expect(succeeded, out).toBeGreaterThan(-1);
  expect(drained, out).toBeGreaterThan(succeeded);
  expect(out).not.toMatch(/cut off|second signal/);
}

describe('npm start and SIGTERM', () => {
  it('npm exits only after the runtime drained the running task, with status 0', async () => {
    const { npm, state, taskId } = await startWithSlowTask();

    const runtimePid = state.pid;
    let runtimeAliveAtNpmExit: boolean | undefined;
    void npm.exited.then(() => (runtimeAliveAtNpmExit = alive(runtimePid)));
    const signalledAt = Date.now();
    npm.child.kill('SIGTERM'); // npm's own pid only, as a supervisor would
    const exit = await npm.exited;

    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    // The process npm was running (the runtime) was gone when npm exited: npm exited last.
    expect(runtimeAliveAtNpmExit).toBe(false);
    // The running task was not cut off: it finished, then the runtime said it had drained.
    expectDrained(npm.output(), taskId);
    expect(npm.output()).toMatch(/SIGTERM: stopping consumers/);
    // It waited for the handler (4 s from its start), well within the 30 s grace.
    expect(exit.at - signalledAt).toBeGreaterThan(1_000);
    expect(exit.at - signalledAt).toBeLessThan(30_000);
  });

  it('Ctrl-C (SIGINT to the whole process group, as a terminal sends it, and relayed by npm) drains once and exits 0', async () => {
    const { npm, taskId } = await startWithSlowTask();
    // The terminal signals every process of the foreground group; npm forwards its copy too.
    process.kill(-(npm.child.pid as number), 'SIGINT');
    const exit = await npm.exited;
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expectDrained(npm.output(), taskId);
  });
});
