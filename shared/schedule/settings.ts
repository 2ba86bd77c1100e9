import { DEFAULTS } from '../config/resources.js';
import { checkCount, checkIntegerRange, checkRange, ConfigError } from '../config/errors.js';

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
  /** Smallest interval between two times of one schedule (`every`, `cron`), in seconds. */
  readonly minIntervalSeconds: number;
  /** Whether a 6-field cron (seconds first) is accepted. */
  readonly allowSecondsField: boolean;
  /** Schedules one API caller may own (schedules declared in code and the operator's are not counted). */
  readonly maxPerOwner: number;
}

export function schedulerSettings(overrides: Partial<SchedulerSettings> = {}): SchedulerSettings {
  const s: SchedulerSettings = {
    tickSeconds: overrides.tickSeconds ?? DEFAULTS.scheduleTickSeconds,
    misfireGraceSeconds: overrides.misfireGraceSeconds ?? DEFAULTS.scheduleMisfireGraceSeconds,
    maxRunsPerTick: overrides.maxRunsPerTick ?? DEFAULTS.scheduleMaxRunsPerTick,
    recentRuns: overrides.recentRuns ?? DEFAULTS.scheduleRecentRuns,
    maxBackfill: overrides.maxBackfill ?? DEFAULTS.scheduleMaxBackfill,
    tickConcurrency: overrides.tickConcurrency ?? DEFAULTS.scheduleTickConcurrency,
    minIntervalSeconds: overrides.minIntervalSeconds ?? DEFAULTS.scheduleMinIntervalSeconds,
    allowSecondsField: overrides.allowSecondsField ?? DEFAULTS.scheduleAllowSecondsField,
    maxPerOwner: overrides.maxPerOwner ?? DEFAULTS.scheduleMaxPerOwner,
  };
  checkRange('tickSeconds', s.tickSeconds, 0.1, 900);
  if (!(s.misfireGraceSeconds >= s.tickSeconds)) {
    throw new ConfigError('misfireGraceSeconds', 'misfireGraceSeconds must be at least tickSeconds');
  }
  checkIntegerRange('minIntervalSeconds', s.minIntervalSeconds, 1, 86_400);
  for (const k of ['maxRunsPerTick', 'recentRuns', 'maxBackfill', 'tickConcurrency', 'maxPerOwner'] as const) {
    checkCount(k, s[k]);
  }
  return s;
}
