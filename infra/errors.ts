import { KajError } from '../shared/errors.js';

/** One invalid setting: its dotted key (e.g. `concurrency.low`) and what is wrong with it. */
export interface ConfigProblem {
  readonly key: string;
  readonly message: string;
}

/**
 * Raised while synthesizing when the deployment configuration is invalid.
 * The message names every offending key, as written in `cdk.json` → `context` → `kaj:config`
 * (or `-c kaj:<key>=...` on the command line).
 */
export class InvalidConfigError extends KajError {
  /** Dotted path of the first offending key, e.g. `concurrency.low`. */
  readonly key: string;
  readonly problems: readonly ConfigProblem[];
  /** The same configuration fails the same way: fix it, then synthesize again. */
  readonly retryable = false;

  constructor(key: string, problems: readonly ConfigProblem[]) {
    const list = problems.length > 0 ? problems : [{ key, message: 'is invalid' }];
    super(`Invalid Kaj configuration: ${list.map((p) => `"${p.key}" ${p.message}`).join('; ')}`);
    this.key = key;
    this.problems = list;
  }
}
