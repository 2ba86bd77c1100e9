/**
 * `kaj/client/direct`: the typed client for producers that run inside AWS (a Lambda function, an
 * ECS service), submitting without the API. The same `KajClient` — the same methods, results and
 * errors as over HTTP — whose requests are answered in the producer's process by the API's own
 * code (`shared/service/app/producer.ts`: the submitter and the lifecycle, on the deployment's table and
 * queues), with the producer's IAM role (`KajStack.grantSubmit`). No API Gateway request and no
 * API function invocation per submit: the cost lever of `npm run bench:cost` (scenarios j, k).
 *
 * A separate entry so that `kaj/client` (HTTP) carries neither the DynamoDB nor the SQS client.
 *
 * @module
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ownerOf } from '../shared/service/api/http.js';
import { createProducer } from '../shared/service/app/producer.js';
import { createDynamoDbClient, createSqsClient } from '../shared/aws/clients.js';
import { type ProducerConfig, type ProducerConfigInput, parseProducerConfig } from '../shared/config/producer.js';
import type { Logger } from '../shared/runtime/logger.js';
import type { PayloadsOf, TaskRegistry } from '../shared/task/define.js';
import { KajClient, type KajClientCommonOptions } from './client.js';
import { DirectTransport, setupError } from './direct-transport.js';
import { KajClientError } from './errors.js';

export interface DirectClientOptions<R extends TaskRegistry> extends KajClientCommonOptions {
  /**
   * The deployment's task types (the object, not only its type): payloads are validated against
   * their schemas here, by the submitter the API runs. Keep it the deployment's (`tasks/index.ts`).
   */
  readonly registry: R;
  /** The stack's `ProducerConfig` output: its JSON (e.g. from an environment variable) or the parsed object. */
  readonly producer: string | ProducerConfigInput;
  /** @default a client for the producer config's region (the SDK's default credential chain, or `credentials`) */
  readonly dynamodb?: DynamoDBClient;
  /** @default a client for the producer config's region (the SDK's default credential chain, or `credentials`) */
  readonly sqs?: SQSClient;
  /** Credentials of the clients made here. @default the SDK's default credential chain */
  readonly credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /**
   * The owner tasks are recorded under (an assumed-role session ARN is taken as its role's, as
   * the API takes it). @default the caller's identity (STS `GetCallerIdentity`, asked once), as the
   * API records it: an assumed-role session is owned by its role ({@link ownerOfPrincipal}), so the
   * API finds the tasks for every session of that role. Note that a role's owner is its
   * assumed-role ARN (`arn:aws:sts::<account>:assumed-role/<name>`), not `arn:aws:iam::…:role/…`.
   */
  readonly owner?: string;
  /**
   * The deployment's id secret. @default read once from Secrets Manager (`GetSecretValue` on the
   * config's `idSecretArn`): ids of idempotent submits are an HMAC under it, the same as the API's.
   */
  readonly idSecret?: string;
  /** Where warnings go (a send that failed and left the task to the sweeper, a store outage). @default silent */
  readonly logger?: Logger;
}

/**
 * A `KajClient` that submits directly: `submit`, `submitMany`, `get`, `cancel` and `waitFor`
 * as over HTTP; the schedules are the API's only (`KajNotSupportedError`).
 *
 * @example
 * import { directClient } from 'kaj/client/direct';
 * import { registry } from './tasks/index.js';
 * const kaj = directClient({ registry, producer: process.env.KAJ_PRODUCER_CONFIG! });
 * const { task_id } = await kaj.submit('send_email', { to: 'ada@example.com', subject: 'Hi' });
 *
 * @throws ConfigError when `producer` is not a ProducerConfig
 */
export function directClient<R extends TaskRegistry>(o: DirectClientOptions<R>): KajClient<R, PayloadsOf<R>> {
  const producer = parseProducerConfig(o.producer);
  const sdk = { region: producer.region, ...(o.credentials === undefined ? {} : { credentials: o.credentials }) };
  let clients: { dynamodb: DynamoDBClient; sqs: SQSClient } | undefined;
  const transport = new DirectTransport({
    owner: async () => (o.owner === undefined ? await callerOwner(sdk) : ownerOfPrincipal(o.owner)),
    services: async () => {
      const idSecret = o.idSecret ?? (await readIdSecret(producer, sdk));
      clients ??= { dynamodb: o.dynamodb ?? createDynamoDbClient(sdk), sqs: o.sqs ?? createSqsClient(sdk) };
      return createProducer(producer, idSecret, o.registry, {
        ...clients,
        ...(o.logger === undefined ? {} : { logger: o.logger }),
      });
    },
    ...(o.logger === undefined ? {} : { logger: o.logger }),
  });
  const { maxAttempts, backoff, random, sleep, newKey } = o;
  return new KajClient<R, PayloadsOf<R>>({ maxAttempts, backoff, random, sleep, newKey, transport });
}

/**
 * The owner the API records for a caller with this IAM ARN: the API's own derivation
 * (`ownerOf` in shared/service/api/http.ts), given the ARN as API Gateway's IAM authorizer hands it over.
 * `arn:aws:sts::1:assumed-role/Producer/session` → `arn:aws:sts::1:assumed-role/Producer`.
 */
export function ownerOfPrincipal(arn: string): string {
  const event = { requestContext: { authorizer: { iam: { userArn: arn } } } } as unknown as APIGatewayProxyEventV2;
  return ownerOf(event, arn);
}

type SdkSettings = { region: string; credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider };

/** STS `GetCallerIdentity` (no permission needed), normalised as the API normalises it. */
async function callerOwner(sdk: SdkSettings): Promise<string> {
  const { GetCallerIdentityCommand, STSClient } = await import('@aws-sdk/client-sts');
  const sts = new STSClient(sdk);
  try {
    const { Arn } = await sts.send(new GetCallerIdentityCommand({}));
    if (Arn === undefined || Arn === '') throw new KajClientError('STS GetCallerIdentity answered no Arn');
    return ownerOfPrincipal(Arn);
  } catch (err) {
    throw err instanceof KajClientError ? err : setupError('the caller identity (STS GetCallerIdentity)', err);
  } finally {
    sts.destroy();
  }
}

/** Secrets Manager `GetSecretValue` on the deployment's id secret (`grantSubmit` allows it). */
async function readIdSecret(producer: ProducerConfig, sdk: SdkSettings): Promise<string> {
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const sm = new SecretsManagerClient(sdk);
  try {
    const { SecretString } = await sm.send(new GetSecretValueCommand({ SecretId: producer.idSecretArn }));
    if (SecretString === undefined || SecretString === '') {
      throw new KajClientError(`the id secret ${producer.idSecretArn} has no string value`);
    }
    return SecretString;
  } catch (err) {
    throw err instanceof KajClientError ? err : setupError(`the id secret ${producer.idSecretArn}`, err);
  } finally {
    sm.destroy();
  }
}

export {
  KajClient,
  type KajClientCommonOptions,
  type SubmitOptions,
  type Submitted,
  type SubmittedItem,
} from './client.js';
/** The client's errors: `KajClientError` and its subclasses. */
export * from './errors.js';
export { type ProducerConfig, type ProducerConfigInput, parseProducerConfig } from '../shared/config/producer.js';
