/**
 * The logging contract of the domain. Functions pass Powertools' Logger (which fits this
 * shape); tests pass a recorder. Fields must never contain task payloads or results.
 */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};

/** Task-level counters and timings; Powertools Metrics (EMF) behind it on AWS. */
export interface Metrics {
  count(name: string, taskType: string | undefined, value?: number): void;
  durationMs(taskType: string, ms: number): void;
}

export const noMetrics: Metrics = { count: () => {}, durationMs: () => {} };

/** A logger that keeps what it is told, for tests and for the local runtime's summary. */
export class RecordingLogger implements Logger {
  readonly entries: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  debug(message: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level: 'debug', message, fields });
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level: 'info', message, fields });
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level: 'warn', message, fields });
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.entries.push({ level: 'error', message, fields });
  }
}
