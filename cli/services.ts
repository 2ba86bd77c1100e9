import { createKajOnAws, type Kaj } from '../shared/app.js';
import { TaskRegistry } from '../shared/task/define.js';
import { DynamoTaskTable, SqsDeadLetterQueues, SqsMessageMover, SqsQueueInspector } from './admin/aws.js';
import type { DeadLetterQueues } from './admin/dead-letters.js';
import type { CliContext } from './context.js';
import { resolveTarget, type Target, type TargetFlags } from './target.js';

/** Kaj's services on the target, and the CLI's own adapters on its queues and table. */
export interface Services {
  readonly target: Target;
  /** The domain with the deployment's settings: every record write goes through `kaj.lifecycle`. */
  readonly kaj: Kaj;
  readonly dlq: DeadLetterQueues;
  readonly inspector: SqsQueueInspector;
  readonly table: DynamoTaskTable;
  readonly mover: SqsMessageMover;
}

/** Resolves the target, wires Kaj's services on it, runs `fn`, and closes the clients. */
export async function withServices<T>(
  ctx: CliContext,
  flags: TargetFlags,
  fn: (s: Services) => Promise<T>,
  registry?: TaskRegistry,
): Promise<T> {
  const target = await resolveTarget(flags, ctx.env, ctx.cwd);
  try {
    const r = target.resources;
    const kaj = createKajOnAws(
      { tableName: r.tableName, queueUrls: r.queueUrls, deadLetterQueueUrls: r.dlqUrls, settings: target.settings },
      registry ?? new TaskRegistry([]),
      { sqs: target.sqs, dynamodb: target.dynamodb, clock: ctx.clock, random: ctx.random },
    );
    const raw = new SqsDeadLetterQueues(target.sqs, r.dlqUrls);
    return await fn({
      target,
      kaj,
      dlq: ctx.seams?.dlq ? ctx.seams.dlq(raw) : raw,
      inspector: new SqsQueueInspector(target.sqs, r),
      table: new DynamoTaskTable(target.dynamodb, r.tableName),
      mover: new SqsMessageMover(target.sqs, r),
    });
  } finally {
    target.close();
  }
}
