import type { RuntimeSettings } from '../config/settings.js';
import type { TaskQueue } from './task-queue.js';
import type { Clock } from '../runtime/clock.js';
import type { Logger, Metrics } from '../runtime/logger.js';
import type { RandomSource } from '../runtime/random.js';
import type { TaskStore } from './task-store.js';
import type { FinishedListener } from './finished.js';

/** What every part of the lifecycle works with: the ports, the clock, the deployment's settings. */
export interface LifecycleDeps {
  readonly store: TaskStore;
  readonly queue: TaskQueue;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly settings: RuntimeSettings;
  /** Told of each task an update ended (workflow fan-in, `shared/task/finished.ts`). @default none */
  readonly onFinished?: FinishedListener;
}
