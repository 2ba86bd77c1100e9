// The pinned AWS SDK warns that releases after January 2027 need Node 22; Kaj supports Node 20.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * `kaj`: Kaj's admin CLI. Run it as `npx kaj ...` (bin/kaj.mjs) or `npx tsx cli/main.ts ...`.
 */
const { defaultContext } = await import('./context.js');
const { runCli } = await import('./program.js');
const { EXIT_TERMINATED, installStopHandlers } = await import('./process.js');

const { EventEmitter } = await import('node:events');
const controller = new AbortController();
// Every paced wait (--rate) listens on it: many at once is expected.
EventEmitter.setMaxListeners(0, controller.signal);
const stopping = installStopHandlers(process, controller);

const ran = await runCli(process.argv.slice(2), defaultContext({ signal: controller.signal }));
stopping.dispose();
const code = stopping.terminated() ? EXIT_TERMINATED : ran;
process.exitCode = code;
// Idle keep-alive sockets of the AWS clients must not hold the process open.
setTimeout(() => process.exit(code), 100).unref();
