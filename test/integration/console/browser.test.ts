/**
 * The console in a real browser (Chromium through playwright-core) against the local runtime
 * `npm start` runs — started in-process with the console mounted the way local/main.ts mounts it,
 * and task types the test can break and fix. Screenshots of each page go to .tmp/console-screenshots/,
 * and to docs/img/ with KAJ_UPDATE_SCREENSHOTS=1 (docs/operations.md and the README show those).
 */
import { mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { startLocalConsole, type LocalConsole } from '../../../local/console.js';
import { startLocalRuntime, type LocalRuntime } from '../../../local/runtime.js';
import { ThroughputRecorder } from '../../../console/throughput.js';
import { systemClock } from '../../../shared/runtime/clock.js';
import { silentLogger } from '../../../shared/runtime/logger.js';
import { defineTask, PermanentError, RetryableError, TaskRegistry } from '../../../shared/task/define.js';
import { definePipeline, node } from '../../../shared/pipeline/define.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { dlqDepth, localStateDir, waitFor } from '../cli/harness.js';
import { CHROMIUM, SKIP_REASON } from './chromium.js';

const SHOTS = process.env.KAJ_UPDATE_SCREENSHOTS === '1' ? 'docs/img' : '.tmp/console-screenshots';

/** `deliver_webhook` fails for good until the test "fixes" its API key; `sync_crm` fails twice, then succeeds. */
class World {
  keyValid = false;
  /** The pipeline's `transform` node fails while this is set. */
  transformBroken = false;
  registry(): TaskRegistry {
    const step = (type: string, fail: () => boolean = () => false) =>
      defineTask({
        type,
        schema: z.strictObject({}),
        handler: async (_p, ctx) => {
          if (fail()) throw new PermanentError(`${type}: the upstream file is malformed`);
          return { day: ctx.logicalDate?.toISOString() };
        },
      });
    const nodes = {
      fetch_orders: step('fetch_orders'),
      fetch_rates: step('fetch_rates'),
      transform: step('transform', () => this.transformBroken),
      publish: step('publish'),
    };
    const reports = definePipeline({
      name: 'daily_reports',
      description: 'orders and rates → transform → publish, each day',
      maxActiveRuns: 2,
      nodes: {
        orders: node(nodes.fetch_orders),
        rates: node(nodes.fetch_rates),
        transform: node(nodes.transform, { after: ['orders', 'rates'] }),
        publish: node(nodes.publish, { after: ['transform'] }),
      },
    });
    return new TaskRegistry([
      ...Object.values(nodes),
      reports,
      defineTask({
        type: 'deliver_webhook',
        schema: z.object({ url: z.string(), event: z.string() }),
        handler: async (p) => {
          if (!this.keyValid)
            throw new PermanentError(`webhook ${new URL(p.url).host} rejected the API key (401 Unauthorized)`, {
              code: 'HTTP_401',
            });
          return { delivered: p.event };
        },
      }),
      defineTask({
        type: 'sync_crm',
        schema: z.object({ account: z.string() }),
        backoff: { baseSeconds: 0.05, capSeconds: 0.2 },
        handler: async (p, ctx) => {
          if (ctx.attempt <= 2) throw new RetryableError('CRM answered 503 Service Unavailable', { code: 'HTTP_503' });
          return { synced: p.account, attempt: ctx.attempt };
        },
      }),
      defineTask({
        type: 'send_invoice',
        schema: z.object({ customer: z.string(), note: z.string().optional() }),
        handler: async (p) => ({ sent: p.customer }),
      }),
    ]);
  }
}

const world = new World();
let runtime: LocalRuntime;
let ui: LocalConsole;
let state: { dir: string; remove(): void };
let browser: Browser;
let context: BrowserContext;
let page: Page;
const base = () => runtime.url;
/** Dialogs any page opened: an injected script would open one. */
const dialogs: string[] = [];

async function submit(type: string, payload: unknown, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(`${base()}/api/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type, payload, ...extra }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { task_id: string }).task_id;
}

async function record(id: string): Promise<TaskRecord> {
  return (await runtime.kaj.store.get(id)) as TaskRecord;
}

async function until(ids: readonly string[], status: TaskRecord['status']): Promise<void> {
  await waitFor(`${ids.length} task(s) ${status}`, async () =>
    (await Promise.all(ids.map(record))).every((r) => r.status === status) ? true : undefined,
  );
}

async function shot(name: string, p: Page = page): Promise<void> {
  await p.screenshot({ path: join(SHOTS, `console-${name}.png`) });
}

// biome-ignore lint/plugin/no-conditional-skip: no Chromium on this machine; the reason and how to run it are printed (chromium.ts), and CI fails instead of skipping
describe.skipIf(CHROMIUM === undefined)(
  CHROMIUM === undefined ? `console in a browser — ${SKIP_REASON}` : `console in Chromium (${CHROMIUM})`,
  () => {
    beforeAll(async () => {
      mkdirSync(SHOTS, { recursive: true });
      const throughput = new ThroughputRecorder(systemClock);
      const registry = world.registry();
      runtime = await startLocalRuntime({
        registry,
        prefix: `console-${process.pid}-${Date.now()}`.slice(0, 40),
        port: 0,
        waitTimeSeconds: 1,
        sweepIntervalMs: 1_000,
        metrics: throughput.metrics(),
      });
      state = localStateDir(runtime);
      ui = await startLocalConsole(runtime, {
        throughput,
        logger: silentLogger,
        cwd: state.dir,
        context: { registry: async () => registry, actor: 'ops-alice', env: {} },
      });
      browser = await chromium.launch({
        executablePath: CHROMIUM as string,
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
      });
      // A viewer east of UTC: the page must show their zone, with UTC on hover.
      context = await browser.newContext({
        viewport: { width: 1280, height: 800 },
        timezoneId: 'Europe/Berlin',
        locale: 'en-GB',
      });
      page = await context.newPage();
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        void d.dismiss();
      });
    });

    afterAll(async () => {
      await browser?.close();
      await ui?.close();
      await runtime?.stop(2_000);
      state?.remove();
    });

    let dead: string[] = [];
    let flaky: string;
    let scripted: string;

    it("the overview shows the counts the API reports, in the viewer's time zone, and refreshes without layout shift", async () => {
      dead = [
        await submit('deliver_webhook', { url: 'https://hooks.example.com/a', event: 'order.paid' }),
        await submit('deliver_webhook', { url: 'https://hooks.example.com/b', event: 'order.paid' }),
        await submit('deliver_webhook', { url: 'https://hooks.example.com/c', event: 'order.shipped' }),
      ];
      flaky = await submit('sync_crm', { account: 'acme' });
      const ok = await Promise.all([1, 2, 3, 4, 5].map((i) => submit('send_invoice', { customer: `c${i}` })));
      // Waits a long while: stays queued (delayed) until the test cancels it.
      scripted = await submit(
        'send_invoice',
        { customer: 'later', note: '<script>alert("x")</script><img src=x onerror=alert(1)>' },
        { delay_seconds: 600 },
      );
      await until(dead, 'failed');
      await until([flaky, ...ok], 'succeeded');
      await waitFor('3 dead letters', async () =>
        (await dlqDepth(runtime, 'normal')).visible === 3 ? true : undefined,
      );

      await page.goto(`${base()}/`);
      const api = (await (await fetch(`${base()}/api/v1/tasks?status=failed&limit=100`)).json()) as {
        items: unknown[];
      };
      const stat = (k: string) => page.locator(`[data-stat="${k}"]`).textContent();
      expect(await stat('failed')).toBe(String(api.items.length));
      expect(api.items.length).toBe(3);
      expect(await stat('dead-letters')).toBe('3');
      expect(await stat('delayed-sqs')).toBe('1');
      expect(await stat('delayed-table')).toBe('0');
      expect(await stat('hour-succeeded')).toBe('6');
      expect(await stat('hour-failed')).toBe('3');
      expect(await stat('hour-retried')).toBe('2');
      expect(await stat('failure-rate')).toBe(`${((3 / 9) * 100).toFixed(1)} %`);
      // Times: the viewer's zone in the text, UTC on hover.
      const t = page.locator('#live time').first();
      expect(await t.getAttribute('title')).toMatch(/ UTC$/);
      expect(await t.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (CET|CEST|GMT\+1|GMT\+2)$/);
      await shot('overview');

      // One refresh cycle (every 5 s): the region is swapped, nothing moves.
      await page.evaluate(`(() => {
        window.__shift = 0;
        new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__shift += e.value; })
          .observe({ type: 'layout-shift', buffered: false });
      })()`);
      const before = await page.locator('#live').getAttribute('data-read-at');
      await waitFor(
        'an automatic refresh of the overview',
        async () => {
          const now = await page.locator('#live').getAttribute('data-read-at');
          return now !== before ? true : undefined;
        },
        12_000,
      );
      await page.waitForTimeout(200);
      expect(await page.evaluate('window.__shift')).toBe(0);

      // Phone width.
      const phone = await context.newPage();
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(`${base()}/`);
      const overflow = await phone.evaluate('document.documentElement.scrollWidth - window.innerWidth');
      expect(overflow as number).toBeLessThanOrEqual(0);
      await shot('overview-phone', phone);
      await phone.close();
    });

    it('the tasks page lists by status and type, links each row to its task, and answers a bad filter with a 400 naming it', async () => {
      await page.goto(`${base()}/tasks?status=failed`);
      await page.selectOption('select[name=status]', 'failed');
      await page.fill('input[name=type]', 'deliver_webhook');
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForURL(/type=deliver_webhook/);
      const rows = page.locator('tbody tr');
      expect(await rows.count()).toBe(3);
      expect((await page.locator('tbody td.mono a').allInnerTexts()).sort()).toEqual([...dead].sort());
      await shot('tasks');

      // Queued tasks that wait in the table (beyond SQS's 15 minutes): the delayed view, with when they run.
      const tomorrow = await submit('send_invoice', { customer: 'next-day' }, { delay_seconds: 86_400 });
      await page.goto(`${base()}/tasks?status=delayed`);
      expect(await page.locator('tbody td.mono a').allTextContents()).toEqual([tomorrow]);
      expect(await page.locator('thead').textContent()).toContain('Runs at');
      await page.goto(`${base()}/tasks?status=failed&type=deliver_webhook`);

      // Keyboard: the first Tab reaches the skip link, Enter jumps to the content; the filters are plain controls.
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.textContent')).toBe('Skip to content');
      await page.keyboard.press('Enter');
      await page.waitForURL(/#main$/);
      await page.keyboard.press('Tab');
      expect(await page.evaluate('document.activeElement.name')).toBe('status');

      const bad = await page.goto(`${base()}/tasks?status=exploded`);
      expect(bad?.status()).toBe(400);
      expect(await page.locator('main').textContent()).toContain('status: one of retrying, failed, cancelled, running');
      const badCursor = await page.goto(`${base()}/tasks?status=failed&cursor=forged`);
      expect(badCursor?.status()).toBe(400);
      expect(await page.locator('main').textContent()).toContain('cursor');
    });

    it('a task page shows the attempt history as a timeline', async () => {
      await page.goto(`${base()}/tasks/${flaky}`);
      const items = page.locator('ol.timeline > li');
      expect(await items.count()).toBe(3);
      expect(await items.nth(0).textContent()).toMatch(
        /Attempt 1 · retrying[\s\S]*HTTP_503 RetryableError: CRM answered 503/,
      );
      expect(await items.nth(1).textContent()).toMatch(/Attempt 2 · retrying/);
      expect(await items.nth(2).textContent()).toMatch(/Attempt 3 · succeeded[\s\S]*took \d+ ms/);
      expect(await page.locator('main').textContent()).toMatch(/Result\s*\{\s+"synced": "acme",\s+"attempt": 3\s+\}/);
      await shot('task');
    });

    it('a failing task appears in dead letters; after its cause is fixed, "redrive these" makes it succeed', async () => {
      await page.goto(`${base()}/dead-letters`);
      const group = page.locator('tbody tr', { hasText: 'deliver_webhook' });
      expect(await group.locator('td').first().textContent()).toBe('3');
      expect(await group.textContent()).toContain(
        'HTTP_401 PermanentError: webhook hooks.example.com rejected the API key',
      );
      await shot('dead-letters');

      await group.getByRole('link', { name: 'Redrive these' }).click();
      await page.waitForURL(/\/dead-letters\/confirm/);
      await expect.poll(() => page.locator('h1').textContent()).toBe('Redrive 3 dead task(s)?');
      const listed = ((await page.locator('details pre').textContent()) ?? '').split('\n').sort();
      expect(listed).toEqual([...dead].sort());
      await page.fill('input[name=reason]', 'API key rotated');
      await shot('confirm');

      world.keyValid = true; // the cause is fixed
      await page.getByRole('button', { name: 'Redrive these 3' }).click();
      await page.waitForURL(/\/jobs\//);
      await expect
        .poll(() => page.locator('#job p[role=status]').textContent(), { timeout: 20_000 })
        .toMatch(/^Done\. 3 of 3 handled: 3 redriven, 0 skipped, 0 failed\./);
      await shot('job');
      await until(dead, 'succeeded');
      await waitFor('an empty DLQ', async () => ((await dlqDepth(runtime, 'normal')).visible === 0 ? true : undefined));

      await page.goto(`${base()}/tasks/${dead[0]}`);
      const audit = await page.locator('table', { hasText: 'Action' }).textContent();
      expect(audit).toMatch(/redrive\s*ops-alice.+API key rotated/);
      expect(await page.locator('ol.timeline > li').count()).toBe(2);
    });

    it("actions need the page's token and this console's origin; with both, a cancel goes through the domain", async () => {
      const waiting = scripted;
      await page.goto(`${base()}/tasks/${waiting}`);
      // A payload that looks like markup is shown as text, and runs nothing.
      await page.locator('details summary').click();
      expect(await page.locator('details pre').textContent()).toContain(
        '"note": "<script>alert(\\"x\\")</script><img src=x onerror=alert(1)>"',
      );
      expect(dialogs).toEqual([]);
      // From the page's own origin but without the token: refused.
      const noToken = await page.evaluate(async (url) => {
        const r = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'reason=x',
        });
        return { status: r.status, text: await r.text() };
      }, `/tasks/${waiting}/cancel`);
      expect(noToken.status).toBe(403);
      expect(noToken.text).toContain('needs the token');
      // A wrong token: refused.
      const wrong = await fetch(`${base()}/tasks/${waiting}/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: '_token=guess',
      });
      expect(wrong.status).toBe(403);
      // Another site's page, even with the right token: refused (Origin).
      const token = (await page.locator('input[name=_token]').first().getAttribute('value')) as string;
      const foreign = await fetch(`${base()}/tasks/${waiting}/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example' },
        body: `_token=${token}`,
      });
      expect(foreign.status).toBe(403);
      // A DNS-rebinding host name: refused before anything is read.
      const port = new URL(base()).port;
      // (fetch cannot set Host: a plain request can, as a rebinding page's browser would send it.)
      const rebound = await new Promise<number>((resolve, reject) => {
        const req = request(`${base()}/`, { headers: { host: `evil.example:${port}` } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(rebound).toBe(421);
      expect((await record(waiting)).status).toBe('queued');

      await page.getByRole('button', { name: 'Cancel' }).click();
      await expect.poll(() => page.locator('.flash').textContent()).toBe('Cancelled.');
      const r = await record(waiting);
      expect(r.status).toBe('cancelled');
      expect(r.audit?.at(-1)).toMatchObject({ action: 'cancel', by: 'ops-alice' });
    });

    it('schedules: next fire times and runs, pause and trigger from the page', async () => {
      const schedules = runtime.kaj.schedules;
      if (schedules === undefined) throw new Error('the runtime has no scheduler');
      await schedules.put(
        'nightly-invoices',
        { type: 'send_invoice', cron: '0 2 * * *', payload: { customer: 'all' } },
        undefined,
      );
      await page.goto(`${base()}/schedules`);
      const row = page.locator('tbody tr', { hasText: 'nightly-invoices' });
      expect(await row.textContent()).toMatch(/active\s*send_invoice\s*cron 0 2 \* \* \*/);
      await row.getByRole('button', { name: 'Trigger now' }).click();
      await expect.poll(() => page.locator('.flash').textContent()).toContain('Triggered');
      await page.getByRole('button', { name: 'Pause' }).click();
      await expect.poll(() => page.locator('.flash').textContent()).toBe('Paused.');
      expect((await schedules.get('nightly-invoices', undefined)).state).toBe('paused');
      await page.goto(`${base()}/schedules`);
      await shot('schedules');
    });

    it('pipelines: the grid colours each date’s nodes by state, the run page draws the graph, Clear reruns the failed node', async () => {
      const runOf = async (date: string) =>
        (await (await fetch(`${base()}/api/v1/pipelines/daily_reports/runs/${date}`)).json()) as {
          status: string;
          nodes: { name: string; state: string }[];
        };
      const start = async (date: string) => {
        const res = await fetch(`${base()}/api/v1/pipelines/daily_reports/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ logical_date: date }),
        });
        expect(res.status).toBe(201);
      };
      const ended = (date: string) =>
        waitFor(`the run of ${date} ended`, async () =>
          ['succeeded', 'failed'].includes((await runOf(date)).status) ? true : undefined,
        );
      await start('2026-11-26');
      await start('2026-11-27');
      await Promise.all([ended('2026-11-26'), ended('2026-11-27')]);
      world.transformBroken = true;
      await start('2026-11-28');
      await ended('2026-11-28');
      expect((await runOf('2026-11-28')).status).toBe('failed');

      await page.goto(`${base()}/pipelines/daily_reports?to=2026-11-28`);
      const cell = (node: string, date: string) =>
        page.locator(`tr[data-node="${node}"] [data-date="${date}"]`).getAttribute('class');
      expect(await cell('', '2026-11-27')).toContain('ns-succeeded');
      expect(await cell('', '2026-11-28')).toContain('ns-failed');
      expect(await cell('transform', '2026-11-28')).toContain('ns-failed');
      expect(await cell('publish', '2026-11-28')).toContain('ns-upstream_failed');
      expect(await cell('orders', '2026-11-28')).toContain('ns-succeeded');
      expect(await cell('publish', '2026-11-25')).toContain('ns-none');
      await shot('pipeline-grid');

      await page.goto(`${base()}/pipelines/daily_reports/runs/2026-11-28`);
      expect(await page.locator('svg.pgraph g.node').count()).toBe(4);
      expect(await page.locator('svg.pgraph g.node[data-node="transform"]').getAttribute('class')).toContain(
        'ns-failed',
      );
      await shot('pipeline-run');
      world.transformBroken = false;
      await page.getByRole('button', { name: /clear/i }).click();
      await waitFor('the cleared run succeeded', async () =>
        (await runOf('2026-11-28')).status === 'succeeded' ? true : undefined,
      );
      expect((await runOf('2026-11-28')).nodes.map((n) => `${n.name}:${n.state}`)).toEqual([
        'orders:succeeded',
        'rates:succeeded',
        'transform:succeeded',
        'publish:succeeded',
      ]);
    });
  },
);
