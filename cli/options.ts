/**
 * The flags of every command, typed: one zod schema per command, checked once when its action
 * runs (`optionsOf`). Commander has already parsed and validated each value (choices, numbers,
 * task ids); a mismatch here is a bug in the command's declaration, not a usage error.
 */
import type { Command } from 'commander';
import * as z from 'zod';
import { PRIORITIES } from '../shared/config/resources.js';
import { MAX_REASON_LENGTH } from '../shared/task/operations.js';
import { UsageError } from './errors.js';

const flag = z.boolean().optional();
const text = z.string().optional();
const number = z.number().optional();
const priority = z.enum(PRIORITIES);

/** The target (flags of `kaj` itself, see cli/target.ts) and `--json`, which every command takes. */
export const commonOptions = z.object({
  local: flag,
  stack: text,
  endpointUrl: text,
  region: text,
  profile: text,
  json: flag,
});
export type CommonOptions = z.infer<typeof commonOptions>;

/** Which dead tasks `dlq list`, `redrive` and `purge` act on (`addFilterOptions`). */
export const filterOptions = commonOptions.extend({
  queue: priority.optional(),
  type: text,
  errorContains: text,
  /** Milliseconds (parseDuration). */
  since: number,
  limit: number,
  task: z.array(z.string()).optional(),
});
export type FilterOptions = z.infer<typeof filterOptions>;

/** `dlq redrive` and `dlq purge`: a batch that changes things. */
export const batchOptions = filterOptions.extend({
  /** Per second (parseRate). */
  rate: number,
  dryRun: flag,
  yes: flag,
  reason: text,
});
export type BatchCommandOptions = z.infer<typeof batchOptions>;

export const redriveOptions = batchOptions.extend({
  to: z.union([z.literal('original'), priority]),
  keepAttempts: flag,
  native: flag,
});
export type RedriveCommandOptions = z.infer<typeof redriveOptions>;

export const purgeOptions = batchOptions;
export type PurgeCommandOptions = z.infer<typeof purgeOptions>;

export const statsOptions = commonOptions.extend({
  byStatus: flag,
  /** Seconds between refreshes (parseWatch). */
  watch: number,
});

export const submitOptions = commonOptions.extend({
  payload: z.unknown().optional(),
  priority,
  idempotencyKey: text,
  /** Seconds (parseNonNegativeInt). */
  delay: number,
});

/** A command's flags (its own and those of `kaj`), as its schema types them. */
export function optionsOf<S extends z.ZodType>(cmd: Command, schema: S): z.infer<S> {
  return schema.parse(cmd.optsWithGlobals());
}

/** `--reason` help, for every command that records one in the tasks' audit entries. */
export const REASON_HELP = `why, for the audit entry of each task (at most ${MAX_REASON_LENGTH} characters)`;

/**
 * The operator's `--reason`, refused (exit 2) when longer than the domain accepts, before
 * anything is read: the same cap as the console's.
 */
export function reasonOf(o: { readonly reason?: string | undefined }): { reason?: string } {
  if (o.reason === undefined) return {};
  if (o.reason.length > MAX_REASON_LENGTH) {
    throw new UsageError(`--reason: at most ${MAX_REASON_LENGTH} characters (got ${o.reason.length})`);
  }
  return { reason: o.reason };
}
