/**
 * `kaj tasks list` and `kaj tasks cancel`: tasks by status from the listing index (docs/api.md,
 * "Listing tasks"), and a paced, audited bulk cancel of what a listing selects.
 *
 * @module
 */
import { Option, type Command } from 'commander';
import * as z from 'zod';
import type { ListedTask } from '../../shared/task/task-store.js';
import { TaskNotCancellableError, TaskNotFoundError, ValidationError } from '../../shared/task/errors.js';
import { listedAt, type TaskListing } from '../../shared/task/listing.js';
import { LISTING_VIEWS, type ListingView } from '../../shared/task/model.js';
import { Pacer } from '../admin/pacer.js';
import type { CliContext, RunState } from '../context.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { commonOptions, optionsOf, REASON_HELP, reasonOf } from '../options.js';
import { json, table } from '../output.js';
import { parsePositiveInt, parseRate } from '../parse.js';
import { withServices } from '../services.js';
import { approved, YES_HELP } from '../confirm.js';

const listOptions = commonOptions.extend({
  status: z.enum(LISTING_VIEWS),
  type: z.string().optional(),
  owner: z.string().optional(),
  limit: z.number().optional(),
  cursor: z.string().optional(),
});

const cancelOptions = commonOptions.extend({
  status: z.enum(['retrying', 'waiting', 'running', 'delayed']),
  type: z.string().optional(),
  owner: z.string().optional(),
  max: z.number().optional(),
  rate: z.number().optional(),
  dryRun: z.boolean().optional(),
  yes: z.boolean().optional(),
  reason: z.string().optional(),
});

const STATUS_HELP =
  'retrying, failed, cancelled, running (past its first heartbeat), or delayed (queued, waiting in the table: soonest first); queued tasks in SQS are counted by `kaj stats` (queue depth)';

/** Default tasks a bulk cancel selects at most (`--max`). */
const DEFAULT_MAX = 10_000;
/** Default pace of a bulk cancel (`--rate`): each cancel is a read and a write. */
const DEFAULT_RATE = 20;

export function registerTasks(program: Command, ctx: CliContext, state: RunState): void {
  const tasks = program.command('tasks').description('tasks by status: list, bulk cancel');

  tasks
    .command('list')
    .description('list tasks of one status, newest first (delayed: soonest first), from an index (no table scan)')
    .addOption(new Option('--status <status>', STATUS_HELP).choices([...LISTING_VIEWS]).makeOptionMandatory())
    .option('--type <type>', 'only this task type')
    .option('--owner <principal>', 'only this owner (an IAM role ARN, or `local`)')
    .option('--limit <n>', 'rows per page (1–100, default 50)', parsePositiveInt)
    .option('--cursor <cursor>', 'continue where a page ended (printed after it)')
    .option('--json', 'print the page as JSON ({ items, cursor })')
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, listOptions);
      await withServices(ctx, o, async (s) => {
        const listing = listingOf(s.kaj.listing);
        const page = await listing
          .list({
            status: o.status,
            limit: o.limit ?? 50,
            ...(o.type === undefined ? {} : { type: o.type }),
            ...(o.owner === undefined ? {} : { owner: o.owner }),
            ...(o.cursor === undefined ? {} : { cursor: o.cursor }),
          })
          .catch(usage);
        if (o.json === true) {
          ctx.io.out(json(page));
          return;
        }
        ctx.io.out(rowsText(page.items, ctx.clock.now(), o.status));
        ctx.io.out(
          page.cursor === undefined
            ? `${page.items.length} task(s)\n`
            : `${page.items.length} task(s); more: --cursor ${page.cursor}\n`,
        );
      });
    });

  tasks
    .command('cancel')
    .description('cancel every task a listing selects: paced, each audited (you, the time, --reason)')
    .addOption(
      new Option(
        '--status <status>',
        'retrying, waiting or delayed (cancelled at once), or running (a cancel request its worker acts on)',
      )
        .choices(['retrying', 'waiting', 'running', 'delayed'])
        .makeOptionMandatory(),
    )
    .option('--type <type>', 'only this task type')
    .option('--owner <principal>', 'only this owner')
    .option('--max <n>', `select at most this many (default ${DEFAULT_MAX})`, parsePositiveInt)
    .option('--rate <n/s>', `at most this many cancels per second (default ${DEFAULT_RATE}/s)`, parseRate)
    .option('--dry-run', 'only show what would be cancelled')
    .option('--yes', YES_HELP)
    .option('--reason <text>', REASON_HELP)
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
Example:
  kaj tasks cancel --stack kaj-prod --status retrying --type send_email --reason "provider gone" --yes

The selection is read first (the listing, up to --max), then each task is
cancelled through the same path as DELETE /api/v1/tasks/{id}; a task that moved on meanwhile
(claimed, finished) is skipped and counted.`,
    )
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, cancelOptions);
      const reason = reasonOf(o);
      await withServices(ctx, o, async (s) => {
        const listing = listingOf(s.kaj.listing);
        const selected = await selectAll(listing, o.status, o.type, o.owner, o.max ?? DEFAULT_MAX);
        const what = `cancel ${selected.length} ${o.status} task(s)${o.type === undefined ? '' : ` of type ${o.type}`}`;
        if (selected.length === 0) {
          ctx.io.out(
            o.json === true ? json({ selected: 0, cancelled: 0, skipped: 0, failed: 0 }) : 'nothing selected.\n',
          );
          return;
        }
        if (!(await approved(ctx, state, o, `${what}?`, what))) return;
        const report = { dry_run: o.dryRun === true, selected: selected.length, cancelled: 0, skipped: 0, failed: 0 };
        const items: { task_id: string; outcome: string; status?: string; error?: string }[] = [];
        const pacer = new Pacer(o.rate ?? DEFAULT_RATE, ctx.clock, ctx.sleep);
        for (const t of selected) {
          if (ctx.signal.aborted) break;
          if (o.dryRun === true) {
            items.push({ task_id: t.task_id, outcome: 'would_cancel' });
            continue;
          }
          await pacer.take(ctx.signal);
          try {
            const r = await s.kaj.lifecycle.requests.cancel(t.task_id, undefined, { actor: ctx.actor, ...reason });
            report.cancelled += 1;
            items.push({ task_id: t.task_id, outcome: r.status === 'running' ? 'cancel_requested' : 'cancelled' });
          } catch (err) {
            if (err instanceof TaskNotCancellableError || err instanceof TaskNotFoundError) {
              report.skipped += 1;
              items.push({ task_id: t.task_id, outcome: 'skipped', error: err.message });
            } else {
              report.failed += 1;
              items.push({
                task_id: t.task_id,
                outcome: 'failed',
                error: err instanceof Error ? err.message : String(err),
              });
            }
          }
        }
        if (o.json === true) ctx.io.out(json({ ...report, interrupted: ctx.signal.aborted, items }));
        else {
          for (const i of items)
            ctx.io.out(`${i.task_id}  ${i.outcome}${i.error === undefined ? '' : `  (${i.error})`}\n`);
          ctx.io.out(
            `${report.dry_run ? 'dry run: ' : ''}selected ${report.selected}: ${report.dry_run ? 'would cancel' : 'cancelled'} ${report.dry_run ? selected.length : report.cancelled}, skipped ${report.skipped}, failed ${report.failed}\n`,
          );
        }
        if (report.failed > 0 || ctx.signal.aborted) state.exitCode = EXIT.failure;
      });
    });
}

function listingOf(listing: TaskListing | undefined): TaskListing {
  if (listing === undefined) throw new CliError('this target has no listing index');
  return listing;
}

/** A bad cursor or limit is the user's: a usage error naming it. */
function usage(err: unknown): never {
  if (err instanceof ValidationError) throw new UsageError(err.message);
  throw err;
}

async function selectAll(
  listing: TaskListing,
  status: ListingView,
  type: string | undefined,
  owner: string | undefined,
  max: number,
): Promise<ListedTask[]> {
  const out: ListedTask[] = [];
  let cursor: string | undefined;
  do {
    const page = await listing.list({
      status,
      limit: Math.min(100, max - out.length),
      ...(type === undefined ? {} : { type }),
      ...(owner === undefined ? {} : { owner }),
      ...(cursor === undefined ? {} : { cursor }),
    });
    out.push(...page.items);
    cursor = page.cursor;
  } while (cursor !== undefined && out.length < max);
  return out;
}

function rowsText(items: readonly ListedTask[], now: number, status: ListingView): string {
  if (items.length === 0) return '';
  // A delayed task's time that matters is when it runs; a listed one's, since when it is so.
  const delayed = status === 'delayed';
  return table(
    ['TASK', 'TYPE', 'STATUS', 'PRIORITY', 'ATTEMPTS', delayed ? 'RUNS AT' : 'SINCE', 'OWNER', 'LAST ERROR'],
    items.map((t) => {
      const at = delayed ? t.run_at : listedAt(t);
      const seconds = Math.round((Date.parse(at) - now) / 1000);
      return [
        t.task_id,
        t.type,
        t.status,
        t.priority,
        `${t.attempts}/${t.max_attempts}`,
        delayed ? `${at} (in ${Math.max(0, seconds)}s)` : `${at} (${Math.max(0, -seconds)}s ago)`,
        t.owner ?? '-',
        t.last_error === undefined ? '-' : `${t.last_error.name}: ${t.last_error.message}`.slice(0, 80),
      ];
    }),
  );
}
