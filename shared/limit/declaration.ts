/**
 * What a deployment declares about its limits (`tasks/limits.ts`) and what a task type declares
 * about the limits it uses (`defineTask({ uses })`). Plain data and types only: the CDK stack,
 * the CLI and the registry read these without the limiter.
 */

/**
 * One named limit, shared by every worker of the deployment (enforced in DynamoDB).
 * At least one of `concurrency` and `rate`.
 */
export interface LimitDeclaration {
  /**
   * At most this many tasks that use the limit run at once, across every worker. Each running
   * task holds a slot that is a lease: renewed by its heartbeat, released when it ends, and
   * freed by itself one lease after a worker died holding it. Per key when the use is keyed.
   */
  readonly concurrency?: number;
  /**
   * At most N starts per interval across every worker: `'40/s'`, `'600/m'`, `'10/5s'`,
   * `'1000/h'` (units ms, s, m, h). Starts are spaced evenly (GCRA): with the default burst of 1,
   * no window of the interval's length ever holds more than N starts. Per key when keyed.
   */
  readonly rate?: string;
  /** Starts allowed back to back after an idle spell (GCRA burst; 1 = evenly spaced). @default 1 */
  readonly burst?: number;
  /**
   * How much the time from a start to the provider's receipt of its call may vary (event loop,
   * network, TLS): starts are spaced over the interval plus this, so the provider never counts
   * N + 1 calls in one interval even when an early call was slow and the next one fast. A limit
   * enforced at the start alone cannot see that delay: without a margin, a provider that counts
   * arrivals over a sliding window may answer 429 now and then. Costs `jitter / interval` of the
   * rate (25 ms on 1 s: 2.5 %). @default 0
   */
  readonly arrivalJitterMs?: number;
  /**
   * Learn from the provider: when a task using this limit fails with
   * `RetryableError({ retryAfterSeconds })` (a 429 with Retry-After), the limit's rate is paused
   * for that long for every worker, so one 429 does not become one per worker. Needs `rate`.
   * @default false
   */
  readonly learnRetryAfter?: boolean;
}

/** Limits by name (lower snake case, like task types). */
export type LimitDeclarations = Readonly<Record<string, LimitDeclaration>>;

/** What a keyed use sees of the task besides its payload. */
export interface LimitKeyContext {
  /** The task's tenant (API field `tenant`), if it has one. */
  readonly tenant?: string;
}

/**
 * A limit a task type uses: its name, or the name and a key that splits the limit per value
 * (per tenant, per account): each key gets the limit's whole concurrency and rate.
 */
export type LimitUseDeclaration<P = unknown> =
  | string
  | {
      readonly limit: string;
      /** The key of this task's share, from its payload (e.g. `(p) => p.tenant_id`) or its tenant. */
      readonly key: (payload: P, task: LimitKeyContext) => string;
    };
