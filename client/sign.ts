import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import type { SignatureV4 } from '@smithy/signature-v4';

type SourceData = string | ArrayBuffer | ArrayBufferView;

const bytes = (d: SourceData): Buffer =>
  typeof d === 'string'
    ? Buffer.from(d, 'utf8')
    : ArrayBuffer.isView(d)
      ? Buffer.from(d.buffer, d.byteOffset, d.byteLength)
      : Buffer.from(d);

/**
 * SHA-256 (HMAC-SHA256 with a secret) from node:crypto, in the shape `@smithy/signature-v4`
 * takes as `sha256`: the signing itself is the library's.
 */
export class Sha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: SourceData): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

/**
 * The headers of a fetch request signed by `signer`: `headers` plus `authorization`,
 * `x-amz-date` and the content hash. `host` is signed but not returned (fetch sends it itself).
 */
export async function signedHeaders(
  signer: SignatureV4,
  method: string,
  url: URL,
  headers: Record<string, string>,
  body?: string,
): Promise<Record<string, string>> {
  const query: Record<string, string[]> = {};
  for (const [k, v] of url.searchParams) (query[k] ??= []).push(v);
  const request = await signer.sign({
    method,
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port === '' ? {} : { port: Number(url.port) }),
    path: url.pathname,
    query,
    headers: { ...headers, host: url.host },
    ...(body === undefined ? {} : { body }),
  });
  const out: Record<string, string> = { ...(request.headers as Record<string, string>) };
  delete out.host;
  return out;
}
