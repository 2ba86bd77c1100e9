/**
 * Limit declarations (`tasks/limits.ts`) checked and resolved into {@link LimitSpec}s: rates
 * parsed, GCRA parameters derived, defaults filled in. Pure. Every failure is a
 * {@link LimitDefinitionError} naming the field (`limits.email_provider.rate`), raised at start-up.
 *
 * @module
 */
import type { LimitDeclaration, LimitDeclarations } from './declaration.js';
import { LimitDefinitionError } from './errors.js';

/** A limit's name: lower snake case, as task types; at most 64 characters. */
export const LIMIT_NAME = /^[a-z][a-z0-9_]{0,63}$/;

const MAX_CONCURRENCY = 1000;
const MAX_RATE_COUNT = 100_000;
const MIN_PER_MS = 1;
const MAX_PER_MS = 24 * 3600 * 1000;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const FIELDS: ReadonlySet<string> = new Set(['concurrency', 'rate', 'burst', 'arrivalJitterMs', 'learnRetryAfter']);

/** A rate as declared: `count` starts per `perMs` milliseconds. */
export interface Rate {
  readonly count: number;
  readonly perMs: number;
}

/** A resolved rate: what the limiter's GCRA needs. */
export interface RateSpec extends Rate {
  /** Starts allowed back to back after an idle spell (1: evenly spaced). */
  readonly burst: number;
  /**
   * The GCRA emission interval T: the spacing of starts, `(perMs + arrivalJitterMs) / count`,
   * rounded UP to a whole microsecond, so `count · T >= perMs` and no window of `perMs` can ever hold one start too many
   * (`'400/s'` gives exactly 2.5; `'3/s'` gives 333.334, which under-uses the rate by 6 ppm).
   * Fractional: every time the limiter computes is on a microsecond grid.
   */
  readonly intervalMs: number;
}

/** A limit resolved from its declaration. At least one of `concurrency` and `rate`. */
export interface LimitSpec {
  readonly name: string;
  /** Slots held at once, across every worker (per key when the use is keyed). */
  readonly concurrency?: number;
  readonly rate?: RateSpec;
  /** A provider's Retry-After pauses the rate for every worker (only with `rate`). */
  readonly learnRetryAfter: boolean;
}

/** A limit a task holds, with its key when the use is keyed (each key has the whole limit). */
export interface LimitUse {
  readonly spec: LimitSpec;
  readonly key?: string;
}

/**
 * Parses a rate such as `'40/s'`, `'600/m'`, `'10/5s'`, `'1000/h'`, `'5/250ms'`: a count of 1 to
 * 100,000 per an interval of 1 ms to 24 h (units ms, s, m, h).
 *
 * @param field where the rate was declared, for the error (`limits.email_provider.rate`)
 * @throws LimitDefinitionError naming `field`
 * @example parseRate('10/5s') // { count: 10, perMs: 5000 }
 */
export function parseRate(text: string, field = 'rate'): Rate {
  const m = typeof text === 'string' ? /^(\d+)\/(\d*)(ms|s|m|h)$/.exec(text) : null;
  if (m === null) {
    throw new LimitDefinitionError(
      field,
      `must be a rate such as 40/s, 600/m, 10/5s, 1000/h or 5/250ms, got ${JSON.stringify(text)}`,
    );
  }
  const count = Number(m[1]);
  const perMs = (m[2] === '' ? 1 : Number(m[2])) * UNIT_MS[m[3] as keyof typeof UNIT_MS];
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_RATE_COUNT) {
    throw new LimitDefinitionError(field, `the count must be 1 to ${MAX_RATE_COUNT}, got ${m[1]}`);
  }
  if (!(perMs >= MIN_PER_MS && perMs <= MAX_PER_MS)) {
    throw new LimitDefinitionError(field, `the interval must be 1ms to 24h, got ${m[2]}${m[3]}`);
  }
  return { count, perMs };
}

/**
 * Checks a deployment's limit declarations and returns them as given: the body of
 * `tasks/limits.ts`, so a bad declaration fails where it is written, at start-up.
 *
 * @throws LimitDefinitionError naming the field
 * @example
 * export const limits = defineLimits({
 *   email_provider: { rate: '40/s', concurrency: 50, learnRetryAfter: true },
 *   database: { concurrency: 60 },
 * });
 */
export function defineLimits<const T extends LimitDeclarations>(decls: T): T {
  resolveLimits(decls);
  return decls;
}

/**
 * Resolves every declaration into a {@link LimitSpec}, by name.
 *
 * Rules: a name matches {@link LIMIT_NAME}; at least one of `concurrency` and `rate`;
 * `concurrency` an integer 1..1000; `rate` as {@link parseRate}; `burst` an integer 1..count
 * (default 1), only with a rate; `learnRetryAfter` a boolean, only with a rate. Unknown fields are
 * refused (a misspelt `concurency` would otherwise limit nothing).
 *
 * @throws LimitDefinitionError naming the field
 */
export function resolveLimits(decls: LimitDeclarations): ReadonlyMap<string, LimitSpec> {
  if (!isRecord(decls)) throw new LimitDefinitionError('limits', 'must be an object of limits by name');
  const specs = new Map<string, LimitSpec>();
  for (const [name, decl] of Object.entries(decls)) specs.set(name, resolveOne(name, decl));
  return specs;
}

function resolveOne(name: string, raw: unknown): LimitSpec {
  const at = `limits.${name}`;
  if (!LIMIT_NAME.test(name)) {
    throw new LimitDefinitionError(at, 'a limit name must be a lower-case letter followed by at most 63 a-z, 0-9, _', {
      limit: name,
    });
  }
  if (!isRecord(raw)) throw new LimitDefinitionError(at, 'must be an object such as { rate: "40/s" }', { limit: name });
  for (const field of Object.keys(raw)) {
    if (!FIELDS.has(field)) {
      throw new LimitDefinitionError(`${at}.${field}`, `unknown field (known: ${[...FIELDS].join(', ')})`, {
        limit: name,
      });
    }
  }
  // Field types are checked one by one below (a JavaScript caller may pass anything).
  const decl = raw as LimitDeclaration;
  if (decl.concurrency === undefined && decl.rate === undefined) {
    throw new LimitDefinitionError(at, 'needs concurrency, rate or both', { limit: name });
  }
  const concurrency = decl.concurrency;
  if (concurrency !== undefined && !isIntIn(concurrency, 1, MAX_CONCURRENCY)) {
    throw new LimitDefinitionError(`${at}.concurrency`, `must be an integer 1 to ${MAX_CONCURRENCY}`, { limit: name });
  }
  if (decl.learnRetryAfter !== undefined && typeof decl.learnRetryAfter !== 'boolean') {
    throw new LimitDefinitionError(`${at}.learnRetryAfter`, 'must be true or false', { limit: name });
  }
  if (decl.rate === undefined) {
    if (decl.burst !== undefined) throw new LimitDefinitionError(`${at}.burst`, 'needs a rate', { limit: name });
    if (decl.arrivalJitterMs !== undefined) {
      throw new LimitDefinitionError(`${at}.arrivalJitterMs`, 'needs a rate', { limit: name });
    }
    // Only a rate can be paused: learning a Retry-After without one would do nothing, silently.
    if (decl.learnRetryAfter === true) {
      throw new LimitDefinitionError(`${at}.learnRetryAfter`, 'needs a rate', { limit: name });
    }
    return { name, concurrency: concurrency as number, learnRetryAfter: false };
  }
  const { count, perMs } = parseRate(decl.rate, `${at}.rate`);
  const burst = decl.burst ?? 1;
  if (!isIntIn(burst, 1, count)) {
    throw new LimitDefinitionError(`${at}.burst`, `must be an integer 1 to the rate's count (${count})`, {
      limit: name,
    });
  }
  const jitter = decl.arrivalJitterMs ?? 0;
  if (!isIntIn(jitter, 0, Math.floor(perMs / 2))) {
    throw new LimitDefinitionError(
      `${at}.arrivalJitterMs`,
      `must be an integer 0 to half the interval (${Math.floor(perMs / 2)})`,
      {
        limit: name,
      },
    );
  }
  // Spaced over perMs + jitter: N + 1 starts span at least perMs + jitter, so however their calls
  // are delayed (by up to `jitter` each) no window of perMs at the provider sees N + 1 of them.
  const rate: RateSpec = { count, perMs, burst, intervalMs: Math.ceil(((perMs + jitter) * 1000) / count) / 1000 };
  return {
    name,
    ...(concurrency === undefined ? {} : { concurrency }),
    rate,
    learnRetryAfter: decl.learnRetryAfter ?? false,
  };
}

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
