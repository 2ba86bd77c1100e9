/**
 * The arithmetic of the scheduler benchmark (`bench/schedules.ts`), kept pure so that it is tested
 * (test/unit/bench/schedules.test.ts): the spread of fire seconds, how long a tick would
 * take on Lambda, what that bills, and what a schedule's item and index entry cost to store.
 *
 * @module
 */

/**
 * Lambda gives a function CPU in proportion to its memory: "at 1,769 MB, a function has the
 * equivalent of one vCPU" (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
 */
export const MIB_PER_VCPU = 1769;
/** DynamoDB counts 100 bytes of overhead per stored item, and per index entry. */
export const STORAGE_OVERHEAD_BYTES = 100;

export interface FireSpread {
  /** Fires per second of the window, second 0 first. */
  readonly perSecond: readonly number[];
  /** Fires in the busiest second, and which second that is (the first if several tie). */
  readonly busiest: number;
  readonly busiestSecond: number;
  /** Fires ÷ seconds of the window. */
  readonly mean: number;
  /** busiest ÷ mean (1: perfectly even). */
  readonly ratio: number;
  /** Seconds of the window with no fire. */
  readonly emptySeconds: number;
  /** Fires outside the window (should be none). */
  readonly outside: number;
}

/** How fire moments (epoch ms) spread over the whole seconds of `[startMs, startMs + seconds · 1000)`. */
export function fireSpread(fireTimesMs: readonly number[], startMs: number, seconds: number): FireSpread {
  if (!Number.isInteger(seconds) || seconds < 1)
    throw new RangeError(`seconds must be an integer >= 1, got ${seconds}`);
  const perSecond = new Array<number>(seconds).fill(0);
  let outside = 0;
  for (const t of fireTimesMs) {
    const s = Math.floor((t - startMs) / 1000);
    if (s < 0 || s >= seconds) outside += 1;
    else perSecond[s] = (perSecond[s] as number) + 1;
  }
  let busiest = 0;
  let busiestSecond = 0;
  perSecond.forEach((n, s) => {
    if (n > busiest) {
      busiest = n;
      busiestSecond = s;
    }
  });
  const inside = fireTimesMs.length - outside;
  const mean = inside / seconds;
  return {
    perSecond,
    busiest,
    busiestSecond,
    mean,
    ratio: mean === 0 ? 0 : busiest / mean,
    emptySeconds: perSecond.filter((n) => n === 0).length,
    outside,
  };
}

/** The share of a vCPU a function of `memoryMiB` gets (at most one: a single-threaded tick uses one). */
export function vcpuShare(memoryMiB: number): number {
  if (!(memoryMiB > 0)) throw new RangeError(`memory must be positive, got ${memoryMiB}`);
  return Math.min(1, memoryMiB / MIB_PER_VCPU);
}

/** Round trips a tick waits for, and how many it has in flight at once. */
export interface TickIo {
  /** Due-index pages read by the busiest shard (the shards are read in parallel, a shard's pages one after another). */
  readonly queryPagesOnBusiestShard: number;
  /** DynamoDB requests after the index was read (GetItem, PutItem, UpdateItem). */
  readonly dynamoRequests: number;
  /** SQS requests (SendMessage). */
  readonly sqsRequests: number;
  /** Schedules the tick worked on, and the most it works on at once (`scheduleTickConcurrency`). */
  readonly due: number;
  readonly concurrency: number;
}

export interface Latency {
  readonly dynamoMs: number;
  readonly sqsMs: number;
}

/**
 * Time spent waiting on AWS: the index pages of the busiest shard one after another, then every
 * request of the schedules' work spread over the workers (`min(concurrency, due)` of them).
 */
export function ioTimeMs(io: TickIo, latency: Latency): number {
  const query = io.queryPagesOnBusiestShard * latency.dynamoMs;
  const workers = Math.min(io.concurrency, io.due);
  const work = workers === 0 ? 0 : (io.dynamoRequests * latency.dynamoMs + io.sqsRequests * latency.sqsMs) / workers;
  return query + work;
}

export interface DurationEstimate {
  /** The CPU time measured, stretched to the function's share of a vCPU. */
  readonly cpuMs: number;
  readonly ioMs: number;
  /**
   * Both added: an upper bound (waits and CPU overlap when several schedules are in flight; a
   * CPU-bound tick takes about `cpuMs`, an I/O-bound one about `ioMs`).
   */
  readonly totalMs: number;
  /** `max(cpuMs, ioMs)`: the lower bound. */
  readonly lowerMs: number;
}

/** How long a tick takes on Lambda at `memoryMiB`, from the CPU time measured on one full core. */
export function lambdaDuration(measuredCpuMs: number, ioMs: number, memoryMiB: number): DurationEstimate {
  const cpuMs = measuredCpuMs / vcpuShare(memoryMiB);
  return { cpuMs, ioMs, totalMs: cpuMs + ioMs, lowerMs: Math.max(cpuMs, ioMs) };
}

export interface DrainInput {
  /** Schedules due at one moment (`fireAt`), all seen by the first tick. */
  readonly n: number;
  /** Lambda time per schedule (CPU at the function's share + its waits ÷ concurrency), ms. */
  readonly perFireMs: number;
  /** Lambda time of a tick before its first schedule (reading the index), ms. */
  readonly overheadMs: number;
  /** A tick starts no new schedule after this long (functions/scheduler.ts: timeout − 10 s). */
  readonly budgetMs: number;
  readonly tickMs: number;
  /** The first tick's start, ms before the fire moment (30 s: the tick at 23:59:30 for midnight). */
  readonly leadMs: number;
  /** A time seen later than this after it fell due is missed (`scheduleMisfireGraceSeconds`). */
  readonly graceMs: number;
}

export interface Drain {
  /** Schedules handed over by each tick, the first tick first. */
  readonly perTick: readonly number[];
  /** Schedules one tick hands over within its budget. */
  readonly capacity: number;
  readonly handed: number;
  /** Left for a tick that sees them past the misfire grace: skipped under `misfire: skip`, run late under the others. */
  readonly missed: number;
  /** How late the last schedule handed over is sent, after its fire moment, ms (≤ 0: on time). */
  readonly lastLateMs: number;
}

/**
 * How a herd of `n` schedules due at one moment drains when a tick cannot hand them all over: each
 * tick (one every `tickMs`) takes as many as its budget allows, in order, and the rest wait for the
 * next; a tick that starts more than `graceMs` after the fire moment finds the rest missed.
 */
export function drainTicks(d: DrainInput): Drain {
  if (!(d.perFireMs > 0)) throw new RangeError('perFireMs must be positive');
  const capacity = Math.max(0, Math.floor((d.budgetMs - d.overheadMs) / d.perFireMs));
  const perTick: number[] = [];
  let left = d.n;
  let lastLateMs = Number.NEGATIVE_INFINITY;
  for (let i = 0; left > 0; i += 1) {
    const start = -d.leadMs + i * d.tickMs; // relative to the fire moment
    if (start > d.graceMs) break;
    const take = Math.min(left, capacity);
    if (take === 0 && capacity === 0) break;
    perTick.push(take);
    left -= take;
    lastLateMs = start + d.overheadMs + take * d.perFireMs;
  }
  return {
    perTick,
    capacity,
    handed: d.n - left,
    missed: left,
    lastLateMs: d.n === 0 ? 0 : lastLateMs,
  };
}

/** GB-seconds billed for one invocation of `durationMs` (rounded up to the ms) at `memoryMiB`. */
export function gbSeconds(durationMs: number, memoryMiB: number): number {
  return (Math.ceil(durationMs) / 1000) * (memoryMiB / 1024);
}

/** Invocations of a rule every `tickSeconds` in a 30-day month (43,200 at one a minute). */
export function ticksPerMonth(tickSeconds: number): number {
  return (30 * 86_400) / tickSeconds;
}

/** Bytes a schedule is billed storage for: its item and its index entries, each with DynamoDB's 100 B overhead. */
export function storedBytes(itemBytes: number, indexEntryBytes: readonly number[]): number {
  return itemBytes + STORAGE_OVERHEAD_BYTES + indexEntryBytes.reduce((s, b) => s + b + STORAGE_OVERHEAD_BYTES, 0);
}
