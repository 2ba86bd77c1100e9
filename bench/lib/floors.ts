/**
 * The network floor `bench/cpu.ts` puts beside the real wirings (the other floor, Kaj's own code
 * without SDK and network, runs on the in-memory fakes of testing/): the bare HTTP exchanges, no
 * SDK, no Kaj. What a real wiring costs beyond the two floors' sum is the AWS SDK's own work per
 * request.
 *
 * @module
 */
import { Agent, request } from 'node:http';

/**
 * Bare HTTP/1.1 keep-alive POSTs of AWS-JSON-sized bodies to the instant endpoint: what the
 * network part of one AWS call costs this process, without signing, (de)serialization or middleware.
 */
export class RawAwsHttp {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 50 });

  constructor(private readonly endpoint: string) {}

  call(target: string, body: unknown): Promise<unknown> {
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        `${this.endpoint}/`,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            'content-type': 'application/x-amz-json-1.0',
            'content-length': Buffer.byteLength(payload),
            'x-amz-target': target,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  destroy(): void {
    this.agent.destroy();
  }
}
