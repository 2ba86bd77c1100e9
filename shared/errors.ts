/**
 * The root of every error Kaj raises: one `instanceof KajError` tells Kaj's errors from
 * anything else. Each module has its own root under it — `TaskError`, `StoreError`,
 * `QueueError`, `ConfigError`, `ConsumerError`, `LimitError`, `ScheduleError`, `HttpError`,
 * the client's `KajClientError`, the console's `ConsoleError`, the CLI's `CliError`,
 * `UsageError` and `AdminError`, the infrastructure's `InvalidConfigError`, the local runtime's
 * `IndexRebuildError` — and the signals task authors throw (`PermanentError`,
 * `RetryableError`) are Kaj errors too. Every one carries the task id when there is one, and
 * its cause; where a caller must decide whether to try again, `retryable` says so.
 *
 * Two kinds of throw are deliberately not Kaj errors: a precondition broken by Kaj's own code
 * (a negative delay, an empty batch handed to an adapter) is a `RangeError`, and a state that
 * cannot happen is a plain `Error`. Neither is meant to be caught.
 */
export class KajError extends Error {
  readonly taskId: string | undefined;
  constructor(message: string, options: { taskId?: string | undefined; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.taskId = options.taskId;
  }
}
