/**
 * Per-second counters with a running peak: how many DynamoDB writes, SQS calls... the busiest
 * virtual second of the simulation saw.
 */
export class PeakMeter {
  private second = -1;
  private current = new Map<string, number>();
  readonly peak = new Map<string, number>();
  readonly total = new Map<string, number>();
  /** Who is calling (api, consumer, sweeper, poller): totals are also kept per caller, as `who:name`. */
  who = '';
  /** Counts nothing while set (work that belongs before the measured period). */
  muted = false;

  constructor(private readonly now: () => number) {}

  add(name: string, n = 1): void {
    if (this.muted) return;
    const s = Math.floor(this.now() / 1000);
    if (s !== this.second) this.roll(s);
    this.current.set(name, (this.current.get(name) ?? 0) + n);
    this.total.set(name, (this.total.get(name) ?? 0) + n);
    const mine = `${this.who}:${name}`;
    this.total.set(mine, (this.total.get(mine) ?? 0) + n);
  }

  /** Forgets everything counted so far (the end of a warm-up). */
  reset(): void {
    this.current = new Map();
    this.peak.clear();
    this.total.clear();
  }

  /** Closes the second in progress (call before reading `peak`). */
  flush(): void {
    this.roll(this.second + 1);
  }

  private roll(s: number): void {
    for (const [k, v] of this.current) if (v > (this.peak.get(k) ?? 0)) this.peak.set(k, v);
    this.current = new Map();
    this.second = s;
  }
}

/** The `methods` of `port`, each called through `wrap`: a decorator of a port, in one line. */
export function decorate<T extends object, K extends keyof T>(
  port: T,
  methods: readonly K[],
  wrap: (call: () => unknown) => unknown,
): Pick<T, K> {
  const call = (m: K, args: unknown[]) => () => (port[m] as (...a: unknown[]) => unknown).apply(port, args);
  return Object.fromEntries(methods.map((m) => [m, (...args: unknown[]) => wrap(call(m, args))])) as Pick<T, K>;
}

/** The port as one caller sees it: its requests are counted under `who` too. */
export function attributed<T extends object, K extends keyof T>(
  port: T,
  methods: readonly K[],
  meter: PeakMeter,
  who: string,
): Pick<T, K> {
  return decorate(port, methods, (call) => {
    meter.who = who;
    return call();
  });
}
