/**
 * The logging contract of the domain. Functions pass `createLogger()` of shared/service/observability.ts
 * (JSON lines); the local runtime a console logger; tests a recorder. Fields must never contain
 * task payloads or results. Per-task events of the normal path belong at `debug`: at the default
 * level (INFO) a healthy task should cost no log line.
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

/**
 * Task-level counters and timings. On AWS, `createMetrics()` of shared/service/observability.ts: aggregated
 * per invocation and written as CloudWatch EMF lines when the function flushes.
 */
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
