/**
 * A pipeline run as the API, the CLI and the console show it: its state and each node's, read
 * from the run's record and history (the graph it recorded, its nodes' starts and ends) and, for
 * nodes still going, their tasks. Nodes that did not run are settled here by the same trigger
 * rules the run applies (`graph.ts`): nothing of theirs is written.
 *
 * @module
 */
import type { TaskRecord } from '../task/model.js';
import type { TaskStore } from '../task/task-store.js';
import { admissionKey, type HistoryEntry, openingOf } from '../workflow/history-store.js';
import type { PipelineDefinition } from './define.js';
import { checkGraph, type Graph, type NodeState, settle } from './graph.js';
import { childNameOf, GRAPH_STEP, generationsOf } from './run.js';

/** A run's state: `queued` until it holds an active-run slot, `running` after. */
export type RunState = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** A node's state as shown: the run's states, plus `queued` (its task waits) and `cancelled`. */
export type NodeViewState = NodeState | 'queued' | 'cancelled';

export interface NodeView {
  readonly name: string;
  readonly type: string;
  readonly after: readonly string[];
  readonly trigger: string;
  readonly state: NodeViewState;
  /** Its task (the latest run of the node), once started. */
  readonly task_id?: string;
  /** Its task's attempts, when looked up. */
  readonly attempts?: number;
  /** 1, or how many times it has run after clears. */
  readonly try: number;
}

export interface RunView {
  readonly pipeline: string;
  readonly logical_date: string;
  readonly run_id: string;
  readonly status: RunState;
  readonly data_interval?: { readonly start: string; readonly end: string };
  readonly created_at: string;
  readonly updated_at: string;
  /** Why the run failed, when it did. */
  readonly error?: string;
  readonly nodes: NodeView[];
}

/** The run's state from its record and history. */
export function runStateOf(record: TaskRecord, entries: readonly HistoryEntry[]): RunState {
  switch (record.status) {
    case 'succeeded':
    case 'failed':
    case 'cancelled':
      return record.status;
    case 'queued':
      return 'queued';
    default: {
      // Waiting for a slot: not admitted in this opening, and no node started since it began (a
      // deployment without a limits table admits every run without recording it).
      const since = Math.max(Number.NEGATIVE_INFINITY, ...entries.filter((e) => e.kind === 'reopen').map((e) => e.at));
      const admitted = entries.some((e) => e.key === admissionKey(openingOf(entries)));
      const started = entries.some((e) => e.kind === 'child_start' && e.at >= since);
      return record.status === 'waiting' && !admitted && !started ? 'queued' : 'running';
    }
  }
}

/**
 * The run's view. `lookup`: where the nodes' tasks are read (their attempts; the state of those
 * whose end is not recorded); without it such nodes show `running` and no attempts.
 */
export async function runView(
  def: PipelineDefinition,
  logicalDate: string,
  record: TaskRecord,
  entries: readonly HistoryEntry[],
  lookup?: TaskStore,
): Promise<RunView> {
  const byKey = new Map(entries.map((e) => [e.key, e]));
  const recorded = byKey.get(`step#${GRAPH_STEP}`)?.value as Graph | undefined;
  const graph = recorded ?? def.pipeline.graph;
  const order = checkGraph(def.pipeline.name, graph);
  const gens = generationsOf(entries);
  const states = new Map<string, NodeState>();
  const shown = new Map<string, Omit<NodeView, 'name' | 'type' | 'after' | 'trigger'>>();
  /** Nodes with a task: looked up (state while open, attempts always) when `lookup` is given. */
  const tasks: { name: string; id: string; gen: number; ended: boolean }[] = [];
  for (const name of order) {
    const gen = gens.get(name) ?? 1;
    const child = childNameOf(name, gen);
    const end = byKey.get(`child#${child}`);
    const start = byKey.get(`child_start#${child}`);
    if (end !== undefined) {
      const state: NodeState = end.child_status === 'succeeded' ? 'succeeded' : 'failed';
      states.set(name, state);
      shown.set(name, {
        state: end.child_status === 'cancelled' ? 'cancelled' : state,
        ...(end.child_id === undefined ? {} : { task_id: end.child_id }),
        try: gen,
      });
      if (end.child_id !== undefined) tasks.push({ name, id: end.child_id, gen, ended: true });
    } else if (start !== undefined) {
      states.set(name, 'running');
      shown.set(name, {
        state: 'running',
        ...(start.child_id === undefined ? {} : { task_id: start.child_id }),
        try: gen,
      });
      if (start.child_id !== undefined) tasks.push({ name, id: start.child_id, gen, ended: false });
    }
  }
  settle(graph, order, states);
  if (lookup !== undefined) {
    await Promise.all(
      tasks.map(async (o) => {
        const task = await lookup.get(o.id, { consistent: false });
        if (task === undefined) return;
        const known = shown.get(o.name);
        if (o.ended && known !== undefined) {
          shown.set(o.name, { ...known, attempts: task.attempts });
          return;
        }
        const state: NodeViewState =
          task.status === 'queued' || task.status === 'retrying' || task.status === 'waiting'
            ? 'queued'
            : task.status === 'running'
              ? 'running'
              : task.status;
        shown.set(o.name, { state, task_id: o.id, attempts: task.attempts, try: o.gen });
      }),
    );
  }
  const nodes = order.map((name): NodeView => {
    const n = graph[name] as Graph[string];
    // A node that never ended in a run that did (cancelled, or past its deadline) was stopped.
    const left: NodeViewState = record.status === 'cancelled' || record.status === 'failed' ? 'cancelled' : 'pending';
    const s = shown.get(name) ?? { state: states.get(name) ?? left, try: gens.get(name) ?? 1 };
    return { name, type: n.type, after: n.after, trigger: n.trigger, ...s };
  });
  return {
    pipeline: def.pipeline.name,
    logical_date: logicalDate,
    run_id: record.task_id,
    status: runStateOf(record, entries),
    ...(record.data_interval === undefined ? {} : { data_interval: record.data_interval }),
    created_at: record.created_at,
    updated_at: record.updated_at,
    ...(record.status === 'failed' && record.last_error !== undefined ? { error: record.last_error.message } : {}),
    nodes,
  };
}
