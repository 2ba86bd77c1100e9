/**
 * The SDK client tuning of `shared/aws/clients.ts`: what each option sets, and that the reused
 * signer's signature of every request is the one a fresh SigV4 signer computes for it, request
 * after request (a request handler records what would go on the wire).
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { SignatureV4 } from '@smithy/signature-v4';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Sha256 } from '../../../client/sign.js';
import { createDynamoDbClient, createSqsClient, reuseSigner } from '../../../shared/aws/clients.js';

const BASE = {
  region: 'eu-west-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token' },
  endpoint: 'http://127.0.0.1:1',
  maxAttempts: 1,
};

interface Sent {
  readonly method: string;
  readonly protocol: string;
  readonly hostname: string;
  readonly port?: number;
  readonly path: string;
  readonly query: Record<string, string>;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** A request handler that answers as SQS/DynamoDB would to a send, and keeps each request as it would be sent. */
function recordingHandler(sent: Sent[]) {
  return {
    handle: async (request: Sent) => {
      const body = String(request.body ?? '');
      sent.push({ ...request, headers: { ...request.headers }, body });
      // SendMessage's answer carries the body's MD5, which the SQS client checks.
      const message = (JSON.parse(body || '{}') as { MessageBody?: string }).MessageBody ?? '';
      const answer = JSON.stringify({
        MessageId: 'm',
        MD5OfMessageBody: createHash('md5').update(message).digest('hex'),
      });
      return {
        response: {
          statusCode: 200,
          reason: 'OK',
          headers: { 'content-type': 'application/x-amz-json-1.0' },
          body: Readable.from([Buffer.from(answer)]),
        },
      };
    },
    updateHttpClientConfig: () => {},
    httpHandlerConfigs: () => ({}),
  };
}

/** SHA-256 / HMAC-SHA-256 in the shape SigV4 signers take (`new (secret?) => { update, digest }`). */

/** The Authorization a fresh signer computes for a recorded request, at its own x-amz-date. */
async function expectedAuthorization(s: Sent, service: string): Promise<string | undefined> {
  const { authorization: _a, ...headers } = s.headers;
  const date = s.headers['x-amz-date'] ?? '';
  const signingDate = new Date(
    `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
  );
  const signer = new SignatureV4({ credentials: BASE.credentials, region: BASE.region, service, sha256: Sha256 });
  const signed = await signer.sign({ ...s, headers }, { signingDate });
  return (signed as { headers: Record<string, string> }).headers.authorization;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Module: clients', () => {
  describe('Function: createDynamoDbClient / createSqsClient', () => {
    it('turn on cacheMiddleware by default; a tuning can turn it off, and the config given wins', () => {
      const clients = [
        createDynamoDbClient(BASE),
        createSqsClient(BASE),
        createDynamoDbClient(BASE, { cacheMiddleware: false }),
        createSqsClient({ ...BASE, cacheMiddleware: false }, { cacheMiddleware: true }),
      ];
      expect(clients.map((c) => c.config.cacheMiddleware)).toEqual([true, true, false, false]);
      for (const c of clients) c.destroy();
    });

    it('hand out one signer per client by default, a new one per request with reuseSigner: false', async () => {
      const reused = createDynamoDbClient(BASE);
      const fresh = createDynamoDbClient(BASE, { reuseSigner: false });
      expect(await reused.config.signer()).toBe(await reused.config.signer());
      expect(await fresh.config.signer()).not.toBe(await fresh.config.signer());
      reused.destroy();
      fresh.destroy();
    });

    it.each([
      ['dynamodb', () => createDynamoDbClient, () => new GetItemCommand({ TableName: 't', Key: { k: { S: '1' } } })],
      [
        'sqs',
        () => createSqsClient,
        () => new SendMessageCommand({ QueueUrl: 'http://127.0.0.1:1/0/q', MessageBody: 'hi' }),
      ],
    ])(
      '%s: the one signer signs each request right (as a fresh SigV4 signer does)',
      async (service, factory, command) => {
        const create = factory() as typeof createDynamoDbClient;
        const sent: Sent[] = [];
        const client = create({ ...BASE, requestHandler: recordingHandler(sent) });
        for (let i = 0; i < 3; i++) await (client as { send(c: unknown): Promise<unknown> }).send(command());
        expect(sent).toHaveLength(3);
        for (const s of sent) {
          expect(s.headers.authorization).toMatch(
            new RegExp(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/\\d{8}/eu-west-1/${service}/aws4_request, `),
          );
          expect(s.headers['x-amz-security-token']).toBe('token');
          expect(s.headers.authorization).toBe(await expectedAuthorization(s, service));
        }
        client.destroy();
      },
    );

    it('sign different requests differently with the one signer (nothing of a request is kept)', async () => {
      const sent: Sent[] = [];
      const c = createDynamoDbClient({ ...BASE, requestHandler: recordingHandler(sent) });
      await c.send(new PutItemCommand({ TableName: 't', Item: { k: { S: '1' } } })).catch(() => undefined);
      await c.send(new PutItemCommand({ TableName: 't', Item: { k: { S: '2' } } })).catch(() => undefined);
      expect(sent[0]?.body).not.toBe(sent[1]?.body);
      expect(sent[0]?.headers.authorization).not.toBe(sent[1]?.headers.authorization);
      c.destroy();
    });
  });

  describe('Function: reuseSigner', () => {
    it('makes the signer once, and again only after a failed attempt', async () => {
      const signer = { sign: async () => ({}) };
      const make = vi
        .fn<(authScheme?: never) => Promise<unknown>>()
        .mockRejectedValueOnce(new Error('no credentials yet'))
        .mockResolvedValue(signer);
      const config = { signer: make };
      reuseSigner(config);
      await expect(config.signer()).rejects.toThrow('no credentials yet');
      expect(await config.signer()).toBe(signer);
      expect(await config.signer()).toBe(signer);
      expect(make).toHaveBeenCalledTimes(2);
    });
  });
});
