/**
 * An "instant" DynamoDB + SQS endpoint for the CPU benchmark (bench/cpu.ts): a tiny node:http
 * server answering the AWS JSON 1.0 protocols (`x-amz-target: DynamoDB_20120810.*` and
 * `AmazonSQS.*`) from an in-memory map, in a child process of its own so that its CPU is not the
 * benchmark's.
 *
 * It is only as faithful as the benchmark needs, and never a test double:
 * - DynamoDB: GetItem returns the stored item; PutItem stores; UpdateItem applies `SET` (`= :v`,
 *   `= if_not_exists(#a, :z) + :n`, `= list_append(if_not_exists(#a, :e), :l)`) and `REMOVE`
 *   naively and returns ALL_NEW. Conditions always hold.
 * - SQS: SendMessage answers with the body MD5 the client verifies, and keeps the message for the
 *   benchmark (`messages()`, which drains them); ChangeMessageVisibilityBatch answers OK.
 * - Any other operation answers 400, so that a path the benchmark does not model fails loudly.
 * - Every request is counted by target (`stats()`), so a benchmark can print AWS calls per task.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { createServer, request, type RequestOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A DynamoDB attribute value as the JSON protocol spells it. */
type AttributeValue = { [type: string]: unknown };
type Item = Record<string, AttributeValue>;

/** A message as SendMessage carried it. */
export interface SentMessage {
  readonly queueUrl: string;
  readonly messageId: string;
  readonly body: string;
  readonly attributes: Record<string, { DataType: string; StringValue?: string }>;
}

export interface InstantEndpoint {
  /** `http://127.0.0.1:PORT`, for AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS (and queue URLs). */
  readonly url: string;
  /** Requests served so far, by `x-amz-target` (`DynamoDB_20120810.GetItem`...). */
  stats(): Promise<Record<string, number>>;
  /** The messages sent since the last call (drained). */
  messages(): Promise<SentMessage[]>;
}

const CONTROL = '/__instant/';

/** Starts the endpoint in a child process (this same file, `--serve`). */
export async function startInstantEndpoint(): Promise<InstantEndpoint & { stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--serve'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`instant endpoint exited (${code})`)));
    createInterface({ input: child.stdout as NonNullable<ChildProcess['stdout']> }).once('line', resolve);
  });
  return {
    ...connectInstantEndpoint(url),
    stop: async () => {
      child.stdin?.end();
      await new Promise((r) => child.once('exit', r));
    },
  };
}

/** The control side of an endpoint another process started (a benchmark's worker). */
export function connectInstantEndpoint(url: string): InstantEndpoint {
  const control = async <T>(path: string): Promise<T> => JSON.parse(await httpCall(`${url}${CONTROL}${path}`)) as T;
  return {
    url,
    stats: () => control<Record<string, number>>('stats'),
    messages: () => control<SentMessage[]>('messages'),
  };
}

/** One HTTP request, a POST of `body` or a GET without one; resolves with the response's text. */
export function httpCall(url: string, body?: string, options: RequestOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: body === undefined ? 'GET' : 'POST', ...options }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------
// The server (child process)

const md5 = (s: string): string => createHash('md5').update(s, 'utf8').digest('hex');

class Server {
  private readonly items = new Map<string, Item>();
  private readonly counts = new Map<string, number>();
  private sent: SentMessage[] = [];

  /** The answer to `x-amz-target: target` with `input`. */
  handle(target: string, input: Record<string, unknown>): { status: number; body: unknown } {
    this.counts.set(target, (this.counts.get(target) ?? 0) + 1);
    switch (target) {
      case 'DynamoDB_20120810.GetItem': {
        const item = this.items.get(keyOf(input.Key as Item));
        return { status: 200, body: item === undefined ? {} : { Item: item } };
      }
      case 'DynamoDB_20120810.PutItem':
        this.items.set(keyOf(input.Item as Item), input.Item as Item);
        return { status: 200, body: {} };
      case 'DynamoDB_20120810.UpdateItem': {
        const key = keyOf(input.Key as Item);
        const item: Item = { ...(this.items.get(key) ?? (input.Key as Item)) };
        applyUpdate(
          item,
          String(input.UpdateExpression),
          (input.ExpressionAttributeNames ?? {}) as Record<string, string>,
          (input.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>,
        );
        this.items.set(key, item);
        return { status: 200, body: input.ReturnValues === 'ALL_NEW' ? { Attributes: item } : {} };
      }
      case 'AmazonSQS.SendMessage': {
        const m: SentMessage = {
          queueUrl: String(input.QueueUrl),
          messageId: randomUUID(),
          body: String(input.MessageBody),
          attributes: (input.MessageAttributes ?? {}) as SentMessage['attributes'],
        };
        this.sent.push(m);
        return { status: 200, body: { MessageId: m.messageId, MD5OfMessageBody: md5(m.body) } };
      }
      case 'AmazonSQS.ChangeMessageVisibilityBatch': {
        const entries = (input.Entries ?? []) as { Id: string }[];
        return { status: 200, body: { Successful: entries.map((e) => ({ Id: e.Id })), Failed: [] } };
      }
      default:
        return { status: 400, body: { __type: 'UnknownOperationException', message: target } };
    }
  }

  control(path: string): unknown {
    if (path === 'stats') return Object.fromEntries(this.counts);
    if (path !== 'messages') return { error: `unknown control ${path}` };
    const out = this.sent;
    this.sent = [];
    return out;
  }
}

function keyOf(item: Item): string {
  return JSON.stringify(item.task_id ?? item);
}

/** Top-level comma split (commas inside function calls stay). */
function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(s.slice(start).trim());
  return out.filter((x) => x !== '');
}

/** Applies `SET ...` and `REMOVE ...` the way Kaj's store writes them (see the module comment). */
function applyUpdate(
  item: Item,
  expression: string,
  names: Record<string, string>,
  values: Record<string, AttributeValue>,
): void {
  const name = (placeholder: string): string => names[placeholder.trim()] ?? placeholder.trim();
  const value = (placeholder: string): AttributeValue => values[placeholder.trim()] ?? { NULL: true };
  const removeAt = expression.search(/\bREMOVE\b/);
  const setPart = (removeAt >= 0 ? expression.slice(0, removeAt) : expression).replace(/^\s*SET\s+/, '');
  const removePart = removeAt >= 0 ? expression.slice(removeAt + 'REMOVE'.length) : '';
  if (/^\s*SET\b/.test(expression)) {
    for (const assignment of splitTopLevel(setPart)) {
      const eq = assignment.indexOf('=');
      const attr = name(assignment.slice(0, eq));
      const rhs = assignment.slice(eq + 1).trim();
      const add = /^if_not_exists\(\s*(#\w+)\s*,\s*(:\w+)\s*\)\s*\+\s*(:\w+)$/.exec(rhs);
      const append = /^list_append\(\s*if_not_exists\(\s*(#\w+)\s*,\s*(:\w+)\s*\)\s*,\s*(:\w+)\s*\)$/.exec(rhs);
      if (add) {
        const base = Number((item[attr]?.N as string | undefined) ?? (value(add[2] as string).N as string));
        item[attr] = { N: String(base + Number(value(add[3] as string).N)) };
      } else if (append) {
        const base = (item[attr]?.L ?? value(append[2] as string).L ?? []) as AttributeValue[];
        item[attr] = { L: [...base, ...((value(append[3] as string).L ?? []) as AttributeValue[])] };
      } else {
        item[attr] = value(rhs);
      }
    }
  }
  for (const placeholder of splitTopLevel(removePart)) delete item[name(placeholder)];
}

async function serve(): Promise<void> {
  const state = new Server();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let status = 200;
      let body: unknown;
      if (req.url?.startsWith(CONTROL)) {
        body = state.control(req.url.slice(CONTROL.length));
      } else {
        ({ status, body } = state.handle(String(req.headers['x-amz-target']), text === '' ? {} : JSON.parse(text)));
      }
      const out = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/x-amz-json-1.0',
        'content-length': Buffer.byteLength(out),
        'x-amzn-requestid': randomUUID(),
      });
      res.end(out);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

if (process.argv.includes('--serve') && process.argv[1] === fileURLToPath(import.meta.url)) await serve();
