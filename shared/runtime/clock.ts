/** Time source. Domain code never calls `Date.now()` itself, so tests can drive time. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` (a fake clock advances itself instead). Without it, waits are skipped. */
  sleep?(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
