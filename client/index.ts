/**
 * `kaj/client`: the typed client of the task API (docs/api.md, "Calling Kaj from code"). Producers
 * inside AWS may submit directly instead, with the same client: `kaj/client/direct`.
 *
 * @module
 */
export {
  KajClient,
  type KajClientOptions,
  type SubmitOptions,
  type Submitted,
  type SubmittedItem,
  type TaskDetails,
} from './client.js';
export type {
  BackfillOptions,
  BackfillPlanItem,
  ClearOptions,
  NodeView,
  PipelineSummary,
  RunView,
} from './pipelines.js';
/** The client's errors: `KajClientError` and its subclasses. */
export * from './errors.js';
export type { PayloadsOf } from '../shared/task/define.js';
