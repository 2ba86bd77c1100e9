import { Option, type Command } from 'commander';
import { isEmptyFilter } from '../../admin/dead-letters.js';
import { redriveDeadLetters } from '../../admin/redrive.js';
import { YES_HELP } from '../../confirm.js';
import type { CliContext, RunState } from '../../context.js';
import { UsageError } from '../../errors.js';
import { optionsOf, REASON_HELP, reasonOf, redriveOptions } from '../../options.js';
import { parseRate, parseTarget } from '../../parse.js';
import { withServices } from '../../services.js';
import { runBatchCommand } from './batch-command.js';
import { runNative } from './native.js';
import { addFilterOptions, filterOf, LISTING_EFFECTS, queuesOf } from './selection.js';

const HELP = `
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
${LISTING_EFFECTS}`;

/** `kaj dlq redrive`: re-queue dead tasks (the record writes are `TaskLifecycle.operations`). */
export function registerRedrive(dlq: Command, ctx: CliContext, state: RunState): void {
  const redrive = dlq
    .command('redrive')
    .description('re-queue dead tasks: reset each task record, send it to a queue, then delete its dead letter');
  addFilterOptions(redrive, { task: true, limitHelp: 'redrive at most N tasks' });
  redrive
    .addOption(
      new Option('--to <queue>', 'where to send them: original (the queue each died on), high, normal or low')
        .default('original')
        .argParser(parseTarget),
    )
    .option('--rate <n/s>', 'at most this many tasks per second, e.g. 20/s (default: as fast as it goes)', parseRate)
    .option('--dry-run', 'show what would happen, change nothing')
    .option('--yes', YES_HELP)
    .option('--keep-attempts', 'keep the attempt count (default: reset to 0, so each task gets its full retries again)')
    .option('--reason <text>', REASON_HELP)
    .option('--native', "use SQS's StartMessageMoveTask for whole DLQs (see below); no filters")
    .option('--json', 'print the report as JSON')
    .addHelpText('after', HELP)
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, redriveOptions);
      const request = {
        to: o.to,
        keepAttempts: o.keepAttempts === true,
        actor: ctx.actor,
        ...reasonOf(o),
      };
      if (o.native === true) {
        if (!isEmptyFilter(filterOf(o, ctx.clock.now())) || o.limit !== undefined) {
          throw new UsageError(
            '--native moves whole DLQs: it takes no --type, --error-contains, --since, --task or --limit (--queue picks one DLQ)',
          );
        }
        await withServices(ctx, o, (s) => runNative(ctx, state, s, o, queuesOf(o), request));
        return;
      }
      const to = o.to === 'original' ? 'the queue each died on' : `the ${o.to} queue`;
      await runBatchCommand(ctx, state, o, {
        verb: 'redrive',
        doneKey: 'redriven',
        working: 'redriving',
        question: (selection, depth) =>
          `Redrive dead tasks from the ${selection} (${depth} message(s) there now) to ${to}?`,
        run: (s, batch) =>
          redriveDeadLetters(
            { dlq: s.dlq, store: s.kaj.store, lifecycle: s.kaj.lifecycle, clock: ctx.clock, sleep: ctx.sleep },
            { ...batch, ...request },
          ),
        done: (report) => report.redriven,
      });
    });
}
