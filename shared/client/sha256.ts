import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';

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
