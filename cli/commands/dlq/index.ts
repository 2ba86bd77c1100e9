import type { Command } from 'commander';
import type { CliContext, RunState } from '../../context.js';
import { registerList, registerShow } from './list.js';
import { registerPurge } from './purge.js';
import { registerRedrive } from './redrive.js';
import { LISTING_EFFECTS } from './selection.js';

/** `kaj dlq`: dead tasks — list and show (list.ts), redrive (redrive.ts), purge (purge.ts). */
export function registerDlq(program: Command, ctx: CliContext, state: RunState): void {
  const dlq = program
    .command('dlq')
    .description('dead tasks: list, show, redrive, purge')
    .addHelpText('after', LISTING_EFFECTS);
  registerList(dlq, ctx);
  registerShow(dlq, ctx);
  registerRedrive(dlq, ctx, state);
  registerPurge(dlq, ctx, state);
}
