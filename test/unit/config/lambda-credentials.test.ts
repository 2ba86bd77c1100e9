/**
 * The environment-only credential provider the Lambda bundles may alias in for the SDK's default
 * chain (`shared/aws/lambda-credentials.ts`): what it reads, that it stands in for every name
 * the SDK clients import from `@aws-sdk/credential-provider-node`, and its memoization.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as lambdaCredentials from '../../../shared/aws/lambda-credentials.js';
import { credentialsFromEnvironment, defaultProvider } from '../../../shared/aws/lambda-credentials.js';

const ENV = { AWS_ACCESS_KEY_ID: 'ASIA1', AWS_SECRET_ACCESS_KEY: 's1', AWS_SESSION_TOKEN: 't1' };

describe('Module: lambda-credentials', () => {
  it('reads the credentials Lambda puts in the environment, as the SDK’s fromEnv does', () => {
    expect(credentialsFromEnvironment(ENV)).toEqual({
      accessKeyId: 'ASIA1',
      secretAccessKey: 's1',
      sessionToken: 't1',
    });
    expect(
      credentialsFromEnvironment({
        ...ENV,
        AWS_CREDENTIAL_EXPIRATION: '2030-01-01T00:00:00Z',
        AWS_CREDENTIAL_SCOPE: 'scope',
        AWS_ACCOUNT_ID: '123456789012',
      }),
    ).toEqual({
      accessKeyId: 'ASIA1',
      secretAccessKey: 's1',
      sessionToken: 't1',
      expiration: new Date('2030-01-01T00:00:00Z'),
      credentialScope: 'scope',
      accountId: '123456789012',
    });
  });

  it('throws a CredentialsProviderError without a key or a secret', () => {
    for (const env of [
      {},
      { AWS_ACCESS_KEY_ID: 'a' },
      { AWS_SECRET_ACCESS_KEY: 's' },
      { ...ENV, AWS_ACCESS_KEY_ID: '' },
    ]) {
      expect(() => credentialsFromEnvironment(env)).toThrow(
        expect.objectContaining({ name: 'CredentialsProviderError' }),
      );
    }
  });

  it('defaultProvider reads once and keeps the credentials, until an expiry it was given has passed', async () => {
    const env: Record<string, string> = { ...ENV };
    const provide = defaultProvider({}, env);
    const first = await provide();
    env.AWS_ACCESS_KEY_ID = 'ASIA2';
    expect(await provide()).toBe(first);
    const expiring: Record<string, string> = { ...ENV, AWS_CREDENTIAL_EXPIRATION: '2000-01-01T00:00:00Z' };
    const provideExpiring = defaultProvider({}, expiring);
    await provideExpiring();
    expiring.AWS_ACCESS_KEY_ID = 'ASIA3';
    expect((await provideExpiring()).accessKeyId).toBe('ASIA3');
  });

  it('exports every name the SDK clients import from @aws-sdk/credential-provider-node (the alias must resolve them)', () => {
    const require = createRequire(import.meta.url);
    for (const client of ['@aws-sdk/client-dynamodb', '@aws-sdk/client-sqs']) {
      const root = dirname(require.resolve(`${client}/package.json`));
      const source = readFileSync(join(root, 'dist-es', 'runtimeConfig.js'), 'utf8');
      const imported = /import\s*\{([^}]*)\}\s*from\s*"@aws-sdk\/credential-provider-node"/.exec(source)?.[1];
      expect(imported, `${client} imports the default chain`).toBeDefined();
      for (const spec of (imported ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)) {
        const name = spec.split(/\s+as\s+/)[0] ?? spec;
        expect(lambdaCredentials, `${client} imports ${name}`).toHaveProperty(name);
      }
    }
  });
});
