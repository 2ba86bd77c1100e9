/**
 * `kaj schedules`: the schedules of a deployment — list, show, put, delete, pause, resume,
 * trigger, backfill — through `ScheduleService` as an operator (`caller = undefined`: every
 * schedule, those declared in code included). `--json` prints what the HTTP API answers.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import * as z from 'zod';
import { DEFAULTS } from '../../shared/config/resources.js';
import { ScheduleValidationError } from '../../shared/schedule/errors.js';
import type { ScheduleService } from '../../shared/schedule/service.js';
import type { ScheduleSummary, ScheduleView } from '../../shared/schedule/views.js';
import type { RunResult } from '../../shared/schedule/writes.js';
import { checkScheduleName } from '../../shared/schedule/spec.js';
import { InvalidCursorError } from '../../shared/task/errors.js';
import { approved, YES_HELP } from '../confirm.js';
import type { CliContext, RunState } from '../context.js';
import { EXIT, UsageError } from '../errors.js';
import { commonOptions, optionsOf } from '../options.js';
import { ago, json, table, truncate } from '../output.js';
import { parseJson, parsePositiveInt } from '../parse.js';
import { withSchedules } from '../services.js';
import type { TargetFlags } from '../target.js';

/** Runs `fn` with the schedule service on the target of `flags` (a seam: unit tests pass one over fakes). */
export type OpenSchedules = <T>(flags: TargetFlags, fn: (schedules: ScheduleService) => Promise<T>) => Promise<T>;

const listOptions = commonOptions.extend({ limit: z.number().optional(), cursor: z.string().optional() });
const putOptions = commonOptions.extend({ file: z.string().optional(), spec: z.unknown().optional() });
const deleteOptions = commonOptions.extend({ yes: z.boolean().optional() });
const pauseOptions = commonOptions.extend({ note: z.string().optional() });
const backfillOptions = commonOptions.extend({ from: z.string(), to: z.string() });

const SPEC_HELP = `
The spec is the body of PUT /api/v1/schedules/NAME (JSON):
  type              the task type each run creates (required)
  cron | every | at one of: a cron pattern ("30 0 * * *"), an interval ("15m", "1h30m"),
                    or one ISO time ("2026-10-01T09:00:00Z")
  timezone          IANA zone the cron is read in (default UTC)
  start_at, end_at  ISO times bounding the schedule; limit: runs at most
  jitter            spread fire times by a fixed offset below this ("30s")
  overlap           allow | forbid (default) | buffer_one | replace (cancels the running
                    run and starts at once: the two overlap until the old handler returns,
                    its signal aborting within ${DEFAULTS.cancelPollSeconds} s, or lease/3 if shorter, plus one read)
  misfire           skip (default) | run_once | catch_up; catchup_window ("1h")
  payload, priority, max_attempts, timeout_seconds, description
Putting the same spec again changes nothing ("unchanged").

Examples:
  kaj schedules put nightly-report --local --spec '{"type":"send_email","cron":"30 0 * * *","payload":{"to":"ops@example.com","subject":"report"}}'
  kaj schedules put nightly-report --stack kaj-prod --file nightly-report.json`;

/** `kaj schedules …`. */
export function registerSchedules(
  program: Command,
  ctx: CliContext,
  state: RunState,
  open: OpenSchedules = (flags, fn) => withSchedules(ctx, flags, (schedules) => fn(schedules)),
): void {
  const schedules = program
    .command('schedules')
    .description('schedules: list, show, put, delete, pause, resume, trigger, backfill')
    .addHelpText(
      'after',
      '\nTimes are UTC (ISO-8601). The CLI acts as an operator: it sees and changes every schedule,\nthose declared in code too (the next deploy or `npm start` puts those back as declared).',
    );

  schedules
    .command('list')
    .description('list schedules: name, state, task type, when, time zone, next fire time, last outcome')
    .option('--limit <n>', 'schedules per page, 1-200 (default 50)', parsePositiveInt)
    .option('--cursor <cursor>', 'the page after the one that printed this cursor')
    .option('--json', 'print JSON ({ items, cursor })')
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, listOptions);
      await open(o, async (service) => {
        let page;
        try {
          page = await service.list(undefined, {
            ...(o.limit === undefined ? {} : { limit: o.limit }),
            ...(o.cursor === undefined ? {} : { cursor: o.cursor }),
          });
        } catch (err) {
          if (err instanceof InvalidCursorError && o.cursor !== undefined)
            throw new UsageError(`--cursor "${truncate(o.cursor, 60)}" is not a cursor kaj schedules list printed`);
          throw asFlagError(err, { limit: '--limit' });
        }
        ctx.io.out(o.json === true ? json({ items: page.items, cursor: page.cursor ?? null }) : listText(page));
      });
    });

  schedules
    .command('show')
    .description('show a schedule: its spec, state, next times and recent runs (with their tasks now)')
    .argument('<name>', 'the schedule name', parseScheduleName)
    .option('--json', 'print the schedule as the API shows it')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, commonOptions);
      await open(o, async (service) => {
        const view = await service.get(name, undefined);
        ctx.io.out(o.json === true ? json(view) : viewText(view, ctx.clock.now()));
      });
    });

  schedules
    .command('put')
    .description('create or replace a schedule from its spec (JSON); the same spec again changes nothing')
    .argument(
      '<name>',
      'the schedule name (a letter or digit, then letters, digits, _ . : -; at most 128)',
      parseScheduleName,
    )
    .option('--file <path>', 'the spec, a JSON file')
    .option('--spec <json>', 'the spec, inline JSON', parseJson)
    .option('--json', 'print { result, schedule }')
    .addHelpText('after', SPEC_HELP)
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, putOptions);
      const body = specOf(o.file, o.spec, ctx.cwd);
      await open(o, async (service) => {
        const r = await service.put(name, body, undefined);
        const result = r.created ? 'created' : r.changed ? 'updated' : 'unchanged';
        if (o.json === true) {
          ctx.io.out(json({ result, schedule: r.view }));
          return;
        }
        ctx.io.out(`${result}: schedule ${name} (${stateText(r.view)}${nextText(r.view, ctx.clock.now())})\n`);
      });
    });

  schedules
    .command('delete')
    .description('delete a schedule (the tasks of its runs are left alone)')
    .argument('<name>', 'the schedule name', parseScheduleName)
    .option('--yes', YES_HELP)
    .option('--json', 'print { name, deleted }')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, deleteOptions);
      if (!(await approved(ctx, state, o, `Delete schedule ${name}?`, `delete schedule ${name}`, false))) return;
      await open(o, async (service) => {
        await service.delete(name, undefined);
        ctx.io.out(o.json === true ? json({ name, deleted: true }) : `deleted: schedule ${name}\n`);
      });
    });

  schedules
    .command('pause')
    .description('pause a schedule: no run is created until it is resumed')
    .argument('<name>', 'the schedule name', parseScheduleName)
    .option('--note <text>', 'why (shown by list and show; at most 500 characters)')
    .option('--json', 'print the schedule as the API shows it')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, pauseOptions);
      await open(o, async (service) => {
        let view;
        try {
          view = await service.pause(name, o.note, undefined);
        } catch (err) {
          throw asFlagError(err, { note: '--note' });
        }
        if (o.json === true) ctx.io.out(json(view));
        else
          ctx.io.out(
            view.state === 'finished'
              ? `schedule ${name} is finished (no time left): nothing to pause\n`
              : `paused: schedule ${name}${view.pause_note === undefined ? '' : ` (${JSON.stringify(view.pause_note)})`}\n`,
          );
      });
    });

  schedules
    .command('resume')
    .description('resume a paused schedule (times missed meanwhile follow its misfire policy)')
    .argument('<name>', 'the schedule name', parseScheduleName)
    .option('--json', 'print the schedule as the API shows it')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, commonOptions);
      await open(o, async (service) => {
        const view = await service.resume(name, undefined);
        ctx.io.out(
          o.json === true
            ? json(view)
            : view.state === 'finished'
              ? `schedule ${name} is finished (no time left): nothing to resume\n`
              : `resumed: schedule ${name}${nextText(view, ctx.clock.now())}\n`,
        );
      });
    });

  schedules
    .command('trigger')
    .description("run a schedule's task now, whatever its state and overlap policy (its logical date is now)")
    .argument('<name>', 'the schedule name', parseScheduleName)
    .option('--json', 'print the run { run_key, scheduled_time, task_id, created }')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, commonOptions);
      await open(o, async (service) => {
        const run = await service.trigger(name, undefined);
        ctx.io.out(o.json === true ? json(run) : `${runText(run)}\n`);
        if (run.invalid !== undefined) state.exitCode = EXIT.failure;
      });
    });

  schedules
    .command('backfill')
    .description('run every time of a schedule in [--from, --to] that has no run yet, oldest first')
    .argument('<name>', 'the schedule name', parseScheduleName)
    .requiredOption('--from <time>', 'first time, ISO-8601 with a zone (e.g. 2026-10-01T00:00:00Z)')
    .requiredOption('--to <time>', 'last time, ISO-8601 with a zone, not in the future')
    .option('--json', 'print { runs }')
    .addHelpText(
      'after',
      '\nA time that has a run already is left as it is ("already there"): backfilling twice creates nothing.\nExit status 1 when a run could not create its task (its payload no longer fits the task type).',
    )
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, backfillOptions);
      await open(o, async (service) => {
        let result;
        try {
          result = await service.backfill(name, { from: o.from, to: o.to }, undefined);
        } catch (err) {
          throw asFlagError(err, { from: '--from', to: '--to' });
        }
        ctx.io.out(o.json === true ? json(result) : backfillText(name, result.runs));
        if (result.runs.some((r) => r.invalid !== undefined)) state.exitCode = EXIT.failure;
      });
    });
}

/** A schedule name as an argument: refused before any request if it cannot name a schedule. */
export function parseScheduleName(value: string): string {
  try {
    checkScheduleName(value);
  } catch (err) {
    if (err instanceof ScheduleValidationError) throw new InvalidArgumentError(err.message);
    throw err;
  }
  return value;
}

/** The body of `put`: exactly one of --file and --spec, JSON. */
export function specOf(file: string | undefined, spec: unknown, cwd: string): unknown {
  if ((file === undefined) === (spec === undefined)) {
    throw new UsageError(
      file === undefined
        ? 'give the spec: --file PATH (a JSON file) or --spec JSON'
        : 'give the spec once: --file PATH or --spec JSON, not both',
    );
  }
  if (file === undefined) return spec;
  let text: string;
  try {
    text = readFileSync(resolve(cwd, file), 'utf8');
  } catch (err) {
    throw new UsageError(`--file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UsageError(`--file ${file}: not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
}

/** A validation error of a field that came from a flag, said with the flag's name. */
function asFlagError(err: unknown, flags: Readonly<Record<string, string>>): unknown {
  if (!(err instanceof ScheduleValidationError)) return err;
  const flag = flags[err.field];
  if (flag === undefined) return err;
  const detail = err.message.startsWith(`${err.field}:`) ? err.message.slice(err.field.length + 1).trim() : err.message;
  return new UsageError(`${flag}: ${detail}`);
}

// ---------------------------------------------------------------------------------------------
// Text output

export function listText(page: { items: readonly ScheduleSummary[]; cursor?: string }): string {
  if (page.items.length === 0)
    return page.cursor === undefined ? 'no schedules.\n' : `no schedules on this page.\n${more(page.cursor)}`;
  const rows = page.items.map((s) => [
    s.name,
    s.state,
    s.type,
    truncate(s.when, 40),
    s.timezone,
    s.next_fire_time ?? '-',
    s.last_outcome ?? '-',
  ]);
  return (
    table(['NAME', 'STATE', 'TYPE', 'WHEN', 'TIMEZONE', 'NEXT FIRE (UTC)', 'LAST OUTCOME'], rows) +
    `\n${page.items.length} schedule(s)${page.cursor === undefined ? '.' : ' on this page.'}\n` +
    (page.cursor === undefined ? '' : more(page.cursor))
  );
}

function more(cursor: string): string {
  return `more: kaj schedules list --cursor ${cursor}\n`;
}

export function stateText(v: Pick<ScheduleView, 'state' | 'pause_note' | 'paused_at'>): string {
  if (v.state !== 'paused') return v.state;
  return `paused${v.paused_at === undefined ? '' : ` since ${v.paused_at}`}${v.pause_note === undefined ? '' : `: ${JSON.stringify(v.pause_note)}`}`;
}

function nextText(v: ScheduleView, now: number): string {
  const next = v.next_fire_times[0];
  if (v.state !== 'active' || next === undefined) return '';
  return `, next fire ${next} (${ago(next, now)})`;
}

function value(v: unknown): string {
  return typeof v === 'string' ? v : truncate(JSON.stringify(v) ?? 'null', 200);
}

/** `kaj schedules show`: `key: value` lines, the next times, the recent runs. */
export function viewText(v: ScheduleView, now: number): string {
  const lines = [
    `name:         ${v.name}`,
    `state:        ${stateText(v)}`,
    `source:       ${v.source === 'code' ? 'declared in code' : 'API / CLI'} (owner ${v.owner})`,
    `fired:        ${v.fired} run(s) by the clock, ${v.missed} time(s) missed`,
    `last run:     ${v.last_run === undefined ? '-' : `${v.last_run.task_id} (${v.last_run.scheduled_time})`}`,
  ];
  if (v.buffered !== undefined) lines.push(`buffered:     ${v.buffered} (starts when the current run finishes)`);
  if (v.jitter_offset_seconds !== 0) lines.push(`jitter:       fires ${v.jitter_offset_seconds}s after each time`);
  lines.push(`created:      ${v.created_at}`, `updated:      ${v.updated_at}`, 'spec:');
  const keys = Object.keys(v.spec);
  const width = Math.max(0, ...keys.map((k) => k.length));
  for (const k of keys) lines.push(`  ${`${k}:`.padEnd(width + 2)}${value(v.spec[k])}`);
  let out = `${lines.join('\n')}\n`;

  const jittered = v.jitter_offset_seconds !== 0 || v.next_fire_times.some((t, i) => t !== v.next_times[i]);
  out += '\nnext times (UTC):\n';
  if (v.next_times.length === 0) out += `  none${v.state === 'finished' ? ' (finished)' : ''}\n`;
  else if (!jittered) out += v.next_times.map((t) => `  ${t}  (${ago(t, now)})\n`).join('');
  else
    out += table(
      ['  TIME', 'FIRES AT'],
      v.next_times.map((t, i) => [`  ${t}`, `${v.next_fire_times[i] ?? '-'} (${ago(v.next_fire_times[i], now)})`]),
    );
  if (v.state === 'paused' && v.next_times.length > 0) out += '  (paused: none of them fires until resumed)\n';

  out += '\nrecent runs (newest last):\n';
  if (v.recent_runs.length === 0) return `${out}  none\n`;
  return (
    out +
    table(
      ['SCHEDULED TIME', 'KIND', 'OUTCOME', 'TASK ID', 'TASK STATUS', 'DECIDED AT', 'NOTE'],
      v.recent_runs.map((r) => [
        r.scheduled_time,
        r.kind,
        r.outcome,
        r.task_id ?? '-',
        r.task_status ?? '-',
        r.at,
        truncate([r.count === undefined ? '' : `${r.count} time(s)`, r.reason ?? ''].filter(Boolean).join(': '), 60) ||
          '-',
      ]),
    )
  );
}

function runText(run: RunResult): string {
  if (run.invalid !== undefined)
    return `invalid: run ${run.run_key} could not create task ${run.task_id}: ${run.invalid}`;
  return `${run.created ? 'created' : 'already there'}: run ${run.run_key}, task ${run.task_id}`;
}

export function backfillText(name: string, runs: readonly RunResult[]): string {
  if (runs.length === 0) return `no time of schedule ${name} falls in that range: nothing to run.\n`;
  const created = runs.filter((r) => r.invalid === undefined && r.created).length;
  const invalid = runs.filter((r) => r.invalid !== undefined).length;
  return (
    table(
      ['RUN KEY', 'TASK ID', 'RESULT'],
      runs.map((r) => [
        r.run_key,
        r.task_id,
        r.invalid !== undefined ? `invalid: ${truncate(r.invalid, 70)}` : r.created ? 'created' : 'already there',
      ]),
    ) +
    `\n${runs.length} time(s): ${created} created, ${runs.length - created - invalid} already there${invalid > 0 ? `, ${invalid} invalid` : ''}\n`
  );
}
