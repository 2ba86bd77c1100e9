import type { Logger } from '../shared/runtime/logger.js';

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
type Level = (typeof LEVELS)[number];

/** One readable line per event for a developer's terminal (the functions log JSON on AWS). */
export function consoleLogger(minLevel: Level = 'info'): Logger {
  const min = LEVELS.indexOf(minLevel);
  const line = (level: Level) => (message: string, fields?: Record<string, unknown>) => {
    if (LEVELS.indexOf(level) < min) return;
    const time = new Date().toISOString().slice(11, 23);
    const rest = Object.entries(fields ?? {})
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    const out = `${time} ${level.toUpperCase().padEnd(5)} ${message}${rest ? `  ${rest}` : ''}`;
    (level === 'error' || level === 'warn' ? process.stderr : process.stdout).write(`${out}\n`);
  };
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
}
