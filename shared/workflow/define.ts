/**
 * Declaring a workflow: a task type whose work is an ordinary async function made of named steps,
 * durable timers, signals and child tasks. It is registered, submitted, scheduled,
 * limited and listed exactly as a task type (`defineTask`); the consumer runs it through the
 * workflow runner (`runner.ts`), which replays it over its recorded history.
 *
 * @module
 */
import type * as z from 'zod';
import { DEFAULTS, type Priority } from '../config/resources.js';
import type { Logger } from '../runtime/logger.js';
import { type AnyTaskDefinition, type DataInterval, defineTask, type TaskDefinition } from '../task/define.js';
import { WorkflowDefinitionError, WorkflowRunnerMissingError } from './errors.js';

export { StepFailedError, NonDeterminismError } from './errors.js';

/** A signal's name (`wf.waitForSignal`, `POST /api/v1/tasks/{id}/signals/{name}`): lower snake case, 1-64 characters. */
export const SIGNAL_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** A step's own retry policy (each field defaults to the workflow type's), and its compensation. */
export interface StepOptions<T = unknown> {
  /** Attempts of this step, the first included. @default the workflow's maxAttempts */
  readonly maxAttempts?: number;
  /** Full-jitter backoff between its attempts. @default the workflow's backoff */
  readonly backoff?: { readonly baseSeconds?: number; readonly capSeconds?: number };
  /** One attempt's time limit; its `signal` aborts then. @default the workflow's timeoutSeconds */
  readonly timeoutSeconds?: number;
  /**
   * Undoes the step, given its result: if the run then fails for good (an error it does not catch,
   * or `wf.compensate()`), the compensations of the steps that succeeded run in reverse order,
   * each a durable step of its own (`compensate:<name>`, retried by the workflow's policy).
   */
  readonly compensate?: (result: T, step: StepContext) => Promise<unknown> | unknown;
}

/** What a step's function gets. */
export interface StepContext {
  /** `wf.stepKey(name)`: stable for the run and step — pass it downstream as an idempotency key. */
  readonly key: string;
  /** 1 on the step's first attempt. */
  readonly attempt: number;
  /** Aborted on the step's timeout, a cancel request, or when the worker loses the run. */
  readonly signal: AbortSignal;
}

/** How `wf.run` starts a child; each field defaults to what the run has (or the child's type declares). */
export interface ChildOptions {
  /** The call's name, unique in the run (a loop names each: `resize_${i}`). @default the child's type */
  readonly name?: string;
  /** @default the run's priority */
  readonly priority?: Priority;
  /** @default the run's tenant */
  readonly tenant?: string;
  /** @default the child type's maxAttempts */
  readonly maxAttempts?: number;
  /** @default the child type's timeoutSeconds */
  readonly timeoutSeconds?: number;
}

/** A duration: milliseconds, or text such as `90s`, `15m`, `1h30m`, `2d`. */
export type Duration = number | string;

/** What a workflow's code gets besides its input. */
export interface WorkflowContext {
  /** The run's id: the workflow task's id. */
  readonly runId: string;
  /** The run's invocation since it last made progress (1 after each wake). */
  readonly attempt: number;
  readonly logger: Logger;
  /** Aborted on a cancel request or when the worker loses the run. */
  readonly signal: AbortSignal;
  /** The logical date of a scheduled run (see `TaskContext.scheduledTime`). */
  readonly scheduledTime?: Date;
  /** The run's logical date and data interval (see `TaskContext.logicalDate`). */
  readonly logicalDate?: Date;
  readonly dataInterval?: DataInterval;
  /**
   * Runs `fn` once for the run and records its result; a replay returns the recorded result
   * without running it. `name` is unique in the run (loops name their steps: `charge_${i}`).
   * A step runs at least once: make its effect idempotent with `stepKey(name)`.
   * @throws StepFailedError once the step has run out of attempts (catchable)
   */
  step<T>(name: string, fn: (step: StepContext) => Promise<T> | T, options?: StepOptions<T>): Promise<T>;
  /**
   * Fails the run now, after running the compensations of the steps that succeeded (newest first).
   * Throws a `CompensationRequestedError`: let it propagate.
   */
  compensate(reason?: string): never;
  /** `<runId>/<name>`: an idempotency key that is the same on every attempt and replay of the step. */
  stepKey(name: string): string;
  /**
   * Suspends the run for `duration` (recorded when first reached: a replay waits only what is
   * left). The run is `waiting` meanwhile: no worker holds it, nothing is billed.
   */
  sleep(name: string, duration: Duration): Promise<void>;
  /** Suspends the run until `at` (recorded when first reached). */
  sleepUntil(name: string, at: Date): Promise<void>;
  /**
   * Waits for the signal `name` (`POST /api/v1/tasks/{id}/signals/{name}`) and returns its JSON
   * payload, or `null` once `timeout` has passed without it (the deadline is recorded when the
   * wait is first reached). A signal sent before the wait starts is kept and returned at once.
   * The run is `waiting` meanwhile; a signal wakes it. One signal per name and run.
   */
  waitForSignal<T = unknown>(name: string, options: { readonly timeout: Duration }): Promise<T | null>;
  /**
   * Whether the run takes the new path of a change to this code (`id`: names the change). A run
   * that reaches this call with nothing recorded past it — one started after the deploy — gets
   * `true` (recorded: every replay agrees); a run that recorded steps past this point with the old
   * code gets `false`. Keep the old branch until no such run is left.
   * @example if (await wf.patched('fraud_check')) await wf.step('fraud_check', () => check(input));
   */
  patched(id: string): Promise<boolean>;
  /**
   * Starts a child — a task or a workflow — and waits for its result (the run is `waiting`
   * meanwhile; the child's end wakes it). The child's id is derived from the run and the call's
   * name: a replay never starts a second one. It keeps its own lane, limits, retries and dead
   * letter, and inherits the run's owner, tenant, priority and logical date unless `options`
   * say otherwise. `Promise.all` over many calls fans out; the run wakes once, when the last
   * child it waits for has ended.
   * @throws ChildFailedError when the child failed for good or was cancelled (catchable)
   */
  run<S extends z.ZodType, R>(child: TaskDefinition<S, R>, payload: z.input<S>, options?: ChildOptions): Promise<R>;
  /**
   * The run's time: the time of the latest history entry the code has reached (the run's start
   * before any). The same on every replay; use it instead of `Date.now()`.
   */
  now(): Date;
  /** A number in [0, 1), the same on every replay (derived from the run id and the call's order). */
  random(): number;
  /** A UUID, the same on every replay (derived from the run id and the call's order). */
  uuid(): string;
}

export interface WorkflowOptions<S extends z.ZodType, R, T extends string>
  extends Omit<TaskDefinition<S, R, T>, 'handler'> {
  /** The process: replayed from the start on every invocation, recorded steps returning their results. */
  readonly run: (input: z.infer<S>, wf: WorkflowContext) => Promise<R>;
  /** History entries (steps, failed attempts, sleeps, signals) one run may record, its children's not counted. @default DEFAULTS.maxHistoryEntries (10,000) */
  readonly maxHistoryEntries?: number;
  /** Children (`wf.run`) one run may start. @default DEFAULTS.maxChildren (10,000) */
  readonly maxChildren?: number;
  /**
   * How long a run may last, in days (1-365): no sleep or signal wait may end later, and a run
   * still going then fails with `RunExpiredError`. The history is kept this long plus the
   * deployment's retention, so a longer one costs storage. @default DEFAULTS.maxRunDays (90)
   */
  readonly maxRunDays?: number;
  /**
   * Runs of this type (per owner) that may be active at once: a run beyond it waits, `waiting`
   * and costing nothing, until one ends (it looks again every `DEFAULTS.admitPollMs`). A run is
   * active from its admission to the end of its code; its slot is a holder in the limits table.
   * @default unlimited
   */
  readonly maxActiveRuns?: number;
  /**
   * Wake the run as each child ends, not once when the last it waits for has ended: for code that
   * races its children (`Promise.race`) — a pipeline starts a node as soon as its upstreams end.
   * @default false
   */
  readonly wakeOnEachChild?: boolean;
}

/** A workflow type: a task type (registered and submitted as one) with its `run`. */
export interface WorkflowDefinition<S extends z.ZodType = z.ZodType, R = unknown, T extends string = string>
  extends TaskDefinition<S, R, T> {
  readonly kind: 'workflow';
  readonly run: (input: z.infer<S>, wf: WorkflowContext) => Promise<R>;
  readonly maxHistoryEntries: number;
  readonly maxChildren: number;
  readonly maxRunDays: number;
  readonly maxActiveRuns?: number;
  /** A run's own cap on active runs below `maxActiveRuns`, from its input (a pipeline backfill's `max_active_runs`). */
  readonly activeRunsCapOf?: (input: z.infer<S>) => number | undefined;
  readonly wakeOnEachChild?: boolean;
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds every input schema; runs get parsed inputs
export type AnyWorkflowDefinition = WorkflowDefinition<any, unknown>;

/**
 * Declares a workflow type. Options are checked here, at start-up, as `defineTask` checks them.
 *
 * @example
 * export const order = defineWorkflow({
 *   type: 'order',
 *   schema: z.object({ sku: z.string(), qty: z.number().int().positive() }),
 *   run: async (input, wf) => {
 *     const hold = await wf.step('reserve_stock', (s) => stock.reserve(input, s.key));
 *     const charge = await wf.step('charge_payment', (s) => payments.charge(input, s.key));
 *     return { hold, charge };
 *   },
 * });
 */
export function defineWorkflow<S extends z.ZodType, R, const T extends string = string>(
  options: WorkflowOptions<S, R, T>,
): WorkflowDefinition<S, R, T> {
  const where = `workflow type "${options.type}"`;
  if (typeof options.run !== 'function') throw new WorkflowDefinitionError(`${where}: run must be a function`);
  const max = options.maxHistoryEntries ?? DEFAULTS.maxHistoryEntries;
  if (!Number.isInteger(max) || max < 1 || max > DEFAULTS.maxHistoryEntriesLimit) {
    throw new WorkflowDefinitionError(
      `${where}: maxHistoryEntries must be an integer in [1, ${DEFAULTS.maxHistoryEntriesLimit}], got ${max}`,
    );
  }
  const maxChildren = options.maxChildren ?? DEFAULTS.maxChildren;
  if (!Number.isInteger(maxChildren) || maxChildren < 0 || maxChildren > DEFAULTS.maxHistoryEntriesLimit) {
    throw new WorkflowDefinitionError(
      `${where}: maxChildren must be an integer in [0, ${DEFAULTS.maxHistoryEntriesLimit}], got ${maxChildren}`,
    );
  }
  const maxRunDays = options.maxRunDays ?? DEFAULTS.maxRunDays;
  const longest = DEFAULTS.maxSleepMs / 86_400_000;
  if (!Number.isInteger(maxRunDays) || maxRunDays < 1 || maxRunDays > longest) {
    throw new WorkflowDefinitionError(`${where}: maxRunDays must be an integer in [1, ${longest}], got ${maxRunDays}`);
  }
  const active = options.maxActiveRuns;
  if (active !== undefined && (!Number.isInteger(active) || active < 1 || active > DEFAULTS.maxActiveRunsLimit)) {
    throw new WorkflowDefinitionError(
      `${where}: maxActiveRuns must be an integer in [1, ${DEFAULTS.maxActiveRunsLimit}], got ${active}`,
    );
  }
  const {
    run,
    maxHistoryEntries: _,
    maxChildren: __,
    maxRunDays: ___,
    maxActiveRuns: ____,
    wakeOnEachChild,
    ...rest
  } = options;
  const task = defineTask<S, R, T>({
    ...rest,
    handler: async () => {
      throw new WorkflowRunnerMissingError(options.type);
    },
  });
  return {
    ...task,
    kind: 'workflow',
    run,
    maxHistoryEntries: max,
    maxChildren,
    maxRunDays,
    ...(active === undefined ? {} : { maxActiveRuns: active }),
    ...(wakeOnEachChild === true ? { wakeOnEachChild } : {}),
  };
}

/** True for a type declared with `defineWorkflow`. */
export function isWorkflow(def: AnyTaskDefinition): def is AnyWorkflowDefinition {
  return (
    (def as Partial<AnyWorkflowDefinition>).kind === 'workflow' &&
    typeof (def as AnyWorkflowDefinition).run === 'function'
  );
}

type Registry = { types(): string[]; has(type: string): boolean; get(type: string): AnyTaskDefinition };

/** The registry's workflow types. */
export function workflowTypes(registry: Pick<Registry, 'types' | 'get'>): string[] {
  return registry.types().filter((type) => isWorkflow(registry.get(type)));
}

/** True when some type of the registry is a workflow: the deployment needs a history table. */
export function hasWorkflows(registry: Pick<Registry, 'types' | 'get'>): boolean {
  return workflowTypes(registry).length > 0;
}

/** True when `type` is a workflow type of the registry (false for a type it does not know). */
export function isWorkflowType(registry: Registry, type: string): boolean {
  return registry.has(type) && isWorkflow(registry.get(type));
}
