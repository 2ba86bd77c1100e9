/**
 * A pipeline run's code: a workflow run (replayed from its history on every wake) that records
 * the graph it runs with (its first step: a deploy that changes the graph changes new runs only),
 * then starts each node as a child task as soon as its upstreams have ended and its trigger rule
 * says it runs — woken as each node ends — and settles the nodes that do not run
 * (`upstream_failed`, `skipped`) without creating anything. Once every node has ended, the run
 * succeeds, or fails naming the nodes that failed.
 *
 * A node cleared by an operator (`reopen` entries of the history) runs again as a new child
 * (`<node>~<n>`, its n-th run); the others keep their recorded ends.
 *
 * @module
 */
import type { AnyTaskDefinition } from '../task/define.js';
import type { WorkflowContext } from '../workflow/define.js';
import { ChildFailedError } from '../workflow/errors.js';
import { RUN_RECORDS, type RunRecords } from '../workflow/run-records.js';
import type { HistoryEntry } from '../workflow/history-store.js';
import type { PipelineSpec } from './spec.js';
import { PipelineRunFailedError } from './errors.js';
import { checkGraph, type Graph, type NodeState, runStateOf, settle } from './graph.js';

/** The step that records the run's graph (a node cannot be named so: node names have no colon). */
export const GRAPH_STEP = 'pipeline:graph';

/** What a run returns when every node has ended without a failure. */
export interface PipelineResult {
  readonly nodes: Record<string, NodeState>;
}

/** The child name of a node's n-th run (its first: the node's name). */
export function childNameOf(node: string, generation: number): string {
  return generation <= 1 ? node : `${node}~${generation}`;
}

/** How many times each node has been cleared, from the run's `reopen` entries. */
export function generationsOf(entries: readonly HistoryEntry[]): Map<string, number> {
  const gens = new Map<string, number>();
  for (const e of entries) {
    if (e.kind !== 'reopen') continue;
    const nodes = (e.value as { nodes?: unknown } | undefined)?.nodes;
    for (const n of Array.isArray(nodes) ? nodes : []) {
      if (typeof n === 'string') gens.set(n, (gens.get(n) ?? 1) + 1);
    }
  }
  return gens;
}

export async function runPipeline(spec: PipelineSpec, wf: WorkflowContext): Promise<PipelineResult> {
  const records = (wf as unknown as Record<symbol, RunRecords | undefined>)[RUN_RECORDS];
  const gens = generationsOf(records?.entries() ?? []);
  const graph = (await wf.step(GRAPH_STEP, () => spec.graph)) as Graph;
  const order = checkGraph(spec.name, graph);
  const states = new Map<string, NodeState>();
  const running = new Map<string, Promise<string>>();
  const start = (name: string): void => {
    const n = graph[name];
    if (n === undefined) return;
    const def = spec.types.get(n.type) ?? typeOnlyDefinition(n.type);
    states.set(name, 'running');
    running.set(
      name,
      wf.run(def, n.payload as never, { name: childNameOf(name, gens.get(name) ?? 1) }).then(
        () => {
          states.set(name, 'succeeded');
          return name;
        },
        (err: unknown) => {
          if (!(err instanceof ChildFailedError)) throw err;
          states.set(name, 'failed');
          return name;
        },
      ),
    );
  };
  for (;;) {
    for (const name of settle(graph, order, states).ready) start(name);
    if (running.size === 0) break;
    // The first node to end (on a replay: the first recorded) lets its downstream start.
    const ended = await Promise.race(running.values());
    running.delete(ended);
    for (const name of [...running.keys()]) if (states.get(name) !== 'running') running.delete(name);
  }
  if (runStateOf(states) === 'failed') {
    const failed = order.filter((n) => states.get(n) === 'failed');
    const upstream = order.filter((n) => states.get(n) === 'upstream_failed');
    throw new PipelineRunFailedError(failed, upstream, { taskId: wf.runId });
  }
  return { nodes: Object.fromEntries(order.map((n) => [n, states.get(n) as NodeState])) };
}

/**
 * A node whose type the current code no longer declares in this pipeline (the run's graph is
 * older): its child is created by type name, and the registry checks its payload.
 */
function typeOnlyDefinition(type: string): AnyTaskDefinition {
  return {
    type,
    schema: { safeParse: (data: unknown) => ({ success: true, data }) },
  } as unknown as AnyTaskDefinition;
}
