import { KajError } from '../../errors.js';

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

/**
 * The API function was invoked with an event that is neither API Gateway payload format: not an
 * HTTP API's (2.0) nor a REST API's (1.0). A wiring mistake, not a client's request: it is thrown,
 * not answered.
 */
export class UnsupportedApiEventError extends KajError {}
