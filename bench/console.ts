/**
 * Page load of the console (`npm start`'s, local/console.ts) with 100,000 tasks in the table.
 *
 *   npx tsx bench/console.ts [--tasks 100000] [--runs 5]
 *
 * Seeds the local runtime's table directly (BatchWriteItem of records as the store writes them;
 * the listed ones with the listing keys the domain gives them: `listingKey`), then times every
 * page: the server's answer (a loopback GET, median of --runs) and, when Chromium is installed, a
 * browser navigation (Navigation Timing: response end and load event, median of --runs). It
 * also counts the DynamoDB requests each page view makes, by command: a page that scanned the
 * table would show a Scan. Consumers are off, so nothing else runs meanwhile.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startLocalConsole } from '../local/console.js';
import { startLocalRuntime } from '../local/runtime.js';
import { STATUS_COUNT_TTL_MS } from '../cli/console/backend.js';
import { ThroughputRecorder } from '../console/throughput.js';
import { PRIORITIES } from '../shared/config/resources.js';
import { systemClock } from '../shared/runtime/clock.js';
import { silentLogger } from '../shared/runtime/logger.js';
import { listingKey } from '../shared/task/listing.js';
import type { ListedStatus, TaskRecord, TaskStatus } from '../shared/task/model.js';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { putItems } from './lib/put-items.js';
import { median, num } from './lib/report.js';

const { values } = parseArgs({
  options: { tasks: { type: 'string', default: '100000' }, runs: { type: 'string', default: '5' } },
});
const total = num(values.tasks, 'tasks', true, 1);
const runs = num(values.runs, 'runs', true, 3);

/** The mix: mostly succeeded (not indexed), then failed, retrying, cancelled, running. */
const MIX: readonly [TaskStatus, number][] = [
  ['succeeded', 0.7],
  ['failed', 0.15],
  ['retrying', 0.08],
  ['cancelled', 0.05],
  ['running', 0.02],
];
const TYPES = ['send_email', 'make_thumbnails', 'sales_report', 'deliver_webhook'];

function recordOf(i: number, status: TaskStatus, now: number): TaskRecord {
  const at = new Date(now - (total - i) * 1_000).toISOString();
  const id = `t_bench${String(i).padStart(8, '0')}`;
  const listed = status !== 'succeeded' && status !== 'queued';
  const r: TaskRecord = {
    task_id: id,
    type: TYPES[i % TYPES.length] as string,
    priority: PRIORITIES[i % 3] as TaskRecord['priority'],
    status,
    payload: { to: `user${i}@example.com`, subject: 'hello', body: 'x'.repeat(200) },
    attempts: status === 'succeeded' ? 1 : 2,
    max_attempts: 3,
    timeout_seconds: 60,
    run_at: at,
    created_at: at,
    updated_at: at,
    started_at: at,
    history: [
      {
        attempt: 1,
        outcome: status === 'succeeded' ? 'succeeded' : 'retrying',
        started_at: at,
        finished_at: at,
        duration_ms: 120,
      },
    ],
    fingerprint: 'bench',
    lease_token: 1,
    dispatch_id: `d_${i}`,
    owner: 'local',
    ...(status === 'failed' || status === 'retrying'
      ? {
          last_error: {
            name: 'RetryableError',
            message: 'provider unavailable (503)',
            retryable: true,
            code: 'HTTP_503',
          },
        }
      : {}),
    ...(listed ? listingKey(status as ListedStatus, at, id) : {}),
  };
  return r;
}

async function seed(dynamodb: DynamoDBClient, table: string): Promise<Record<string, number>> {
  const now = Date.now();
  const counts: Record<string, number> = {};
  const statuses: TaskStatus[] = [];
  for (const [s, share] of MIX) for (let k = 0; k < Math.round(total * share); k += 1) statuses.push(s);
  while (statuses.length < total) statuses.push('succeeded');
  statuses.length = total;
  // Interleave, so that every status spans the whole time range.
  const order = statuses.map((s, i) => ({ s, k: (i * 7919) % total })).sort((a, b) => a.k - b.k);
  await putItems(dynamodb, table, total, (i) => {
    const s = (order[i] as { s: TaskStatus }).s;
    counts[s] = (counts[s] ?? 0) + 1;
    return recordOf(i, s, now) as unknown as Record<string, unknown>;
  });
  return counts;
}

// Every DynamoDB command any client of this process sends, by name (the console's included).
const sent: Record<string, number> = {};
const originalSend = DynamoDBClient.prototype.send;
DynamoDBClient.prototype.send = function (
  this: DynamoDBClient,
  command: { constructor: { name: string } },
  ...rest: unknown[]
) {
  const input = (command as unknown as { input?: { TableName?: string } }).input;
  const name = `${command.constructor.name.replace(/Command$/, '')} ${input?.TableName ?? ''}`.trim();
  sent[name] = (sent[name] ?? 0) + 1;
  return (originalSend as (...a: unknown[]) => Promise<unknown>).call(this, command, ...rest);
} as typeof originalSend;

const throughput = new ThroughputRecorder(systemClock);
const runtime = await startLocalRuntime({
  port: 0,
  consumers: false,
  scheduler: false,
  // No sweep during the measurement: its outbox Queries would be counted as the pages'.
  sweepIntervalMs: 3_600_000,
  prefix: 'kaj-bench-console',
  metrics: throughput.metrics(),
});
const dir = mkdtempSync(join(tmpdir(), 'kaj-bench-console-'));
mkdirSync(join(dir, '.kaj'));
writeFileSync(
  join(dir, '.kaj', 'local.json'),
  JSON.stringify({ pid: process.pid, apiUrl: runtime.url, endpoints: runtime.endpoints, resources: runtime.resources }),
);
try {
  const t0 = performance.now();
  const counts = await seed(runtime.clients.dynamodb, runtime.resources.tableName);
  process.stdout.write(
    `seeded ${total.toLocaleString('en-US')} tasks in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(counts)}\n`,
  );
  const ui = await startLocalConsole(runtime, { throughput, logger: silentLogger, cwd: dir });
  const aTask = `t_bench${String(total - 1).padStart(8, '0')}`;
  const pages: [string, string][] = [
    ['overview (status counts cached)', '/'],
    ['overview refresh (fragment, counts cached)', '/fragments/overview'],
    ['tasks: failed, newest 50', '/tasks?status=failed'],
    ['tasks: failed, type + priority + last 24h', '/tasks?status=failed&type=send_email&priority=high&since=24h'],
    ['tasks: retrying, page 2', ''],
    ['task page', `/tasks/${aTask}`],
    ['dead letters (reads the DLQs, not the table)', '/dead-letters'],
  ];
  // Page 2 of a listing: the cursor the first page printed.
  const first = await (await fetch(`${runtime.url}/tasks?status=retrying`)).text();
  const cursor = /href="(\/tasks\?[^"]*cursor=[^"]+)"/.exec(first)?.[1]?.replaceAll('&amp;', '&');
  (pages[4] as [string, string])[1] = cursor ?? '/tasks?status=retrying';

  // The overview counts the listed statuses (up to 10 index pages each) and reuses the counts
  // for STATUS_COUNT_TTL_MS: its first view after that is the cold one.
  const cold = async (measure: () => Promise<number>): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      await new Promise((r) => setTimeout(r, STATUS_COUNT_TTL_MS + 200));
      for (const k of Object.keys(sent)) delete sent[k];
      out.push(await measure());
    }
    return out;
  };
  const coldServer = await cold(async () => {
    const s = performance.now();
    await (await fetch(`${runtime.url}/`)).arrayBuffer();
    return performance.now() - s;
  });
  process.stdout.write(
    `\noverview, status counts not cached (median of 3, each ${STATUS_COUNT_TTL_MS / 1000} s apart): ${median(coldServer).toFixed(1)} ms (runs ${coldServer.map((t) => t.toFixed(0)).join(', ')}; ${Object.entries(
      sent,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})\n`,
  );

  process.stdout.write(`\nserver time (loopback GET, median of ${runs}) and DynamoDB requests per view:\n`);
  for (const [name, path] of pages) {
    const times: number[] = [];
    let status = 0;
    let perView: Record<string, number> = {};
    for (let i = 0; i < runs; i += 1) {
      for (const k of Object.keys(sent)) delete sent[k];
      const s = performance.now();
      const res = await fetch(`${runtime.url}${path}`);
      await res.arrayBuffer();
      times.push(performance.now() - s);
      status = res.status;
      perView = { ...sent };
    }
    process.stdout.write(
      `  ${name.padEnd(46)} ${median(times).toFixed(1).padStart(7)} ms  (HTTP ${status}; ${
        Object.entries(perView)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'no DynamoDB request'
      })\n`,
    );
  }

  const chrome = process.env.KAJ_CHROMIUM || ['/usr/bin/chromium', '/usr/bin/google-chrome'].find((p) => existsSync(p));
  if (chrome === undefined) {
    process.stdout.write('\nbrowser navigation: skipped (no Chromium; apt-get install chromium)\n');
  } else {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: chrome, args: ['--no-sandbox', '--disable-gpu'] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    process.stdout.write(
      `\nbrowser navigation (Chromium, Navigation Timing, median of ${runs}; first load warms the asset cache):\n`,
    );
    await page.goto(`${runtime.url}/`);
    const nav = async (path: string): Promise<[number, number]> => {
      await page.goto(`${runtime.url}${path}`, { waitUntil: 'load' });
      return (await page.evaluate(
        "(() => { const n = performance.getEntriesByType('navigation')[0]; return [n.responseEnd - n.startTime, n.loadEventEnd - n.startTime]; })()",
      )) as [number, number];
    };
    const coldNav: [number, number][] = [];
    // Off the overview while waiting: its own refresh (every 5 s) would count anew and warm the cache.
    await page.goto('about:blank');
    await cold(async () => {
      coldNav.push(await nav('/'));
      await page.goto('about:blank');
      return 0;
    });
    process.stdout.write(
      `  ${'overview, counts not cached (median of 3)'.padEnd(46)} response ${median(coldNav.map((t) => t[0]))
        .toFixed(1)
        .padStart(7)} ms   load ${median(coldNav.map((t) => t[1]))
        .toFixed(1)
        .padStart(7)} ms\n`,
    );
    for (const [name, path] of pages.filter(([n]) => !n.includes('fragment'))) {
      const response: number[] = [];
      const load: number[] = [];
      for (let i = 0; i < runs; i += 1) {
        const t = await nav(path);
        response.push(t[0]);
        load.push(t[1]);
      }
      process.stdout.write(
        `  ${name.padEnd(46)} response ${median(response).toFixed(1).padStart(7)} ms   load ${median(load).toFixed(1).padStart(7)} ms\n`,
      );
    }
    await browser.close();
  }
  await ui.close();
} finally {
  await runtime.stop(1_000);
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
