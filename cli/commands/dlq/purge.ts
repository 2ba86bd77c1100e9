import type { Command } from 'commander';
import { purgeDeadLetters } from '../../admin/purge.js';
import { YES_HELP } from '../../confirm.js';
import type { CliContext, RunState } from '../../context.js';
import { optionsOf, purgeOptions, REASON_HELP, reasonOf } from '../../options.js';
import { parseRate } from '../../parse.js';
import { runBatchCommand } from './batch-command.js';
import { addFilterOptions, LISTING_EFFECTS } from './selection.js';

const HELP = `
For each selected dead letter: the task record gets discarded_at and an audit entry
{action: purge, by, at, reason} in one conditional write (status stays failed; the record then
expires after the usual retention), and only then the dead letter is deleted; a re-run finishes
an interrupted purge. A letter SQS moved for a task that is still waiting (queued/retrying) is
that task's only message: the task is cancelled (and marked) so it does not wait forever.
Obsolete letters (task redriven or finished since) and non-Kaj messages are just deleted.
A task named with --task that has no dead letter in the DLQs is discarded from its task record if
that says it is dead (failed); a named task that cannot be purged is reported as failed (exit 1).
SQS's PurgeQueue is not used: it cannot filter, does not mark tasks, and takes up to 60 s.
${LISTING_EFFECTS}`;

/** `kaj dlq purge`: discard dead tasks for good (the record writes are `TaskLifecycle.operations`). */
export function registerPurge(dlq: Command, ctx: CliContext, state: RunState): void {
  const purge = dlq
    .command('purge')
    .description('delete dead tasks for good: mark each task discarded (audited), then delete its dead letter');
  addFilterOptions(purge, { task: true, limitHelp: 'purge at most N tasks' });
  purge
    .option('--dry-run', 'show what would happen, change nothing')
    .option('--yes', YES_HELP)
    .option('--reason <text>', REASON_HELP)
    .option('--rate <n/s>', 'at most this many tasks per second', parseRate)
    .option('--json', 'print the report as JSON')
    .addHelpText('after', HELP)
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, purgeOptions);
      const reason = reasonOf(o);
      await runBatchCommand(ctx, state, o, {
        verb: 'purge',
        doneKey: 'purged',
        working: 'purging',
        question: (selection, depth) =>
          `Purge (discard for good) dead tasks from the ${selection} (${depth} message(s) there now)?`,
        run: (s, batch) =>
          purgeDeadLetters(
            { dlq: s.dlq, store: s.kaj.store, lifecycle: s.kaj.lifecycle, clock: ctx.clock, sleep: ctx.sleep },
            { ...batch, actor: ctx.actor, ...reason },
          ),
        done: (report) => report.purged,
      });
    });
}
