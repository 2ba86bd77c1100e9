/** What the console answers with an error page instead of a 500. */

/** A query parameter or form field that is not acceptable: 400, naming the field. */
export class BadParameterError extends Error {
  override readonly name = 'BadParameterError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** An action refused: no or a wrong token, a foreign origin, or a read-only console (403). */
export class ActionRefusedError extends Error {
  override readonly name = 'ActionRefusedError';
}

/** A request whose Host is not the console's own (DNS rebinding): 421. */
export class ForeignHostError extends Error {
  override readonly name = 'ForeignHostError';
}

/** No such page, task, schedule or job: 404. */
export class PageNotFoundError extends Error {
  override readonly name = 'PageNotFoundError';
}
