/**
 * The console's guards. It listens on 127.0.0.1 only, yet any page the operator's browser opens
 * can send requests there, and a DNS-rebinding page can even read the answers. So:
 * - the `Host` header must name the console itself (127.0.0.1, localhost or [::1] at its port): a
 *   rebinding page's requests carry its own host name and are refused before anything is read;
 * - every action (POST) must carry the per-start token the console's own pages embed (form field
 *   `_token` or header `x-kaj-token`), compared in constant time; a foreign page cannot read it;
 * - a POST whose `Origin` (or `Sec-Fetch-Site`) says it comes from elsewhere is refused as well.
 *
 * @module
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { ActionRefusedError, ForeignHostError } from './errors.js';

export const TOKEN_FIELD = '_token';
export const TOKEN_HEADER = 'x-kaj-token';

/** A fresh random token for one start of the console. */
export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/** Whether `host` (the Host header) names this console at `port`. */
export function isOwnHost(host: string | undefined, port: number): boolean {
  if (host === undefined) return false;
  const h = host.toLowerCase();
  return LOOPBACK_NAMES.some((name) => h === `${name}:${port}` || (port === 80 && h === name));
}

/** @throws ForeignHostError */
export function checkHost(host: string | undefined, port: number): void {
  if (!isOwnHost(host, port)) {
    throw new ForeignHostError(
      `this console answers only requests for 127.0.0.1:${port} or localhost:${port} (Host was ${JSON.stringify(host ?? '')})`,
    );
  }
}

function sameToken(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Checks a POST: from this console's own pages (Origin, Sec-Fetch-Site), with its token.
 * @throws ActionRefusedError
 */
export function checkAction(
  r: {
    readonly headers: Readonly<Record<string, string | undefined>>;
    readonly form: Readonly<Record<string, string>>;
  },
  o: { readonly token: string; readonly port: number },
): void {
  const origin = r.headers.origin;
  if (origin !== undefined && origin !== 'null') {
    let host: string | undefined;
    try {
      const u = new URL(origin);
      host = u.protocol === 'http:' ? u.host : undefined;
    } catch {
      host = undefined;
    }
    if (!isOwnHost(host, o.port)) throw new ActionRefusedError(`refused: a request from another origin (${origin})`);
  }
  const site = r.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw new ActionRefusedError(`refused: a ${site} request (only this console's own pages may act)`);
  }
  if (!sameToken(r.form[TOKEN_FIELD] ?? r.headers[TOKEN_HEADER], o.token)) {
    throw new ActionRefusedError(
      'refused: this action needs the token of this console start (reload the page; a restart makes a new one)',
    );
  }
}
