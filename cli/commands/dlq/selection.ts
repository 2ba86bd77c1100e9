/** Which dead tasks a `kaj dlq` command acts on: the filter flags, the DLQs, how they are read. */
import { Option, type Command } from 'commander';
import { PRIORITIES, type Priority } from '../../../shared/config/resources.js';
import type { DeadLetterFilter } from '../../admin/dead-letters.js';
import type { FilterOptions } from '../../options.js';
import { collectTaskIds, parseDuration, parsePositiveInt } from '../../parse.js';
import type { Services } from '../../services.js';
import type { Target } from '../../target.js';

/** How long a listing hides each DLQ message it receives (it releases them right after). */
export const LIST_VISIBILITY_SECONDS = 30;

export const LISTING_EFFECTS = `
What reading a DLQ does to it:
  SQS has no "peek": to read a DLQ, kaj receives its messages (up to 10 per request) with a
  visibility timeout of ${LIST_VISIBILITY_SECONDS} s, and makes every message it did not delete visible again
  (ChangeMessageVisibility 0) as soon as it has read that DLQ — also on Ctrl-C. Meanwhile those
  messages are hidden from other readers (e.g. a redrive running elsewhere). Every read adds 1
  to a message's ApproximateReceiveCount; DLQs have no redrive policy of their own, so that
  never moves a message. If kaj is killed mid-read, the messages reappear by themselves when
  their visibility timeout ends (≤ ${LIST_VISIBILITY_SECONDS} s, more with a slow --rate).
  A message that SQS itself moved to the DLQ (maxReceiveCount) carries no error details: kaj
  reads its task record for them.`;

/** The DLQ filter flags shared by list, redrive and purge. */
export function addFilterOptions(cmd: Command, o: { task: boolean; limitHelp: string }): Command {
  cmd
    .addOption(new Option('--queue <priority>', 'only the DLQ of this priority').choices(PRIORITIES))
    .option('--type <type>', 'only tasks of this type')
    .option(
      '--error-contains <text>',
      'only tasks whose last error contains this text (case-insensitive; message, name or code)',
    )
    .option('--since <duration>', 'only tasks that died within this long, e.g. 30m, 2h, 7d', parseDuration)
    .option('--limit <n>', o.limitHelp, parsePositiveInt);
  if (o.task) cmd.option('--task <id...>', 'only these task ids', collectTaskIds);
  return cmd;
}

export function filterOf(o: FilterOptions, now: number): DeadLetterFilter {
  return {
    ...(o.type === undefined ? {} : { type: o.type }),
    ...(o.errorContains === undefined ? {} : { errorContains: o.errorContains }),
    ...(o.since === undefined ? {} : { since: now - o.since }),
    ...(o.task !== undefined && o.task.length > 0 ? { taskIds: o.task } : {}),
  };
}

export function queuesOf(o: FilterOptions): Priority[] {
  return o.queue === undefined ? [...PRIORITIES] : [o.queue];
}

/** Receive pacing for a target: the embedded emulator answers exactly, AWS samples. */
export function receiveTiming(target: Target): { waitSeconds: number; emptyReceivesToStop: number } {
  return target.exactReceives ? { waitSeconds: 0, emptyReceivesToStop: 1 } : { waitSeconds: 1, emptyReceivesToStop: 2 };
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

/** Messages in these DLQs now (visible and held), for the question and the progress bar. */
export async function dlqDepth(s: Services, queues: readonly Priority[]): Promise<number> {
  let n = 0;
  for (const p of queues) {
    const d = await s.inspector.depth('dlq', p);
    n += d.visible + d.inFlight;
  }
  return n;
}
