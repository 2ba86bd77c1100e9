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

  /** Runs `fn` beside other shared holders. */
  async runShared<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(false);
    try {
      return await fn();
    } finally {
      this.shared -= 1;
      this.next();
    }
  }

  /** Runs `fn` with nothing else holding the gate. */
  async runExclusive<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire(true);
    try {
      return await fn();
    } finally {
      this.exclusive = false;
      this.next();
    }
  }

  /** Holders and waiters, for tests and logs. */
  get state(): { shared: number; exclusive: boolean; waiting: number } {
    return { shared: this.shared, exclusive: this.exclusive, waiting: this.waiting.length };
  }

  private acquire(exclusive: boolean): Promise<void> {
    if (this.waiting.length === 0 && this.canEnter(exclusive)) {
      this.enter(exclusive);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push({ exclusive, go: resolve }));
  }

  private canEnter(exclusive: boolean): boolean {
    return exclusive ? !this.exclusive && this.shared === 0 : !this.exclusive;
  }

  private enter(exclusive: boolean): void {
    if (exclusive) this.exclusive = true;
    else this.shared += 1;
  }

  /** Lets waiters in, in arrival order, as far as the gate allows. */
  private next(): void {
    while (this.waiting.length > 0) {
      const head = this.waiting[0] as (typeof this.waiting)[number];
      if (!this.canEnter(head.exclusive)) return;
      this.waiting.shift();
      this.enter(head.exclusive);
      head.go();
    }
  }
}

/** The gate of this process: every consumer in it shares one. */
export const processGate = new ExclusiveGate();
