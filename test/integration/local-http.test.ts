/**
 * The local runtime's HTTP server (local/http-server.ts), spoken to over raw sockets so that the
 * test controls every byte: oversized headers and bodies, a body that stalls half-way, malformed
 * requests. Only the HTTP server runs (a stub handler, or the API handler over in-memory fakes):
 * no emulators, so the file takes about a second.
 */
import type { Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { type ApiServerOptions, createApiServer } from '../../local/http-server.js';
import type { HttpResult } from '../../shared/service/api/http.js';
import { defineTask, TaskRegistry } from '../../shared/task/define.js';
import { unitKaj } from '../../testing/fixtures.js';

/** The contract, written out (not imported) so that the test pins it. */
const MAX_HEADER_BYTES = 16 * 1024;
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** A bounded wait for an answer: far below Node's 300 s default request timeout. */
const ANSWER_WITHIN_MS = 5_000;

interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

async function listen(
  handler: (event: APIGatewayProxyEventV2) => Promise<HttpResult>,
  options?: ApiServerOptions,
): Promise<{ server: Server; port: number }> {
  const server = createApiServer(handler, options);
  servers.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/** Echoes what the handler was given, so tests can see the request got through. */
const echo = async (event: APIGatewayProxyEventV2): Promise<HttpResult> => ({
  statusCode: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ path: event.rawPath, bytes: Buffer.byteLength(event.body ?? '') }),
});

/**
 * Writes `parts` to a fresh connection (never half-closing it: a stalled client keeps it open)
 * and resolves with the first complete response, or rejects after `ANSWER_WITHIN_MS`.
 */
function exchange(port: number, parts: readonly (string | Buffer)[]): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `no complete response within ${ANSWER_WITHIN_MS} ms; got ${JSON.stringify(received.toString('latin1').slice(0, 300))}`,
        ),
      );
    }, ANSWER_WITHIN_MS);
    const finish = (r: RawResponse) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const tryParse = (closed: boolean) => {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine = '', ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const status = Number(statusLine.split(' ')[1]);
      const body = received.subarray(end + 4);
      const length = headers['content-length'];
      if (headers['transfer-encoding'] === 'chunked') {
        const decoded = dechunk(body);
        if (decoded !== undefined) finish({ status, headers, body: decoded });
      } else if (length !== undefined ? body.length >= Number(length) : closed) {
        finish({
          status,
          headers,
          body: body.subarray(0, length === undefined ? body.length : Number(length)).toString('utf8'),
        });
      }
    };
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d]);
      tryParse(false);
    });
    socket.on('close', () => tryParse(true));
    socket.on('error', () => {
      // A reset after the answer is fine; without an answer the timer reports what arrived.
    });
    socket.on('connect', () => {
      for (const p of parts) socket.write(p);
    });
  });
}

/** The body of a chunked response, or undefined while its last chunk has not arrived. */
function dechunk(data: Buffer): string | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = Number.parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(parts).toString('utf8');
    if (data.length < eol + 2 + size + 2) return undefined;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** Resolves when the server closes the connection (or rejects after the bounded wait). */
function closedByServer(port: number, parts: readonly (string | Buffer)[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connection still open after ${ANSWER_WITHIN_MS} ms`));
    }, ANSWER_WITHIN_MS);
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('connect', () => {
      for (const p of parts) socket.write(p);
    });
  });
}

function expectApiError(r: RawResponse, status: number, code: string): void {
  expect(r.status).toBe(status);
  expect(r.headers['content-type']).toBe('application/json');
  expect(JSON.parse(r.body)).toEqual({ error: { code, message: expect.any(String) } });
}

describe('local HTTP server: every error has the API error shape', () => {
  // Once, the handler's decodeURIComponent threw and the API answered 500 internal.
  it.each([
    ['GET', '/api/v1/tasks/%ff'],
    ['DELETE', '/api/v1/tasks/%ff'],
    ['GET', '/api/v1/tasks/%'],
    ['GET', '/api/v1/tasks/%E0%A4%A'],
  ])('%s %s through the real API handler → 400 invalid_path', async (method, path) => {
    const registry = new TaskRegistry([defineTask({ type: 'job', schema: z.object({}), handler: async () => ({}) })]);
    const { kaj } = unitKaj(registry);
    const { port } = await listen((e) => kaj.handleHttp(e));
    const r = await exchange(port, [`${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`]);
    expectApiError(r, 400, 'invalid_path');
  });

  it(`headers over ${MAX_HEADER_BYTES} bytes → 431 headers_too_large (Node answered with an empty body)`, async () => {
    let called = false;
    const { port } = await listen(async (e) => {
      called = true;
      return echo(e);
    });
    const r = await exchange(port, [
      `GET /api/v1/tasks HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nx-big: ${'a'.repeat(MAX_HEADER_BYTES)}\r\n\r\n`,
    ]);
    expectApiError(r, 431, 'headers_too_large');
    expect(called).toBe(false);
  });

  it('a body over 10 MiB → 413 payload_too_large (it answered {"message": …}); the handler never sees it', async () => {
    let called = false;
    const { port } = await listen(async (e) => {
      called = true;
      return echo(e);
    });
    const size = 10 * 1024 * 1024 + 1;
    const r = await exchange(port, [
      `POST /api/v1/tasks HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`,
      Buffer.alloc(size, 0x61),
    ]);
    expectApiError(r, 413, 'payload_too_large');
    expect(called).toBe(false);
  });

  it('a body of exactly 10 MiB still reaches the handler (the limit is API Gateway’s)', async () => {
    const { port } = await listen(echo);
    const size = 10 * 1024 * 1024;
    const r = await exchange(port, [
      `POST /x HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-length: ${size}\r\n\r\n`,
      Buffer.alloc(size, 0x61),
    ]);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ path: '/x', bytes: size });
  });

  it('a malformed request → 400 bad_request', async () => {
    const { port } = await listen(echo);
    const r = await exchange(port, ['NOT A REQUEST\r\n\r\n']);
    expectApiError(r, 400, 'bad_request');
  });
});

describe('local HTTP server: only requests for this server (DNS rebinding)', () => {
  /** A server with the API and the pages (the console's place); what each was asked. */
  async function both() {
    const seen: string[] = [];
    const { port } = await listen(
      async (e) => {
        seen.push(`api ${e.rawPath}`);
        return echo(e);
      },
      {
        pages: () => (req, res) => {
          seen.push(`pages ${req.url}`);
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('page');
        },
      },
    );
    return { port, seen };
  }

  it.each([
    ['a rebinding name at the port', (p: number) => `host: rebind.example:${p}\r\n`],
    ['a rebinding name without a port', () => 'host: rebind.example\r\n'],
    ['loopback at another port', (p: number) => `host: 127.0.0.1:${p + 1}\r\n`],
    ['no Host at all (HTTP/1.0)', () => ''],
  ])('%s → 421 misdirected_request, for the API and the pages alike; nothing is served', async (_, host) => {
    const { port, seen } = await both();
    for (const path of ['/api/v1/tasks?status=failed', '/', '/schedules']) {
      const r = await exchange(port, [`GET ${path} HTTP/1.0\r\n${host(port)}\r\n`]);
      expectApiError(r, 421, 'misdirected_request');
    }
    const submit = await exchange(port, [
      `POST /api/v1/tasks HTTP/1.0\r\n${host(port)}content-type: application/json\r\ncontent-length: 2\r\n\r\n{}`,
    ]);
    expectApiError(submit, 421, 'misdirected_request');
    expect(seen).toEqual([]);
  });

  it('an absolute-form target naming another host → 421, even with an own Host header', async () => {
    const { port, seen } = await both();
    const r = await exchange(port, [
      `GET http://rebind.example:${port}/api/v1/tasks HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`,
    ]);
    expectApiError(r, 421, 'misdirected_request');
    expect(seen).toEqual([]);
  });

  it('127.0.0.1, localhost and [::1] at its port (any case) are served; the API and pages split on the path', async () => {
    const { port, seen } = await both();
    for (const host of [`127.0.0.1:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
      expect((await exchange(port, [`GET /api/v1/x HTTP/1.1\r\nhost: ${host}\r\n\r\n`])).status).toBe(200);
    }
    expect((await exchange(port, [`GET / HTTP/1.1\r\nhost: localhost:${port}\r\n\r\n`])).body).toBe('page');
    // An absolute-form target to this server goes where its path says (it went to the pages).
    const absolute = await exchange(port, [
      `GET http://127.0.0.1:${port}/api/v1/y HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`,
    ]);
    expect(JSON.parse(absolute.body)).toEqual({ path: '/api/v1/y', bytes: 0 });
    expect(seen).toEqual(['api /api/v1/x', 'api /api/v1/x', 'api /api/v1/x', 'pages /', 'api /api/v1/y']);
  });
});

describe('local HTTP server: a request target that is not a URL', () => {
  it.each([['GET http://[ HTTP/1.1'], ['GET http://[/api/v1/tasks HTTP/1.1'], ['GET * HTTP/1.1']])(
    '%s → 400 bad_request in the error shape (it was a 500), with or without the pages',
    async (line) => {
      for (const options of [{}, { pages: () => () => expect.unreachable('the pages were asked') }]) {
        let called = false;
        const { port } = await listen(async (e) => {
          called = true;
          return echo(e);
        }, options);
        const r = await exchange(port, [`${line}\r\nhost: 127.0.0.1:${port}\r\n\r\n`]);
        expectApiError(r, 400, 'bad_request');
        expect(called).toBe(false);
      }
    },
  );

  it('a path that starts with // stays a path (not a host)', async () => {
    const { port } = await listen(echo);
    const r = await exchange(port, [`GET //rebind.example/api HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`]);
    expect(JSON.parse(r.body)).toEqual({ path: '//rebind.example/api', bytes: 0 });
  });
});

describe('local HTTP server: x-kaj-identity', () => {
  /** The identity the handler was given, from the event's IAM authorizer field. */
  const whoami = async (e: APIGatewayProxyEventV2): Promise<HttpResult> => ({
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      who: (e.requestContext as { authorizer?: { iam?: { userArn?: string } } }).authorizer?.iam?.userArn ?? null,
    }),
  });

  it.each([
    ['empty', 'x-kaj-identity: \r\n'],
    ['with a space', 'x-kaj-identity: alice smith\r\n'],
    ['not ASCII', 'x-kaj-identity: al\u00e9\r\n'],
    ['over 256 characters', `x-kaj-identity: ${'a'.repeat(257)}\r\n`],
    ['given twice', 'x-kaj-identity: alice\r\nx-kaj-identity: bob\r\n'],
  ])('%s → 400 invalid_header naming x-kaj-identity (it acted as the default identity)', async (_, header) => {
    let called = false;
    const { port } = await listen(async (e) => {
      called = true;
      return whoami(e);
    });
    const r = await exchange(port, [
      Buffer.from(`GET /api/v1/tasks HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n${header}\r\n`, 'latin1'),
    ]);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body)).toEqual({
      error: { code: 'invalid_header', message: expect.stringMatching(/^x-kaj-identity: /), field: 'x-kaj-identity' },
    });
    expect(called).toBe(false);
  });

  it('a valid one is the caller; without one the request is the default identity’s', async () => {
    const { port } = await listen(whoami);
    const arn = `arn:aws:iam::1:user/${'a'.repeat(200)}`;
    const named = await exchange(port, [
      `GET /x HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nx-kaj-identity: ${arn}\r\n\r\n`,
    ]);
    expect(JSON.parse(named.body)).toEqual({ who: arn });
    const none = await exchange(port, [`GET /x HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`]);
    expect(JSON.parse(none.body)).toEqual({ who: null });
  });
});

describe('local HTTP server: a stalled request times out', () => {
  it(`by default a client has ${DEFAULT_REQUEST_TIMEOUT_MS / 1000} s for headers and body, not Node's 300 s`, async () => {
    const { server } = await listen(echo);
    expect(server.requestTimeout).toBe(DEFAULT_REQUEST_TIMEOUT_MS);
    expect(server.headersTimeout).toBe(DEFAULT_REQUEST_TIMEOUT_MS);
  });

  it('headers and part of the body, then silence → 408 request_timeout and the connection is closed', async () => {
    let called = false;
    const { port } = await listen(
      async (e) => {
        called = true;
        return echo(e);
      },
      { requestTimeoutMs: 300 },
    );
    const r = await exchange(port, [
      `POST /api/v1/tasks HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n`,
      '{"type":"sen',
    ]);
    expectApiError(r, 408, 'request_timeout');
    expect(r.headers.connection).toBe('close');
    expect(called).toBe(false);
  });

  it('part of the headers, then silence → 408 request_timeout, then the server closes the connection', async () => {
    const { port } = await listen(echo, { requestTimeoutMs: 300 });
    const raw = await closedByServer(port, ['GET /api/v1/tasks HTTP/1.1\r\nhost: loc']);
    expect(raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 'request_timeout', message: expect.any(String) },
    });
  });

  it('the timeout covers receiving the request only: a handler slower than it still answers', async () => {
    const { port } = await listen(
      async (e) => {
        await new Promise((r) => setTimeout(r, 1_000));
        return echo(e);
      },
      { requestTimeoutMs: 200 },
    );
    const r = await exchange(port, [`GET /slow HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`]);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ path: '/slow', bytes: 0 });
  });

  it('refuses a timeout that is not a positive integer', () => {
    expect(() => createApiServer(echo, { requestTimeoutMs: 0 })).toThrow(RangeError);
  });
});
