/**
 * The console of `npm start`, at the runtime's own address (`/`, beside `/api/`): the same
 * console as `kaj ui`, on the local target (`.kaj/local.json`, as `kaj --local` finds it), with
 * actions on (this is a development runtime on loopback; every action still needs the page's
 * token). Throughput comes from this runtime's own counters.
 *
 * @module
 */
import { defaultContext, type CliContext } from '../cli/context.js';
import { openConsole } from '../cli/console/open.js';
import { consoleListener } from '../console/node-http.js';
import type { ThroughputRecorder } from '../console/throughput.js';
import type { ConsoleApp } from '../console/app.js';
import type { Logger } from '../shared/runtime/logger.js';
import type { LocalRuntime } from './runtime.js';

export interface LocalConsole {
  readonly url: string;
  readonly app: ConsoleApp;
  close(): Promise<void>;
}

export async function startLocalConsole(
  runtime: LocalRuntime,
  o: {
    readonly throughput: ThroughputRecorder;
    readonly logger: Logger;
    /** Where `.kaj/local.json` is (as for `kaj --local`). @default the current directory */
    readonly cwd?: string;
    /** Overrides of the CLI context (tests: the task registry, the actor). */
    readonly context?: Partial<CliContext>;
    /** @default true */
    readonly allowActions?: boolean;
  },
): Promise<LocalConsole> {
  const ctx = defaultContext({ ...(o.cwd === undefined ? {} : { cwd: o.cwd }), ...o.context });
  const port = Number(new URL(runtime.url).port);
  const c = await openConsole(
    ctx,
    { local: true },
    {
      allowActions: o.allowActions ?? true,
      port: () => port,
      metrics: async () => ({ throughput: o.throughput.series() }),
      logger: o.logger,
    },
  );
  runtime.servePages(consoleListener(c.app, (err) => o.logger.warn('console request failed', { error: String(err) })));
  return { url: `${runtime.url}/`, app: c.app, close: c.close };
}
