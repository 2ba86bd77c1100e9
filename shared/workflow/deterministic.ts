/**
 * `wf.random()` and `wf.uuid()`: values that are the same on every replay of a run, derived from
 * the run id and the order of the calls (no write). Not secret.
 *
 * @module
 */
import { createHash } from 'node:crypto';

/** A source of 16-byte draws for one replay of `runId`: the n-th draw is the same on every replay. */
export function draws(runId: string): () => Buffer {
  let n = 0;
  return () => {
    n += 1;
    return createHash('sha256').update(`${runId}:${n}`).digest().subarray(0, 16);
  };
}

/** A number in [0, 1) from a draw. */
export function randomOf(bytes: Buffer): number {
  return bytes.readUIntBE(0, 6) / 2 ** 48;
}

/** A v4-shaped UUID from a draw. */
export function uuidOf(bytes: Buffer): string {
  const b = Buffer.from(bytes);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
