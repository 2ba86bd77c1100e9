import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { HttpResult } from '../shared/api/http.js';

/** API Gateway HTTP API's own payload limit; Kaj's handler enforces its smaller one. */
const GATEWAY_MAX_BODY = 10 * 1024 * 1024;

/**
 * Serves the API handler over plain HTTP by turning each request into the API Gateway HTTP
 * API (payload 2.0) event the deployed function receives. No auth: it listens on loopback only.
 */
export function createApiServer(handler: (event: APIGatewayProxyEventV2) => Promise<HttpResult>): Server {
  return createServer((req, res) => {
    void serve(req, res, handler);
  });
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  handler: (event: APIGatewayProxyEventV2) => Promise<HttpResult>,
): Promise<void> {
  try {
    const body = await readBody(req);
    if (body === undefined) {
      return send(res, { statusCode: 413, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'Request Entity Too Large' }) });
    }
    const result = await handler(toEvent(req, body));
    send(res, result);
  } catch (err) {
    send(res, {
      statusCode: 500,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: { code: 'internal', message: 'local gateway error' } }),
    });
    console.error('local gateway error', err);
  }
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
    req.on('error', reject);
  });
}

function toEvent(req: IncomingMessage, body: string): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://localhost');
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
    },
    ...(body === '' ? {} : { body }),
    isBase64Encoded: false,
  };
}

function send(res: ServerResponse, result: HttpResult): void {
  res.writeHead(result.statusCode, result.headers);
  res.end(result.body);
}
