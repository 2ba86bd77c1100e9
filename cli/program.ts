import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerDlq } from './commands/dlq/index.js';
import { registerPipelines } from './commands/pipelines.js';
import { registerSchedules } from './commands/schedules.js';
import { registerStats } from './commands/stats.js';
import { registerSubmit } from './commands/submit.js';
import { registerTask } from './commands/task.js';
import { registerTasks } from './commands/tasks.js';
import { registerUi } from './commands/ui.js';
import { defaultContext, type CliContext, type RunState } from './context.js';
import { EXIT, UsageError, explain } from './errors.js';
import { TARGET_HELP } from './target.js';

const EXIT_HELP = `
Exit status: 0 success; 1 failure (or some items of a batch failed); 2 usage error; 130 interrupted.
Set KAJ_DEBUG=1 to print stack traces of unexpected errors.`;

/** Kaj's version, as package.json says (`kaj --version`). */
export const KAJ_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** The `kaj` command tree, writing through `ctx.io` and never calling process.exit. */
export function buildProgram(ctx: CliContext, state: RunState): Command {
  const program = new Command('kaj')
    .description(
      'Operate Kaj: queue depths, dead tasks (list, show, redrive, purge), task lookup and cancel, submit, schedules, pipelines and their runs, the web console (ui).',
    )
    .version(KAJ_VERSION, '-V, --version', "print kaj's version")
    .option('--local', 'the Kaj that `npm start` runs in this directory')
    .option('--stack <name>', 'a deployed Kaj stack (CloudFormation outputs)')
    .option('--endpoint-url <url>', 'with --stack: one endpoint for all AWS services (LocalStack)')
    .option('--region <region>', 'with --stack: AWS region (default: AWS_REGION / your profile)')
    .option('--profile <name>', 'with --stack: AWS profile (default: AWS_PROFILE / default chain)')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureOutput({
      writeOut: (s) => ctx.io.out(s),
      writeErr: (s) => ctx.io.err(s),
      outputError: (s, write) => write(s.startsWith('error:') ? `kaj: ${s}` : s),
    })
    .addHelpText('after', `\n${TARGET_HELP}\n${EXIT_HELP}`);
  registerStats(program, ctx, state);
  registerDlq(program, ctx, state);
  registerTask(program, ctx, state);
  registerTasks(program, ctx, state);
  registerSubmit(program, ctx, state);
  registerSchedules(program, ctx, state);
  registerPipelines(program, ctx, state);
  registerUi(program, ctx, state);
  return program;
}

/** Runs `kaj` with these arguments (without `node kaj`); returns the exit code. */
export async function runCli(argv: readonly string[], ctx: CliContext = defaultContext()): Promise<number> {
  const state: RunState = { exitCode: EXIT.ok };
  const program = buildProgram(ctx, state);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has printed its message (or the help) already.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.ok;
      return EXIT.usage;
    }
    const { message, exitCode } = explain(err);
    ctx.io.err(`kaj: ${exitCode === EXIT.usage ? 'error: ' : ''}${message}\n`);
    if (err instanceof UsageError) ctx.io.err('(add --help for usage)\n');
    if (ctx.env.KAJ_DEBUG && err instanceof Error && err.stack) ctx.io.err(`${err.stack}\n`);
    return exitCode;
  }
}
