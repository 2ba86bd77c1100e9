import { DEFAULTS } from '../config/resources.js';
import { ConfigError } from '../config/errors.js';

/** The scheduler's settings (the deployment's; tests and `npm start` shorten the tick). */
export interface SchedulerSettings {
  /** Tick period; a tick hands SQS every time due before the next one. */
  readonly tickSeconds: number;
  /** A time seen later than this after it fell due was missed (the misfire policy decides). */
  readonly misfireGraceSeconds: number;
  readonly maxRunsPerTick: number;
  readonly recentRuns: number;
  readonly maxBackfill: number;
  readonly tickConcurrency: number;
}

export function schedulerSettings(overrides: Partial<SchedulerSettings> = {}): SchedulerSettings {
  const s: SchedulerSettings = {
    tickSeconds: overrides.tickSeconds ?? DEFAULTS.scheduleTickSeconds,
    misfireGraceSeconds: overrides.misfireGraceSeconds ?? DEFAULTS.scheduleMisfireGraceSeconds,
    maxRunsPerTick: overrides.maxRunsPerTick ?? DEFAULTS.scheduleMaxRunsPerTick,
    recentRuns: overrides.recentRuns ?? DEFAULTS.scheduleRecentRuns,
    maxBackfill: overrides.maxBackfill ?? DEFAULTS.scheduleMaxBackfill,
    tickConcurrency: overrides.tickConcurrency ?? DEFAULTS.scheduleTickConcurrency,
  };
  if (!(s.tickSeconds >= 0.1 && s.tickSeconds <= 900)) {
    throw new ConfigError('tickSeconds', `tickSeconds must be in [0.1, 900], got ${s.tickSeconds}`);
  }
  if (!(s.misfireGraceSeconds >= s.tickSeconds)) {
    throw new ConfigError('misfireGraceSeconds', 'misfireGraceSeconds must be at least tickSeconds');
  }
  for (const k of ['maxRunsPerTick', 'recentRuns', 'maxBackfill', 'tickConcurrency'] as const) {
    if (!Number.isInteger(s[k]) || s[k] < 1) throw new ConfigError(k, `${k} must be an integer >= 1`);
  }
  return s;
}
