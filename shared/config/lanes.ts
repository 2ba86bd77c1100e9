/**
 * Lanes: groups of task types that get their own queues and their own consumer function, so
 * CPU-bound work (a PDF render on a large function) and IO-bound work (an email on a small one
 * with high concurrency) are sized apart. A task type names its lane (`defineTask({ lane })`);
 * types that name none run in the default lane, whose queues and consumer are the deployment's
 * own (`<prefix>-high`, ...).
 *
 * One definition (`tasks/lanes.ts`) is read by the CDK stack (queues, consumer function and
 * event source mappings per lane) and by the local runtime (event sources per lane, each with
 * its own concurrency). Adding a lane is a line there, not code.
 *
 * Dead letters are not per lane: every lane's queues dead-letter into the deployment's three
 * DLQs (one per priority), so `kaj dlq` sees every failure in one place; a redrive sends each
 * task back to its own type's lane.
 */
import { PRIORITIES, type Priority } from './resources.js';
import { ConfigError } from './errors.js';

/** The lane of task types that name none. Its queues are the deployment's `<prefix>-<priority>`. */
export const DEFAULT_LANE = 'default';

/** Lane names: short, lower case (they become part of queue and function names). */
export const LANE_NAME = /^[a-z][a-z0-9]{0,11}$/;

/** Architectures a lane's consumer function may use. */
export const LANE_ARCHITECTURES = ['arm64', 'x86_64'] as const;
export type LaneArchitecture = (typeof LANE_ARCHITECTURES)[number];

/** What a lane declares. Everything is optional: unset values are the deployment's consumer settings. */
export interface LaneDeclaration {
  /** Consumer memory in MiB (Lambda's CPU share grows with it: 1,769 MiB is one vCPU). @default the deployment's consumerMemoryMiB */
  readonly memoryMiB?: number;
  /** Consumer function timeout, seconds. @default the deployment's consumerTimeoutSeconds */
  readonly timeoutSeconds?: number;
  /** @default 'arm64' */
  readonly architecture?: LaneArchitecture;
  /** Messages per invocation (1-10). @default the deployment's batchSize */
  readonly batchSize?: number;
  /** Maximum concurrency of each priority's event source mapping (2-1000). @default the deployment's concurrency */
  readonly concurrency?: Partial<Record<Priority, number>>;
  /**
   * Concurrent invocations per priority when the lane runs on this machine (`npm start`, the
   * local worker). @default the `concurrency` above, else the deployment default
   */
  readonly localConcurrency?: Partial<Record<Priority, number>>;
}

/** Lanes by name (the default lane is implicit and not listed). */
export type LaneDeclarations = Readonly<Record<string, LaneDeclaration>>;

/**
 * Declares the deployment's lanes, checked at start-up with messages naming the lane and option.
 *
 * @example
 * export const lanes = defineLanes({
 *   io: { memoryMiB: 512, concurrency: { high: 50, normal: 50, low: 10 } },
 *   cpu: { memoryMiB: 3008, timeoutSeconds: 600, concurrency: { high: 4, normal: 4, low: 2 } },
 * });
 */
export function defineLanes<L extends LaneDeclarations>(lanes: L): L {
  for (const [name, lane] of Object.entries(lanes)) {
    checkLaneName(name);
    const where = `lane "${name}"`;
    const int = (key: string, v: number | undefined, min: number, max: number) => {
      if (v === undefined) return;
      if (!Number.isInteger(v) || v < min || v > max) {
        throw new ConfigError(
          `lanes.${name}.${key}`,
          `${where}: ${key} must be an integer in [${min}, ${max}], got ${v}`,
        );
      }
    };
    int('memoryMiB', lane.memoryMiB, 128, 10_240);
    int('timeoutSeconds', lane.timeoutSeconds, 30, 900);
    int('batchSize', lane.batchSize, 1, 10);
    for (const p of PRIORITIES) {
      int(`concurrency.${p}`, lane.concurrency?.[p], 2, 1000);
      int(`localConcurrency.${p}`, lane.localConcurrency?.[p], 1, 1000);
    }
    if (lane.architecture !== undefined && !LANE_ARCHITECTURES.includes(lane.architecture)) {
      throw new ConfigError(`lanes.${name}.architecture`, `${where}: architecture must be arm64 or x86_64`);
    }
  }
  return lanes;
}

/** @throws ConfigError when `name` cannot be a lane. */
export function checkLaneName(name: string): void {
  if (name === DEFAULT_LANE) {
    throw new ConfigError('lanes', `"${DEFAULT_LANE}" is the implicit lane of types that name none: do not declare it`);
  }
  if (!LANE_NAME.test(name)) {
    throw new ConfigError('lanes', `lane name "${name}" must match ${LANE_NAME} (lower case, at most 12 characters)`);
  }
}

/** The lanes of a deployment in a stable order: the default lane first, then the declared ones by name. */
export function laneNames(lanes: LaneDeclarations): string[] {
  return [DEFAULT_LANE, ...Object.keys(lanes).sort()];
}

/**
 * Main queue names of a lane: the default lane's are the deployment's (`<prefix>-high`, ...),
 * another lane's `<prefix>-<lane>-lane-high` (the `-lane-` keeps them apart from the queues of a
 * stack whose own name ends in the lane's).
 */
export function laneQueueNames(prefix: string, lane: string): Record<Priority, string> {
  const names = {} as Record<Priority, string>;
  for (const p of PRIORITIES) names[p] = lane === DEFAULT_LANE ? `${prefix}-${p}` : `${prefix}-${lane}-lane-${p}`;
  return names;
}

/** Per-priority queue URLs of each non-default lane (the default lane's are the deployment's own). */
export type LaneQueueUrls = Readonly<Record<string, Readonly<Record<Priority, string>>>>;
