import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { DEFAULTS } from '../../../shared/config/resources.js';
import { defineTask, resolvePolicy, TaskRegistry, type TaskDefinition } from '../../../shared/task/define.js';
import { TaskDefinitionError, TaskError, UnknownTaskTypeError } from '../../../shared/task/errors.js';

const base = { type: 'resize_video', schema: z.object({ key: z.string() }), handler: async () => ({}) };

/** The error defineTask throws for `def` (fails the test if it throws none, or another kind). */
function definitionError(def: Partial<TaskDefinition> & Record<string, unknown>): TaskDefinitionError {
  try {
    defineTask({ ...base, ...def } as TaskDefinition);
  } catch (err) {
    expect(err).toBeInstanceOf(TaskDefinitionError);
    expect(err).toBeInstanceOf(TaskError);
    return err as TaskDefinitionError;
  }
  return expect.fail(`defineTask accepted ${JSON.stringify(def)}`);
}

describe('Function: defineTask', () => {
  it('returns the very definition it was given when every option is valid', () => {
    const def = {
      ...base,
      maxAttempts: 4,
      timeoutSeconds: 240,
      backoff: { baseSeconds: 5, capSeconds: 600 },
      crashLimit: 3,
      description: 'x',
    };
    expect(defineTask(def)).toBe(def);
  });

  it('accepts a definition with no policy option at all', () => {
    expect(defineTask(base)).toBe(base);
  });

  describe('Option: type', () => {
    it.each(['a', 'send_email', 'v2_resize', `a${'b'.repeat(63)}`])(
      'accepts %j (lower snake case, at most 64 characters)',
      (type) => {
        expect(defineTask({ ...base, type }).type).toBe(type);
      },
    );

    it.each(['', 'SendEmail', 'send-email', '2fast', '_private', 'send email', 'émail', `a${'b'.repeat(64)}`])(
      'rejects %j, naming the type and the rule',
      (type) => {
        const err = definitionError({ type });
        expect(err.message).toBe(`type "${type}" must match /^[a-z][a-z0-9_]{0,63}$/ (lower snake case, ≤ 64 chars)`);
      },
    );
  });

  describe.each([
    ['maxAttempts', 1, DEFAULTS.maxAttemptsLimit],
    ['timeoutSeconds', 1, DEFAULTS.maxTaskTimeoutSeconds],
    ['crashLimit', 1, 25],
  ] as const)('Option: %s', (option, min, max) => {
    it(`accepts the integers ${min} and ${max}`, () => {
      expect(defineTask({ ...base, [option]: min })[option]).toBe(min);
      expect(defineTask({ ...base, [option]: max })[option]).toBe(max);
    });

    it.each([min - 1, max + 1, 2.5, -1, Number.NaN, Number.POSITIVE_INFINITY])(
      'rejects %s, naming the option, its range and the value',
      (value) => {
        const err = definitionError({ [option]: value });
        expect(err.message).toBe(
          `task type "resize_video": ${option} must be an integer in [${min}, ${max}], got ${value}`,
        );
      },
    );
  });

  describe('Option: backoff', () => {
    it('accepts fractional and boundary values, base up to the cap', () => {
      expect(defineTask({ ...base, backoff: { baseSeconds: 0.5 } }).backoff).toEqual({ baseSeconds: 0.5 });
      expect(defineTask({ ...base, backoff: { baseSeconds: 3600, capSeconds: 3600 } }).backoff?.baseSeconds).toBe(3600);
      expect(defineTask({ ...base, backoff: { capSeconds: 43_200 } }).backoff?.capSeconds).toBe(43_200);
      expect(defineTask({ ...base, backoff: { baseSeconds: 2, capSeconds: 2 } }).backoff?.capSeconds).toBe(2);
    });

    it.each([0, -1, 3601, Number.NaN])('rejects baseSeconds %s, naming backoff.baseSeconds', (baseSeconds) => {
      const err = definitionError({ backoff: { baseSeconds, capSeconds: 43_200 } });
      expect(err.message).toBe(
        `task type "resize_video": backoff.baseSeconds must be in (0, 3600], got ${baseSeconds}`,
      );
    });

    it.each([0, -5, 43_201, Number.NaN])('rejects capSeconds %s, naming backoff.capSeconds', (capSeconds) => {
      const err = definitionError({ backoff: { capSeconds } });
      expect(err.message).toBe(`task type "resize_video": backoff.capSeconds must be in (0, 43200], got ${capSeconds}`);
    });

    it.each([
      ['a base above the given cap', { baseSeconds: 10, capSeconds: 5 }],
      [
        `a base above the default cap (${DEFAULTS.backoffCapSeconds} s)`,
        { baseSeconds: DEFAULTS.backoffCapSeconds + 1 },
      ],
      [
        `a cap below the default base (${DEFAULTS.backoffBaseSeconds} s)`,
        { capSeconds: DEFAULTS.backoffBaseSeconds - 1 },
      ],
    ])('rejects %s, naming both options', (_what, backoff) => {
      const err = definitionError({ backoff });
      expect(err.message).toBe('task type "resize_video": backoff.baseSeconds must not exceed backoff.capSeconds');
    });
  });

  describe('Option: handler', () => {
    it.each([undefined, 'run', {}])('rejects a handler that is not a function (%j)', (handler) => {
      const err = definitionError({ handler: handler as never });
      expect(err.message).toBe('task type "resize_video": handler must be a function');
    });
  });
});

describe('Function: resolvePolicy', () => {
  it('fills every default', () => {
    expect(resolvePolicy({})).toEqual({
      maxAttempts: DEFAULTS.maxAttempts,
      timeoutSeconds: DEFAULTS.taskTimeoutSeconds,
      backoff: { baseSeconds: DEFAULTS.backoffBaseSeconds, capSeconds: DEFAULTS.backoffCapSeconds },
    });
  });

  it('keeps the options given, filling only the others', () => {
    expect(resolvePolicy({ maxAttempts: 8, backoff: { capSeconds: 60 } })).toEqual({
      maxAttempts: 8,
      timeoutSeconds: DEFAULTS.taskTimeoutSeconds,
      backoff: { baseSeconds: DEFAULTS.backoffBaseSeconds, capSeconds: 60 },
    });
  });
});

describe('Class: TaskRegistry', () => {
  const a = defineTask({ ...base, type: 'send_email' });
  const b = defineTask({ ...base, type: 'make_thumbnails' });

  it('finds each registered definition by type, and lists the types sorted', () => {
    const registry = new TaskRegistry([a, b]);
    expect(registry.get('send_email')).toBe(a);
    expect(registry.get('make_thumbnails')).toBe(b);
    expect(registry.has('send_email')).toBe(true);
    expect(registry.has('nope')).toBe(false);
    expect(registry.types()).toEqual(['make_thumbnails', 'send_email']);
  });

  it('refuses a type registered twice, naming it', () => {
    const again = defineTask({ ...base, type: 'send_email', maxAttempts: 2 });
    expect(() => new TaskRegistry([a, b, again])).toThrow(
      new TaskDefinitionError('task type "send_email" is registered twice'),
    );
    expect(() => new TaskRegistry([a, a])).toThrow(TaskDefinitionError);
  });

  describe('Method: get', () => {
    it('throws UnknownTaskTypeError for an unknown type, with the type and the known ones', () => {
      const registry = new TaskRegistry([a, b]);
      let err: unknown;
      try {
        registry.get('resize_video');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UnknownTaskTypeError);
      expect(err).toMatchObject({
        type: 'resize_video',
        known: ['make_thumbnails', 'send_email'],
        message: 'unknown task type "resize_video"; known types: make_thumbnails, send_email',
      });
    });

    it('says "(none)" when nothing is registered', () => {
      expect(() => new TaskRegistry([]).get('x')).toThrow('unknown task type "x"; known types: (none)');
    });
  });
});
