/**
 * A pipeline as its runs and views read it (`definePipeline` makes it): its timing, limits and
 * graph.
 *
 * @module
 */
import type { AnyTaskDefinition } from '../task/define.js';
import type { PipelineTiming } from './dates.js';
import type { Graph } from './graph.js';

/** What the pipeline adds to its workflow type. */
export interface PipelineSpec {
  readonly name: string;
  readonly description?: string;
  readonly timing: PipelineTiming;
  readonly maxActiveRuns: number;
  /** Most runs one backfill (or one listing of runs) may name. */
  readonly maxBackfillRuns: number;
  readonly catchup: boolean;
  /** The graph, as a run records it when it starts. */
  readonly graph: Graph;
  /** Node names, upstreams first. */
  readonly order: readonly string[];
  /** The node types' definitions, by type. */
  readonly types: ReadonlyMap<string, AnyTaskDefinition>;
}
