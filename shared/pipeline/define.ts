/**
 * Declaring a pipeline: a scheduled graph of task types, each node doing one logical date's work.
 * A pipeline is a workflow type (registered, listed and cancelled as one) whose run starts its
 * nodes as children (`wf.run`) as soon as their upstreams have ended and their trigger rules say
 * so (`run.ts`). Its schedule is an ordinary declared schedule; its runs are named by logical date.
 *
 * @module
 */
import * as z from 'zod';
import { DEFAULTS, type Priority } from '../config/resources.js';
import type { ScheduleDeclaration } from '../schedule/declaration.js';
import type { AnyTaskDefinition, TaskDefinition } from '../task/define.js';
import { defineWorkflow, isWorkflow, type WorkflowDefinition } from '../workflow/define.js';
import { intervalEndingAt, logicalKeyOf, timingOf } from './dates.js';
import { PipelineDefinitionError } from './errors.js';
import { checkGraph, type GraphNode, type TriggerRule } from './graph.js';
import { type PipelineResult, runPipeline } from './run.js';
import type { PipelineSpec } from './spec.js';

export type { PipelineSpec } from './spec.js';

/** A node as declared: its task type and where it stands in the graph. */
export interface PipelineNode {
  readonly def: AnyTaskDefinition;
  /** Nodes that must have ended first. @default none (a root) */
  readonly after: readonly string[];
  /** When it runs once they have (docs/pipelines.md). @default 'all_success' */
  readonly trigger: TriggerRule;
  /** Its task's payload (checked against its type's schema at start-up). @default {} */
  readonly payload: unknown;
}

export interface NodeOptions<P> {
  readonly after?: readonly string[];
  readonly trigger?: TriggerRule;
  readonly payload?: P;
}

/** A node of `def`: `node(cleanSales, { after: ['extract'] })`. */
export function node<S extends z.ZodType, R>(
  def: TaskDefinition<S, R>,
  options: NodeOptions<z.input<S>> = {},
): PipelineNode {
  return { def, after: options.after ?? [], trigger: options.trigger ?? 'all_success', payload: options.payload ?? {} };
}

export interface PipelineSchedule {
  /** 5 fields (`minute hour day month weekday`). */
  readonly cron: string;
  /** @default 'UTC' */
  readonly timezone?: string;
  /**
   * Whether times missed while the scheduler could not run (an outage, a pause) are run when it
   * can again, oldest first (the schedule's `catch_up` misfire policy, within `catchupWindow`),
   * or only the latest (`run_once`). Older dates: a backfill. @default true
   */
  readonly catchup?: boolean;
  /** How far back catch-up reaches. @default '7d' */
  readonly catchupWindow?: string;
  /** Spreads the pipeline's start after its time, as a schedule's `jitter` does. */
  readonly jitter?: string;
}

export interface PipelineOptions<Name extends string, N extends string> {
  /** The pipeline's name and its runs' task type: lower snake case, not another type's. */
  readonly name: Name;
  readonly description?: string;
  /** When runs are created; without one, runs are made by hand or by backfill (daily dates, in `timezone`). */
  readonly schedule?: PipelineSchedule;
  /** The zone of an unscheduled pipeline's dates. @default 'UTC' */
  readonly timezone?: string;
  /**
   * Runs (per owner) active at once — scheduled, caught up, backfilled and made by hand alike; a
   * run beyond waits, `queued`, until one ends. @default 16
   */
  readonly maxActiveRuns?: number;
  /** Most runs (dates) one backfill may create or one listing may show; a longer range is refused, naming `to`. @default 366 */
  readonly maxBackfillRuns?: number;
  /** A run's deadline in days: a run still going then fails, and its open nodes are cancelled. @default 7 */
  readonly maxRunDays?: number;
  /** @default 'normal' (the nodes inherit it) */
  readonly priority?: Priority;
  readonly nodes: Readonly<Record<N, PipelineNode>>;
}

/**
 * A run's input: nothing but, for a backfill's runs, their own cap on active runs (below the
 * pipeline's: such a run starts only while fewer runs than that are active).
 */
const EMPTY = z.strictObject({
  max_active_runs: z.number().int().min(1).max(DEFAULTS.maxActiveRunsLimit).optional(),
});

/** A pipeline: the workflow type of its runs (its name the type), with its spec. */
export type PipelineDefinition<Name extends string = string> = WorkflowDefinition<
  typeof EMPTY,
  PipelineResult,
  Name
> & {
  readonly pipeline: PipelineSpec;
};

/**
 * Declares a pipeline. Checked here, at start-up: a cycle, an unknown upstream, a payload that
 * does not fit its node's type, a bad schedule; the registry then refuses a node whose type is
 * not registered.
 *
 * @example
 * export const nightlySales = definePipeline({
 *   name: 'nightly_sales',
 *   schedule: { cron: '30 0 * * *', timezone: 'Asia/Dhaka' },
 *   maxActiveRuns: 1,
 *   nodes: {
 *     extract: node(extractSales),
 *     clean: node(cleanSales, { after: ['extract'] }),
 *   },
 * });
 */
export function definePipeline<const Name extends string, const N extends string>(
  options: PipelineOptions<Name, N>,
): PipelineDefinition<Name> {
  const where = `pipeline "${options.name}"`;
  const nodes = options.nodes as Readonly<Record<string, PipelineNode>>;
  if (nodes === null || typeof nodes !== 'object') throw new PipelineDefinitionError(`${where}: nodes are required`);
  const graph: Record<string, GraphNode> = {};
  const types = new Map<string, AnyTaskDefinition>();
  for (const [name, n] of Object.entries(nodes)) {
    if (typeof n?.def?.type !== 'string' || typeof n.def.schema?.safeParse !== 'function') {
      throw new PipelineDefinitionError(`${where}: node "${name}" must be node(<a task type>)`);
    }
    const parsed = n.def.schema.safeParse(n.payload);
    if (!parsed.success) {
      throw new PipelineDefinitionError(
        `${where}: node "${name}": its payload does not fit type "${n.def.type}": ${parsed.error.message}`,
      );
    }
    if (n.def.type === options.name)
      throw new PipelineDefinitionError(`${where}: node "${name}" runs the pipeline itself`);
    graph[name] = { type: n.def.type, after: [...n.after], trigger: n.trigger, payload: n.payload };
    types.set(n.def.type, n.def);
  }
  const order = checkGraph(options.name, graph);
  const zone = options.schedule?.timezone ?? options.timezone ?? 'UTC';
  const timing = timingOf(options.name, options.schedule?.cron, zone);
  const maxActiveRuns = options.maxActiveRuns ?? DEFAULTS.pipelineMaxActiveRuns;
  const catchup = options.schedule?.catchup ?? true;
  const maxBackfillRuns = options.maxBackfillRuns ?? DEFAULTS.maxBackfillDays;
  if (!Number.isInteger(maxBackfillRuns) || maxBackfillRuns < 1 || maxBackfillRuns > 10_000) {
    throw new PipelineDefinitionError(
      `${where}: maxBackfillRuns must be an integer in [1, 10000], got ${maxBackfillRuns}`,
    );
  }
  const schedules: ScheduleDeclaration[] =
    options.schedule === undefined
      ? []
      : [
          {
            name: options.name,
            cron: options.schedule.cron,
            timezone: zone,
            // Never skip a date because a run is active: the run waits for its slot instead.
            overlap: 'allow',
            misfire: catchup ? 'catch_up' : 'run_once',
            ...(catchup ? { catchup_window: options.schedule.catchupWindow ?? '7d' } : {}),
            ...(options.schedule.jitter === undefined ? {} : { jitter: options.schedule.jitter }),
            ...(options.priority === undefined ? {} : { priority: options.priority }),
            description: `the runs of pipeline ${options.name}`,
          },
        ];
  const spec: PipelineSpec = {
    name: options.name,
    ...(options.description === undefined ? {} : { description: options.description }),
    timing,
    maxActiveRuns,
    maxBackfillRuns,
    catchup,
    graph,
    order,
    types,
  };
  const wf = defineWorkflow<typeof EMPTY, PipelineResult, Name>({
    type: options.name,
    description: options.description ?? `pipeline ${options.name}`,
    schema: EMPTY,
    // A run's own code only starts nodes and records their ends: its attempts are the consumer's.
    timeoutSeconds: 60,
    maxRunDays: options.maxRunDays ?? DEFAULTS.pipelineMaxRunDays,
    maxActiveRuns,
    wakeOnEachChild: true,
    schedules,
    needsTypes: [...types.keys()],
    runIdentity: (scheduledTime) => {
      const i = intervalEndingAt(timing, scheduledTime);
      return {
        key: `${options.name}@${logicalKeyOf(timing, i.start)}`,
        dataInterval: { start: new Date(i.start).toISOString(), end: new Date(i.end).toISOString() },
      };
    },
    run: (_input, wf) => runPipeline(spec, wf),
  });
  // A backfill's runs carry their own cap (below the pipeline's: checked by the backfill).
  return { ...wf, pipeline: spec, activeRunsCapOf: (input) => input.max_active_runs };
}

/** True for a type declared with `definePipeline`. */
export function isPipeline(def: AnyTaskDefinition): def is PipelineDefinition {
  return isWorkflow(def) && typeof (def as Partial<PipelineDefinition>).pipeline?.name === 'string';
}

/** The registry's pipelines, by name. */
export function pipelinesOf(registry: {
  types(): string[];
  get(type: string): AnyTaskDefinition;
}): Map<string, PipelineDefinition> {
  const found = new Map<string, PipelineDefinition>();
  for (const type of registry.types()) {
    const def = registry.get(type);
    if (isPipeline(def)) found.set(def.pipeline.name, def);
  }
  return found;
}
