/**
 * A pipeline's graph, pure: its check (no cycle, no unknown node), its order, what a node does
 * once its upstreams have ended (its trigger rule), and the run's state from its nodes'.
 *
 * @module
 */
import { PipelineDefinitionError } from './errors.js';

/** When a node runs, once every upstream node has ended (Airflow's trigger rules). */
export const TRIGGER_RULES = ['all_success', 'all_done', 'one_failed', 'none_failed'] as const;
export type TriggerRule = (typeof TRIGGER_RULES)[number];

/** A node's state in a run. `pending`: an upstream has not ended; `running`: its task exists and has not ended. */
export type NodeState = 'pending' | 'running' | 'succeeded' | 'failed' | 'upstream_failed' | 'skipped';

/** The states a node ends in. */
export const ENDED_NODE_STATES: ReadonlySet<NodeState> = new Set(['succeeded', 'failed', 'upstream_failed', 'skipped']);

/** One node of a graph as a run stores it: its task type, upstream nodes, trigger rule and payload. */
export interface GraphNode {
  readonly type: string;
  readonly after: readonly string[];
  readonly trigger: TriggerRule;
  readonly payload: unknown;
}

/** A graph as a run stores it (its first step): nodes by name. */
export type Graph = Readonly<Record<string, GraphNode>>;

/** A node's name: lower snake case, 1-64 characters. */
export const NODE_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/**
 * Checks a graph: node names, upstreams that exist, no node its own upstream, no cycle.
 * @returns the nodes in a topological order (upstreams first, otherwise in declaration order)
 * @throws PipelineDefinitionError naming the pipeline and the node
 */
export function checkGraph(pipeline: string, graph: Graph): string[] {
  const where = `pipeline "${pipeline}"`;
  const names = Object.keys(graph);
  if (names.length === 0) throw new PipelineDefinitionError(`${where}: has no nodes`);
  for (const name of names) {
    if (!NODE_NAME.test(name)) {
      throw new PipelineDefinitionError(`${where}: node name "${name}" must match ${NODE_NAME}`);
    }
    const node = graph[name] as GraphNode;
    const seen = new Set<string>();
    for (const up of node.after) {
      if (!(up in graph)) {
        throw new PipelineDefinitionError(`${where}: node "${name}" runs after "${up}", which is not a node`);
      }
      if (up === name) throw new PipelineDefinitionError(`${where}: node "${name}" runs after itself`);
      if (seen.has(up)) throw new PipelineDefinitionError(`${where}: node "${name}" names "${up}" twice in after`);
      seen.add(up);
    }
    if (!(TRIGGER_RULES as readonly string[]).includes(node.trigger)) {
      throw new PipelineDefinitionError(
        `${where}: node "${name}": trigger must be one of ${TRIGGER_RULES.join(', ')}, got "${String(node.trigger)}"`,
      );
    }
  }
  const order = topologicalOrder(graph);
  if (order.length < names.length) {
    const cycle = findCycle(graph);
    throw new PipelineDefinitionError(`${where}: the nodes form a cycle: ${cycle.join(' → ')}`);
  }
  return order;
}

/** A topological order (upstreams first, otherwise in declaration order); shorter than the graph when it has a cycle. */
export function topologicalOrder(graph: Graph): string[] {
  const names = Object.keys(graph);
  const waiting = new Map(names.map((n) => [n, new Set((graph[n] as GraphNode).after)]));
  const order: string[] = [];
  for (let progress = true; progress; ) {
    progress = false;
    for (const name of names) {
      const ups = waiting.get(name);
      if (ups === undefined || [...ups].some((u) => !order.includes(u))) continue;
      order.push(name);
      waiting.delete(name);
      progress = true;
    }
  }
  return order;
}

/** One cycle of the graph (its first node repeated at the end), or [] when it has none. */
export function findCycle(graph: Graph): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (name: string): string[] | undefined => {
    if (state.get(name) === 'done') return undefined;
    if (state.get(name) === 'open') return [...path.slice(path.indexOf(name)), name];
    state.set(name, 'open');
    path.push(name);
    for (const up of graph[name]?.after ?? []) {
      const found = visit(up);
      if (found !== undefined) return found;
    }
    path.pop();
    state.set(name, 'done');
    return undefined;
  };
  for (const name of Object.keys(graph)) {
    const found = visit(name);
    if (found !== undefined) return found.reverse();
  }
  return [];
}

/** The nodes that depend on `name`, directly or not (not `name` itself), in graph order. */
export function downstreamOf(graph: Graph, name: string): string[] {
  const found = new Set<string>();
  for (let grew = true; grew; ) {
    grew = false;
    for (const [n, node] of Object.entries(graph)) {
      if (found.has(n)) continue;
      if (node.after.some((u) => u === name || found.has(u))) {
        found.add(n);
        grew = true;
      }
    }
  }
  return Object.keys(graph).filter((n) => found.has(n));
}

/**
 * What a node does once every upstream has ended (`ups`: their end states; none for a root):
 * - `all_success` (default): runs when all succeeded; `upstream_failed` when one failed or could
 *   not run for a failure; else (one was skipped) `skipped`;
 * - `all_done`: runs whatever they ended as;
 * - `one_failed`: runs when one failed (or could not run for a failure); else `skipped`;
 * - `none_failed`: runs when none failed (skipped ones are fine); else `upstream_failed`.
 */
export function decide(rule: TriggerRule, ups: readonly NodeState[]): 'run' | 'upstream_failed' | 'skipped' {
  const failed = ups.some((s) => s === 'failed' || s === 'upstream_failed');
  switch (rule) {
    case 'all_done':
      return 'run';
    case 'one_failed':
      return failed ? 'run' : 'skipped';
    case 'none_failed':
      return failed ? 'upstream_failed' : 'run';
    case 'all_success':
      if (failed) return 'upstream_failed';
      return ups.every((s) => s === 'succeeded') ? 'run' : 'skipped';
  }
}

/**
 * The states of the nodes that do not run, given those that have ended (`ended`): walks the
 * graph in order and settles each node whose upstreams have all ended and whose rule says it
 * does not run. Returns the nodes that may start now (upstreams ended, rule says run).
 */
export function settle(
  graph: Graph,
  order: readonly string[],
  states: Map<string, NodeState>,
): { readonly ready: string[] } {
  const ready: string[] = [];
  for (const name of order) {
    if (states.has(name)) continue;
    const ups = (graph[name] as GraphNode).after.map((u) => states.get(u));
    if (ups.some((s) => s === undefined || !ENDED_NODE_STATES.has(s))) continue;
    const decision = decide((graph[name] as GraphNode).trigger, ups as NodeState[]);
    if (decision === 'run') ready.push(name);
    else states.set(name, decision);
  }
  return { ready };
}

/**
 * The run's state once every node has ended: `failed` when any node failed or could not run for
 * a failure — whatever the leaves did (a leaf with `all_done` or `one_failed` that ran does not
 * make the run succeed) — else `succeeded` (skipped nodes are not failures).
 */
export function runStateOf(states: ReadonlyMap<string, NodeState>): 'succeeded' | 'failed' {
  for (const s of states.values()) if (s === 'failed' || s === 'upstream_failed') return 'failed';
  return 'succeeded';
}
