/**
 * The payroll's email provider as a process of its own (`spawnProvider` in ./email-provider.ts):
 *
 *   tsx bench/payroll/provider-process.ts PER_SECOND LATENCY_MS
 *
 * Prints `READY <url>` once it listens; `GET /report` answers its report; SIGTERM stops it.
 *
 * @module
 */
import { EmailProvider } from './email-provider.js';

const [perSecond, latencyMs] = process.argv.slice(2).map(Number);
if (perSecond === undefined || latencyMs === undefined || !(perSecond > 0) || !(latencyMs >= 0)) {
  process.stderr.write('usage: provider-process.ts PER_SECOND LATENCY_MS\n');
  process.exit(2);
}
const provider = new EmailProvider({ perSecond, latencyMs });
await provider.start();
process.stdout.write(`READY ${provider.url}\n`);
process.once('SIGTERM', () => {
  void provider.stop().then(() => process.exit(0));
});
