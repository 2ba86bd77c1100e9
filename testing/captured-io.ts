/** The CLI's output captured in a test or a benchmark, where no terminal is attached. */
import type { CliContext } from '../cli/context.js';

/** The CLI's output captured (no terminal anywhere): `io` for a context, `out()`/`err()` what it wrote. */
export function capturedIo(): { io: CliContext['io']; out(): string; err(): string } {
  let out = '';
  let err = '';
  return {
    io: {
      out: (t) => void (out += t),
      err: (t) => void (err += t),
      stdoutIsTTY: false,
      stderrIsTTY: false,
      stdinIsTTY: false,
    },
    out: () => out,
    err: () => err,
  };
}
