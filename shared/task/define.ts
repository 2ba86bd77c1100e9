import type * as z from 'zod';
import { DEFAULT_LANE, type LaneDeclarations } from '../config/lanes.js';
import { DEFAULTS, type Priority } from '../config/resources.js';
import type { LimitDeclarations, LimitKeyContext, LimitUseDeclaration } from '../limit/declaration.js';
import { type LimitSpec, type LimitUse, resolveLimits } from '../limit/spec.js';
import type { Logger } from '../runtime/logger.js';
import type { ScheduleDeclaration } from '../schedule/declaration.js';
import { TaskDefinitionError, UnknownTaskTypeError } from './errors.js';

export { PermanentError, RetryableError } from '../retry/errors.js';
export { defineLanes } from '../config/lanes.js';
export { defineLimits } from '../limit/spec.js';

/** What a handler gets besides its payload. */
export interface TaskContext {
  readonly taskId: string;
  /** 1 on the first run. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly priority: Priority;
  /** Aborted on timeout, on a cancel request, or when the worker loses its lease. Pass it to fetch(). */
  readonly signal: AbortSignal;
  /** Structured logger bound to the task id. Do not log secrets or whole payloads. */
  readonly logger: Logger;
  /**
   * The logical date of a scheduled run: the time it was scheduled for (before jitter), whatever
   * time it actually runs. Process "the data of" this time, so a re-run or a backfill does the
   * same work. Undefined for tasks not created by a schedule.
   */
  readonly scheduledTime?: Date;
  /** The schedule that created the task, if any. */
  readonly schedule?: string;
  /**
   * The logical date of the work: the start of the data interval for a pipeline's node (its run's
   * logical date), else the scheduled time. Undefined for tasks not created by a schedule or a pipeline.
   */
  readonly logicalDate?: Date;
  /**
   * The data interval a pipeline's node processes (`[start, end)`: its run's logical date to the
   * next one). Undefined outside pipelines.
   */
  readonly dataInterval?: DataInterval;
}

/** A half-open interval of time `[start, end)` whose data a run processes. */
export interface DataInterval {
  readonly start: Date;
  readonly end: Date;
}

/** How a scheduled run of a type is identified, when its type says (a pipeline's logical date). */
export interface RunIdentity {
  /** The run's unique key within the type and owner: `<name>@<logical date>`. */
  readonly key: string;
  /** The data interval the run processes (ISO times). */
  readonly dataInterval: { readonly start: string; readonly end: string };
}

export interface TaskPolicy {
  /** @default DEFAULTS.maxAttempts (5) */
  readonly maxAttempts?: number;
  /** @default DEFAULTS.taskTimeoutSeconds (60) */
  readonly timeoutSeconds?: number;
  /** Full-jitter backoff: random(0, min(cap, base·2^attempt)). @default base 2 s, cap 300 s */
  readonly backoff?: { readonly baseSeconds?: number; readonly capSeconds?: number };
  /**
   * Crashes of a worker attributed to this task (it ran alone when the worker died) before the
   * task is failed. Raise it for tasks whose workers may legitimately die (spot capacity,
   * huge inputs); lower it to 1 to fail a task at its first proven crash.
   * @default the deployment's crashLoopReceives (3)
   */
  readonly crashLimit?: number;
}

export interface TaskDefinition<S extends z.ZodType = z.ZodType, R = unknown, T extends string = string>
  extends TaskPolicy {
  /** Type name used in `POST /api/v1/tasks` `{type}`: lower snake case (kept as a literal type, for `KajClient`). */
  readonly type: T;
  /** Payload schema; a request whose payload fails it is rejected with 422 naming the field. */
  readonly schema: S;
  /** Does the work. Return a JSON-serializable result (≤ 32 KiB). Throw PermanentError / RetryableError to steer retries. */
  readonly handler: (payload: z.infer<S>, ctx: TaskContext) => Promise<R>;
  readonly description?: string;
  /** Schedules that create tasks of this type, synced to the schedules table (docs/schedules.md). */
  readonly schedules?: readonly ScheduleDeclaration[];
  /**
   * The lane whose queues and consumer run this type (`tasks/lanes.ts`; docs/flow-control.md, "Declaring lanes and limits").
   * @default the default lane
   */
  readonly lane?: string;
  /**
   * The limits (`tasks/limits.ts`) a task of this type holds while it runs: names, or
   * `{ limit, key }` to split a limit per payload value or tenant. A task that cannot get them is
   * deferred (its message comes back later), never failed for it.
   * @example uses: ['email_provider', { limit: 'per_tenant', key: (p, t) => t.tenant ?? p.account }]
   */
  readonly uses?: readonly LimitUseDeclaration<z.infer<S>>[];
  /** Types this one starts (a pipeline's nodes): each must be registered too, or start-up fails naming it. */
  readonly needsTypes?: readonly string[];
  /**
   * A scheduled run's identity (a pipeline's: its logical date): the scheduler then keys the run
   * by it instead of by the schedule and time, so a run created by hand, by a backfill or by the
   * schedule for one date is one task. @default keyed by the schedule's name and time
   */
  readonly runIdentity?: (scheduledTime: number) => RunIdentity;
}

/** The policy of a type with every default filled in. */
export interface ResolvedPolicy {
  readonly maxAttempts: number;
  readonly timeoutSeconds: number;
  readonly backoff: { readonly baseSeconds: number; readonly capSeconds: number };
}

const TYPE_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * Declares a task type. Options are checked here, at start-up, with messages naming the option.
 *
 * @example
 * export const sendEmail = defineTask({
 *   type: 'send_email',
 *   schema: z.object({ to: z.email(), subject: z.string() }),
 *   maxAttempts: 8,
 *   handler: async (payload, ctx) => ({ messageId: await provider.send(payload, ctx.signal) }),
 * });
 */
export function defineTask<S extends z.ZodType, R, const T extends string = string>(
  def: TaskDefinition<S, R, T>,
): TaskDefinition<S, R, T> {
  const where = `task type "${def.type}"`;
  if (!TYPE_NAME.test(def.type)) {
    throw new TaskDefinitionError(`type "${def.type}" must match ${TYPE_NAME} (lower snake case, ≤ 64 chars)`);
  }
  checkInt(where, 'maxAttempts', def.maxAttempts, 1, DEFAULTS.maxAttemptsLimit);
  checkInt(where, 'timeoutSeconds', def.timeoutSeconds, 1, DEFAULTS.maxTaskTimeoutSeconds);
  checkInt(where, 'crashLimit', def.crashLimit, 1, 25);
  const base = def.backoff?.baseSeconds;
  const cap = def.backoff?.capSeconds;
  if (base !== undefined && !(base > 0 && base <= 3600)) {
    throw new TaskDefinitionError(`${where}: backoff.baseSeconds must be in (0, 3600], got ${base}`);
  }
  if (cap !== undefined && !(cap > 0 && cap <= 12 * 3600)) {
    throw new TaskDefinitionError(`${where}: backoff.capSeconds must be in (0, 43200], got ${cap}`);
  }
  if ((base ?? DEFAULTS.backoffBaseSeconds) > (cap ?? DEFAULTS.backoffCapSeconds)) {
    throw new TaskDefinitionError(`${where}: backoff.baseSeconds must not exceed backoff.capSeconds`);
  }
  if (typeof def.handler !== 'function') throw new TaskDefinitionError(`${where}: handler must be a function`);
  return def;
}

function checkInt(where: string, name: string, v: number | undefined, min: number, max: number): void {
  if (v === undefined) return;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new TaskDefinitionError(`${where}: ${name} must be an integer in [${min}, ${max}], got ${v}`);
  }
}

export function resolvePolicy(def: TaskPolicy): ResolvedPolicy {
  return {
    maxAttempts: def.maxAttempts ?? DEFAULTS.maxAttempts,
    timeoutSeconds: def.timeoutSeconds ?? DEFAULTS.taskTimeoutSeconds,
    backoff: {
      baseSeconds: def.backoff?.baseSeconds ?? DEFAULTS.backoffBaseSeconds,
      capSeconds: def.backoff?.capSeconds ?? DEFAULTS.backoffCapSeconds,
    },
  };
}

// The registry stores definitions of any schema; handlers are called with parsed payloads.
// biome-ignore lint/suspicious/noExplicitAny: a registry holds every payload schema; handlers get parsed payloads
export type AnyTaskDefinition = TaskDefinition<any, unknown>;

/** What `submit` takes for each type of a registry: type name → payload as sent (the schema's input). */
export type PayloadsOf<R> =
  R extends TaskRegistry<infer D>
    ? { [K in D as K['type']]: K['schema'] extends z.ZodType ? z.input<K['schema']> : unknown }
    : never;

/** What a deployment declares besides its task types (`tasks/index.ts`). */
export interface RegistryOptions {
  /** `tasks/lanes.ts`. @default no lanes but the default one */
  readonly lanes?: LaneDeclarations;
  /** `tasks/limits.ts`. @default no limits */
  readonly limits?: LimitDeclarations;
}

/**
 * The set of task types a deployment knows. Built once from `tasks/index.ts`. Its type parameter
 * keeps each definition's type name and schema, so `KajClient<typeof registry>` can type payloads.
 */
export class TaskRegistry<D extends AnyTaskDefinition = AnyTaskDefinition> {
  private readonly byType = new Map<string, AnyTaskDefinition>();
  readonly lanes: LaneDeclarations;
  /** The limits, resolved (rates parsed), by name. */
  readonly limits: ReadonlyMap<string, LimitSpec>;

  constructor(definitions: readonly D[], options: RegistryOptions = {}) {
    this.lanes = options.lanes ?? {};
    this.limits = resolveLimits(options.limits ?? {});
    for (const def of definitions) {
      if (this.byType.has(def.type)) throw new TaskDefinitionError(`task type "${def.type}" is registered twice`);
      const where = `task type "${def.type}"`;
      if (def.lane !== undefined && def.lane !== DEFAULT_LANE && !(def.lane in this.lanes)) {
        throw new TaskDefinitionError(
          `${where}: lane "${def.lane}" is not declared (lanes: ${Object.keys(this.lanes).join(', ') || 'none'}; see tasks/lanes.ts)`,
        );
      }
      const laneTimeout = def.lane === undefined ? undefined : this.lanes[def.lane]?.timeoutSeconds;
      const taskTimeout = def.timeoutSeconds ?? DEFAULTS.taskTimeoutSeconds;
      if (laneTimeout !== undefined && taskTimeout + 30 > laneTimeout) {
        // The consumer must outlive the handler's timeout by the time it takes to record the outcome.
        throw new TaskDefinitionError(
          `${where}: timeoutSeconds ${taskTimeout} does not fit lane "${def.lane}" (its consumer times out after ${laneTimeout} s; leave 30 s)`,
        );
      }
      const seen = new Set<string>();
      for (const use of def.uses ?? []) {
        const name = typeof use === 'string' ? use : use.limit;
        if (!this.limits.has(name)) {
          throw new TaskDefinitionError(
            `${where}: uses limit "${name}", which is not declared (limits: ${[...this.limits.keys()].join(', ') || 'none'}; see tasks/limits.ts)`,
          );
        }
        if (seen.has(name)) throw new TaskDefinitionError(`${where}: uses limit "${name}" twice`);
        seen.add(name);
        if (typeof use !== 'string' && typeof use.key !== 'function') {
          throw new TaskDefinitionError(`${where}: the key of limit "${name}" must be a function`);
        }
      }
      this.byType.set(def.type, def);
    }
    for (const def of definitions) {
      for (const needed of def.needsTypes ?? []) {
        if (!this.byType.has(needed)) {
          throw new TaskDefinitionError(
            `task type "${def.type}": needs task type "${needed}", which is not registered (add it to the registry)`,
          );
        }
      }
    }
  }

  /** The lane of a type; the default lane for a type that names none (or is unknown here). */
  laneOf(type: string): string {
    return this.byType.get(type)?.lane ?? DEFAULT_LANE;
  }

  /**
   * The limits a task of `def` holds, each with its key for this payload and tenant.
   * @throws TaskDefinitionError when a key function throws or gives no usable key (1-128 characters)
   */
  limitUses(def: AnyTaskDefinition, payload: unknown, task: LimitKeyContext): LimitUse[] {
    const uses: LimitUse[] = [];
    for (const use of def.uses ?? []) {
      const name = typeof use === 'string' ? use : use.limit;
      const spec = this.limits.get(name);
      if (spec === undefined) continue; // checked in the constructor
      if (typeof use === 'string') {
        uses.push({ spec });
        continue;
      }
      let key: unknown;
      try {
        key = use.key(payload, task);
      } catch (err) {
        throw new TaskDefinitionError(`task type "${def.type}": the key of limit "${name}" threw: ${String(err)}`, {
          cause: err,
        });
      }
      if (typeof key === 'number' && Number.isFinite(key)) key = String(key);
      if (typeof key !== 'string' || key.length === 0 || key.length > 128) {
        throw new TaskDefinitionError(
          `task type "${def.type}": the key of limit "${name}" must be a string of 1-128 characters, got ${typeof key === 'string' ? `"${key.slice(0, 40)}"` : typeof key}`,
        );
      }
      uses.push({ spec, key });
    }
    return uses;
  }

  /** @throws UnknownTaskTypeError */
  get(type: string): AnyTaskDefinition {
    const def = this.byType.get(type);
    if (def === undefined) throw new UnknownTaskTypeError(type, this.types());
    return def;
  }

  has(type: string): boolean {
    return this.byType.has(type);
  }

  types(): string[] {
    return [...this.byType.keys()].sort();
  }

  /** The schedules declared next to the task types, each with its type. */
  declaredSchedules(): { readonly type: string; readonly declaration: ScheduleDeclaration }[] {
    return [...this.byType.values()].flatMap((def) =>
      (def.schedules ?? []).map((declaration) => ({ type: def.type, declaration })),
    );
  }
}
