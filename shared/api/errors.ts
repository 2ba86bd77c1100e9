import { KajError } from '../errors.js';

/** An HTTP-level refusal (routing, media type, malformed JSON) that is not a domain error. */
export class HttpError extends KajError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly options: { allow?: string; field?: string; cause?: unknown } = {},
  ) {
    super(message, options);
  }
  get allow(): string | undefined {
    return this.options.allow;
  }
  /** The request field at fault (a query parameter), when there is one. */
  get field(): string | undefined {
    return this.options.field;
  }
}
