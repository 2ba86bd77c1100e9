/**
 * The console behind Node's HTTP server (console/node-http.ts), as `kaj ui` serves it,
 * spoken to over a raw socket: a request target that is not a URL is the client's 400.
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsoleApp } from '../../../console/app.js';
import { consoleListener } from '../../../console/node-http.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

/** Sends `raw` and resolves with everything the server wrote before it closed the connection. */
function exchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    // Only a guard against a server that never answers: generous, a loaded machine answers late.
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer; got ${JSON.stringify(received)}`));
    }, 30_000);
    socket.on('data', (d: Buffer) => (received += d.toString('utf8')));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('connect', () => socket.write(raw));
  });
}

describe('consoleListener', () => {
  it('GET http://[ → 400 (it was a 500 "console error"); the app is not asked', async () => {
    const errors: unknown[] = [];
    let asked = 0;
    const app = {
      handle: async () => {
        asked += 1;
        return { status: 200, headers: {}, body: 'page' };
      },
    } as unknown as ConsoleApp;
    const server = createServer(consoleListener(app, (err) => errors.push(err)));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;
    const raw = await exchange(port, `GET http://[ HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n\r\n`);
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toMatch(/not a valid URL/);
    const ok = await exchange(port, `GET / HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n\r\n`);
    expect(ok).toMatch(/^HTTP\/1\.1 200 /);
    expect(asked).toBe(1);
    expect(errors).toEqual([]);
  });
});
