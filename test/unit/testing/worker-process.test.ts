/**
 * Waiting for a spawned worker's ready line (testing/worker-process.ts): the line decides,
 * not whether the process is still alive when the (possibly late) test process looks.
 */
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { type WorkerProcess, waitWorkerReady } from '../../../testing/worker-process.js';

/** A worker that has already exited, having printed `output`. */
function exitedWorker(output: string): WorkerProcess {
  return {
    label: 'w',
    child: {} as ChildProcess,
    output: () => output,
    exited: Promise.resolve({ code: 1, signal: null }),
    alive: () => false,
    kill: () => undefined,
  };
}

describe('waitWorkerReady', () => {
  it('a worker that printed its ready line and then died (a message of its first poll took it down) did start up', async () => {
    await expect(
      waitWorkerReady(exitedWorker('kaj-worker ready pid=1 prefix=p\nbye\n'), 10_000),
    ).resolves.toBeUndefined();
  });

  it('a worker that exited without its ready line: rejected at once, with its output, not after the wait', async () => {
    const err = await waitWorkerReady(exitedWorker('kaj-worker: could not start: boom\n'), 120_000).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ name: 'ExitedDuringStartUpError' });
    expect(String((err as Error).message)).toContain('could not start: boom');
  });
});
