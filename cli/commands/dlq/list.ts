import type { Command } from 'commander';
import { PRIORITIES } from '../../../shared/config/resources.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { summarize, type DeadEntry } from '../../admin/dead-letters.js';
import { listDeadLetters, type ListedDeadTask } from '../../admin/list.js';
import type { CliContext } from '../../context.js';
import { CliError } from '../../errors.js';
import { commonOptions, filterOptions, optionsOf } from '../../options.js';
import { ago, json, sideBySide, table, truncate } from '../../output.js';
import { parseTaskId } from '../../parse.js';
import { withServices } from '../../services.js';
import { recordLines } from '../task-record.js';
import {
  addFilterOptions,
  describeFilter,
  filterOf,
  LIST_VISIBILITY_SECONDS,
  LISTING_EFFECTS,
  queuesOf,
  receiveTiming,
} from './selection.js';

const FILTER_EXAMPLES = `
Filters combine (AND). Examples:
  kaj dlq list --local --type send_email --since 2h
  kaj dlq list --stack kaj-prod --queue high --error-contains timeout --json`;

/** `kaj dlq list`: dead tasks in the DLQs, read and released. */
export function registerList(dlq: Command, ctx: CliContext): void {
  const list = dlq
    .command('list')
    .description('list dead tasks in the DLQs (task, type, origin queue, attempts, last error, dead since)');
  addFilterOptions(list, { task: true, limitHelp: 'stop after N dead tasks (default 100)' });
  list
    .option('--json', 'print JSON')
    .addHelpText('after', `${FILTER_EXAMPLES}\n${LISTING_EFFECTS}`)
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, filterOptions);
      const filter = filterOf(o, ctx.clock.now());
      const queues = queuesOf(o);
      const limit = o.limit ?? 100;
      await withServices(ctx, o, async (s) => {
        const listing = await listDeadLetters(
          { dlq: s.dlq, store: s.kaj.store },
          {
            queues,
            filter,
            limit,
            visibilitySeconds: LIST_VISIBILITY_SECONDS,
            ...receiveTiming(s.target),
            loadRecords: true,
            signal: ctx.signal,
          },
        );
        if (o.json === true) {
          ctx.io.out(
            json({
              tasks: listing.tasks.map(listedJson),
              received: listing.scan.received,
              released: listing.scan.released,
            }),
          );
          return;
        }
        const now = ctx.clock.now();
        if (listing.tasks.length === 0) {
          ctx.io.out(
            `no dead tasks in the ${describeFilter(filter, queues)} (${listing.scan.received} message(s) read).\n`,
          );
          return;
        }
        ctx.io.out(
          table(
            ['TASK ID', 'TYPE', 'FROM', 'ATTEMPTS', 'STATUS', 'DEAD SINCE', 'LAST ERROR'],
            listing.tasks.map((t) => [
              t.taskId ?? `(message ${t.messageId.slice(0, 8)})`,
              t.type ?? '-',
              t.originPriority + (t.kind === 'moved_by_sqs' ? '*' : ''),
              t.attempts === undefined ? '-' : String(t.attempts),
              t.status ?? '-',
              ago(t.deadSince, now),
              truncate(t.lastError ?? (t.kind === 'unreadable' ? 'not a Kaj message' : '-'), 70),
            ]),
          ),
        );
        const moved = listing.tasks.some((t) => t.kind === 'moved_by_sqs');
        ctx.io.out(
          `\n${listing.tasks.length} dead task(s); ${listing.scan.received} message(s) read and released.` +
            (moved ? '\n* moved to the DLQ by SQS after maxReceiveCount receives (details from the task record)' : '') +
            (listing.tasks.length === limit ? '\n(limit reached: --limit N to see more)' : '') +
            '\n',
        );
      });
    });
}

/** `kaj dlq show`: a task's dead letter(s) and its record, side by side. */
export function registerShow(dlq: Command, ctx: CliContext): void {
  dlq
    .command('show')
    .description('show a dead task: its dead letter(s) and its task record side by side')
    .argument('<task-id>', 'the task id', parseTaskId)
    .option('--json', 'print JSON')
    .addHelpText('after', LISTING_EFFECTS)
    .action(async (taskId: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, commonOptions);
      await withServices(ctx, o, async (s) => {
        const listing = await listDeadLetters(
          { dlq: s.dlq, store: s.kaj.store },
          {
            queues: PRIORITIES,
            filter: { taskIds: [taskId] },
            visibilitySeconds: LIST_VISIBILITY_SECONDS,
            ...receiveTiming(s.target),
            signal: ctx.signal,
          },
        );
        const record = await s.kaj.store.get(taskId);
        if (record === undefined && listing.entries.length === 0) {
          throw new CliError(`task ${taskId}: no dead letter in the DLQs and no task record`);
        }
        if (o.json === true) {
          ctx.io.out(
            json({
              task_id: taskId,
              dead_letters: listing.entries.map((e) => ({
                message_id: e.messageId,
                dlq: e.dlq,
                kind: e.kind,
                receive_count: e.receiveCount ?? null,
                body: e.letter ?? null,
              })),
              record: record ?? null,
            }),
          );
          return;
        }
        const right = {
          title: 'TASK RECORD',
          lines: record === undefined ? ['(not found: expired or deleted)'] : recordLines(record, ctx.clock.now()),
        };
        if (listing.entries.length === 0) {
          ctx.io.out(sideBySide({ title: 'DEAD LETTER', lines: ['(none in the DLQs)'] }, right, ctx.io.columns ?? 120));
          return;
        }
        for (const e of listing.entries) {
          ctx.io.out(
            sideBySide(
              { title: `DEAD LETTER (${e.dlq} DLQ)`, lines: letterLines(e, record) },
              right,
              ctx.io.columns ?? 120,
            ),
          );
        }
      });
    });
}

function listedJson(t: ListedDeadTask) {
  return {
    task_id: t.taskId ?? null,
    type: t.type ?? null,
    origin_priority: t.originPriority,
    dlq: t.dlq,
    attempts: t.attempts ?? null,
    last_error: t.lastError ?? null,
    dead_since: t.deadSince ?? null,
    kind: t.kind,
    reason: t.reason ?? null,
    status: t.status ?? null,
    message_id: t.messageId,
    receive_count: t.receiveCount ?? null,
  };
}

function letterLines(e: DeadEntry, record: TaskRecord | undefined): string[] {
  const s = summarize({ ...e, record: record ?? null });
  return [
    `message id:   ${e.messageId}`,
    `kind:         ${e.kind === 'dead_letter' ? 'dead letter (written by the consumer)' : e.kind === 'moved_by_sqs' ? 'moved by SQS (maxReceiveCount)' : 'not a Kaj message'}`,
    `task id:      ${e.taskId ?? '-'}`,
    `dispatch id:  ${e.dispatchId ?? '-'}${record !== undefined && e.dispatchId !== undefined ? (record.dispatch_id === e.dispatchId ? ' (current)' : ' (obsolete)') : ''}`,
    `type:         ${s.type ?? '-'}`,
    `origin queue: ${e.originPriority}`,
    `attempts:     ${s.attempts ?? '-'}`,
    `reason:       ${s.reason ?? '-'}`,
    `last error:   ${s.lastError ?? '-'}`,
    `dead since:   ${s.deadSince ?? '-'}`,
    `receives:     ${e.receiveCount ?? '-'}`,
  ];
}
