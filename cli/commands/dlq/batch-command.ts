/**
 * What `kaj dlq redrive` and `kaj dlq purge` share: the selection from the flags, the
 * confirmation, the progress bar, the report (text or JSON) and the exit code.
 */
import type { Priority } from '../../../shared/config/resources.js';
import type { BatchCounts, BatchOptions, BatchReport, ReportItem } from '../../admin/batch.js';
import type { DeadLetterFilter } from '../../admin/dead-letters.js';
import type { CliContext, RunState } from '../../context.js';
import { approved } from '../../confirm.js';
import { EXIT } from '../../errors.js';
import type { BatchCommandOptions } from '../../options.js';
import { json, Progress, table, truncate } from '../../output.js';
import { withServices, type Services } from '../../services.js';
import { describeFilter, dlqDepth, filterOf, LIST_VISIBILITY_SECONDS, queuesOf, receiveTiming } from './selection.js';

/** Pages of 10 handled at once by redrive and purge (receiving goes on meanwhile). */
const PIPELINE = 3;

/** One batch command: its words, and the engine it runs. */
export interface BatchCommand<R extends Omit<BatchReport, 'done'>> {
  readonly verb: 'redrive' | 'purge';
  /** The report's count of items done (`redriven`, `purged`). */
  readonly doneKey: 'redriven' | 'purged';
  /** The progress bar's label while changing things. */
  readonly working: string;
  /** The confirmation question, given the selection and the messages in the DLQs now. */
  question(selection: string, depth: number): string;
  run(s: Services, options: BatchOptions): Promise<R>;
  done(report: R): number;
}

/** Runs a batch command: select, confirm, run with a progress bar, report, set the exit code. */
export async function runBatchCommand<R extends Omit<BatchReport, 'done'>>(
  ctx: CliContext,
  state: RunState,
  o: BatchCommandOptions,
  command: BatchCommand<R>,
): Promise<void> {
  const filter = filterOf(o, ctx.clock.now());
  const queues = queuesOf(o);
  await withServices(ctx, o, async (s) => {
    const depth = await dlqDepth(s, queues);
    if (
      !(await approved(ctx, state, o, command.question(describeFilter(filter, queues, o.limit), depth), command.verb))
    )
      return;
    const progress = new Progress(ctx.io, o.dryRun === true ? 'checking' : command.working, o.limit ?? depth);
    const rate = o.rate;
    const report = await command.run(
      s,
      batchOptions(s, {
        queues,
        filter,
        ...(o.limit === undefined ? {} : { limit: o.limit }),
        ...(rate === undefined ? {} : { rate }),
        dryRun: o.dryRun === true,
        signal: ctx.signal,
        onProgress: (c) => progress.update(c.done + c.skipped + c.failed, countsText(c, command.doneKey)),
      }),
    );
    progress.finish();
    state.exitCode = finishBatch(ctx, o.json === true, report, {
      key: command.doneKey,
      count: command.done(report),
      verb: command.verb,
    });
  });
}

/**
 * How a redrive or purge reads the DLQs of the target of `s` (pipelined pages, the receive
 * pacing and hiding time of the target): `kaj dlq redrive/purge` and the console's.
 */
export function batchOptions(
  s: Pick<Services, 'target'>,
  o: {
    readonly queues: readonly Priority[];
    readonly filter: DeadLetterFilter;
    readonly limit?: number;
    /** Items per second. */
    readonly rate?: number;
    readonly dryRun: boolean;
    readonly signal: AbortSignal;
    readonly onProgress?: BatchOptions['onProgress'];
  },
): BatchOptions {
  return {
    queues: o.queues,
    filter: o.filter,
    ...(o.limit === undefined ? {} : { limit: o.limit }),
    visibilitySeconds: LIST_VISIBILITY_SECONDS + (o.rate === undefined ? 0 : Math.ceil((10 * PIPELINE) / o.rate)),
    ...receiveTiming(s.target),
    signal: o.signal,
    dryRun: o.dryRun,
    pipeline: PIPELINE,
    ...(o.rate === undefined ? {} : { ratePerSecond: o.rate }),
    ...(o.onProgress === undefined ? {} : { onProgress: o.onProgress }),
  };
}

function countsText(c: Readonly<BatchCounts>, done: string): string {
  return `${done} ${c.done}  skipped ${c.skipped}  failed ${c.failed}`;
}

/** Prints a redrive/purge report (JSON or text) and returns the exit code. */
function finishBatch(
  ctx: CliContext,
  asJson: boolean,
  report: Omit<BatchReport, 'done'>,
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
      .map((i) => [
        i.task_id ?? `(message ${(i.message_id ?? '').slice(0, 8)})`,
        i.dlq ?? '-',
        i.action,
        i.outcome,
        truncate(i.detail ?? '', 90),
      ]);
    if (!dryRun) ctx.io.out('failed:\n');
    ctx.io.out(table(['TASK ID', 'DLQ', 'ACTION', 'OUTCOME', 'DETAIL'], rows));
    if (shown.length > rows.length) ctx.io.out(`… and ${shown.length - rows.length} more (--json for all)\n`);
  }
  if (dryRun) ctx.io.out('dry run: nothing was changed; every message read was released.\n');
  if (interrupted)
    ctx.io.out('interrupted: the rest was not touched; messages held were released. Run again to continue.\n');
}
