import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import { definePipeline, node } from '../shared/pipeline/define.js';
import { defineTask, PermanentError, type TaskContext } from '../shared/task/define.js';

/**
 * A nightly data pipeline (docs/pipelines.md): each night at 00:30 in Dhaka, the run of the day
 * before — extract the day's sales → clean them, and meanwhile load the customers → build the
 * daily summary once both are done → refresh the dashboard.
 *
 * Every node does the work of its run's **logical date** (`ctx.logicalDate`, the start of
 * `ctx.dataInterval`) and rewrites that date's partition (`<table>/<date>.json`), so running a
 * node twice gives the same result and a backfill of old dates is safe.
 *
 * To watch a failure: start with `KAJ_NIGHTLY_SALES_FAIL=clean` (node names, comma-separated) and
 * the named nodes fail (their downstream is `upstream_failed`); then, without it, clear the node
 * (`kaj pipelines clear nightly_sales --date <date> --node clean --downstream`).
 */

const ZONE = 'Asia/Dhaka';

/** Where the partitions go: `KAJ_PARTITIONS_DIR`, else a folder under the system's temp dir. */
function partitionsDir(): string {
  return process.env.KAJ_PARTITIONS_DIR ?? join(tmpdir(), 'kaj-partitions');
}

/** The run's logical date as a calendar day in Dhaka. */
function dayOf(ctx: TaskContext): string {
  const at = ctx.logicalDate ?? new Date();
  return new Intl.DateTimeFormat('en-CA', { timeZone: ZONE, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    at,
  );
}

function failIfTold(name: string): void {
  const told = (process.env.KAJ_NIGHTLY_SALES_FAIL ?? '').split(',').map((s) => s.trim());
  if (told.includes(name)) throw new PermanentError(`${name} was told to fail (KAJ_NIGHTLY_SALES_FAIL)`);
}

/** Writes (or rewrites) one date's partition of a table; returns its key. */
async function writePartition(table: string, day: string, rows: unknown): Promise<string> {
  const dir = join(partitionsDir(), table);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, `${day}.json`), `${JSON.stringify(rows)}\n`);
  return `${table}/${day}.json`;
}

async function readPartition<T>(table: string, day: string): Promise<T> {
  return JSON.parse(await readFile(join(partitionsDir(), table, `${day}.json`), 'utf8')) as T;
}

/** A day's made-up sales: the same for the same date, every time. */
function salesOf(day: string): { order: string; amount: number }[] {
  const seed = Number(day.replaceAll('-', ''));
  return Array.from({ length: 5 }, (_, i) => ({ order: `${day}-${i}`, amount: ((seed * (i + 7)) % 9000) / 10 - 50 }));
}

const none = z.strictObject({});

export const extractSales = defineTask({
  type: 'extract_sales',
  description: 'Pipeline nightly_sales: the logical date’s raw sales into raw_sales/<date>',
  schema: none,
  timeoutSeconds: 60,
  handler: async (_p, ctx) => {
    const day = dayOf(ctx);
    failIfTold('extract');
    return { partition: await writePartition('raw_sales', day, salesOf(day)) };
  },
});

export const cleanSales = defineTask({
  type: 'clean_sales',
  description: 'Pipeline nightly_sales: the date’s raw sales without refunds into sales/<date>',
  schema: none,
  timeoutSeconds: 60,
  handler: async (_p, ctx) => {
    const day = dayOf(ctx);
    failIfTold('clean');
    const raw = await readPartition<{ order: string; amount: number }[]>('raw_sales', day);
    return {
      partition: await writePartition(
        'sales',
        day,
        raw.filter((r) => r.amount > 0),
      ),
    };
  },
});

export const loadCustomers = defineTask({
  type: 'load_customers',
  description: 'Pipeline nightly_sales: the customers as of the date into customers/<date>',
  schema: none,
  timeoutSeconds: 60,
  handler: async (_p, ctx) => {
    const day = dayOf(ctx);
    failIfTold('customers');
    return { partition: await writePartition('customers', day, [{ id: 'c1' }, { id: 'c2' }]) };
  },
});

export const buildDailySummary = defineTask({
  type: 'build_daily_summary',
  description: 'Pipeline nightly_sales: the date’s totals from sales/<date> and customers/<date>',
  schema: none,
  timeoutSeconds: 60,
  handler: async (_p, ctx) => {
    const day = dayOf(ctx);
    failIfTold('summary');
    const sales = await readPartition<{ amount: number }[]>('sales', day);
    const customers = await readPartition<unknown[]>('customers', day);
    const total = Math.round(sales.reduce((s, r) => s + r.amount, 0) * 100) / 100;
    const summary = { day, orders: sales.length, total, customers: customers.length };
    return { partition: await writePartition('summary', day, summary), ...summary };
  },
});

export const refreshDashboard = defineTask({
  type: 'refresh_dashboard',
  description: 'Pipeline nightly_sales: points the dashboard at the date’s summary',
  schema: none,
  timeoutSeconds: 60,
  handler: async (_p, ctx) => {
    const day = dayOf(ctx);
    failIfTold('dashboard');
    const summary = await readPartition<{ total: number }>('summary', day);
    return { partition: await writePartition('dashboard', day, { day, total: summary.total }) };
  },
});

export const nightlySales = definePipeline({
  name: 'nightly_sales',
  description: 'Each night, the sales of the day before: extract → clean, customers → summary → dashboard',
  schedule: { cron: '30 0 * * *', timezone: ZONE, catchup: true },
  maxActiveRuns: 1,
  nodes: {
    extract: node(extractSales),
    clean: node(cleanSales, { after: ['extract'] }),
    customers: node(loadCustomers),
    summary: node(buildDailySummary, { after: ['clean', 'customers'] }),
    dashboard: node(refreshDashboard, { after: ['summary'] }),
  },
});

/** The pipeline's node types, to register with it. */
export const nightlySalesTasks = [extractSales, cleanSales, loadCustomers, buildDailySummary, refreshDashboard];
