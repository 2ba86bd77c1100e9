/** Time source. Domain code never calls `Date.now()` itself, so tests can drive time. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class FakeClock implements Clock {
  constructor(private current: number = Date.parse('2026-01-01T00:00:00.000Z')) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
