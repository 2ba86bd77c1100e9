import { createKajOnAws, type Kaj } from '../shared/app.js';
import { noMetrics, silentLogger } from '../shared/runtime/logger.js';
import { ScheduleService } from '../shared/schedule/service.js';
import { schedulerSettings } from '../shared/schedule/settings.js';
import { DynamoScheduleStore } from '../shared/store/dynamo-schedule-store.js';
import type { ScheduleStore } from '../shared/store/schedule-store.js';
import { TaskRegistry } from '../shared/task/define.js';
import { DynamoTaskTable, SqsDeadLetterQueues, SqsMessageMover, SqsQueueInspector } from './admin/aws.js';
import type { DeadLetterQueues } from './admin/dead-letters.js';
import type { CliContext } from './context.js';
import { CliError } from './errors.js';
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

/**
 * The schedules table of the target: `<prefix>-schedules` next to its task table `<prefix>-tasks`
 * (`resourceNames`, the same for `npm start` and a stack).
 */
export function schedulesTableOf(target: Pick<Target, 'label' | 'resources'>): string {
  const m = /^(.+)-tasks$/.exec(target.resources.tableName);
  if (m === null) {
    throw new CliError(
      `cannot tell the schedules table of ${target.label}: its task table "${target.resources.tableName}" is not named <prefix>-tasks`,
    );
  }
  return `${m[1]}-schedules`;
}

/**
 * Runs `fn` with the scheduler's service on the target (its schedules table, and Kaj's submitter
 * and lifecycle over the task types of tasks/index.ts). The CLI acts as an operator: it passes
 * `caller = undefined` and sees every schedule.
 */
export async function withSchedules<T>(
  ctx: CliContext,
  flags: TargetFlags,
  fn: (schedules: ScheduleService, s: Services) => Promise<T>,
): Promise<T> {
  const registry = await ctx.registry();
  return withServices(
    ctx,
    flags,
    (s) => {
      const table = schedulesTableOf(s.target);
      const service = new ScheduleService({
        schedules: explainMissingTable(new DynamoScheduleStore(s.target.dynamodb, table), table, s.target.label),
        submitter: s.kaj.submitter,
        lifecycle: s.kaj.lifecycle,
        registry,
        scheduling: schedulerSettings(),
        clock: ctx.clock,
        random: ctx.random,
        logger: silentLogger,
        metrics: noMetrics,
      });
      return fn(service, s);
    },
    registry,
  );
}

/**
 * The store, with "no such table" said as such: a stack deployed before schedules existed (or an
 * older `npm start`) has no schedules table, which DynamoDB reports as ResourceNotFoundException.
 */
function explainMissingTable(store: ScheduleStore, tableName: string, label: string): ScheduleStore {
  const wrap =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args);
      } catch (err) {
        let e: unknown = err;
        for (let i = 0; i < 4 && e instanceof Error; i += 1, e = e.cause) {
          if (e.name === 'ResourceNotFoundException') {
            throw new CliError(
              `${label} has no schedules table ${tableName}: deploy the stack again (or restart \`npm start\`) with a Kaj that has schedules`,
              1,
              { cause: err },
            );
          }
        }
        throw err;
      }
    };
  return {
    get: wrap(store.get.bind(store)),
    put: wrap(store.put.bind(store)),
    delete: wrap(store.delete.bind(store)),
    listDue: wrap(store.listDue.bind(store)),
    list: wrap(store.list.bind(store)),
  };
}
