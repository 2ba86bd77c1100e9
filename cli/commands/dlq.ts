import { Option, type Command } from 'commander';
import { isEmptyFilter, type DeadEntry } from '../../shared/admin/dead-letters.js';
import { listDeadLetters, type ListedDeadTask } from '../../shared/admin/list.js';
import { nativeRedrive, type NativeQueueReport } from '../../shared/admin/native.js';
import type { BatchCounts, ReportItem } from '../../shared/admin/process.js';
import { purgeDeadLetters } from '../../shared/admin/purge.js';
import { redriveDeadLetters } from '../../shared/admin/redrive.js';
import { summarize } from '../../shared/admin/dead-letters.js';
import { PRIORITIES, type Priority } from '../../shared/config/resources.js';
import type { TaskRecord } from '../../shared/task/model.js';
import {
  addFilterOptions,
  confirm,
  describeFilter,
  filterOf,
  LIST_VISIBILITY_SECONDS,
  queuesOf,
  receiveTiming,
  withServices,
  type Services,
} from '../common.js';
import type { CliContext } from '../context.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { ago, json, Progress, sideBySide, table, truncate } from '../output.js';
import { parseRate, parseTarget, parseTaskId } from '../parse.js';
import type { RunState } from '../program.js';

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

/** Pages of 10 handled at once by redrive and purge (receiving goes on meanwhile). */
const PIPELINE = 3;

const FILTER_EXAMPLES = `
Filters combine (AND). Examples:
  kaj dlq list --local --type send_email --since 2h
  kaj dlq list --stack kaj-prod --queue high --error-contains timeout --json`;

export function registerDlq(program: Command, ctx: CliContext, state: RunState): void {
  const dlq = program
    .command('dlq')
    .description('dead tasks: list, show, redrive, purge')
    .addHelpText('after', LISTING_EFFECTS);

  const list = dlq.command('list').description('list dead tasks in the DLQs (task, type, origin queue, attempts, last error, dead since)');
  addFilterOptions(list, { task: true, limitHelp: 'stop after N dead tasks (default 100)' });
  list
    .option('--json', 'print JSON')
    .addHelpText('after', `${FILTER_EXAMPLES}\n${LISTING_EFFECTS}`)
    .action(async (_o: unknown, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      const filter = filterOf(o, ctx.clock.now());
      const queues = queuesOf(o);
      await withServices(ctx, o, async (s) => {
        const listing = await listDeadLetters(
          { dlq: s.dlq, store: s.kaj.store },
          {
            queues,
            filter,
            limit: (o.limit as number | undefined) ?? 100,
            visibilitySeconds: LIST_VISIBILITY_SECONDS,
            ...receiveTiming(s.target),
            loadRecords: true,
            signal: ctx.signal,
          },
        );
        if (o.json === true) {
          ctx.io.out(json({ tasks: listing.tasks.map(listedJson), received: listing.scan.received, released: listing.scan.released }));
          return;
        }
        const now = ctx.clock.now();
        if (listing.tasks.length === 0) {
          ctx.io.out(`no dead tasks in the ${describeFilter(filter, queues)} (${listing.scan.received} message(s) read).\n`);
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
            (listing.tasks.length === ((o.limit as number | undefined) ?? 100) ? '\n(limit reached: --limit N to see more)' : '') +
            '\n',
        );
      });
    });

  dlq
    .command('show')
    .description('show a dead task: its dead letter(s) and its task record side by side')
    .argument('<task-id>', 'the task id', parseTaskId)
    .option('--json', 'print JSON')
    .addHelpText('after', LISTING_EFFECTS)
    .action(async (taskId: string, _o: unknown, cmd: Command) => {
      const o = cmd.optsWithGlobals();
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
              dead_letters: listing.entries.map((e) => ({ message_id: e.messageId, dlq: e.dlq, kind: e.kind, receive_count: e.receiveCount ?? null, body: e.letter ?? null })),
              record: record ?? null,
            }),
          );
          return;
        }
        const right = { title: 'TASK RECORD', lines: record === undefined ? ['(not found: expired or deleted)'] : recordLines(record, ctx.clock.now()) };
        if (listing.entries.length === 0) {
          ctx.io.out(sideBySide({ title: 'DEAD LETTER', lines: ['(none in the DLQs)'] }, right, ctx.io.columns ?? 120));
          return;
        }
        for (const e of listing.entries) {
          ctx.io.out(sideBySide({ title: `DEAD LETTER (${e.dlq} DLQ)`, lines: letterLines(e, record) }, right, ctx.io.columns ?? 120));
        }
      });
    });

  const redrive = dlq
    .command('redrive')
    .description('re-queue dead tasks: reset each task record, send it to a queue, then delete its dead letter');
  addFilterOptions(redrive, { task: true, limitHelp: 'redrive at most N tasks' });
  redrive
    .addOption(new Option('--to <queue>', 'where to send them: original (the queue each died on), high, normal or low').default('original').argParser(parseTarget))
    .option('--rate <n/s>', 'at most this many tasks per second, e.g. 20/s (default: as fast as it goes)', parseRate)
    .option('--dry-run', 'show what would happen, change nothing')
    .option('--yes', 'do not ask for confirmation (required when not on a terminal)')
    .option('--keep-attempts', 'keep the attempt count (default: reset to 0, so each task gets its full retries again)')
    .option('--reason <text>', 'why, for the audit entry of each task')
    .option('--native', "use SQS's StartMessageMoveTask for whole DLQs (see below); no filters")
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
For each selected dead letter, in this order (so that Ctrl-C or a crash at any point loses nothing):
  1. the task record is reset in one conditional write (only if the task is still failed with
     this letter's dispatch id): status queued, attempts 0 (unless --keep-attempts),
     redrive_count + 1, an audit entry (you, the time, --reason), a new dispatch id, and an
     outbox entry — from here on the task runs even if kaj dies (the sweeper sends it);
  2. the task message is sent to the target queue;
  3. the dead letter is deleted.
Running it again finishes an interrupted redrive: a letter whose task was already redriven is just
deleted (or its owed message sent first). Duplicated sends are absorbed by the consumer, which
runs a message only if its dispatch id is the task's current one.
Messages SQS moved to a DLQ (maxReceiveCount, no kaj attributes) are handled too: their origin is
the DLQ they are in and their details come from the task record; a task still waiting gets its
message re-sent.
A task named with --task whose dead letter is not in the DLQs (deleted by hand, expired, or
held by another reader right now) is redriven from its task record if that says it is dead
(failed, not purged); a named task that cannot be redriven is reported as failed (exit 1).

Exit status: 0 all done, 1 some failed (listed), 2 usage error, 130 interrupted.

--native: SQS's StartMessageMoveTask moves a whole DLQ in bulk, server-side. A moved message
keeps its old dispatch id and the task record would still say failed, so the consumer would drop
it: kaj therefore first resets every failed, not discarded task of that priority (a table Scan;
same dispatch id, plus an outbox entry so the sweeper sends it should the move fail), then starts
the move, then re-writes the dead letters of tasks that died while it ran. Trade-offs: no filters
or --limit; it resets every failed task whose letter could still be in the DLQ (died within
the 14-day DLQ retention) even if someone deleted the letter by hand; duplicate messages are
possible (absorbed). The embedded emulator of \`npm start\` implements it; moto does not (kaj
checks first and changes nothing there).

Examples:
  kaj dlq redrive --local --type send_email --dry-run
  kaj dlq redrive --stack kaj-prod --type send_email --since 2h --rate 20/s --reason "SES quota fixed" --yes
  kaj dlq redrive --stack kaj-prod --task t_abc t_def --to high --yes
${LISTING_EFFECTS}`,
    )
    .action(async (_o: unknown, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      const filter = filterOf(o, ctx.clock.now());
      const queues = queuesOf(o);
      if (o.native === true) {
        if (!isEmptyFilter(filter) || o.limit !== undefined) {
          throw new UsageError('--native moves whole DLQs: it takes no --type, --error-contains, --since, --task or --limit (--queue picks one DLQ)');
        }
        await withServices(ctx, o, (s) => runNative(ctx, state, s, o, queues));
        return;
      }
      await withServices(ctx, o, async (s) => {
        const depth = await dlqDepth(s, queues);
        const to = o.to === 'original' ? 'the queue each died on' : `the ${o.to as string} queue`;
        const question = `Redrive dead tasks from the ${describeFilter(filter, queues, o.limit as number | undefined)} (${depth} message(s) there now) to ${to}?`;
        if (!(await approved(ctx, state, o, question, 'redrive'))) return;
        const progress = new Progress(ctx.io, o.dryRun === true ? 'checking' : 'redriving', (o.limit as number | undefined) ?? depth);
        const rate = o.rate as number | undefined;
        const report = await redriveDeadLetters(
          { dlq: s.dlq, store: s.kaj.store, lifecycle: s.kaj.lifecycle, clock: ctx.clock, sleep: ctx.sleep, random: ctx.random },
          {
            queues,
            filter,
            ...(o.limit === undefined ? {} : { limit: o.limit as number }),
            visibilitySeconds: LIST_VISIBILITY_SECONDS + (rate === undefined ? 0 : Math.ceil((10 * PIPELINE) / rate)),
            ...receiveTiming(s.target),
            signal: ctx.signal,
            dryRun: o.dryRun === true,
            pipeline: PIPELINE,
            ...(rate === undefined ? {} : { ratePerSecond: rate }),
            to: o.to as 'original' | Priority,
            keepAttempts: o.keepAttempts === true,
            actor: ctx.actor,
            ...(typeof o.reason === 'string' ? { reason: o.reason } : {}),
            onProgress: (c) => progress.update(c.done + c.skipped + c.failed, countsText(c, 'redriven')),
          },
        );
        progress.finish();
        state.exitCode = finishBatch(ctx, o.json === true, report, { key: 'redriven', count: report.redriven, verb: 'redrive' });
      });
    });

  const purge = dlq
    .command('purge')
    .description('delete dead tasks for good: mark each task discarded (audited), then delete its dead letter');
  addFilterOptions(purge, { task: true, limitHelp: 'purge at most N tasks' });
  purge
    .option('--dry-run', 'show what would happen, change nothing')
    .option('--yes', 'do not ask for confirmation (required when not on a terminal)')
    .option('--reason <text>', 'why, for the audit entry of each task')
    .option('--rate <n/s>', 'at most this many tasks per second', parseRate)
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
For each selected dead letter: the task record gets discarded_at and an audit entry
{action: purge, by, at, reason} in one conditional write (status stays failed; the record then
expires after the usual retention), and only then the dead letter is deleted; a re-run finishes
an interrupted purge. A letter SQS moved for a task that is still waiting (queued/retrying) is
that task's only message: the task is cancelled (and marked) so it does not wait forever.
Obsolete letters (task redriven or finished since) and non-Kaj messages are just deleted.
A task named with --task that has no dead letter in the DLQs is discarded from its task record if
that says it is dead (failed); a named task that cannot be purged is reported as failed (exit 1).
SQS's PurgeQueue is not used: it cannot filter, does not mark tasks, and takes up to 60 s.
${LISTING_EFFECTS}`,
    )
    .action(async (_o: unknown, cmd: Command) => {
      const o = cmd.optsWithGlobals();
      const filter = filterOf(o, ctx.clock.now());
      const queues = queuesOf(o);
      await withServices(ctx, o, async (s) => {
        const depth = await dlqDepth(s, queues);
        const question = `Purge (discard for good) dead tasks from the ${describeFilter(filter, queues, o.limit as number | undefined)} (${depth} message(s) there now)?`;
        if (!(await approved(ctx, state, o, question, 'purge'))) return;
        const progress = new Progress(ctx.io, o.dryRun === true ? 'checking' : 'purging', (o.limit as number | undefined) ?? depth);
        const rate = o.rate as number | undefined;
        const report = await purgeDeadLetters(
          { dlq: s.dlq, store: s.kaj.store, clock: ctx.clock, sleep: ctx.sleep },
          {
            queues,
            filter,
            ...(o.limit === undefined ? {} : { limit: o.limit as number }),
            visibilitySeconds: LIST_VISIBILITY_SECONDS + (rate === undefined ? 0 : Math.ceil((10 * PIPELINE) / rate)),
            ...receiveTiming(s.target),
            signal: ctx.signal,
            dryRun: o.dryRun === true,
            pipeline: PIPELINE,
            ...(rate === undefined ? {} : { ratePerSecond: rate }),
            actor: ctx.actor,
            ...(typeof o.reason === 'string' ? { reason: o.reason } : {}),
            onProgress: (c) => progress.update(c.done + c.skipped + c.failed, countsText(c, 'purged')),
          },
        );
        progress.finish();
        state.exitCode = finishBatch(ctx, o.json === true, report, { key: 'purged', count: report.purged, verb: 'purge' });
      });
    });
}

async function dlqDepth(s: Services, queues: readonly Priority[]): Promise<number> {
  let n = 0;
  for (const p of queues) {
    const d = await s.inspector.depth('dlq', p);
    n += d.visible + d.inFlight;
  }
  return n;
}

function countsText(c: Readonly<BatchCounts>, done: string): string {
  return `${done} ${c.done}  skipped ${c.skipped}  failed ${c.failed}`;
}

/** A batch that changes things goes ahead with --dry-run, --yes, or a yes on the terminal. */
async function approved(
  ctx: CliContext,
  state: RunState,
  o: { dryRun?: unknown; yes?: unknown },
  question: string,
  what: string,
): Promise<boolean> {
  if (o.dryRun === true || o.yes === true) return true;
  if (await confirm(ctx, question, what)) return true;
  ctx.io.err('nothing was changed.\n');
  state.exitCode = EXIT.failure;
  return false;
}

interface BatchReport {
  readonly dryRun: boolean;
  readonly interrupted: boolean;
  readonly selected: number;
  readonly skipped: number;
  readonly failed: number;
  readonly items: readonly ReportItem[];
}

/** Prints a redrive/purge report (JSON or text) and returns the exit code. */
function finishBatch(
  ctx: CliContext,
  asJson: boolean,
  report: BatchReport,
  done: { readonly key: 'redriven' | 'purged'; readonly count: number; readonly verb: 'redrive' | 'purge' },
): number {
  const counts = { selected: report.selected, [done.key]: done.count, skipped: report.skipped, failed: report.failed };
  if (asJson) {
    ctx.io.out(json({ dry_run: report.dryRun, interrupted: report.interrupted, ...counts, items: report.items }));
  } else {
    writeBatchText(ctx, report.items, report.dryRun, report.interrupted);
    ctx.io.out(
      `${report.dryRun ? 'dry run: ' : ''}selected ${report.selected}: ${report.dryRun ? `would ${done.verb}` : done.key} ${done.count}, skipped ${report.skipped}, failed ${report.failed}\n`,
    );
  }
  return report.interrupted ? EXIT.interrupted : report.failed > 0 ? EXIT.failure : EXIT.ok;
}

function writeBatchText(ctx: CliContext, items: readonly ReportItem[], dryRun: boolean, interrupted: boolean): void {
  const shown = dryRun ? items : items.filter((i) => i.outcome === 'failed');
  if (shown.length > 0) {
    const rows = shown
      .slice(0, 200)
      .map((i) => [i.task_id ?? `(message ${(i.message_id ?? '').slice(0, 8)})`, i.dlq ?? '-', i.action, i.outcome, truncate(i.detail ?? '', 90)]);
    if (!dryRun) ctx.io.out('failed:\n');
    ctx.io.out(table(['TASK ID', 'DLQ', 'ACTION', 'OUTCOME', 'DETAIL'], rows));
    if (shown.length > rows.length) ctx.io.out(`… and ${shown.length - rows.length} more (--json for all)\n`);
  }
  if (dryRun) ctx.io.out('dry run: nothing was changed; every message read was released.\n');
  if (interrupted) ctx.io.out('interrupted: the rest was not touched; messages held were released. Run again to continue.\n');
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
  const lines = [
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
  return lines;
}

export function recordLines(r: TaskRecord, now: number): string[] {
  const lines = [
    `task id:      ${r.task_id}`,
    `status:       ${r.status}${r.discarded_at !== undefined ? ` (discarded ${r.discarded_at})` : ''}`,
    `type:         ${r.type}`,
    `priority:     ${r.priority}`,
    `attempts:     ${r.attempts}/${r.max_attempts}${r.crashes ? `, crashes ${r.crashes}` : ''}`,
    `dispatch id:  ${r.dispatch_id}`,
    `created:      ${r.created_at} (${ago(r.created_at, now)})`,
    `run at:       ${r.run_at}`,
    `updated:      ${r.updated_at} (${ago(r.updated_at, now)})`,
  ];
  if (r.started_at !== undefined) lines.push(`started:      ${r.started_at}`);
  if (r.finished_at !== undefined) lines.push(`finished:     ${r.finished_at}`);
  if (r.last_error !== undefined) lines.push(`last error:   ${r.last_error.code ? `${r.last_error.code} ` : ''}${r.last_error.name}: ${r.last_error.message}`);
  if (r.outbox_pk !== undefined) lines.push(`owed message: ${r.outbox_pk} (sweeper sends it ${ago(new Date(r.outbox_due ?? 0).toISOString(), now)})`);
  if (r.redrive_count) lines.push(`redriven:     ${r.redrive_count} time(s)`);
  if (r.result !== undefined) lines.push(`result:       ${truncate(JSON.stringify(r.result), 200)}`);
  lines.push(`payload:      ${truncate(JSON.stringify(r.payload) ?? 'null', 200)}`);
  for (const h of r.history) {
    lines.push(`attempt ${h.attempt}:    ${h.outcome} ${h.finished_at}${h.error ? ` — ${h.error.name}: ${h.error.message}` : ''}`);
  }
  for (const a of r.audit ?? []) {
    lines.push(`audit:        ${a.action} by ${a.by} at ${a.at}${a.reason !== undefined ? ` — ${a.reason}` : ''}`);
  }
  return lines;
}

async function runNative(
  ctx: CliContext,
  state: RunState,
  s: Services,
  o: Record<string, unknown>,
  queues: readonly Priority[],
): Promise<void> {
  if (o.dryRun !== true && o.yes !== true) {
    const ok = await confirm(
      ctx,
      `Reset every failed task of the ${queues.join(', ')} priority and move the whole DLQ(s) with StartMessageMoveTask?`,
      'redrive',
    );
    if (!ok) {
      ctx.io.err('nothing was changed.\n');
      state.exitCode = EXIT.failure;
      return;
    }
  }
  const rate = o.rate as number | undefined;
  const progress = new Progress(ctx.io, 'native redrive', undefined);
  const reports = await nativeRedrive(
    { store: s.kaj.store, failed: s.table, mover: s.mover, lifecycle: s.kaj.lifecycle, clock: ctx.clock, random: ctx.random, sleep: ctx.sleep },
    {
      queues,
      to: o.to as 'original' | Priority,
      keepAttempts: o.keepAttempts === true,
      actor: ctx.actor,
      ...(typeof o.reason === 'string' ? { reason: o.reason } : {}),
      dryRun: o.dryRun === true,
      ...(rate === undefined ? {} : { ratePerSecond: rate }),
      signal: ctx.signal,
      onProgress: (r: NativeQueueReport) =>
        progress.update(r.reset, `${r.dlq}: reset ${r.reset}/${r.selected}${r.move ? `, moved ${r.move.moved}/${r.move.toMove} (${r.move.status})` : ''}`),
    },
  );
  progress.finish();
  const failed = reports.reduce((n, r) => n + r.failed + r.errors.length, 0);
  if (o.json === true) {
    ctx.io.out(json({ native: true, dry_run: o.dryRun === true, interrupted: ctx.signal.aborted, queues: reports }));
  } else {
    ctx.io.out(
      table(
        ['DLQ', 'TO', 'FAILED TASKS', 'RESET', 'SKIPPED', 'ERRORS', 'MOVED', 'MOVE STATUS', 'REPAIRED'],
        reports.map((r) => [
          r.dlq,
          r.destination,
          String(r.selected),
          String(r.reset),
          String(r.skipped),
          String(r.failed),
          r.move ? `${r.move.moved}/${r.move.toMove}` : '-',
          r.move?.status ?? (o.dryRun === true ? 'dry run' : '-'),
          String(r.repaired),
        ]),
      ),
    );
    for (const r of reports) for (const e of r.errors) ctx.io.out(`  ${r.dlq}: ${e}\n`);
    if (o.dryRun === true) ctx.io.out('dry run: nothing was changed.\n');
  }
  state.exitCode = ctx.signal.aborted ? EXIT.interrupted : failed > 0 ? EXIT.failure : EXIT.ok;
}
