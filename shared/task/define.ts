import type * as z from 'zod';
import { DEFAULTS, type Priority } from '../config/resources.js';
import type { Logger } from '../runtime/logger.js';
import type { ScheduleDeclaration } from '../schedule/declaration.js';
import { TaskDefinitionError, UnknownTaskTypeError } from './errors.js';

export { PermanentError, RetryableError } from '../retry/errors.js';

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

export interface TaskDefinition<S extends z.ZodType = z.ZodType, R = unknown> extends TaskPolicy {
  /** Type name used in `POST /api/v1/tasks` `{type}`: lower snake case. */
  readonly type: string;
  /** Payload schema; a request whose payload fails it is rejected with 422 naming the field. */
  readonly schema: S;
  /** Does the work. Return a JSON-serializable result (≤ 32 KiB). Throw PermanentError / RetryableError to steer retries. */
  readonly handler: (payload: z.infer<S>, ctx: TaskContext) => Promise<R>;
  readonly description?: string;
  /** Schedules that create tasks of this type, synced to the schedules table (README, "Schedules"). */
  readonly schedules?: readonly ScheduleDeclaration[];
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
export function defineTask<S extends z.ZodType, R>(def: TaskDefinition<S, R>): TaskDefinition<S, R> {
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

/** The set of task types a deployment knows. Built once from `tasks/index.ts`. */
export class TaskRegistry {
  private readonly byType = new Map<string, AnyTaskDefinition>();

  constructor(definitions: readonly AnyTaskDefinition[]) {
    for (const def of definitions) {
      if (this.byType.has(def.type)) throw new TaskDefinitionError(`task type "${def.type}" is registered twice`);
      this.byType.set(def.type, def);
    }
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
