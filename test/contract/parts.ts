/**
 * Cases of a port's contract that an implementation may leave out on purpose (a bench model that
 * stores only well-formed records, say), each with the reason it gives.
 *
 * @module
 */
import { it } from 'vitest';

/** Registers `fn` as a test, or, where `reason` says the implementation leaves this part out, as a skipped one naming the reason. */
export function partTest(reason: string | undefined, title: string, fn: () => Promise<void>): void {
  if (reason === undefined) it(title, fn);
  // Skipped on purpose: the implementation under test declares this part of the contract left out,
  // for the reason its contract options give (shown in the title).
  else it.skip(`${title} [left out here: ${reason}]`, fn);
}
