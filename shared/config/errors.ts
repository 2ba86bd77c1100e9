/** Root of the configuration module's errors. Raised at start-up, with the setting named. */
export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
  }
}

export class MissingEnvironmentError extends ConfigError {
  constructor(variable: string) {
    super(variable, `environment variable ${variable} is not set`);
  }
}
