/**
 * The one rule of every command that changes or removes what exists (`kaj dlq redrive`,
 * `kaj dlq purge`, `kaj tasks cancel`, `kaj task cancel`, `kaj schedules delete`): it takes
 * `--yes`, asks on a terminal without it, and refuses (exit 2) when there is no terminal to ask
 * on. `--dry-run`, where a command has it, changes nothing and asks nothing.
 *
 * @module
 */
import type { CliContext, RunState } from './context.js';
import { EXIT, UsageError } from './errors.js';

/** The help line of `--yes`, the same on every command that has it. */
export const YES_HELP = 'do not ask for confirmation (required when not on a terminal)';

/**
 * Asks on a terminal; refuses (usage error) when there is none to ask on.
 * @param dryRun whether the command has `--dry-run` (the refusal points to it)
 */
export async function confirm(ctx: CliContext, question: string, what: string, dryRun = true): Promise<boolean> {
  if (!ctx.io.stdinIsTTY || !ctx.io.stderrIsTTY) {
    throw new UsageError(
      `refusing to ${what} without --yes (no terminal to ask on). Add --yes${dryRun ? ', or --dry-run to preview' : ''}.`,
    );
  }
  const answer = await ctx.prompt(`${question} [y/N] `);
  return /^y(es)?$/i.test(answer.trim());
}

/** A change goes ahead with --dry-run, --yes, or a yes on the terminal; "no" exits 1, changing nothing. */
export async function approved(
  ctx: CliContext,
  state: RunState,
  o: { readonly dryRun?: boolean | undefined; readonly yes?: boolean | undefined },
  question: string,
  what: string,
  dryRun = true,
): Promise<boolean> {
  if (o.dryRun === true || o.yes === true) return true;
  if (await confirm(ctx, question, what, dryRun)) return true;
  ctx.io.err('nothing was changed.\n');
  state.exitCode = EXIT.failure;
  return false;
}
