import { Option, type Command } from 'commander';
import { boundedText, DELAYED_COUNT_BOUND } from '../../shared/task/delayed-count.js';
import { isListingReader } from '../../shared/task/listing.js';
import { TASK_STATUSES } from '../../shared/task/model.js';
import { collectStats, type StatsSnapshot } from '../admin/stats.js';
import type { CliContext, RunState } from '../context.js';
import { optionsOf, statsOptions } from '../options.js';
import { json, seconds, table } from '../output.js';
import { parseWatch } from '../parse.js';
import { limitsOf, withServices } from '../services.js';

const OLDEST_NOTE =
  "OLDEST is '-': SQS's GetQueueAttributes has no age-of-oldest-message attribute (CloudWatch's\n" +
  'ApproximateAgeOfOldestMessage metric has it), and peeking a message would count as a receive\n' +
  'towards the redrive policy. --by-status shows the task that has waited longest instead.';

export function registerStats(program: Command, ctx: CliContext, _state: RunState): void {
  program
    .command('stats')
    .description(
      'queue depths per priority (visible, in flight, delayed in SQS), tasks delayed in the table, DLQ depths, and optionally tasks by status',
    )
    .option('--by-status', 'also count tasks by status — this SCANS THE WHOLE TABLE (read cost grows with it)')
    .addOption(
      new Option('--watch [seconds]', 'refresh every N seconds (default 5) until Ctrl-C')
        .preset('5')
        .argParser(parseWatch),
    )
    .option('--json', 'print JSON (one object per refresh with --watch)')
    .addHelpText(
      'after',
      `
Columns: VISIBLE ready to run; IN FLIGHT received by a consumer (running, or held by a
listing); DELAYED (SQS) sent with a delay of up to 15 minutes (retry backoff, delay_seconds);
DELAYED (TABLE) waiting in the task table because the delay is beyond SQS's 15 minutes (every
lane's tasks of the priority; N+ when an outbox partition held more than the ${DELAYED_COUNT_BOUND} read); DLQ dead
tasks waiting for a redrive or purge (IN FLIGHT there: held by a kaj dlq command right now).
The queue numbers are SQS's approximations (ApproximateNumberOfMessages*), which lag by up to a
minute on AWS; DELAYED (TABLE) reads the outbox index (27 small Queries, no Scan).

${OLDEST_NOTE}`,
    )
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, statsOptions);
      const watch = o.watch;
      const specs = (await ctx.registry()).limits;
      await withServices(ctx, o, async (s) => {
        const limits = limitsOf(s, specs);
        for (;;) {
          const snap = await collectStats(
            {
              inspector: s.inspector,
              statuses: s.table,
              clock: ctx.clock,
              limits,
              ...(isListingReader(s.kaj.store) ? { outbox: s.kaj.store } : {}),
            },
            { byStatus: o.byStatus === true },
          );
          if (o.json === true) {
            ctx.io.out(watch === undefined ? json(snap) : `${JSON.stringify(snap)}\n`);
          } else {
            if (watch !== undefined && ctx.io.stdoutIsTTY) ctx.io.out('\x1b[2J\x1b[H');
            ctx.io.out(renderStats(snap, s.target.label, watch));
          }
          if (watch === undefined || ctx.signal.aborted) return;
          await ctx.sleep(watch * 1000, ctx.signal);
          if (ctx.signal.aborted) return;
        }
      });
    });
}

/** The text `kaj stats` prints for one snapshot. */
export function renderStats(snap: StatsSnapshot, label: string, watch: number | undefined): string {
  let out = `${label} — ${snap.at}${watch === undefined ? '' : ` (every ${watch}s, Ctrl-C to stop)`}\n\n`;
  const inTable = snap.delayedInTable;
  out += table(
    ['QUEUE', 'VISIBLE', 'IN FLIGHT', 'DELAYED (SQS)', 'DELAYED (TABLE)', 'OLDEST', 'DLQ', 'DLQ IN FLIGHT'],
    snap.queues.map((q) => [
      q.priority,
      String(q.queue.visible),
      String(q.queue.inFlight),
      String(q.queue.delayed),
      inTable === undefined ? '-' : boundedText(inTable.byPriority[q.priority]),
      '-',
      String(q.dlq.visible),
      String(q.dlq.inFlight),
    ]),
  );
  out += '\n';
  if (inTable !== undefined) {
    out += `DELAYED (TABLE): ${boundedText(inTable.total)} task(s) wait in the table for a delay beyond SQS's 15 minutes (every lane; kaj tasks list --status delayed).\n`;
  }
  out += "OLDEST: '-' because SQS's GetQueueAttributes has no age of the oldest message (see kaj stats --help).\n";
  if (snap.lanes !== undefined) {
    out += '\nLanes (their dead letters are in the DLQs above):\n';
    out += table(
      ['LANE', 'QUEUE', 'VISIBLE', 'IN FLIGHT', 'DELAYED (SQS)'],
      snap.lanes.map((l) => [
        l.lane,
        l.priority,
        String(l.queue.visible),
        String(l.queue.inFlight),
        String(l.queue.delayed),
      ]),
    );
  }
  if (snap.limits !== undefined) {
    const now = Date.parse(snap.at);
    out += '\nLimits (HOLDERS: running tasks holding a slot; FREE: slots or rate starts available now):\n';
    out += table(
      ['LIMIT', 'KEY', 'KIND', 'HOLDERS', 'EXPIRED', 'FREE', 'OF', 'PAUSED', 'WAITING'],
      snap.limits.map((l) => [
        l.limit,
        l.key ?? '-',
        l.kind,
        l.kind === 'concurrency' ? String(l.holders) : '-',
        l.kind === 'concurrency' ? String(l.expired) : '-',
        String(l.tokensAvailable),
        String(l.capacity),
        l.pausedUntil !== undefined && l.pausedUntil > now
          ? `${seconds(Math.ceil((l.pausedUntil - now) / 1000))}`
          : '-',
        l.refusedRecently ? `yes (${l.refused} refusals)` : 'no',
      ]),
    );
  }
  const b = snap.byStatus;
  if (b !== undefined) {
    out += `\nTasks by status (table scan, ${b.total} task(s)):\n`;
    out += table(
      ['STATUS', 'TASKS'],
      TASK_STATUSES.map((st) => [st, String(b.counts[st])]),
    );
    if (b.discarded > 0) out += `(${b.discarded} failed task(s) discarded by a purge)\n`;
    out += b.oldestWaiting
      ? `oldest waiting task: ${b.oldestWaiting.task_id}, due ${seconds(b.oldestWaiting.age_seconds)} ago\n`
      : 'no task is waiting past its run time\n';
  }
  return out;
}
