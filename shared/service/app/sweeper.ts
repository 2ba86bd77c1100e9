/**
 * The sweeper function's composition root: the outbox sweeper on DynamoDB and SQS. Imports
 * neither the API nor the consumer.
 *
 * @module
 */
import type { FunctionConfig } from '../../config/settings.js';
import { OutboxSweeper, type SweepReport } from '../sweeper/sweeper.js';
import { TaskLifecycle } from '../../task/lifecycle.js';
import { type FunctionOptions, functionDeps } from './on-aws.js';

export interface SweeperFunction {
  /** @param budgetMs stop starting new pages after this long */
  sweep(budgetMs?: number): Promise<SweepReport>;
}

/** The sweeper runs no task: it needs no registry (and its bundle carries no task type). */
export function createSweeperFunction(config: FunctionConfig, options: FunctionOptions = {}): SweeperFunction {
  const d = functionDeps(config, options);
  const sweeper = new OutboxSweeper(d, new TaskLifecycle(d));
  return { sweep: (budgetMs) => sweeper.sweep(budgetMs) };
}
