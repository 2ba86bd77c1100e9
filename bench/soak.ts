// The pinned AWS SDK warns that releases after January 2027 need Node 22; Kaj supports Node 20 locally.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * The soak (testing/soak.ts) at any size, from the command line:
 *
 *   npm run soak -- --tasks 20000 [--workers 2] [--kill-every 4] [--moto] [--json]
 *
 * Exit code 0 when the invariant held, 1 when it did not.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { EMBEDDED_TARGET, MOTO_TARGET } from '../local/emulators.js';
import { formatReport, runSoak, SOAK_DEFAULTS } from '../testing/soak.js';

async function main(): Promise<void> {
  const { values: v } = parseArgs({
    options: {
      tasks: { type: 'string' },
      workers: { type: 'string' },
      'kill-every': { type: 'string' },
      'max-kills': { type: 'string' },
      lease: { type: 'string' },
      concurrency: { type: 'string' },
      'batch-size': { type: 'string' },
      'max-outstanding': { type: 'string' },
      watchdog: { type: 'string' },
      'timeout-min': { type: 'string' },
      'stall-min': { type: 'string' },
      seed: { type: 'string' },
      moto: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (v.help) {
    process.stdout.write(`usage: npm run soak -- [--tasks N] [--workers N] [--kill-every S] [--max-kills N] [--lease S]
                     [--concurrency N] [--batch-size N] [--max-outstanding N] [--watchdog S]
                     [--timeout-min M] [--stall-min M] [--seed N] [--moto] [--json]
defaults: ${JSON.stringify({ ...SOAK_DEFAULTS, killEveryMs: SOAK_DEFAULTS.killEveryMs })}
`);
    return;
  }
  const num = (raw: string | undefined, fallback: number): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0) throw new Error(`not a number >= 0: ${raw}`);
    return n;
  };
  const report = await runSoak({
    tasks: num(v.tasks, SOAK_DEFAULTS.tasks),
    workers: num(v.workers, SOAK_DEFAULTS.workers),
    killEveryMs: num(v['kill-every'], SOAK_DEFAULTS.killEveryMs / 1000) * 1000,
    maxKills: num(v['max-kills'], SOAK_DEFAULTS.maxKills),
    leaseSeconds: num(v.lease, SOAK_DEFAULTS.leaseSeconds),
    concurrency: num(v.concurrency, SOAK_DEFAULTS.concurrency),
    batchSize: num(v['batch-size'], SOAK_DEFAULTS.batchSize),
    maxOutstanding: num(v['max-outstanding'], SOAK_DEFAULTS.maxOutstanding),
    watchdogSeconds: num(v.watchdog, SOAK_DEFAULTS.watchdogSeconds),
    timeoutMs: num(v['timeout-min'], SOAK_DEFAULTS.timeoutMs / 60_000) * 60_000,
    stallMs: num(v['stall-min'], SOAK_DEFAULTS.stallMs / 60_000) * 60_000,
    seed: num(v.seed, SOAK_DEFAULTS.seed),
    target: v.moto ? MOTO_TARGET : EMBEDDED_TARGET,
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${v.json ? JSON.stringify(report, null, 2) : formatReport(report)}\n`);
  process.exitCode = report.invariantHeld ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`soak: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
