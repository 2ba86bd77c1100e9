/**
 * The console on a target, as `kaj ui` and `npm start` serve it: the services `kaj` opens on
 * the target, the backend over them, and the request handler with its per-start token.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConsoleApp } from '../../console/app.js';
import { consoleListener } from '../../console/node-http.js';
import { newToken } from '../../console/security.js';
import type { Logger } from '../../shared/runtime/logger.js';
import type { CliContext } from '../context.js';
import { openServices } from '../services.js';
import type { TargetFlags } from '../target.js';
import { type BackendOptions, servicesBackend } from './backend.js';
import { CloudWatchReader } from './cloudwatch.js';

export interface ConsoleOptions {
  /** Cancel, redrive, purge and schedule changes (off: every POST is refused). */
  readonly allowActions: boolean;
  /** The port it is served on, once known (its own Host and Origin). */
  readonly port: () => number;
  /** Throughput (and queue ages): @default CloudWatch on a stack; none locally. */
  readonly metrics?: BackendOptions['metrics'];
  readonly logger?: Logger;
}

export interface OpenConsole {
  readonly app: ConsoleApp;
  readonly label: string;
  /** Stops running jobs at their next step and closes the clients. */
  close(): Promise<void>;
}

export async function openConsole(ctx: CliContext, flags: TargetFlags, o: ConsoleOptions): Promise<OpenConsole> {
  const registry = await ctx.registry();
  const services = await openServices(ctx, flags, registry);
  const stop = new AbortController();
  const cloudwatch =
    o.metrics === undefined &&
    services.target.kind === 'stack' &&
    services.target.clientSettings !== undefined &&
    services.target.stackName !== undefined
      ? new CloudWatchReader(services.target.clientSettings, services.target.stackName)
      : undefined;
  const metrics: BackendOptions['metrics'] =
    o.metrics ??
    (cloudwatch !== undefined
      ? (queues, now) => cloudwatch.read(queues, now)
      : async () => ({
          throughput: { available: false, reason: 'this target has no metrics the console can read' },
        }));
  const backend = servicesBackend(ctx, services, { registry, metrics, signal: stop.signal });
  const app = new ConsoleApp({
    backend,
    token: newToken(),
    port: o.port,
    actionsAllowed: o.allowActions,
    actor: ctx.actor,
    clock: ctx.clock,
    newId: () => randomUUID().slice(0, 8),
    ...(o.logger === undefined ? {} : { logger: o.logger }),
    // The pipeline pages: a pipeline is a workflow type, so without a history store there is none.
    ...(services.kaj.pipelines === undefined ? {} : { pipelines: services.kaj.pipelines }),
  });
  return {
    app,
    label: services.target.label,
    close: async () => {
      stop.abort();
      await app.jobs.settled();
      cloudwatch?.close();
      services.close();
    },
  };
}

/** `kaj ui`'s own server: 127.0.0.1 only. */
export async function listenConsole(
  open: (port: () => number) => Promise<OpenConsole>,
  port: number,
  onError: (err: unknown) => void,
): Promise<{ url: string; console: OpenConsole; close(): Promise<void> }> {
  let bound = port;
  const console = await open(() => bound);
  const server: Server = createServer(consoleListener(console.app, onError));
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  } catch (err) {
    await console.close();
    throw err;
  }
  bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/`,
    console,
    close: async () => {
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
      await console.close();
    },
  };
}
