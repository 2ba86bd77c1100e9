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

/** Throws a {@link ConfigError} unless the setting is a number in [min, max]. */
export function checkRange(setting: string, value: number, min: number, max: number): void {
  if (!(value >= min && value <= max)) {
    throw new ConfigError(setting, `${setting} must be in [${min}, ${max}], got ${value}`);
  }
}

/** Throws a {@link ConfigError} unless the setting is an integer in [min, max]. */
export function checkIntegerRange(setting: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(setting, `${setting} must be an integer in [${min}, ${max}], got ${value}`);
  }
}

/** Throws a {@link ConfigError} unless the setting is an integer of at least 1. */
export function checkCount(setting: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) throw new ConfigError(setting, `${setting} must be an integer >= 1`);
}
