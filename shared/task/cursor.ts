/**
 * Signed page cursors, for every listing a caller pages through (the task listing, the schedule
 * listing): `<position>.<signature>`, both base64url. The position is a JSON array (where the
 * page ended); the signature an HMAC over it and the query it continues, under the deployment's
 * key. A cursor that was tampered with, or belongs to another listing, query or caller, is refused
 * before anything is read.
 *
 * A valid signature says who wrote the position, not that it is sound (a development key is no
 * secret): each listing still checks what a position holds before it uses it.
 *
 * @module
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidCursorError } from './errors.js';

/** The longest cursor taken (the listings' own are a few hundred characters at most). */
export const MAX_CURSOR_CHARS = 2048;

export class CursorSigner {
  /**
   * @param key the HMAC key (derived from the deployment's id secret, one per listing)
   * @param purpose what the cursors are of (signed too: one listing's cursor is no other's)
   */
  constructor(
    private readonly key: string,
    private readonly purpose: string,
  ) {}

  /** The cursor of `position` for the query `scope` (its filters and caller, in a fixed order). */
  encode(position: readonly unknown[], scope: readonly string[]): string {
    const body = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${body}.${this.sign(body, scope)}`;
  }

  /**
   * The position a cursor holds, if this signer made it for the same `scope`.
   * @throws InvalidCursorError (empty, too long, malformed, or signed for something else)
   */
  decode(cursor: string, scope: readonly string[]): unknown[] {
    if (cursor.length === 0 || cursor.length > MAX_CURSOR_CHARS) {
      throw new InvalidCursorError(`cursor: must be a cursor a page returned (1 to ${MAX_CURSOR_CHARS} characters)`);
    }
    const [body, signature, ...rest] = cursor.split('.');
    if (body === undefined || signature === undefined || rest.length > 0) throw new InvalidCursorError();
    const expected = Buffer.from(this.sign(body, scope));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new InvalidCursorError();
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch (err) {
      throw new InvalidCursorError('cursor: malformed', { cause: err });
    }
    if (!Array.isArray(parsed)) throw new InvalidCursorError();
    return parsed;
  }

  private sign(body: string, scope: readonly string[]): string {
    return createHmac('sha256', this.key)
      .update([this.purpose, ...scope, body].join('\n'))
      .digest('base64url')
      .slice(0, 32);
  }
}
