import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { HttpResult } from '../shared/service/api/http.js';
import { isOwnHost } from '../console/security.js';

/** API Gateway HTTP API's own payload limit; Kaj's handler enforces its smaller one. */
const GATEWAY_MAX_BODY = 10 * 1024 * 1024;
/** Request line + headers. Node's default, pinned so that `--max-http-header-size` cannot move it. */
export const MAX_HEADER_BYTES = 16 * 1024;
/**
 * Time a client has to send a whole request (headers and body). Node's default is 300 s, so a
 * client that sends headers and part of a body and then stalls would hold its connection for five
 * minutes; API Gateway gives up far sooner. Loopback requests of at most 10 MiB need milliseconds.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

export interface ApiServerOptions {
  /**
   * Time to receive a whole request, headers and body; then `408` and the connection is closed.
   * Not a limit on the handler: the clock stops once the request has arrived.
   * @default DEFAULT_REQUEST_TIMEOUT_MS
   */
  readonly requestTimeoutMs?: number;
  /**
   * Serves every request outside `/api/` (the console of `npm start`), when it returns a handler;
   * otherwise those go to the API handler too (which answers 404).
   */
  readonly pages?: () => ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
}

/**
 * Serves the API handler over plain HTTP by turning each request into the API Gateway HTTP
 * API (payload 2.0) event the deployed function receives. No auth: it listens on loopback only.
 *
 * Loopback is not enough against a web page the developer's browser opens: through DNS rebinding
 * (a foreign name resolving to 127.0.0.1) such a page could list, submit and read. So every
 * request, to the API and to the console alike, must name this server in its `Host` (127.0.0.1,
 * localhost or [::1] at the port it came in on, the console's own rule, `console/security.ts`):
 * otherwise `421 misdirected_request`, before anything is read or routed.
 *
 * Every error it answers itself (body too large, headers too large, a stalled or malformed
 * request, a foreign Host, an invalid `x-kaj-identity`) has the API's error shape,
 * `{"error":{"code","message"}}`, like the handler's own.
 */
export function createApiServer(
  handler: (event: APIGatewayProxyEventV2) => Promise<HttpResult>,
  options: ApiServerOptions = {},
): Server {
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(`requestTimeoutMs must be a positive integer, got ${timeoutMs}`);
  }
  // The response being written on each socket: a client error must not be answered over it.
  const inFlight = new WeakMap<Duplex, ServerResponse>();
  const server = createServer(
    {
      requestTimeout: timeoutMs,
      headersTimeout: timeoutMs,
      // Node looks for expired requests only this often (default 30 s, which would stretch a 10 s
      // timeout to 40 s): check a few times per timeout, at most every second.
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(timeoutMs / 4))),
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    (req, res) => {
      inFlight.set(req.socket, res);
      res.once('close', () => {
        if (inFlight.get(req.socket) === res) inFlight.delete(req.socket);
      });
      const url = admitted(req);
      if (!(url instanceof URL)) return send(res, url);
      const pages = options.pages?.();
      if (pages !== undefined && !url.pathname.startsWith('/api/')) pages(req, res);
      else void serve(req, url, res, handler);
    },
  );
  // Errors Node's HTTP parser raises before (or instead of) a request: without this listener Node
  // answers them with an empty body (431, 408, 400).
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const res = inFlight.get(socket);
    // Node's own rule: answer only if no response has started on this socket.
    if (socket.writable && (res === undefined || !res.headersSent) && err.code !== 'ECONNRESET') {
      const [status, code, message] = clientErrorAnswer(err);
      socket.end(rawErrorResponse(status, code, message), () => socket.destroy());
    } else {
      socket.destroy();
    }
  });
  return server;
}

function clientErrorAnswer(err: NodeJS.ErrnoException): [number, string, string] {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'headers_too_large', `request line and headers exceed ${MAX_HEADER_BYTES} bytes`];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'request_timeout', 'the request did not arrive in time (headers and body)'];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'payload_too_large', 'chunk extensions are too large'];
    default:
      return [400, 'bad_request', 'malformed HTTP request'];
  }
}

/** A whole HTTP/1.1 response for a socket that has no ServerResponse; the connection closes after it. */
function rawErrorResponse(status: number, code: string, message: string): string {
  const body = JSON.stringify({ error: { code, message } });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
    'content-type: application/json\r\n' +
    `content-length: ${Buffer.byteLength(body)}\r\n` +
    'connection: close\r\n\r\n' +
    body
  );
}

/**
 * The request's URL, if the request may be served: its target parses, and its `Host` (and the
 * authority of an absolute-form target) names this server. Otherwise the answer (400, 421).
 */
function admitted(req: IncomingMessage): URL | HttpResult {
  let url: URL;
  let absolute = false;
  const target = req.url ?? '/';
  try {
    // Origin-form (`/api/v1/tasks`) is appended to a base, so that `//x` stays a path;
    // absolute-form (`http://127.0.0.1:3000/…`) is parsed as it is.
    absolute = /^https?:\/\//i.test(target);
    if (!absolute && !target.startsWith('/')) throw new TypeError(`not origin-form: ${target}`);
    url = new URL(absolute ? target : `http://origin-form.invalid${target}`);
  } catch {
    return errorResult(400, 'bad_request', 'the request target is not a valid URL');
  }
  const port = req.socket.localPort ?? 0;
  const host = req.headers.host;
  if (!isOwnHost(host, port) || (absolute && !isOwnHost(url.host, port))) {
    return errorResult(
      421,
      'misdirected_request',
      `this server answers only requests for 127.0.0.1:${port}, localhost:${port} or [::1]:${port} (Host was ${JSON.stringify(host ?? '')})`,
    );
  }
  return url;
}

/** The client went away (or timed out) before its body arrived: nobody to answer. */
class RequestAbortedError extends Error {}

async function serve(
  req: IncomingMessage,
  url: URL,
  res: ServerResponse,
  handler: (event: APIGatewayProxyEventV2) => Promise<HttpResult>,
): Promise<void> {
  try {
    const identity = identityOf(req.headers[IDENTITY_HEADER]);
    if (identity instanceof InvalidIdentity) {
      return send(res, errorResult(400, 'invalid_header', identity.message, IDENTITY_HEADER));
    }
    const body = await readBody(req);
    if (body === undefined) {
      return send(
        res,
        errorResult(413, 'payload_too_large', `request body exceeds the gateway limit of ${GATEWAY_MAX_BODY} bytes`),
      );
    }
    const result = await handler(toEvent(req, url, body, identity));
    send(res, result);
  } catch (err) {
    // A timed-out request was already answered (408) by the clientError listener.
    if (err instanceof RequestAbortedError || res.headersSent || req.socket.destroyed) return;
    send(res, errorResult(500, 'internal', 'local gateway error'));
    console.error('local gateway error', err);
  }
}

function errorResult(statusCode: number, code: string, message: string, field?: string): HttpResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ error: field === undefined ? { code, message } : { code, message, field } }),
  };
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > GATEWAY_MAX_BODY) tooBig = true;
      else chunks.push(c);
    });
    req.on('end', () => resolve(tooBig ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => reject(new RequestAbortedError('request aborted')));
    // Without this, a request cut off mid-body (timeout, client gone) would leave the promise pending.
    req.on('close', () => {
      if (!req.complete) reject(new RequestAbortedError('request aborted'));
    });
  });
}

function toEvent(req: IncomingMessage, url: URL, body: string, identity: string | undefined): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(',') : v;
  }
  const now = Date.now();
  const method = (req.method ?? 'GET').toUpperCase();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    headers,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'localhost',
      http: {
        method,
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
      // There is no IAM locally. `x-kaj-identity` stands in for the principal API Gateway's IAM
      // authorizer would pass on AWS, so the owner model can be tried (docs/security.md); the
      // deployed API never reads the header. Without it, requests are the local identity's.
      ...(identity === undefined ? {} : { authorizer: { iam: { userArn: identity } } }),
    } as APIGatewayProxyEventV2['requestContext'],
    ...(body === '' ? {} : { body }),
    ...queryOf(url),
    isBase64Encoded: false,
  };
}

/** `queryStringParameters` as API Gateway (payload 2.0) gives them: absent when none, repeats joined by commas. */
function queryOf(url: URL): { queryStringParameters?: Record<string, string> } {
  const q: Record<string, string> = {};
  for (const [k, v] of url.searchParams) q[k] = q[k] === undefined ? v : `${q[k]},${v}`;
  return Object.keys(q).length === 0 ? {} : { queryStringParameters: q };
}

const IDENTITY_HEADER = 'x-kaj-identity';

/** An `x-kaj-identity` that names no identity: refused (400), never taken as the default identity. */
class InvalidIdentity {
  readonly message = `${IDENTITY_HEADER}: must be 1 to 256 printable ASCII characters without spaces, given once`;
}

/** The local stand-in for a caller's IAM identity: printable ASCII without spaces, at most 256 characters. */
function identityOf(value: string | string[] | undefined): string | undefined | InvalidIdentity {
  if (value === undefined) return undefined;
  return typeof value === 'string' && /^[\x21-\x7e]{1,256}$/.test(value) ? value : new InvalidIdentity();
}

function send(res: ServerResponse, result: HttpResult): void {
  res.writeHead(result.statusCode, result.headers);
  res.end(result.body);
}
