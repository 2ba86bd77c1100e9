/**
 * The payroll run's email provider, simulated: an HTTP server that takes `latencyMs` per email,
 * refuses with `429` (and `Retry-After`) any email above `perSecond` accepted in the last second
 * (a sliding window, by arrival), and honours idempotency keys as real providers do: a key it has
 * accepted before is answered `200` again without sending a second email.
 *
 * It records what a benchmark reports: emails sent by key, 429s (over-limit calls), replays of an
 * accepted key, the peak number of emails in flight, the peak accepted and the peak arrived in any
 * 1-s window, the calls that arrived over the limit (every call counted, by arrival time), and —
 * from the `x-started-at` header the task sets — the peak of calls started in any 1-s window and
 * the delay from a call's start to its arrival (what a limit enforced at the start cannot see);
 * its own event-loop delay (on a busy machine, part of an arrival delay is the provider's); and
 * the accepted rate between the 10th and 90th percentile of the run (the pace once filled).
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { REPO_ROOT } from '../../testing/worker-process.js';
import { maxInWindow, steadyRate } from './sim-provider.js';

export interface ProviderOptions {
  /** Emails accepted per sliding second before a 429. */
  readonly perSecond: number;
  /** Time to send one email. */
  readonly latencyMs: number;
}

/** What the provider saw (see the module's comment); times are epoch ms. */
export type ProviderReport = ReturnType<EmailProvider['report']>;

/** How many values of sorted `times` find `limit` or more values in the `windowMs` before them (half-open). */
export function overLimitInWindow(times: readonly number[], windowMs: number, limit: number): number {
  let over = 0;
  for (let i = 0, k = 0; i < times.length; i += 1) {
    while ((times[i] as number) - (times[k] as number) >= windowMs) k += 1;
    if (i - k >= limit) over += 1;
  }
  return over;
}

export class EmailProvider {
  private server: Server | undefined;
  private readonly accepted: number[] = [];
  /** Every call (accepted, refused, replayed): when its handler started it, when it arrived. */
  private readonly calls: { start: number; arrival: number }[] = [];
  /** Every call's arrival, stamped or not. */
  private readonly arrivals: number[] = [];
  private readonly loopDelay = monitorEventLoopDelay({ resolution: 10 });
  private readonly sentByKey = new Map<string, number>();
  private inFlight = 0;
  private peakInFlight = 0;
  private tooMany = 0;
  private replays = 0;
  url = '';

  constructor(private readonly o: ProviderOptions) {}

  async start(): Promise<void> {
    this.loopDelay.enable();
    this.server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/report') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.report()));
        return;
      }
      const key = String(req.headers['idempotency-key'] ?? '');
      const started = Number(req.headers['x-started-at']);
      req.resume();
      req.on('end', () => {
        const now = Date.now();
        this.arrivals.push(now);
        if (Number.isFinite(started)) this.calls.push({ start: started, arrival: now });
        if (this.sentByKey.has(key)) {
          this.replays += 1;
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"replayed":true}');
          return;
        }
        // Sliding window by arrival: accepted emails in (now - 1000, now].
        let inWindow = 0;
        for (let i = this.accepted.length - 1; i >= 0 && (this.accepted[i] as number) > now - 1000; i -= 1) {
          inWindow += 1;
        }
        if (inWindow >= this.o.perSecond) {
          this.tooMany += 1;
          res.writeHead(429, { 'retry-after': '1' }).end();
          return;
        }
        this.accepted.push(now);
        this.sentByKey.set(key, (this.sentByKey.get(key) ?? 0) + 1);
        this.inFlight += 1;
        this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
        setTimeout(() => {
          this.inFlight -= 1;
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"sent":true}');
        }, this.o.latencyMs);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/send`;
  }

  report() {
    const starts = this.calls.map((c) => c.start).sort((a, b) => a - b);
    const delays = this.calls.map((c) => c.arrival - c.start).sort((a, b) => a - b);
    const first = this.accepted[0];
    const last = this.accepted.at(-1);
    return {
      sent: this.accepted.length,
      duplicates: [...this.sentByKey.values()].filter((n) => n > 1).length,
      replays: this.replays,
      tooManyRequests: this.tooMany,
      peakInFlight: this.peakInFlight,
      peakPerSecond: maxInWindow(this.accepted, 1000),
      peakArrivalsPerSecond: maxInWindow(this.arrivals, 1000),
      arrivalsOverLimit: overLimitInWindow(this.arrivals, 1000, this.o.perSecond),
      peakStartsPerSecond: maxInWindow(starts, 1000),
      arrivalDelayMs: { median: delays[Math.floor(delays.length / 2)] ?? 0, max: delays.at(-1) ?? 0 },
      loopDelayMs: {
        p99: Math.round(this.loopDelay.percentile(99) / 1e6),
        max: Math.round(this.loopDelay.max / 1e6),
      },
      steadyPerSecond: steadyRate(this.accepted),
      ...(first === undefined ? {} : { firstAt: first }),
      ...(last === undefined ? {} : { lastAt: last }),
    };
  }

  async stop(): Promise<void> {
    this.loopDelay.disable();
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }
}

/**
 * Starts the provider as a child process (`bench/payroll/provider-process.ts`). Not in the
 * bench's own process: that one hosts the embedded emulators, whose event loop (hundreds of
 * writes a second) would delay every arrival — the provider's clock — by up to 0.3 s, and a
 * delayed arrival is a 429 no real provider would have sent.
 */
export async function spawnProvider(o: ProviderOptions) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/payroll/provider-process.ts', String(o.perSecond), String(o.latencyMs)],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const ready = /READY (\S+)/.exec(out);
      if (ready?.[1] !== undefined) resolve(ready[1]);
    });
    child.once('exit', (code) => reject(new Error(`the provider process exited (${code}) before it was ready`)));
  });
  const reportUrl = url.replace(/\/send$/, '/report');
  return {
    /** Where tasks send their emails. */
    url,
    report: async () => (await (await fetch(reportUrl)).json()) as ProviderReport,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
