/**
 * What a producer that submits directly (the direct client, `kaj/client/direct`) needs to know of
 * a deployment: the stack's `ProducerConfig` output (JSON), read here. Written by the CDK stack
 * (`infra/kaj-stack.ts`), read by the client; one schema for both.
 *
 * No AWS SDK here: the stack imports it.
 *
 * @module
 */
import * as z from 'zod';
import { ConfigError } from './errors.js';
import { checkLaneName, type LaneQueueUrls } from './lanes.js';
import { DEFAULTS, type Priority } from './resources.js';

/** Version of the `ProducerConfig` output's shape; a reader refuses versions it does not know. */
export const PRODUCER_CONFIG_VERSION = 1;

const perPriority = z.object({ high: z.string().min(1), normal: z.string().min(1), low: z.string().min(1) });

/**
 * The `ProducerConfig` stack output. Unknown fields are ignored (a newer stack may add some);
 * a missing or malformed one is refused.
 */
export const producerConfigSchema = z.object({
  version: z.literal(PRODUCER_CONFIG_VERSION),
  /** The deployment's region (its table, queues and secret are there). */
  region: z.string().min(1),
  /** The task table. */
  tableName: z.string().min(1),
  /** The default lane's queue of each priority. */
  queueUrls: perPriority,
  /** The queues of every other lane, by lane (`{}` without lanes). */
  laneQueueUrls: z.record(z.string(), perPriority).default({}),
  /** The id secret (`<stack>-id-secret`): task ids of idempotent submits are an HMAC under it. */
  idSecretArn: z.string().min(1),
  /** Days a finished task stays readable (what a cancel's TTL is set from). */
  retentionDays: z.number().int().min(1).max(3650).default(DEFAULTS.retentionDays),
});

export type ProducerConfig = z.output<typeof producerConfigSchema>;
/** What `parseProducerConfig` takes: the output's JSON, or the object (defaults may be left out). */
export type ProducerConfigInput = z.input<typeof producerConfigSchema>;

/**
 * Reads the `ProducerConfig` output (its JSON string, or the parsed object).
 * @throws ConfigError (setting `producer`) naming the first field that is wrong
 */
export function parseProducerConfig(value: string | ProducerConfigInput): ProducerConfig {
  let raw: unknown = value;
  if (typeof value === 'string') {
    try {
      raw = JSON.parse(value);
    } catch (err) {
      throw new ConfigError('producer', 'producer: the ProducerConfig output is not JSON', { cause: err });
    }
  }
  const parsed = producerConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = ['producer', ...(issue?.path.map(String) ?? [])].join('.');
    throw new ConfigError(
      'producer',
      `${field}: ${issue?.message ?? 'invalid'} (pass the stack's ProducerConfig output)`,
      { cause: parsed.error },
    );
  }
  for (const lane of Object.keys(parsed.data.laneQueueUrls)) checkLaneName(lane);
  return parsed.data;
}

/** The `ProducerConfig` of a deployment, from its parts (the stack passes CDK tokens). */
export function producerConfig(c: {
  readonly region: string;
  readonly tableName: string;
  readonly queueUrls: Readonly<Record<Priority, string>>;
  readonly laneQueueUrls: LaneQueueUrls;
  readonly idSecretArn: string;
  readonly retentionDays: number;
}): ProducerConfig {
  return {
    version: PRODUCER_CONFIG_VERSION,
    region: c.region,
    tableName: c.tableName,
    queueUrls: { high: c.queueUrls.high, normal: c.queueUrls.normal, low: c.queueUrls.low },
    laneQueueUrls: Object.fromEntries(
      Object.entries(c.laneQueueUrls).map(([lane, q]) => [lane, { high: q.high, normal: q.normal, low: q.low }]),
    ),
    idSecretArn: c.idSecretArn,
    retentionDays: c.retentionDays,
  };
}
