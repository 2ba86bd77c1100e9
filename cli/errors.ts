import { CommanderError } from 'commander';
import { KajError } from '../shared/errors.js';
import { ScheduleConflictError, ScheduleNotFoundError, ScheduleValidationError } from '../shared/schedule/errors.js';

/** Exit codes of `kaj`. */
export const EXIT = {
  ok: 0,
  /** An operation failed, or some items of a batch did. */
  failure: 1,
  /** Bad flags or arguments. */
  usage: 2,
  /** Stopped by Ctrl-C. */
  interrupted: 130,
} as const;

/** The command line itself is wrong: exit 2, print the message and a pointer to --help. */
export class UsageError extends KajError {
  readonly exitCode = EXIT.usage;
  readonly retryable = false;
}

/** An expected failure with a message written for the operator (no stack trace). */
export class CliError extends KajError {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

function chain(err: unknown): unknown[] {
  const out: unknown[] = [];
  let e: unknown = err;
  for (let i = 0; i < 6 && e !== undefined && e !== null; i += 1) {
    out.push(e);
    e = e instanceof Error ? e.cause : undefined;
  }
  return out;
}

const text = (e: unknown) =>
  e instanceof Error ? `${e.name} ${e.message} ${(e as { code?: string }).code ?? ''}` : String(e);

/**
 * Turns any error into one or two lines for an operator, and an exit code. AWS errors are
 * recognised through their cause chain (missing credentials or region, access denied,
 * unreachable endpoint); anything else prints as `Name: message`, never a stack trace
 * (set KAJ_DEBUG=1 for one).
 */
export function explain(err: unknown): { message: string; exitCode: number } {
  if (err instanceof UsageError) return { message: err.message, exitCode: EXIT.usage };
  if (err instanceof CliError) return { message: err.message, exitCode: err.exitCode };
  if (err instanceof CommanderError) return { message: err.message.replace(/^error: /, ''), exitCode: EXIT.usage };
  // The scheduler's errors: a bad spec or argument names its field (usage); the rest are failures.
  if (err instanceof ScheduleValidationError) {
    const named = err.message.startsWith(`${err.field}:`);
    return { message: named ? err.message : `${err.field}: ${err.message}`, exitCode: EXIT.usage };
  }
  if (err instanceof ScheduleNotFoundError) {
    return { message: `${err.message} (see kaj schedules list)`, exitCode: EXIT.failure };
  }
  if (err instanceof ScheduleConflictError) return { message: err.message, exitCode: EXIT.failure };
  const all = chain(err);
  const find = (re: RegExp) => all.find((e) => re.test(text(e)));
  const detail = (e: unknown) => (e instanceof Error ? e.message : String(e));
  let hit: unknown;
  if ((hit = find(/CredentialsProviderError|Could not load credentials|credential/i))) {
    return {
      message: `no usable AWS credentials (${detail(hit)}).\n  Use --profile NAME, AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or \`aws sso login\`.`,
      exitCode: EXIT.failure,
    };
  }
  if ((hit = find(/Region is missing|region.*not.*(set|found)/i))) {
    return { message: 'no AWS region: pass --region REGION or set AWS_REGION.', exitCode: EXIT.failure };
  }
  if ((hit = find(/ExpiredToken|RequestExpired|token.*expired/i))) {
    return {
      message: `AWS credentials have expired (${detail(hit)}): refresh them (e.g. \`aws sso login\`).`,
      exitCode: EXIT.failure,
    };
  }
  if ((hit = find(/AccessDenied|NotAuthorized|UnauthorizedOperation|InvalidClientTokenId|SignatureDoesNotMatch/))) {
    return { message: `AWS refused the request: ${detail(hit)}`, exitCode: EXIT.failure };
  }
  if ((hit = find(/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET|socket hang up/))) {
    return {
      message: `cannot reach the endpoint (${detail(hit)}): is it running? (for --local: is \`npm start\` still up?)`,
      exitCode: EXIT.failure,
    };
  }
  if ((hit = find(/NonExistentQueue|QueueDoesNotExist|ResourceNotFoundException/))) {
    return { message: `a Kaj resource does not exist: ${detail(hit)}`, exitCode: EXIT.failure };
  }
  const top = all[0];
  if (top instanceof Error) {
    const causes = all
      .slice(1)
      .filter((e): e is Error => e instanceof Error)
      .map((e) => `${e.name}: ${e.message}`);
    return {
      message: `${top.name === 'Error' ? '' : `${top.name}: `}${top.message}${causes.length > 0 ? `\n  caused by ${causes.join('\n  caused by ')}` : ''}`,
      exitCode: EXIT.failure,
    };
  }
  return { message: String(err), exitCode: EXIT.failure };
}
