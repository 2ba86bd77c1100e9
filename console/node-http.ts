/** The console behind Node's HTTP server: `npm start`'s (beside the API) and `kaj ui`'s. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ConsoleApp, ConsoleRequest } from './app.js';

/** Forms are small: a confirmed selection of at most 1,000 task ids. */
const MAX_FORM_BYTES = 256 * 1024;

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

export function consoleListener(app: ConsoleApp, onError: (err: unknown) => void = () => {}): NodeHandler {
  return (req, res) => {
    void serve(app, req, res).catch((err: unknown) => {
      onError(err);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('console error\n');
      } else res.destroy();
    });
  };
}

async function serve(app: ConsoleApp, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://console.invalid');
  } catch {
    // A target such as `http://[` is the client's mistake, not the console's (it was a 500).
    res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('bad request: the request target is not a valid URL\n');
    return;
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
  const method = (req.method ?? 'GET').toUpperCase();
  let form: Record<string, string> = {};
  if (method === 'POST') {
    const body = await readBody(req);
    if (body === undefined) {
      res.writeHead(413, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`form larger than ${MAX_FORM_BYTES} bytes\n`);
      return;
    }
    if ((headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
      form = params(new URLSearchParams(body));
  }
  const request: ConsoleRequest = { method, path: url.pathname, query: params(url.searchParams), headers, form };
  const out = await app.handle(request);
  res.writeHead(out.status, out.headers);
  res.end(method === 'HEAD' ? undefined : out.body);
}

/** The first value of each name. */
function params(p: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of p) if (!(k in out)) out[k] = v;
  return out;
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_FORM_BYTES) chunks.push(c);
    });
    req.on('end', () => resolve(size > MAX_FORM_BYTES ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
