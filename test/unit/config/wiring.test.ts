import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../shared/config/errors.js';
import {
  clientConfig,
  EMULATOR_CREDENTIALS,
  EMULATOR_REGION,
  emulatorClients,
  emulatorSettings,
  taskQueueUrls,
  type KajResources,
  WIRED_CLIENT_TUNING,
} from '../../../shared/aws/wiring.js';

const urls = (k: string) => ({ high: `${k}-h`, normal: `${k}-n`, low: `${k}-l` });
const resources: KajResources = {
  tableName: 't',
  queueUrls: urls('qu'),
  queueArns: urls('qa'),
  deadLetterQueueUrls: urls('du'),
  deadLetterQueueArns: urls('da'),
};

describe('Module: wiring', () => {
  it('emulator settings: the emulator region, a fresh copy of the test credentials each time', () => {
    const a = emulatorSettings('http://127.0.0.1:1');
    const b = emulatorSettings('http://127.0.0.1:1', { maxAttempts: 2 });
    expect(a).toMatchObject({
      endpoint: 'http://127.0.0.1:1',
      region: EMULATOR_REGION,
      credentials: EMULATOR_CREDENTIALS,
    });
    expect(a.credentials).not.toBe(b.credentials);
    expect(b.maxAttempts).toBe(2);
  });

  it('clientConfig picks the service’s endpoint and leaves unset settings to the SDK', () => {
    const s = { endpoint: { sqs: 'http://sqs', dynamodb: 'http://ddb' }, region: 'eu-west-1' };
    expect(clientConfig(s, 'sqs')).toEqual({ endpoint: 'http://sqs', region: 'eu-west-1' });
    expect(clientConfig(s, 'dynamodb')).toEqual({ endpoint: 'http://ddb', region: 'eu-west-1' });
    expect(clientConfig({})).toEqual({});
    expect(() => clientConfig(s)).toThrow(ConfigError);
  });

  it('emulatorClients builds both clients on the endpoints and destroys both', async () => {
    const c = emulatorClients({ sqs: 'http://127.0.0.1:9', dynamodb: 'http://127.0.0.1:8' });
    expect(await c.sqs.config.region()).toBe(EMULATOR_REGION);
    expect((await c.dynamodb.config.endpoint?.())?.port).toBe(8);
    c.destroy();
  });

  it('createClients reuses one signer per client but resolves middleware per request (tests add middleware to running clients)', async () => {
    const c = emulatorClients('http://127.0.0.1:9');
    for (const client of [c.sqs, c.dynamodb]) {
      expect(client.config.cacheMiddleware).toBe(false);
      expect(await client.config.signer()).toBe(await client.config.signer());
    }
    expect(WIRED_CLIENT_TUNING).toEqual({ cacheMiddleware: false, reuseSigner: true });
    c.destroy();
  });

  it('converts to SqsTaskQueue’s spelling', () => {
    expect(taskQueueUrls(resources)).toEqual({ queues: urls('qu'), deadLetterQueues: urls('du') });
  });
});
