/**
 * A stand-in for `@aws-sdk/credential-provider-node` in the Lambda bundles only, put there by an
 * esbuild alias (`--alias:@aws-sdk/credential-provider-node=./shared/aws/lambda-credentials.ts`).
 *
 * Why: every SDK client's runtime configuration imports the default credential chain (env, SSO,
 * INI profiles, login, web identity, process, ECS/IMDS), and with it the STS, SSO and sign-in
 * clients: about 95 KB of each ~500 KB bundle (`npm run bench:bundle`). On Lambda the chain never
 * gets past its first link: the runtime puts the function role's credentials in the environment.
 * This is that first link (`fromEnv`), read once and kept until an expiry it is given passes.
 * Outside Lambda (local runtime, CLI, tests) nothing imports this module.
 *
 * @module
 */

/** The credentials the SDK's signer takes (`AwsCredentialIdentity`), spelled out. */
export interface EnvironmentCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
  readonly credentialScope?: string;
  readonly accountId?: string;
}

/** As the SDK's `fromEnv` reads them. */
export function credentialsFromEnvironment(
  env: Readonly<Record<string, string | undefined>> = process.env,
): EnvironmentCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw Object.assign(
      new Error('Unable to find environment variable credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).'),
      {
        name: 'CredentialsProviderError',
      },
    );
  }
  const sessionToken = env.AWS_SESSION_TOKEN;
  const expiration = env.AWS_CREDENTIAL_EXPIRATION;
  const credentialScope = env.AWS_CREDENTIAL_SCOPE;
  const accountId = env.AWS_ACCOUNT_ID;
  return {
    accessKeyId,
    secretAccessKey,
    ...(sessionToken ? { sessionToken } : {}),
    ...(expiration ? { expiration: new Date(expiration) } : {}),
    ...(credentialScope ? { credentialScope } : {}),
    ...(accountId ? { accountId } : {}),
  };
}

/**
 * The `defaultProvider` the SDK clients call (`credentialDefaultProvider`): a memoized provider
 * of the environment's credentials. The SDK does not memoize what this returns, so it does.
 */
export function defaultProvider(
  _init: unknown = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
): () => Promise<EnvironmentCredentials> {
  let current: EnvironmentCredentials | undefined;
  return async () => {
    if (current === undefined || (current.expiration !== undefined && current.expiration.getTime() <= Date.now())) {
      current = credentialsFromEnvironment(env);
    }
    return current;
  };
}
