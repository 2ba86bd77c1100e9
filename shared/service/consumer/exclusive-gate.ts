import type { Admission, Admissions } from '../../task/admission.js';
import { isSuspect } from '../../task/lease.js';

/**
 * A readers–writer gate over the handlers running in one worker process. Ordinary attempts
 * share it; an attempt of a task that crashed a worker before takes it alone, so that if the
 * worker dies now, the crash is evidence against that task and no other (see
 * `TaskLifecycle.reclaimAfterCrash`). Waiting exclusive attempts go first: once one waits, new
 * shared attempts queue behind it, so it is never starved.
 *
 * On Lambda one instance runs one batch at a time, so the gate spans the batch; the local
 * runtime runs many emulated invocations in one process, so one gate spans them all.
 */
export class ExclusiveGate {
  private shared = 0;
  private exclusive = false;
  private readonly waiting: { readonly exclusive: boolean; readonly go: () => void }[] = [];
  /** Exclusive holders that have asked (waiting or holding): while > 0, new shared holders wait. */
  private exclusiveAsked = 0;
  private closedSince: number | undefined;
  private closedTotalMs = 0;
  private alone = 0;

  /** `now` (ms) times how long the gate stays closed to shared holders ({@link closedMs}). */
  constructor(private readonly now: () => number = Date.now) {}

  /** Runs `fn` beside other shared holders. */
  async runShared<T>(fn: () => Promise<T>): Promise<T> {
    const leave = await this.enter(false);
    try {
      return await fn();
    } finally {
      leave();
    }
  }

  /** Runs `fn` with nothing else holding the gate. */
  async runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    const leave = await this.enter(true);
    try {
      return await fn();
    } finally {
      leave();
    }
  }

  /**
   * Waits for the gate and holds it (shared or alone) until the returned function is called
   * (calling it again does nothing): for a holder whose hold spans more than one call.
   */
  async enter(exclusive: boolean): Promise<() => void> {
    if (exclusive) this.askExclusive(1);
    await this.acquire(exclusive);
    if (exclusive) this.alone += 1;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (exclusive) {
        this.exclusive = false;
        this.askExclusive(-1);
      } else this.shared -= 1;
      this.next();
    };
  }

  /** Holders and waiters, for tests and logs. */
  get state(): { shared: number; exclusive: boolean; waiting: number } {
    return { shared: this.shared, exclusive: this.exclusive, waiting: this.waiting.length };
  }

  /**
   * For benchmarks: milliseconds the gate was closed to new shared holders so far (some attempt
   * waiting to run alone, or running alone: the worker draining for a suspect, then running it),
   * and how many attempts ran alone.
   */
  get closed(): { readonly ms: number; readonly alone: number } {
    const open = this.closedSince === undefined ? 0 : this.now() - this.closedSince;
    return { ms: this.closedTotalMs + open, alone: this.alone };
  }

  private askExclusive(delta: number): void {
    this.exclusiveAsked += delta;
    if (this.exclusiveAsked > 0 && this.closedSince === undefined) this.closedSince = this.now();
    if (this.exclusiveAsked === 0 && this.closedSince !== undefined) {
      this.closedTotalMs += this.now() - this.closedSince;
      this.closedSince = undefined;
    }
  }

  private acquire(exclusive: boolean): Promise<void> {
    if (this.waiting.length === 0 && this.canEnter(exclusive)) {
      this.take(exclusive);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push({ exclusive, go: resolve }));
  }

  private canEnter(exclusive: boolean): boolean {
    return exclusive ? !this.exclusive && this.shared === 0 : !this.exclusive;
  }

  private take(exclusive: boolean): void {
    if (exclusive) this.exclusive = true;
    else this.shared += 1;
  }

  /** Lets waiters in, in arrival order, as far as the gate allows. */
  private next(): void {
    while (this.waiting.length > 0) {
      const head = this.waiting[0] as (typeof this.waiting)[number];
      if (!this.canEnter(head.exclusive)) return;
      this.waiting.shift();
      this.take(head.exclusive);
      head.go();
    }
  }
}

/**
 * One message's place in the gate, taken as a shared holder before its limits are asked for
 * ({@link GateTurn.before}) and kept until its outcome is written. A task that waits behind one
 * running alone then waits holding nothing — no concurrency slot, no rate start — so the other
 * workers use them meanwhile, instead of the slots sitting taken and the starts passing unused
 * while this worker drains. A suspect takes no turn: it asks for its limits, then waits to run
 * alone (`runAttempt`); a task found to be a suspect only at its claim (a reclaim after a crash)
 * gives its turn back and waits to run alone.
 */
export class GateTurn {
  private leave: (() => void) | undefined;

  constructor(readonly gate: ExclusiveGate) {}

  /** True while the turn holds the gate (shared). */
  get held(): boolean {
    return this.leave !== undefined;
  }

  /** Waits for the gate to admit a shared holder and holds it; does nothing when already held. */
  async take(): Promise<void> {
    if (this.leave === undefined) this.leave = await this.gate.enter(false);
  }

  /** Gives the turn back (does nothing when not held). */
  giveBack(): void {
    const leave = this.leave;
    this.leave = undefined;
    leave?.();
  }

  /**
   * `admissions` with the turn taken first: a task that is not a suspect takes its place in the
   * gate before its limits are asked for, and gives it back when they refuse it, when their store
   * fails, or when what they granted is given back (the claim did not happen).
   */
  before(admissions: Admissions | undefined): Admissions | undefined {
    if (admissions === undefined) return undefined;
    return {
      admit: async (record) => {
        if (isSuspect(record)) return admissions.admit(record);
        await this.take();
        let admission: Admission | undefined;
        try {
          admission = await admissions.admit(record);
          return admission;
        } finally {
          if (admission?.kind !== 'granted') this.giveBack();
        }
      },
      release: async (permit) => {
        await admissions.release(permit);
        this.giveBack();
      },
    };
  }
}

/** The gate of this process: every consumer in it shares one. */
export const processGate = new ExclusiveGate();
