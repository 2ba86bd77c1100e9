import type { Priority } from '../../../shared/config/resources.js';
import type { RedriveRequest } from '../../../shared/task/operations.js';
import { nativeRedrive, type NativeQueueReport } from '../../admin/native.js';
import type { CliContext, RunState } from '../../context.js';
import { EXIT } from '../../errors.js';
import type { RedriveCommandOptions } from '../../options.js';
import { json, Progress, table } from '../../output.js';
import type { Services } from '../../services.js';
import { approved } from '../../confirm.js';

/** `kaj dlq redrive --native`: reset the records, then let SQS move whole DLQs (cli/admin/native.ts). */
export async function runNative(
  ctx: CliContext,
  state: RunState,
  s: Services,
  o: RedriveCommandOptions,
  queues: readonly Priority[],
  request: RedriveRequest,
): Promise<void> {
  const question = `Reset every failed task of the ${queues.join(', ')} priority and move the whole DLQ(s) with StartMessageMoveTask?`;
  if (!(await approved(ctx, state, o, question, 'redrive'))) return;
  const dryRun = o.dryRun === true;
  const progress = new Progress(ctx.io, 'native redrive', undefined);
  const reports = await nativeRedrive(
    { failed: s.table, mover: s.mover, lifecycle: s.kaj.lifecycle, clock: ctx.clock, sleep: ctx.sleep },
    {
      queues,
      ...request,
      dryRun,
      ...(o.rate === undefined ? {} : { ratePerSecond: o.rate }),
      signal: ctx.signal,
      onProgress: (r: NativeQueueReport) =>
        progress.update(
          r.reset,
          `${r.dlq}: reset ${r.reset}/${r.selected}${r.move ? `, moved ${r.move.moved}/${r.move.toMove} (${r.move.status})` : ''}`,
        ),
    },
  );
  progress.finish();
  const failed = reports.reduce((n, r) => n + r.failed + r.errors.length, 0);
  if (o.json === true) {
    ctx.io.out(json({ native: true, dry_run: dryRun, interrupted: ctx.signal.aborted, queues: reports }));
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
          r.move?.status ?? (dryRun ? 'dry run' : '-'),
          String(r.repaired),
        ]),
      ),
    );
    for (const r of reports) for (const e of r.errors) ctx.io.out(`  ${r.dlq}: ${e}\n`);
    if (dryRun) ctx.io.out('dry run: nothing was changed.\n');
  }
  state.exitCode = ctx.signal.aborted ? EXIT.interrupted : failed > 0 ? EXIT.failure : EXIT.ok;
}
