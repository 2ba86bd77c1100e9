/**
 * `kaj pipelines`: the deployment's pipelines (tasks/index.ts) and their runs — list, show, the
 * grid of runs, one run, trigger, backfill, clear, cancel, and pause/resume of a pipeline's
 * schedule — through `PipelineService`, and `ScheduleService` as an operator for the schedule
 * (named as the pipeline). `--json` prints what the HTTP API answers. Text output:
 * ./pipeline-text.ts.
 *
 * @module
 */
import { Option, type Command } from 'commander';
import * as z from 'zod';
import {
  PipelineRequestError,
  PipelineRunConflictError,
  PipelineRunNotFoundError,
  UnknownPipelineError,
} from '../../shared/pipeline/errors.js';
import type { PipelineService } from '../../shared/pipeline/service.js';
import { ScheduleNotFoundError, ScheduleValidationError } from '../../shared/schedule/errors.js';
import type { ScheduleService } from '../../shared/schedule/service.js';
import { TaskNotCancellableError } from '../../shared/task/errors.js';
import { approved, YES_HELP } from '../confirm.js';
import type { CliContext, RunState } from '../context.js';
import { CliError, EXIT, UsageError } from '../errors.js';
import { commonOptions, optionsOf, REASON_HELP, reasonOf } from '../options.js';
import { json } from '../output.js';
import { parsePositiveInt } from '../parse.js';
import { withPipelines } from '../services.js';
import type { TargetFlags } from '../target.js';
import { pipelineListText, pipelineText, planText, runGridText, runText, scheduleStateOf } from './pipeline-text.js';

/** The services a `kaj pipelines` command uses on its target. */
export interface PipelineServices {
  readonly pipelines: PipelineService;
  /** The operator's: a pipeline's schedule is the schedule declared in code under its name. */
  readonly schedules: ScheduleService;
}

/** Runs `fn` with the services on the target of `flags` (a seam: unit tests pass them over fakes). */
export type OpenPipelines = <T>(flags: TargetFlags, fn: (s: PipelineServices) => Promise<T>) => Promise<T>;

const flag = z.boolean().optional();
const dateOptions = commonOptions.extend({ date: z.string() });
const rangeOptions = commonOptions.extend({ from: z.string().optional(), to: z.string().optional() });
const backfillOptions = commonOptions.extend({
  from: z.string(),
  to: z.string(),
  reprocess: z.enum(['none', 'failed', 'all']).optional(),
  maxActiveRuns: z.number().optional(),
  backwards: flag,
  dryRun: flag,
  reason: z.string().optional(),
});
const clearOptions = dateOptions.extend({
  node: z.array(z.string()).optional(),
  failed: flag,
  downstream: flag,
  reason: z.string().optional(),
});
const cancelOptions = dateOptions.extend({ yes: flag });
const pauseOptions = commonOptions.extend({ note: z.string().optional() });

const DATE_HELP =
  "the run's logical date: YYYY-MM-DD (in the pipeline's zone), or an ISO time for a pipeline that runs more than daily";

const RUNS_HELP = `
A logical date is the START of the run's data interval: the run of 2026-11-28 processes
28 November and is started by the schedule at its next time (29 November). Newest first.`;

/** `kaj pipelines …`. */
export function registerPipelines(
  program: Command,
  ctx: CliContext,
  state: RunState,
  open: OpenPipelines = (flags, fn) =>
    withPipelines(ctx, flags, (pipelines, schedules) => fn({ pipelines, schedules })),
): void {
  /** `open`, with the domain's errors said as the CLI says them (the flag named). */
  const act = <T>(flags: TargetFlags, fn: (s: PipelineServices) => Promise<T>): Promise<T> =>
    open(flags, fn).catch((err: unknown) => {
      throw cliErrorOf(err);
    });
  const operator = (o: { readonly reason?: string | undefined }) => ({ actor: ctx.actor, ...reasonOf(o) });

  const pipelines = program
    .command('pipelines')
    .description('pipelines: list, show, runs, show-run, trigger, backfill, clear, cancel, pause, resume')
    .addHelpText('after', `\nDates: ${DATE_HELP}.\nTimes printed are UTC (ISO-8601).`);

  /** A command on one pipeline (its first argument). */
  const onPipeline = (verb: string, description: string): Command =>
    pipelines.command(verb).description(description).argument('<name>', 'the pipeline name');
  /** A command on one run of a pipeline (`--date`). */
  const onRun = (verb: string, description: string): Command =>
    onPipeline(verb, description).requiredOption('--date <date>', DATE_HELP);

  pipelines
    .command('list')
    .description('list pipelines: name, schedule, time zone, max active runs, nodes')
    .option('--json', 'print { items }')
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, commonOptions);
      await act(o, async ({ pipelines: service }) => {
        const items = service.list();
        ctx.io.out(o.json === true ? json({ items }) : pipelineListText(items));
      });
    });

  onPipeline('show', 'show a pipeline: schedule (and whether it is paused), catchup, max active runs, its graph')
    .option('--json', 'print the pipeline as the API shows it, with schedule_state')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, commonOptions);
      await act(o, async (s) => {
        const summary = s.pipelines.summary(name);
        const schedule =
          summary.schedule === undefined
            ? undefined
            : scheduleStateOf(await s.schedules.get(name, undefined).catch(unlessMissing));
        ctx.io.out(
          o.json === true
            ? json({ ...summary, ...(schedule === undefined ? {} : { schedule_state: schedule }) })
            : pipelineText(summary, schedule, ctx.clock.now()),
        );
      });
    });

  onPipeline('runs', 'the runs as a grid: a row per logical date, a column per node (with a legend)')
    .option('--from <date>', 'first logical date (default: 14 days ago)')
    .option('--to <date>', 'last logical date (default: now)')
    .option('--json', 'print { pipeline, items } (the runs)')
    .addHelpText('after', `${RUNS_HELP}\nOne run with its tasks: kaj pipelines show-run NAME --date D.`)
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, rangeOptions);
      await act(o, async ({ pipelines: service }) => {
        const summary = service.summary(name);
        const items = await service.runs(name, {
          ...(o.from === undefined ? {} : { from: o.from }),
          ...(o.to === undefined ? {} : { to: o.to }),
        });
        ctx.io.out(o.json === true ? json({ pipeline: name, items }) : runGridText(summary, items));
      });
    });

  onRun('show-run', "one run: status, data interval, each node's state, try, attempts and task id")
    .option('--json', 'print the run as the API shows it')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, dateOptions);
      await act(o, async ({ pipelines: service }) => {
        const run = await service.run(name, o.date);
        ctx.io.out(o.json === true ? json(run) : runText(run, ctx.clock.now()));
      });
    });

  onRun('trigger', 'start the run of a logical date now (or show it, when it exists: one run per date)')
    .option('--json', 'print the run and { created }')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, dateOptions);
      await act(o, async ({ pipelines: service }) => {
        const { run, created } = await service.trigger(name, o.date);
        ctx.io.out(
          o.json === true
            ? json({ ...run, created })
            : `${created ? 'created' : 'already there'}: run ${name}@${run.logical_date}\n${runText(run, ctx.clock.now())}`,
        );
      });
    });

  onPipeline(
    'backfill',
    'runs for every logical date from --from to --to: created where none exists; the plan, date by date',
  )
    .requiredOption('--from <date>', 'first logical date')
    .requiredOption('--to <date>', 'last logical date')
    .addOption(
      new Option('--reprocess <which>', 'existing runs: none (left), failed (their failed nodes cleared), all')
        .choices(['none', 'failed', 'all'])
        .default('none'),
    )
    .option(
      '--max-active-runs <n>',
      "at most this many of the backfill's runs at once (≤ the pipeline's)",
      parsePositiveInt,
    )
    .option('--backwards', 'newest date first')
    .option('--dry-run', 'print the plan, change nothing')
    .option('--reason <text>', REASON_HELP.replace('each task', 'each run cleared'))
    .option('--json', 'print { pipeline, dry_run, runs } (the plan)')
    .addHelpText('after', '\nA run still going is left alone ("skip (run active)"): backfilling twice creates nothing.')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, backfillOptions);
      const who = operator(o);
      await act(o, async ({ pipelines: service }) => {
        const dryRun = o.dryRun === true;
        const runs = await service.backfill(
          name,
          {
            from: o.from,
            to: o.to,
            reprocess: o.reprocess ?? 'none',
            backwards: o.backwards === true,
            dryRun,
            ...(o.maxActiveRuns === undefined ? {} : { maxActiveRuns: o.maxActiveRuns }),
          },
          who,
        );
        ctx.io.out(o.json === true ? json({ pipeline: name, dry_run: dryRun, runs }) : planText(name, runs, dryRun));
      });
    });

  onRun('clear', 'run nodes of a finished run again (reopening the run): the named ones, or those that failed')
    .option('--node <node>', 'a node to run again (repeat for more)', (v: string, prev: string[] = []) => [...prev, v])
    .option('--failed', 'the nodes that failed or were cancelled, with what depends on them')
    .option('--downstream', 'with --node: what depends on the named nodes too')
    .option('--reason <text>', REASON_HELP.replace('each task', 'the run'))
    .option('--json', 'print the run afterwards as the API shows it')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, clearOptions);
      const nodes = o.node ?? [];
      if (nodes.length > 0 === (o.failed === true))
        throw new UsageError('name what to clear: --node NODE (repeatable) or --failed, not both');
      const who = operator(o);
      await act(o, async ({ pipelines: service }) => {
        const run = await service.clear(
          name,
          o.date,
          o.failed === true ? { failed: true } : { nodes, downstream: o.downstream === true },
          who,
        );
        const cleared = run.nodes.filter((n) => n.state === 'pending').map((n) => n.name);
        ctx.io.out(
          o.json === true
            ? json(run)
            : `cleared: run ${name}@${run.logical_date} reopened (${cleared.join(', ')} to run again)\n${runText(run, ctx.clock.now())}`,
        );
      });
    });

  onRun('cancel', 'cancel a run and its nodes still going')
    .option('--yes', YES_HELP)
    .option('--json', 'print the run afterwards as the API shows it')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, cancelOptions);
      const what = `the run of ${name} for ${o.date}`;
      if (!(await approved(ctx, state, o, `Cancel ${what}?`, `cancel ${what}`, false))) return;
      await act(o, async ({ pipelines: service }) => {
        const run = await service.cancel(name, o.date);
        ctx.io.out(
          o.json === true
            ? json(run)
            : `${run.status === 'cancelled' ? 'cancelled' : 'cancel requested'}: run ${name}@${run.logical_date}\n${runText(run, ctx.clock.now())}`,
        );
      });
    });

  onPipeline(
    'pause',
    "pause the pipeline's schedule: no run is started by it until resumed (trigger and backfill still do)",
  )
    .option('--note <text>', 'why (shown by show; at most 500 characters)')
    .option('--json', 'print the schedule as the API shows it')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, pauseOptions);
      await act(o, async (s) => {
        scheduleOf(s.pipelines, name);
        const view = await s.schedules.pause(name, o.note, undefined);
        ctx.io.out(
          o.json === true
            ? json(view)
            : `paused: the schedule of pipeline ${name}${view.pause_note === undefined ? '' : ` (${JSON.stringify(view.pause_note)})`}\n`,
        );
      });
    });

  onPipeline('resume', "resume the pipeline's schedule (times missed meanwhile run as its catchup says)")
    .option('--json', 'print the schedule as the API shows it')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, commonOptions);
      await act(o, async (s) => {
        scheduleOf(s.pipelines, name);
        const view = await s.schedules.resume(name, undefined);
        const next = scheduleStateOf(view).next_fire_time;
        ctx.io.out(
          o.json === true
            ? json(view)
            : `resumed: the schedule of pipeline ${name}${next === undefined ? '' : `, next fire ${next}`}\n`,
        );
      });
    });
}

/** The pipeline's schedule (its name), refused for a pipeline without one. */
function scheduleOf(service: PipelineService, name: string): void {
  if (service.summary(name).schedule === undefined)
    throw new CliError(`pipeline "${name}" has no schedule: its runs start only by trigger or backfill`);
}

/** `undefined` for a schedule not created yet (the next sync creates it); rethrows the rest. */
function unlessMissing(err: unknown): undefined {
  if (err instanceof ScheduleNotFoundError) return undefined;
  throw err;
}

/** The flag of each field the domain names. */
const FLAGS: Readonly<Record<string, string>> = {
  logical_date: '--date',
  from: '--from',
  to: '--to',
  reprocess: '--reprocess',
  max_active_runs: '--max-active-runs',
  nodes: '--node',
  note: '--note',
};

/**
 * The pipeline domain's errors as the CLI's: a refused field is a usage error (exit 2) naming
 * its flag; an unknown pipeline or run, or a run that cannot do that now, a failure (exit 1).
 */
export function cliErrorOf(err: unknown): unknown {
  if (err instanceof PipelineRequestError || err instanceof ScheduleValidationError) {
    const { field, message } = err;
    // The domain says `field: …` or `field must …`; the operator typed a flag.
    const rest = message.startsWith(`${field}:`)
      ? message.slice(field.length + 1).trimStart()
      : message.startsWith(`${field} `)
        ? message.slice(field.length + 1)
        : message;
    return new UsageError(`${FLAGS[field] ?? field}: ${rest}`, { cause: err });
  }
  if (err instanceof UnknownPipelineError)
    return new CliError(`${err.message} (see kaj pipelines list)`, EXIT.failure, { cause: err });
  if (err instanceof PipelineRunNotFoundError)
    return new CliError(`${err.message} (see kaj pipelines runs ${err.pipeline})`, EXIT.failure, { cause: err });
  if (err instanceof TaskNotCancellableError)
    return new CliError(`the run has ended (${err.status}): nothing to cancel`, EXIT.failure, { cause: err });
  if (err instanceof PipelineRunConflictError) return new CliError(err.message, EXIT.failure, { cause: err });
  return err;
}
