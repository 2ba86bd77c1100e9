import { GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { createKajOnAws, DEVELOPMENT_ID_SECRET, type Kaj } from '../shared/service/all-in-one.js';
import { FlowControl } from '../shared/service/consumer/flow-control.js';
import { laneQueueNames } from '../shared/config/lanes.js';
import { PRIORITIES, type Priority, resourceNames } from '../shared/config/resources.js';
import { queueArnOf } from '../shared/aws/wiring.js';
import { noMetrics, silentLogger } from '../shared/runtime/logger.js';
import type { PipelineService } from '../shared/pipeline/service.js';
import { ScheduleService } from '../shared/schedule/service.js';
import { schedulerSettings } from '../shared/schedule/settings.js';
import { DynamoLimitStore } from '../shared/aws/dynamo-limit-store.js';
import type { LimitStore } from '../shared/limit/limit-store.js';
import type { LimitSpec } from '../shared/limit/spec.js';
import { DynamoScheduleStore } from '../shared/aws/dynamo-schedule-store.js';
import type { ScheduleStore } from '../shared/schedule/schedule-store.js';
import { TaskRegistry } from '../shared/task/define.js';
import { hasWorkflows } from '../shared/workflow/define.js';
import type { KajResources } from '../shared/aws/wiring.js';
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
  /** The target's resources, with the lanes' queues found. */
  readonly resources: KajResources;
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
  const s = await openServices(ctx, flags, registry);
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

/**
 * Resolves the target and wires Kaj's services on it, for as long as the caller needs them
 * (`kaj ui`, the console of `npm start`); `close()` closes the clients.
 */
export async function openServices(
  ctx: CliContext,
  flags: TargetFlags,
  registry?: TaskRegistry,
): Promise<Services & { close(): void }> {
  const target = await resolveTarget(flags, ctx.env, ctx.cwd);
  try {
    // A stack's outputs name the default lane's queues; the other lanes' are found by name
    // (tasks/lanes.ts), so a redrive sends each task back to its own lane.
    const r = target.resources.lanes === undefined ? await withLaneQueues(ctx, target) : target.resources;
    const types = registry ?? new TaskRegistry([]);
    const kaj = createKajOnAws(
      {
        tableName: r.tableName,
        queueUrls: r.queueUrls,
        deadLetterQueueUrls: r.deadLetterQueueUrls,
        laneQueueUrls: Object.fromEntries(Object.entries(r.lanes ?? {}).map(([lane, q]) => [lane, q.queueUrls])),
        // The CLI runs no task, but the domain it shares with the consumer refuses to exist
        // without a limiter when a type uses limits; naming the table makes no request.
        ...(FlowControl.needed(types) ? { limitsTableName: limitsTableOf(target) } : {}),
        // With a workflow type, `kaj.history` reads the runs' histories (naming the table makes no request).
        ...(hasWorkflows(types) ? { historyTableName: historyTableOf(target) } : {}),
        settings: target.settings,
      },
      types,
      { sqs: target.sqs, dynamodb: target.dynamodb, clock: ctx.clock, random: ctx.random },
    );
    const raw = new SqsDeadLetterQueues(target.sqs, r.deadLetterQueueUrls);
    return {
      target,
      kaj,
      resources: r,
      dlq: ctx.seams?.dlq ? ctx.seams.dlq(raw) : raw,
      inspector: new SqsQueueInspector(target.sqs, r),
      table: new DynamoTaskTable(target.dynamodb, r.tableName),
      mover: new SqsMessageMover(target.sqs, r),
      close: () => target.close(),
    };
  } catch (err) {
    target.close();
    throw err;
  }
}

/**
 * The resource prefix of the target (its stack name, or `kaj-local`), from its task table
 * `<prefix>-tasks` (`resourceNames`, the same for `npm start` and a stack).
 */
export function prefixOf(target: Pick<Target, 'label' | 'resources'>, what: string): string {
  const m = /^(.+)-tasks$/.exec(target.resources.tableName);
  if (m === null) {
    throw new CliError(
      `cannot tell the ${what} of ${target.label}: its task table "${target.resources.tableName}" is not named <prefix>-tasks`,
    );
  }
  return m[1] as string;
}

/** The schedules table of the target: `<prefix>-schedules` next to its task table. */
export function schedulesTableOf(target: Pick<Target, 'label' | 'resources'>): string {
  return resourceNames(prefixOf(target, 'schedules table')).schedules;
}

/** The limits table of the target: the one it names, else `<prefix>-limits` next to its task table. */
export function limitsTableOf(target: Pick<Target, 'label' | 'resources'>): string {
  return target.resources.limitsTableName ?? resourceNames(prefixOf(target, 'limits table')).limits;
}

/** The history table of the target: the one it names, else `<prefix>-history` next to its task table. */
export function historyTableOf(target: Pick<Target, 'label' | 'resources'>): string {
  return target.resources.historyTableName ?? resourceNames(prefixOf(target, 'history table')).history;
}

/**
 * The limits table of the target and the declared limits, for `collectStats` (`kaj stats`, the
 * console). A stack deployed before limits existed has no limits table: no limits, not an error.
 */
export function limitsOf(
  s: Pick<Services, 'target'>,
  specs: ReadonlyMap<string, LimitSpec>,
): { readonly store: Pick<LimitStore, 'list'>; readonly specs: ReadonlyMap<string, LimitSpec> } {
  const store = new DynamoLimitStore(s.target.dynamodb, limitsTableOf(s.target));
  return { store: { list: () => store.list().catch(noTable) }, specs };
}

/** `[]` for a missing table (ResourceNotFoundException anywhere in the cause chain); rethrows the rest. */
function noTable(err: unknown): [] {
  for (let e: unknown = err, i = 0; i < 4 && e instanceof Error; i += 1, e = e.cause) {
    if (e.name === 'ResourceNotFoundException') return [];
  }
  throw err;
}

/** The target's resources with the queues of the lanes of tasks/lanes.ts that exist there. */
async function withLaneQueues(ctx: CliContext, target: Target): Promise<KajResources> {
  const lanes = Object.keys((await ctx.registry()).lanes);
  if (lanes.length === 0) return target.resources;
  const prefix = prefixOf(target, 'lane queues');
  const found: Record<string, { queueUrls: Record<Priority, string>; queueArns: Record<Priority, string> }> = {};
  for (const lane of lanes) {
    const names = laneQueueNames(prefix, lane);
    try {
      const queueUrls = {} as Record<Priority, string>;
      const queueArns = {} as Record<Priority, string>;
      for (const p of PRIORITIES) {
        const out = await target.sqs.send(new GetQueueUrlCommand({ QueueName: names[p] }));
        if (out.QueueUrl === undefined) throw new Error(`no URL for ${names[p]}`);
        queueUrls[p] = out.QueueUrl;
        queueArns[p] = await queueArnOf(target.sqs, out.QueueUrl);
      }
      found[lane] = { queueUrls, queueArns };
    } catch (err) {
      // A lane declared here but not deployed there: its tasks (if any) went to the default lane.
      if (!(err instanceof Error && /NonExistentQueue|QueueDoesNotExist/.test(err.name))) throw err;
    }
  }
  return { ...target.resources, lanes: found };
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
  return withServices(ctx, flags, (s) => fn(scheduleServiceOf(ctx, s, registry), s), registry);
}

/**
 * Runs `fn` with the pipelines' service on the target and the scheduler's (a pipeline's schedule
 * is the schedule of its name), over the task types of tasks/index.ts, as an operator.
 */
export function withPipelines<T>(
  ctx: CliContext,
  flags: TargetFlags,
  fn: (pipelines: PipelineService, schedules: ScheduleService) => Promise<T>,
): Promise<T> {
  return withSchedules(ctx, flags, (schedules, s) => fn(pipelineServiceOf(s.kaj), schedules));
}

/** The pipelines' service Kaj builds on the target (the runs' histories in `kaj.history`). */
export function pipelineServiceOf(kaj: Pick<Kaj, 'pipelines'>): PipelineService {
  // A pipeline is a workflow type: without one the target has no history table to read runs from.
  if (kaj.pipelines === undefined) throw new CliError('tasks/index.ts declares no pipeline: nothing to act on');
  return kaj.pipelines;
}

/** The scheduler's service on the target of `s` (see {@link withSchedules}). */
export function scheduleServiceOf(ctx: CliContext, s: Services, registry: TaskRegistry): ScheduleService {
  const table = schedulesTableOf(s.target);
  return new ScheduleService({
    schedules: explainMissingTable(new DynamoScheduleStore(s.target.dynamodb, table), table, s.target.label),
    submitter: s.kaj.submitter,
    lifecycle: s.kaj.lifecycle,
    registry,
    scheduling: schedulerSettings(),
    clock: ctx.clock,
    logger: silentLogger,
    metrics: noMetrics,
    // The CLI's listing cursors are its own (as its task listing's: createKajOnAws's development key).
    idSecret: DEVELOPMENT_ID_SECRET,
  });
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
