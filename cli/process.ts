/**
 * How the `kaj` process stops: Ctrl-C and SIGTERM stop the command at its next step (held DLQ
 * messages are released, `kaj ui` closes its server), a second one stops it at once; a reader
 * that goes away (`kaj … | head`) stops it quietly; and under npm (`npx kaj …`), kaj stops when
 * the shell npm started it through is gone — npm passes its SIGTERM to that shell only, and a
 * shell that does not `exec` its command dies of it without passing it on.
 *
 * @module
 */

/** The part of `process` this module uses (a test passes a fake). */
export interface KajProcess {
  on(event: 'SIGINT' | 'SIGTERM', listener: () => void): unknown;
  readonly ppid: number;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  exit(code: number): never;
}

interface OutputStream {
  on(event: 'error', listener: (err: Error & { code?: string }) => void): unknown;
  write(text: string): boolean;
}

/** Exit status after a SIGTERM (128 + 15), or a parent gone. */
export const EXIT_TERMINATED = 143;
/** Exit status after a second Ctrl-C (128 + 2). */
export const EXIT_INTERRUPTED = 130;

export interface StopHandlers {
  /** True when kaj was asked to stop by SIGTERM or by the end of the npm shell that started it. */
  terminated(): boolean;
  /** Stops watching the parent (the command is done). */
  dispose(): void;
}

/**
 * Installs the handlers on `proc`; `controller` is the signal every command watches.
 * @param parentPollMs how often to look whether the npm shell is still there
 */
export function installStopHandlers(proc: KajProcess, controller: AbortController, parentPollMs = 1_000): StopHandlers {
  let interrupts = 0;
  let terminated = false;
  const stop = (why: 'SIGINT' | 'SIGTERM', note: string) => {
    interrupts += 1;
    if (why === 'SIGTERM') terminated = true;
    if (interrupts > 1) proc.exit(terminated ? EXIT_TERMINATED : EXIT_INTERRUPTED);
    if (note !== '') writeQuietly(proc.stderr, note);
    controller.abort();
  };
  proc.on('SIGINT', () =>
    stop(
      'SIGINT',
      '\nstopping: finishing the current step and releasing held messages (Ctrl-C again to quit at once)\n',
    ),
  );
  proc.on('SIGTERM', () => stop('SIGTERM', 'stopping (SIGTERM): finishing the current step\n'));

  // A reader that stopped reading (`| head`): stop writing there, stop the command, no stack trace.
  for (const stream of [proc.stdout, proc.stderr]) {
    stream.on('error', (err) => {
      if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') {
        controller.abort();
        return;
      }
      throw err;
    });
  }

  // npx and npm run start kaj through `sh -c`: when that shell is gone, so is npm's wish to run kaj.
  let watch: ReturnType<typeof setInterval> | undefined;
  if (proc.env.npm_lifecycle_event !== undefined) {
    const parent = proc.ppid;
    watch = setInterval(() => {
      if (proc.ppid !== parent && !controller.signal.aborted) {
        terminated = true;
        interrupts += 1;
        controller.abort();
      }
    }, parentPollMs);
    watch.unref();
  }
  return {
    terminated: () => terminated,
    dispose: () => {
      if (watch !== undefined) clearInterval(watch);
    },
  };
}

function writeQuietly(stream: OutputStream, text: string): void {
  try {
    stream.write(text);
  } catch {
    // stderr is gone too: nothing to say it on
  }
}
