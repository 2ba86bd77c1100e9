/**
 * How Kaj builds its AWS SDK clients, everywhere (Lambda functions, local runtime, CLI, tests):
 * the SDK's own configuration, plus per-request savings, each measured on and off
 * (docs/measured.md, "Speed").
 *
 * - `cacheMiddleware`: the SDK resolves a command's middleware stack (≈ 30 middlewares, sorted
 *   and composed) on every `send` unless told to keep the result per command class. Kaj never
 *   changes a client's stack after its first request, which is the option's one condition. (The
 *   cached handler's context is shared by concurrent requests of one command; what middleware
 *   writes there — endpoint, auth scheme — is the same for all of Kaj's requests to one service,
 *   which `test/integration/tuned-clients.test.ts` checks under the consumer's concurrency.)
 * - One request signer per client: the SDK's default `signer` builds a new `SignatureV4` (and
 *   copies the whole client configuration into it) for every request. The signer holds no
 *   per-request state — region, service and date are passed to each `sign` call, credentials are
 *   asked of the (memoized) provider each time — so the first one is kept and reused.
 *
 * Not done: endpoint resolution per request. The SDK already caches the ruleset's answer per
 * parameter set; what remains is its endpoint middleware copying the client configuration and
 * resolving the parameters, which no public option skips.
 *
 * Lean on purpose: the Lambda bundles import it.
 *
 * @module
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';

/** The per-request savings, each on by default (each can be turned off, as their measurement did). */
export interface ClientTuning {
  /** Resolve each command's middleware stack once per client (the SDK's `cacheMiddleware`). @default true */
  readonly cacheMiddleware?: boolean;
  /** One SigV4 signer per client instead of one per request. @default true */
  readonly reuseSigner?: boolean;
}

/** What `reuseSigner` needs of a client: the SDK's resolved SigV4 configuration. */
interface SignerConfig {
  signer: (authScheme?: never) => Promise<unknown>;
}

export function createDynamoDbClient(config: DynamoDBClientConfig = {}, tuning: ClientTuning = {}): DynamoDBClient {
  return tune(new DynamoDBClient(withTuning(config, tuning)), tuning);
}

export function createSqsClient(config: SQSClientConfig = {}, tuning: ClientTuning = {}): SQSClient {
  return tune(new SQSClient(withTuning(config, tuning)), tuning);
}

function withTuning<C extends { cacheMiddleware?: boolean }>(config: C, tuning: ClientTuning): C {
  return { cacheMiddleware: tuning.cacheMiddleware ?? true, ...config };
}

function tune<C extends { config: object }>(client: C, tuning: ClientTuning): C {
  if (tuning.reuseSigner ?? true) reuseSigner(client.config as unknown as SignerConfig);
  return client;
}

/**
 * Replaces the client's signer factory by one that makes the SDK's signer once and hands the
 * same one out from then on. A failed first attempt (credentials not resolvable yet) is not kept.
 */
export function reuseSigner(config: SignerConfig): void {
  const make = config.signer;
  let signer: Promise<unknown> | undefined;
  config.signer = (authScheme) => {
    if (signer === undefined) {
      const made = make(authScheme);
      signer = made;
      made.catch(() => {
        if (signer === made) signer = undefined;
      });
    }
    return signer;
  };
}
