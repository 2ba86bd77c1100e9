import { Option, type Command } from 'commander';
import { PRIORITIES } from '../../shared/config/resources.js';
import { IdempotencyConflictError, UnknownTaskTypeError, ValidationError } from '../../shared/task/errors.js';
import { osActor, type CliContext, type RunState } from '../context.js';
import { CliError, UsageError } from '../errors.js';
import { optionsOf, submitOptions } from '../options.js';
import { json } from '../output.js';
import { parseJson, parseNonNegativeInt } from '../parse.js';
import { withServices } from '../services.js';

export function registerSubmit(program: Command, ctx: CliContext, _state: RunState): void {
  program
    .command('submit')
    .description('submit a task, as POST /api/v1/tasks would (validated against the task types in tasks/)')
    .argument('<type>', 'task type, e.g. send_email')
    .option('--payload <json>', 'the payload as JSON (default {})', parseJson)
    .addOption(new Option('--priority <priority>', 'queue').choices(PRIORITIES).default('normal'))
    .option('--idempotency-key <key>', 'a replay with the same key returns the same task')
    .option('--delay <seconds>', 'run no earlier than this many seconds from now', parseNonNegativeInt)
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      `\nExample:\n  kaj submit send_email --local --payload '{"to":"ada@example.com","subject":"hi"}'`,
    )
    .action(async (type: string, _o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, submitOptions);
      const registry = await ctx.registry();
      await withServices(
        ctx,
        o,
        async (s) => {
          let result;
          try {
            result = await s.kaj.submitter.submit(
              {
                type,
                ...(o.payload === undefined ? {} : { payload: o.payload }),
                priority: o.priority,
                ...(o.idempotencyKey === undefined ? {} : { idempotency_key: o.idempotencyKey }),
                ...(o.delay === undefined ? {} : { delay_seconds: o.delay }),
              },
              { owner: `operator:${osActor()}` },
            );
          } catch (err) {
            if (err instanceof ValidationError || err instanceof UnknownTaskTypeError)
              throw new UsageError(err.message);
            if (err instanceof IdempotencyConflictError) throw new CliError(err.message, 1, { cause: err });
            throw err;
          }
          const r = result.record;
          if (o.json === true) {
            ctx.io.out(
              json({
                task_id: r.task_id,
                status: r.status,
                priority: r.priority,
                run_at: r.run_at,
                replayed: result.replayed,
              }),
            );
          } else {
            ctx.io.out(
              `${result.replayed ? 'already submitted' : 'submitted'}: ${r.task_id} (${r.type}, ${r.priority}, ${r.status}, runs at ${r.run_at})\n`,
            );
          }
        },
        registry,
      );
    });
}
