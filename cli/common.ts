import { Option, type Command } from 'commander';
import {
  DynamoTaskTable,
  SqsDeadLetterQueues,
  SqsMessageMover,
  SqsQueueInspector,
} from '../shared/admin/aws.js';
import type { DeadLetterFilter, DeadLetterQueues } from '../shared/admin/dead-letters.js';
import { createKajOnAws, type Kaj } from '../shared/app.js';
import { PRIORITIES, type Priority } from '../shared/config/resources.js';
import { runtimeSettings } from '../shared/config/settings.js';
import { TaskRegistry } from '../shared/task/define.js';
import type { CliContext } from './context.js';
import { UsageError } from './errors.js';
import { collectTaskIds, parseDuration, parsePositiveInt } from './parse.js';
import { resolveTarget, type Target, type TargetFlags } from './target.js';

/** How long a listing hides each DLQ message it receives (it releases them right after). */
export const LIST_VISIBILITY_SECONDS = 30;

export interface GlobalOpts extends TargetFlags {
  readonly json?: boolean;
}

export interface Services {
  readonly target: Target;
  readonly kaj: Kaj;
  readonly dlq: DeadLetterQueues;
  readonly inspector: SqsQueueInspector;
  readonly table: DynamoTaskTable;
  readonly mover: SqsMessageMover;
}

export function targetFlags(o: Record<string, unknown>): TargetFlags {
  return {
    ...(typeof o.stack === 'string' ? { stack: o.stack } : {}),
    ...(o.local === true ? { local: true } : {}),
    ...(typeof o.endpointUrl === 'string' ? { endpointUrl: o.endpointUrl } : {}),
    ...(typeof o.region === 'string' ? { region: o.region } : {}),
    ...(typeof o.profile === 'string' ? { profile: o.profile } : {}),
  };
}

/** Resolves the target, wires Kaj's services on it, runs `fn`, and closes the clients. */
export async function withServices<T>(
  ctx: CliContext,
  opts: Record<string, unknown>,
  fn: (s: Services) => Promise<T>,
  registry?: TaskRegistry,
): Promise<T> {
  const target = await resolveTarget(targetFlags(opts), ctx.env, ctx.cwd);
  try {
    const r = target.resources;
    const kaj = createKajOnAws(
      { tableName: r.tableName, queueUrls: r.queueUrls, deadLetterQueueUrls: r.dlqUrls, settings: runtimeSettings() },
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

/** The DLQ filter flags shared by list, redrive and purge. */
export function addFilterOptions(cmd: Command, o: { task: boolean; limitHelp: string }): Command {
  cmd
    .addOption(new Option('--queue <priority>', 'only the DLQ of this priority').choices(PRIORITIES))
    .option('--type <type>', 'only tasks of this type')
    .option('--error-contains <text>', "only tasks whose last error contains this text (case-insensitive; message, name or code)")
    .option('--since <duration>', 'only tasks that died within this long, e.g. 30m, 2h, 7d', parseDuration)
    .option('--limit <n>', o.limitHelp, parsePositiveInt);
  if (o.task) cmd.option('--task <id...>', 'only these task ids', collectTaskIds);
  return cmd;
}

export function filterOf(o: Record<string, unknown>, now: number): DeadLetterFilter {
  const taskIds = Array.isArray(o.task) ? (o.task as string[]) : undefined;
  return {
    ...(typeof o.type === 'string' ? { type: o.type } : {}),
    ...(typeof o.errorContains === 'string' ? { errorContains: o.errorContains } : {}),
    ...(typeof o.since === 'number' ? { since: now - o.since } : {}),
    ...(taskIds !== undefined && taskIds.length > 0 ? { taskIds } : {}),
  };
}

export function queuesOf(o: Record<string, unknown>): Priority[] {
  return typeof o.queue === 'string' ? [o.queue as Priority] : [...PRIORITIES];
}

/** Receive pacing for a target: the embedded emulator answers exactly, AWS samples. */
export function receiveTiming(target: Target): { waitSeconds: number; emptyReceivesToStop: number } {
  return target.exactReceives ? { waitSeconds: 0, emptyReceivesToStop: 1 } : { waitSeconds: 1, emptyReceivesToStop: 2 };
}

/** Asks on a terminal; refuses (usage error) when there is none to ask on. */
export async function confirm(ctx: CliContext, question: string, what: string): Promise<boolean> {
  if (!ctx.io.stdinIsTTY || !ctx.io.stderrIsTTY) {
    throw new UsageError(`refusing to ${what} without --yes (no terminal to ask on). Add --yes, or --dry-run to preview.`);
  }
  const answer = await ctx.prompt(`${question} [y/N] `);
  return /^y(es)?$/i.test(answer.trim());
}

export function describeFilter(f: DeadLetterFilter, queues: readonly Priority[], limit?: number): string {
  const parts: string[] = [];
  if (f.type !== undefined) parts.push(`type=${f.type}`);
  if (f.errorContains !== undefined) parts.push(`error contains "${f.errorContains}"`);
  if (f.since !== undefined) parts.push(`died since ${new Date(f.since).toISOString()}`);
  if (f.taskIds !== undefined) parts.push(`task ${f.taskIds.join(', ')}`);
  if (limit !== undefined) parts.push(`at most ${limit}`);
  return `${queues.join(', ')} DLQ${queues.length > 1 ? 's' : ''}${parts.length > 0 ? `, ${parts.join(', ')}` : ', every message'}`;
}
