/**
 * `kaj ui --stack NAME`: the console against a deployed stack, found through CloudFormation's
 * outputs, with the operator's credentials. The "stack" is the embedded emulators behind one
 * endpoint (as LocalStack gives one: `--endpoint-url`); DescribeStacks and CloudWatch's
 * GetMetricData are answered by SDK mocks, so the outputs and the metrics are known.
 */
import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { CloudWatchClient, GetMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultContext } from '../../../cli/context.js';
import { runCli } from '../../../cli/program.js';
import { OUTPUT_KEYS } from '../../../infra/outputs.js';
import { startLocalRuntime, type LocalRuntime } from '../../../local/runtime.js';
import { PRIORITIES } from '../../../shared/config/resources.js';
import { capturedIo, Scenario, submitMany, untilDlq, untilStatus, waitFor } from './harness.js';

const STACK = 'kaj-ui-test';
const scenario = new Scenario();
let runtime: LocalRuntime;
let proxy: Server;
let endpoint: string;
const cfn = mockClient(CloudFormationClient);
const cw = mockClient(CloudWatchClient);

/** One endpoint for SQS and DynamoDB (by their X-Amz-Target), as LocalStack has. */
function startProxy(r: LocalRuntime): Server {
  return createServer((req, res) => {
    const target = String(req.headers['x-amz-target'] ?? '');
    const to = target.startsWith('AmazonSQS')
      ? r.endpoints.sqs
      : target.startsWith('DynamoDB')
        ? r.endpoints.dynamodb
        : undefined;
    if (to === undefined) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"__type":"UnknownOperationException"}');
      return;
    }
    const u = new URL(to);
    const up = request(
      { host: u.hostname, port: u.port, method: req.method, path: req.url, headers: { ...req.headers, host: u.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
}

/** Starts `kaj ui` in-process; resolves with its URL and a way to stop it (Ctrl-C). */
async function startUi(extra: string[]): Promise<{ url: string; stop(): Promise<number>; err(): string }> {
  const controller = new AbortController();
  const captured = capturedIo();
  const done = runCli(
    ['ui', '--stack', STACK, '--endpoint-url', endpoint, '--port', '0', ...extra],
    defaultContext({
      io: captured.io,
      env: {},
      actor: 'ops-bob',
      signal: controller.signal,
      registry: async () => scenario.registry(),
    }),
  );
  const url = await waitFor('kaj ui to print its URL', async () => {
    const m = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(captured.out());
    if (m === null && (await Promise.race([done.then(() => true), Promise.resolve(false)])))
      throw new Error(`kaj ui ended: ${captured.err()}`);
    return m?.[1];
  });
  return {
    url,
    err: captured.err,
    stop: async () => {
      controller.abort();
      return done;
    },
  };
}

function form(fields: Record<string, string>): {
  method: string;
  headers: Record<string, string>;
  body: string;
  redirect: 'manual';
} {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  };
}

const tokenOf = (page: string) => /name="_token" value="([^"]+)"/.exec(page)?.[1] as string;

beforeAll(async () => {
  runtime = await startLocalRuntime({
    registry: scenario.registry(),
    prefix: `${STACK}-${process.pid}`.slice(0, 30),
    port: 0,
    waitTimeSeconds: 1,
    sweepIntervalMs: 1_000,
  });
  proxy = startProxy(runtime);
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const r = runtime.resources;
  const outputs = [
    [OUTPUT_KEYS.apiUrl, runtime.url],
    [OUTPUT_KEYS.tableName, r.tableName],
    ...PRIORITIES.flatMap((p) => [
      [OUTPUT_KEYS.queueUrl[p], r.queueUrls[p]],
      [OUTPUT_KEYS.queueArn[p], r.queueArns[p]],
      [OUTPUT_KEYS.dlqUrl[p], r.deadLetterQueueUrls[p]],
      [OUTPUT_KEYS.dlqArn[p], r.deadLetterQueueArns[p]],
    ]),
  ].map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue }));
  cfn.on(DescribeStacksCommand, { StackName: STACK }).resolves({
    Stacks: [{ StackName: STACK, CreationTime: new Date(), StackStatus: 'UPDATE_COMPLETE', Outputs: outputs }],
  });
  const minute = Math.floor(Date.now() / 60_000) * 60_000;
  // Task counts only for a SEARCH in this stack's own namespace (another stack's would be `Kaj/<it>`).
  const own = (q: { Expression?: string }) => q.Expression?.includes(`{"Kaj/${STACK}",`) === true;
  cw.on(GetMetricDataCommand).callsFake((input: { MetricDataQueries: { Id: string; Expression?: string }[] }) => ({
    MetricDataResults: input.MetricDataQueries.map((q) => ({
      Id: q.Id,
      Timestamps: [new Date(minute - 120_000), new Date(minute - 60_000)],
      Values:
        !['s', 'f', 'r'].includes(q.Id) || own(q)
          ? q.Id === 's'
            ? [40, 2]
            : q.Id === 'f'
              ? [6, 0]
              : q.Id === 'r'
                ? [1, 1]
                : q.Id === 'age1'
                  ? [0, 95]
                  : [0, 0]
          : [0, 0],
    })),
  }));
});

afterAll(async () => {
  cfn.restore();
  cw.restore();
  proxy?.close();
  await runtime?.stop(2_000);
});

describe('kaj ui --stack', () => {
  let dead: string[];

  it('read-only by default: shows the stack (depths, dead letters, CloudWatch throughput and ages), refuses actions', async () => {
    dead = await submitMany(runtime, 'fixable', 2);
    await untilStatus(runtime, dead, 'failed');
    await untilDlq(runtime, 'normal', 2);
    const ui = await startUi([]);
    try {
      expect(ui.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const page = await (await fetch(ui.url)).text();
      expect(page).toContain(`stack ${STACK}`);
      expect(page).toContain('>read-only<');
      expect(page).toMatch(/data-stat="failed"><a href="\/tasks\?status=failed">2</);
      expect(page).toMatch(/data-stat="dead-letters"><a href="\/dead-letters">2</);
      expect(page).toMatch(/data-stat="hour-succeeded">42</);
      expect(page).toMatch(/data-stat="hour-failed">6</);
      expect(page).toMatch(/data-stat="failure-rate">12.5 %/);
      expect(page).toContain('From CloudWatch');
      expect(page).toContain('1 min 35 s'); // the normal queue's oldest message (age1)
      const listing = await (await fetch(`${ui.url}dead-letters`)).text();
      for (const id of dead) expect(listing).toContain(id);

      const refused = await fetch(`${ui.url}tasks/${dead[0]}/redrive`, form({ _token: tokenOf(page) }));
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain('read-only');
      expect((await runtime.kaj.store.get(dead[0] as string))?.status).toBe('failed');
    } finally {
      expect(await ui.stop()).toBe(0);
    }
    // Stopped: nothing listens there any more.
    await expect(fetch(ui.url)).rejects.toThrow();
  });

  it('--allow-actions: a group of dead tasks is redriven through the DLQ redrive path, audited as the operator', async () => {
    const ui = await startUi(['--allow-actions']);
    try {
      const list = await (await fetch(`${ui.url}dead-letters`)).text();
      const confirmHref = /href="(\/dead-letters\/confirm\?verb=redrive&amp;group=[^"]+)"/.exec(list)?.[1] as string;
      const confirm = await (await fetch(new URL(confirmHref.replace('&amp;', '&'), ui.url))).text();
      expect(confirm).toContain('Redrive 2 dead task(s)?');
      const ids = /name="ids" value="([^"]+)"/.exec(confirm)?.[1] as string;
      expect(ids.split(',').sort()).toEqual([...dead].sort());

      scenario.broken = false;
      const started = await fetch(
        `${ui.url}dead-letters/redrive`,
        form({ _token: tokenOf(confirm), ids, reason: 'SMTP_HOST set' }),
      );
      expect(started.status).toBe(303);
      const job = new URL(started.headers.get('location') as string, ui.url);
      await waitFor('the redrive job to finish', async () =>
        (await (await fetch(job)).text()).includes('<strong>Done.</strong> 2 of 2 handled: 2 redriven')
          ? true
          : undefined,
      );
      await untilStatus(runtime, dead, 'succeeded');
      const r = await runtime.kaj.store.get(dead[0] as string);
      expect(r?.audit?.at(-1)).toMatchObject({ action: 'redrive', by: 'ops-bob', reason: 'SMTP_HOST set' });
    } finally {
      expect(await ui.stop()).toBe(0);
    }
  });

  it('a taken port is a clear error', async () => {
    const busy = createServer().listen(0, '127.0.0.1');
    await once(busy, 'listening');
    const port = (busy.address() as AddressInfo).port;
    let err = '';
    const code = await runCli(
      ['ui', '--stack', STACK, '--endpoint-url', endpoint, '--port', String(port)],
      defaultContext({
        io: { out: () => {}, err: (t) => void (err += t), stdoutIsTTY: false, stderrIsTTY: false, stdinIsTTY: false },
        env: {},
        registry: async () => scenario.registry(),
      }),
    );
    busy.close();
    expect(code).toBe(1);
    expect(err).toContain(`port ${port} is taken`);
  });
});
