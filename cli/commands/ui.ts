/**
 * `kaj ui`: the web console on this machine (127.0.0.1 only) against a target — a deployed stack
 * with your own AWS credentials (nothing is deployed, no endpoint is made public), LocalStack, or
 * a running `npm start`. Read-only unless started with `--allow-actions`.
 *
 * @module
 */
import type { Command } from 'commander';
import * as z from 'zod';
import { listenConsole, openConsole } from '../console/open.js';
import type { CliContext, RunState } from '../context.js';
import { CliError, UsageError } from '../errors.js';
import { commonOptions, optionsOf } from '../options.js';
import { parseNonNegativeInt } from '../parse.js';

const uiOptions = commonOptions.extend({ port: z.number().optional(), allowActions: z.boolean().optional() });

/** Where `kaj ui` listens unless told (`npm start` has 3000). */
export const DEFAULT_UI_PORT = 3100;

const HELP = `
Serves the console at http://127.0.0.1:PORT/ until Ctrl-C. It reads the target with your own
credentials, through the same services as the other kaj commands (kaj stats, kaj tasks list,
kaj task show, kaj dlq list/redrive/purge, kaj schedules): nothing is deployed or opened to
the network. Read-only by default: --allow-actions enables cancel, redrive, purge, a workflow
run's signals and the schedule actions (each needs the token of the page, so other local pages
cannot act).
Throughput and queue ages come from CloudWatch (cloudwatch:GetMetricData). The IAM permissions
it needs are in docs/operations.md ("The console").

Examples:
  kaj ui --stack kaj-prod --profile ops --region eu-west-1
  kaj ui --stack kaj-prod --allow-actions --port 8080`;

export function registerUi(program: Command, ctx: CliContext, _state: RunState): void {
  program
    .command('ui')
    .description('serve the web console on 127.0.0.1 against the target (read-only unless --allow-actions)')
    .option('--port <n>', `port on 127.0.0.1 (default ${DEFAULT_UI_PORT}; 0 picks a free one)`, parseNonNegativeInt)
    .option('--allow-actions', 'allow cancel, redrive, purge, signals and schedule changes from the console')
    .addHelpText('after', HELP)
    .action(async (_o: unknown, cmd: Command) => {
      const o = optionsOf(cmd, uiOptions);
      if (o.port !== undefined && o.port > 65535) throw new UsageError(`--port must be at most 65535, got ${o.port}`);
      let served;
      try {
        served = await listenConsole(
          (port) => openConsole(ctx, o, { allowActions: o.allowActions === true, port }),
          o.port ?? DEFAULT_UI_PORT,
          (err) => ctx.io.err(`kaj ui: ${err instanceof Error ? err.message : String(err)}\n`),
        );
      } catch (err) {
        if (err instanceof Error && /EADDRINUSE/.test(err.message))
          throw new CliError(
            `port ${o.port ?? DEFAULT_UI_PORT} is taken: try --port ${(o.port ?? DEFAULT_UI_PORT) + 1}`,
            1,
            { cause: err },
          );
        throw err;
      }
      ctx.io.out(
        `Kaj console for ${served.console.label}: ${served.url}\n` +
          `  ${o.allowActions === true ? 'actions ON (cancel, redrive, purge, schedules)' : 'read-only (start with --allow-actions to act)'}; listening on 127.0.0.1 only. Ctrl-C stops it.\n`,
      );
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await served.close();
      ctx.io.err('console stopped.\n');
    });
}
