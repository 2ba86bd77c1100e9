/**
 * Redrives and purges the console starts run in the background; their pages poll the progress.
 * Kept in memory, the last {@link KEPT} of them: a restart forgets them (the DLQ and the task
 * records say what was done; a re-run finishes an interrupted one).
 *
 * @module
 */
import type { Clock } from '../shared/runtime/clock.js';
import type { BatchCounts, BatchOutcome, Progress } from './model.js';

const KEPT = 50;

export interface Job {
  readonly id: string;
  readonly verb: 'redrive' | 'purge';
  /** What was confirmed: the selection in words. */
  readonly description: string;
  readonly total: number;
  readonly startedAt: number;
  progress: BatchCounts;
  finishedAt?: number;
  outcome?: BatchOutcome;
  error?: string;
  /** Settles when the job has finished (never rejects). */
  done?: Promise<void>;
}

export class JobBoard {
  private readonly jobs = new Map<string, Job>();
  private seq = 0;

  constructor(
    private readonly clock: Clock,
    private readonly newId: () => string,
  ) {}

  /** Starts `run` now and returns its job at once. */
  start(
    verb: Job['verb'],
    description: string,
    total: number,
    run: (onProgress: Progress) => Promise<BatchOutcome>,
  ): Job {
    this.seq += 1;
    const job: Job = {
      id: `${this.seq}-${this.newId()}`,
      verb,
      description,
      total,
      startedAt: this.clock.now(),
      progress: { selected: 0, done: 0, skipped: 0, failed: 0 },
    };
    this.jobs.set(job.id, job);
    for (const id of this.jobs.keys()) {
      if (this.jobs.size <= KEPT) break;
      if (this.jobs.get(id)?.finishedAt !== undefined) this.jobs.delete(id);
    }
    job.done = run((c) => {
      job.progress = { ...c };
    }).then(
      (outcome) => {
        job.outcome = outcome;
        job.progress = {
          selected: outcome.selected,
          done: outcome.done,
          skipped: outcome.skipped,
          failed: outcome.failed,
        };
        job.finishedAt = this.clock.now();
      },
      (err: unknown) => {
        job.error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
        job.finishedAt = this.clock.now();
      },
    );
    return job;
  }

  get(id: string): Job | undefined {
    return this.jobs.get(id);
  }

  /** Resolves when every job started so far has finished (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all([...this.jobs.values()].map((j) => j.done));
  }
}
