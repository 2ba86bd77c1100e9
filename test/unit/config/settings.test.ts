import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, MissingEnvironmentError } from '../../../shared/config/errors.js';
import { DEFAULTS, ENV } from '../../../shared/config/resources.js';
import {
  functionEnvironment,
  loadFunctionConfig,
  runtimeSettings,
  settingsFromEnvironment,
  type RuntimeSettings,
} from '../../../shared/config/settings.js';

type Overrides = Parameters<typeof runtimeSettings>[0];

/** The ConfigError `fn` throws (fails the test if it throws none, or another kind). */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  return expect.fail('no ConfigError was thrown');
}

const QUEUES = { high: 'https://sqs/q-high', normal: 'https://sqs/q-normal', low: 'https://sqs/q-low' };
const DLQS = { high: 'https://sqs/q-high-dlq', normal: 'https://sqs/q-normal-dlq', low: 'https://sqs/q-low-dlq' };
const ENVIRONMENT: Record<string, string> = {
  KAJ_TABLE_NAME: 'kaj-tasks',
  KAJ_QUEUE_URL_HIGH: QUEUES.high,
  KAJ_QUEUE_URL_NORMAL: QUEUES.normal,
  KAJ_QUEUE_URL_LOW: QUEUES.low,
  KAJ_DLQ_URL_HIGH: DLQS.high,
  KAJ_DLQ_URL_NORMAL: DLQS.normal,
  KAJ_DLQ_URL_LOW: DLQS.low,
};

describe('Function: runtimeSettings', () => {
  it('gives the defaults, with the heartbeat at a third of the lease', () => {
    expect(runtimeSettings()).toEqual({
      leaseSeconds: DEFAULTS.leaseSeconds,
      heartbeatSeconds: DEFAULTS.leaseSeconds / 3,
      retentionDays: DEFAULTS.retentionDays,
      outboxGraceSeconds: DEFAULTS.outboxGraceSeconds,
      watchdogSeconds: DEFAULTS.watchdogSeconds,
      sendFirstWindowSeconds: DEFAULTS.sendFirstWindowSeconds,
      crashLoopReceives: DEFAULTS.crashLoopReceives,
      cancelPollSeconds: DEFAULTS.cancelPollSeconds,
      historyLength: DEFAULTS.historyLength,
      queueVisibilityTimeoutSeconds: DEFAULTS.queueVisibilityTimeoutSeconds,
      maxReceiveCount: DEFAULTS.maxReceiveCount,
    } satisfies RuntimeSettings);
  });

  it('applies every override, deriving the heartbeat from the lease', () => {
    const overrides = {
      leaseSeconds: 30,
      retentionDays: 30,
      outboxGraceSeconds: 10,
      watchdogSeconds: 600,
      crashLoopReceives: 5,
      cancelPollSeconds: 0,
      historyLength: 3,
      queueVisibilityTimeoutSeconds: 400,
      sendFirstWindowSeconds: 20,
      maxReceiveCount: 4,
    };
    expect(runtimeSettings(overrides)).toEqual({ ...overrides, heartbeatSeconds: 10 });
  });

  it.each<[string, Overrides]>([
    ['leaseSeconds 3', { leaseSeconds: 3 }],
    ['leaseSeconds 900 under a 900 s visibility timeout', { leaseSeconds: 900, queueVisibilityTimeoutSeconds: 900 }],
    ['leaseSeconds equal to the visibility timeout', { leaseSeconds: 300, queueVisibilityTimeoutSeconds: 300 }],
    [
      'a visibility timeout shorter than the largest task timeout (local runs and tests)',
      { leaseSeconds: 3, queueVisibilityTimeoutSeconds: 6 },
    ],
    ['retentionDays 1', { retentionDays: 1 }],
    ['retentionDays 3650', { retentionDays: 3650 }],
    ['a fractional outboxGraceSeconds', { outboxGraceSeconds: 0.5, watchdogSeconds: 0.5 }],
    ['watchdogSeconds equal to outboxGraceSeconds', { outboxGraceSeconds: 45, watchdogSeconds: 45 }],
    ['crashLoopReceives 1', { crashLoopReceives: 1 }],
    ['a fractional cancelPollSeconds', { cancelPollSeconds: 0.25 }],
    ['cancelPollSeconds 900', { cancelPollSeconds: 900 }],
    ['historyLength 1', { historyLength: 1 }],
  ])('accepts %s', (_what, overrides) => {
    expect(runtimeSettings(overrides)).toMatchObject(overrides as object);
  });

  it.each<[keyof RuntimeSettings, Overrides, RegExp]>([
    ['leaseSeconds', { leaseSeconds: 2 }, /^leaseSeconds must be in \[3, 900\], got 2$/],
    [
      'leaseSeconds',
      { leaseSeconds: 901, queueVisibilityTimeoutSeconds: 1000 },
      /^leaseSeconds must be in \[3, 900\], got 901$/,
    ],
    ['leaseSeconds', { leaseSeconds: Number.NaN }, /^leaseSeconds must be in \[3, 900\], got NaN$/],
    ['leaseSeconds', { leaseSeconds: Number.POSITIVE_INFINITY }, /^leaseSeconds must be in/],
    [
      'leaseSeconds',
      { leaseSeconds: DEFAULTS.queueVisibilityTimeoutSeconds + 1 },
      /^leaseSeconds must not exceed the queue visibility timeout$/,
    ],
    ['retentionDays', { retentionDays: 0 }, /^retentionDays must be an integer in \[1, 3650\], got 0$/],
    ['retentionDays', { retentionDays: 3651 }, /^retentionDays must be an integer in \[1, 3650\], got 3651$/],
    ['retentionDays', { retentionDays: 1.5 }, /^retentionDays must be an integer in \[1, 3650\], got 1.5$/],
    ['outboxGraceSeconds', { outboxGraceSeconds: 0 }, /^outboxGraceSeconds must be > 0$/],
    ['sendFirstWindowSeconds', { sendFirstWindowSeconds: 0 }, /^sendFirstWindowSeconds must be > 0$/],
    ['outboxGraceSeconds', { outboxGraceSeconds: -1 }, /^outboxGraceSeconds must be > 0$/],
    ['outboxGraceSeconds', { outboxGraceSeconds: Number.NaN }, /^outboxGraceSeconds must be > 0$/],
    [
      'watchdogSeconds',
      { outboxGraceSeconds: 60, watchdogSeconds: 59 },
      /^watchdogSeconds must be >= outboxGraceSeconds$/,
    ],
    ['watchdogSeconds', { watchdogSeconds: Number.NaN }, /^watchdogSeconds must be >= outboxGraceSeconds$/],
    ['crashLoopReceives', { crashLoopReceives: 0 }, /^crashLoopReceives must be an integer >= 1$/],
    ['crashLoopReceives', { crashLoopReceives: 2.5 }, /^crashLoopReceives must be an integer >= 1$/],
    ['cancelPollSeconds', { cancelPollSeconds: -1 }, /^cancelPollSeconds must be in \[0, 900\], got -1$/],
    ['cancelPollSeconds', { cancelPollSeconds: 901 }, /^cancelPollSeconds must be in \[0, 900\], got 901$/],
    ['cancelPollSeconds', { cancelPollSeconds: Number.NaN }, /^cancelPollSeconds must be in \[0, 900\], got NaN$/],
    ['historyLength', { historyLength: 0 }, /^historyLength must be an integer >= 1$/],
    ['historyLength', { historyLength: 1.5 }, /^historyLength must be an integer >= 1$/],
  ])('rejects a bad %s (%j) with a ConfigError naming it', (setting, overrides, message) => {
    const err = configError(() => runtimeSettings(overrides));
    expect(err.setting).toBe(setting);
    expect(err.message).toMatch(message);
  });
});

describe('Function: loadFunctionConfig', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('reads the table, the queue and DLQ URLs, and default settings; no ID secret unless set', () => {
    const config = loadFunctionConfig(ENVIRONMENT);
    expect(config).toEqual({
      tableName: 'kaj-tasks',
      queueUrls: QUEUES,
      deadLetterQueueUrls: DLQS,
      settings: runtimeSettings(),
    });
    expect(config).not.toHaveProperty('idSecret');
  });

  it.each(Object.keys(ENVIRONMENT))('throws MissingEnvironmentError naming %s when it is unset or empty', (name) => {
    for (const value of [undefined, '']) {
      const err = configError(() => loadFunctionConfig({ ...ENVIRONMENT, [name]: value }));
      expect(err).toBeInstanceOf(MissingEnvironmentError);
      expect(err.setting).toBe(name);
      expect(err.message).toBe(`environment variable ${name} is not set`);
    }
  });

  it.each([ENV.leaseSeconds, ENV.retentionDays])(
    'rejects a %s that is not a number, naming the variable and the value',
    (name) => {
      for (const value of ['abc', '1 day', 'Infinity', 'NaN']) {
        const err = configError(() => loadFunctionConfig({ ...ENVIRONMENT, [name]: value }));
        expect(err.setting).toBe(name);
        expect(err.message).toBe(`${name} must be a number, got "${value}"`);
      }
    },
  );

  it('applies KAJ_LEASE_SECONDS and KAJ_RETENTION_DAYS as overrides; empty means the default', () => {
    const config = loadFunctionConfig({ ...ENVIRONMENT, KAJ_LEASE_SECONDS: '30', KAJ_RETENTION_DAYS: '14' });
    expect(config.settings).toEqual(runtimeSettings({ leaseSeconds: 30, retentionDays: 14 }));
    expect(config.settings.heartbeatSeconds).toBe(10);
    expect(loadFunctionConfig({ ...ENVIRONMENT, KAJ_LEASE_SECONDS: '', KAJ_RETENTION_DAYS: '' }).settings).toEqual(
      runtimeSettings(),
    );
  });

  it('validates the overrides with runtimeSettings (the error names the setting, not the variable)', () => {
    expect(configError(() => loadFunctionConfig({ ...ENVIRONMENT, KAJ_LEASE_SECONDS: '2' })).setting).toBe(
      'leaseSeconds',
    );
    expect(configError(() => loadFunctionConfig({ ...ENVIRONMENT, KAJ_RETENTION_DAYS: '0' })).setting).toBe(
      'retentionDays',
    );
  });

  it('takes KAJ_ID_SECRET when set and not empty (it is optional)', () => {
    expect(loadFunctionConfig({ ...ENVIRONMENT, KAJ_ID_SECRET: 's3cret' }).idSecret).toBe('s3cret');
    expect(loadFunctionConfig({ ...ENVIRONMENT, KAJ_ID_SECRET: '' })).not.toHaveProperty('idSecret');
  });

  it('takes the limits and history tables when set and not empty (each optional)', () => {
    const config = loadFunctionConfig({
      ...ENVIRONMENT,
      [ENV.limitsTableName]: 'kaj-limits',
      [ENV.historyTableName]: 'kaj-history',
    });
    expect(config).toMatchObject({ limitsTableName: 'kaj-limits', historyTableName: 'kaj-history' });
    const unset = loadFunctionConfig({ ...ENVIRONMENT, [ENV.historyTableName]: '' });
    expect(unset).not.toHaveProperty('historyTableName');
    expect(unset).not.toHaveProperty('limitsTableName');
    expect(ENV.historyTableName).toBe('KAJ_HISTORY_TABLE_NAME');
  });

  it('reads process.env by default', () => {
    for (const [k, v] of Object.entries(ENVIRONMENT)) vi.stubEnv(k, v);
    vi.stubEnv('KAJ_TABLE_NAME', 'from-process-env');
    vi.stubEnv('KAJ_LEASE_SECONDS', '45');
    vi.stubEnv('KAJ_ID_SECRET', '');
    const config = loadFunctionConfig();
    expect(config.tableName).toBe('from-process-env');
    expect(config.settings.leaseSeconds).toBe(45);
  });
});

describe('Function: settingsFromEnvironment', () => {
  it('returns only the variables that are set (and not empty)', () => {
    expect(settingsFromEnvironment({})).toEqual({});
    expect(settingsFromEnvironment({ KAJ_LEASE_SECONDS: '', KAJ_RETENTION_DAYS: '' })).toEqual({});
    expect(settingsFromEnvironment({ KAJ_LEASE_SECONDS: '45' })).toEqual({ leaseSeconds: 45 });
    expect(
      settingsFromEnvironment({ KAJ_LEASE_SECONDS: '30', KAJ_RETENTION_DAYS: '14', KAJ_TABLE_NAME: 'ignored' }),
    ).toEqual({
      leaseSeconds: 30,
      retentionDays: 14,
    });
  });

  it('rejects a value that is not a number, naming the variable', () => {
    const err = configError(() => settingsFromEnvironment({ KAJ_RETENTION_DAYS: 'week' }));
    expect(err.setting).toBe('KAJ_RETENTION_DAYS');
    expect(err.message).toBe('KAJ_RETENTION_DAYS must be a number, got "week"');
  });

  it.each([
    ['KAJ_LEASE_SECONDS', '2', 'leaseSeconds must be in [3, 900], got 2'],
    ['KAJ_LEASE_SECONDS', '600', 'leaseSeconds must not exceed the queue visibility timeout'],
    ['KAJ_RETENTION_DAYS', '0', 'retentionDays must be an integer in [1, 3650], got 0'],
    ['KAJ_RETENTION_DAYS', '2.5', 'retentionDays must be an integer in [1, 3650], got 2.5'],
  ])(
    'rejects %s=%s out of range, naming the variable, with runtimeSettings’ error as the cause',
    (name, value, reason) => {
      const err = configError(() => settingsFromEnvironment({ [name]: value }));
      expect(err.setting).toBe(name);
      expect(err.message).toBe(`${name}=${value}: ${reason}`);
      expect(err.cause).toBeInstanceOf(ConfigError);
    },
  );

  it('reads process.env by default', () => {
    vi.stubEnv('KAJ_LEASE_SECONDS', '12');
    vi.stubEnv('KAJ_RETENTION_DAYS', '');
    try {
      expect(settingsFromEnvironment()).toEqual({ leaseSeconds: 12 });
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('Function: functionEnvironment', () => {
  it('writes the table and every queue and DLQ URL, and the settings only when given', () => {
    expect(functionEnvironment({ tableName: 'kaj-tasks', queueUrls: QUEUES, deadLetterQueueUrls: DLQS })).toEqual(
      ENVIRONMENT,
    );
    expect(
      functionEnvironment({
        tableName: 'kaj-tasks',
        queueUrls: QUEUES,
        deadLetterQueueUrls: DLQS,
        leaseSeconds: 90,
        retentionDays: 3,
      }),
    ).toEqual({ ...ENVIRONMENT, KAJ_LEASE_SECONDS: '90', KAJ_RETENTION_DAYS: '3' });
  });

  it('round-trips through loadFunctionConfig', () => {
    const c = {
      tableName: 'stack-tasks',
      queueUrls: QUEUES,
      deadLetterQueueUrls: DLQS,
      leaseSeconds: 90,
      retentionDays: 3,
    };
    const loaded = loadFunctionConfig(functionEnvironment(c));
    expect(loaded).toEqual({
      tableName: 'stack-tasks',
      queueUrls: QUEUES,
      deadLetterQueueUrls: DLQS,
      settings: runtimeSettings({ leaseSeconds: 90, retentionDays: 3 }),
    });
    const tables = { schedulesTableName: 's', limitsTableName: 'l', historyTableName: 'h' };
    expect(loadFunctionConfig(functionEnvironment({ ...c, ...tables }))).toMatchObject(tables);
    const plain = loadFunctionConfig(
      functionEnvironment({ tableName: 't', queueUrls: QUEUES, deadLetterQueueUrls: DLQS }),
    );
    expect(plain.settings).toEqual(runtimeSettings());
  });
});
