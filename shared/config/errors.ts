import { KajError } from '../errors.js';

/** Root of the configuration module's errors. Raised at start-up, with the setting named. */
export class ConfigError extends KajError {
  constructor(
    readonly setting: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

export class MissingEnvironmentError extends ConfigError {
  constructor(variable: string) {
    super(variable, `environment variable ${variable} is not set`);
  }
}
