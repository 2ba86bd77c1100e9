/**
 * The root of every error Kaj raises: one `instanceof KajError` tells Kaj's errors from
 * anything else. Each module has its own root under it (`TaskError`, `StoreError`,
 * `QueueError`, `ConfigError`, `ConsumerError`, `HttpError`, the CLI's `CliError`), and the
 * signals task authors throw (`PermanentError`, `RetryableError`) are Kaj errors too.
 * Every one carries the task id when there is one, and its cause.
 */
export class KajError extends Error {
  readonly taskId: string | undefined;
  constructor(message: string, options: { taskId?: string | undefined; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.taskId = options.taskId;
  }
}
