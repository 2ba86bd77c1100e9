/**
 * Runs `work` every `intervalMs`, but never two at once: a tick that finds the previous run still
 * going is skipped. `stop()` clears the timer and waits for a run in progress.
 */
export function serialInterval(work: () => Promise<void>, intervalMs: number): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running !== undefined) return;
    running = work().finally(() => {
      running = undefined;
    });
  }, intervalMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
