/** An HTTP-level refusal (routing, media type, malformed JSON) that is not a domain error. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly options: { allow?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }
  get allow(): string | undefined {
    return this.options.allow;
  }
}
