/**
 * The consumer function's composition root: the batch runner on DynamoDB and SQS. Imports
 * neither the API nor the sweeper.
 *
 * @module
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { FunctionConfig } from '../config/settings.js';
import { type InvocationContext, TaskConsumer } from '../consumer/consumer.js';
import type { TaskRegistry } from '../task/define.js';
import { TaskLifecycle } from '../task/lifecycle.js';
import { type FunctionOptions, functionDeps } from './on-aws.js';

export interface ConsumerFunction {
  processBatch(event: SQSEvent, context: InvocationContext): Promise<SQSBatchResponse>;
}

export function createConsumerFunction(
  config: FunctionConfig,
  registry: TaskRegistry,
  options: FunctionOptions = {},
): ConsumerFunction {
  const d = { ...functionDeps(config, options), registry };
  const consumer = new TaskConsumer(d, new TaskLifecycle(d));
  return { processBatch: (event, context) => consumer.processBatch(event, context) };
}
