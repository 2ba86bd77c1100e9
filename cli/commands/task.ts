import type { Command } from 'commander';
import { HttpError } from '../../shared/service/api/errors.js';
import { signalRoute } from '../../shared/service/api/signals.js';
import { TaskNotCancellableError, TaskNotFoundError, ValidationError } from '../../shared/task/errors.js';
import { historyRetentionDays } from '../../shared/workflow/history-store.js';
import * as z from 'zod';
import { approved, YES_HELP } from '../confirm.js';
import type { CliContext, RunState } from '../context.js';
import { CliError } from '../errors.js';
import { commonOptions, optionsOf, REASON_HELP, reasonOf } from '../options.js';
import { json } from '../output.js';
import { parseTaskId } from '../parse.js';
import { withServices } from '../services.js';
import { recordLines, timelineLines } from './task-record.js';
import { stepsView, waitingFor } from '../../shared/workflow/view.js';

const cancelOptions = commonOptions.extend({ yes: z.boolean().optional(), reason: z.string().optional() });
const signalOptions = commonOptions.extend({ data: z.string().optional() });

export function registerTask(program: Command, ctx: CliContext, state: RunState): void {
  const task = program.command('task').description('one task: show, cancel, signal');

  task
    .command('show')
    .description(
      'show a task record as stored (status, attempts, history, audit, owed messages) and a workflow run’s step timeline',
    )
    .argument('<task-id>', 'the task id', parseTaskId)
    .option('--json', 'print the whole record as JSON')
    .action(async (taskId: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, commonOptions);
      // The deployment's types say whether it has workflows (a history table to read the timeline from).
      const registry = await ctx.registry().catch(() => undefined);
      await withServices(
        ctx,
        o,
        async (s) => {
          const r = await s.kaj.store.get(taskId);
          if (r === undefined)
            throw new CliError(`task ${taskId} not found (never existed, or expired after its retention)`);
          // A workflow run: its steps from the history table.
          const entries = s.kaj.history === undefined ? [] : await s.kaj.history.read(taskId);
          const now = ctx.clock.now();
          const steps = stepsView(entries, now);
          const waiting = r.status === 'waiting' && entries.length > 0 ? waitingFor(entries, r.run_at) : undefined;
          ctx.io.out(
            o.json === true
              ? json(
                  entries.length === 0
                    ? r
                    : { ...r, steps, ...(waiting === undefined ? {} : { waiting_for: waiting }) },
                )
              : `${[...recordLines(r, now), ...timelineLines(steps, waiting)].join('\n')}\n`,
          );
        },
        registry,
      );
    });

  task
    .command('cancel')
    .description('cancel a task: at once if it has not started; a running one gets a cancel request its worker acts on')
    .argument('<task-id>', 'the task id', parseTaskId)
    .option('--yes', YES_HELP)
    .option('--reason <text>', REASON_HELP.replace('each task', 'the task'))
    .option('--json', 'print the task as JSON afterwards')
    .action(async (taskId: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, cancelOptions);
      const reason = reasonOf(o);
      if (!(await approved(ctx, state, o, `Cancel task ${taskId}?`, `cancel task ${taskId}`, false))) return;
      // With the types, a cancelled workflow run's children are cancelled too.
      const registry = await ctx.registry().catch(() => undefined);
      await withServices(
        ctx,
        o,
        async (s) => {
          let r;
          try {
            r = await s.kaj.lifecycle.requests.cancel(taskId, undefined, { actor: ctx.actor, ...reason });
          } catch (err) {
            if (err instanceof TaskNotFoundError || err instanceof TaskNotCancellableError)
              throw new CliError(err.message, 1, { cause: err });
            throw err;
          }
          const requested = r.status === 'running';
          if (o.json === true) ctx.io.out(json({ task_id: r.task_id, status: r.status, cancel_requested: requested }));
          else
            ctx.io.out(
              requested
                ? `task ${r.task_id} is running: cancel requested; its worker stops it at the next heartbeat\n`
                : `task ${r.task_id} is ${r.status}\n`,
            );
        },
        registry,
      );
    });

  task
    .command('signal')
    .description('send a signal to a workflow run (what its wf.waitForSignal(NAME) returns); wakes it if it waits')
    .argument('<task-id>', 'the run (the workflow task) id', parseTaskId)
    .argument('<name>', 'the signal name (lower snake case)')
    .option('--data <json>', 'the signal payload, as JSON (default: null)')
    .option('--json', 'print the answer as JSON')
    .action(async (taskId: string, name: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, signalOptions);
      let data: unknown = null;
      if (o.data !== undefined) {
        try {
          data = JSON.parse(o.data) as unknown;
        } catch {
          throw new CliError('--data: not valid JSON', 2);
        }
      }
      const registry = await ctx.registry();
      await withServices(
        ctx,
        o,
        async (s) => {
          let r;
          try {
            r = await signalRoute(
              taskId,
              name,
              data,
              {
                lifecycle: s.kaj.lifecycle,
                registry,
                ...(s.kaj.history === undefined ? {} : { history: s.kaj.history }),
                now: () => ctx.clock.now(),
                historyRetentionDays: historyRetentionDays(s.target.settings, registry),
              },
              undefined,
            );
          } catch (err) {
            if (err instanceof HttpError || err instanceof ValidationError || err instanceof TaskNotFoundError)
              throw new CliError(err.message, err instanceof ValidationError ? 2 : 1, { cause: err });
            throw err;
          }
          ctx.io.out(
            o.json === true
              ? json(r.body)
              : `signal ${name} recorded for run ${taskId}${r.body.woken === true ? '; the run is woken' : ''}\n`,
          );
        },
        registry,
      );
    });
}
