/** What the console answers with an error page instead of a 500. */
import { KajError } from '../shared/errors.js';

/** Root of the console's errors: each one is the caller's (a 4xx page), never retried as is. */
export class ConsoleError extends KajError {
  readonly retryable = false;
}

/** A query parameter or form field that is not acceptable: 400, naming the field. */
export class BadParameterError extends ConsoleError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** An action refused: no or a wrong token, a foreign origin, or a read-only console (403). */
export class ActionRefusedError extends ConsoleError {}

/** A request whose Host is not the console's own (DNS rebinding): 421. */
export class ForeignHostError extends ConsoleError {}

/** No such page, task, schedule or job: 404. */
export class PageNotFoundError extends ConsoleError {}
