/** Time source. Domain code never calls `Date.now()` itself, so tests can drive time. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
