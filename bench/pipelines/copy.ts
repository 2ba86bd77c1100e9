/**
 * The example pipeline (`tasks/nightly-sales.ts`) as the bench runs it: the same name, schedule,
 * node names, node types, timeouts, edges and trigger rules, read from its definition, with the
 * bench's own handlers in place of the file writes (which would take real time on a virtual
 * clock) — and, for the backfill, its own `maxActiveRuns`.
 *
 * @module
 */
import * as z from 'zod';
import { definePipeline, node, type PipelineDefinition, type PipelineNode } from '../../shared/pipeline/define.js';
import { type AnyTaskDefinition, defineTask, type TaskContext } from '../../shared/task/define.js';
import { nightlySales } from '../../tasks/nightly-sales.js';

/** What a node does in the bench: given its name and context, its result. */
export type NodeHandler = (nodeName: string, ctx: TaskContext) => Promise<unknown>;

export interface PipelineCopy {
  readonly pipeline: PipelineDefinition;
  /** Its node types, to register with it. */
  readonly nodeTypes: readonly AnyTaskDefinition[];
}

/**
 * A result the size of the example's (`{ partition: "<table>/<date>.json" }`): its node ends are
 * recorded in the run's history, whose write units depend on the size.
 */
export function partitionResult(nodeName: string, ctx: TaskContext): { partition: string } {
  const day = (ctx.logicalDate ?? new Date(0)).toISOString().slice(0, 10);
  return { partition: `${nodeName}_table/${day}.json` };
}

/**
 * `nightly_sales` with `handler` for every node. `maxActiveRuns` and `timeoutSeconds` default to
 * the example's; `name` (default the example's) gives a pipeline of its own, sharing the node types.
 */
export function nightlySalesCopy(
  handler: NodeHandler,
  o: { readonly maxActiveRuns?: number; readonly timeoutSeconds?: number; readonly name?: string } = {},
  nodeTypes?: readonly AnyTaskDefinition[],
): PipelineCopy {
  const spec = nightlySales.pipeline;
  const types = new Map((nodeTypes ?? []).map((d) => [d.type, d]));
  const nodes: Record<string, PipelineNode> = {};
  for (const name of spec.order) {
    const n = spec.graph[name];
    if (n === undefined) continue;
    const original = spec.types.get(n.type);
    let def = types.get(n.type);
    if (def === undefined) {
      def = defineTask({
        type: n.type,
        schema: z.strictObject({}),
        timeoutSeconds: o.timeoutSeconds ?? original?.timeoutSeconds ?? 60,
        handler: (_p, ctx) => handler(name, ctx),
      });
      types.set(n.type, def);
    }
    nodes[name] = node(def as never, { after: n.after, trigger: n.trigger });
  }
  const cron = spec.timing.cron;
  const pipeline = definePipeline({
    name: o.name ?? spec.name,
    ...(cron === undefined
      ? { timezone: spec.timing.timezone }
      : { schedule: { cron, timezone: spec.timing.timezone, catchup: spec.catchup } }),
    maxActiveRuns: o.maxActiveRuns ?? spec.maxActiveRuns,
    nodes,
  });
  return { pipeline, nodeTypes: [...types.values()] };
}
