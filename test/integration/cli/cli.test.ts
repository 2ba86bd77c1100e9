/**
 * The `kaj` command line in-process: usage errors, targets, --help and --json everywhere,
 * stats, task show/cancel, submit. Plus: moto lacks StartMessageMoveTask, and --native says so.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { ensureResources } from '../../../local/bootstrap.js';
import { motoAvailable } from '../../../local/emulators.js';
import { startMoto } from '../../support/moto.js';
import { DynamoTaskTable, SqsMessageMover } from '../../../cli/admin/aws.js';
import { NativeMoveUnsupportedError } from '../../../cli/admin/errors.js';
import { nativeRedrive } from '../../../cli/admin/native.js';
import { realSleep } from '../../../cli/admin/pacer.js';
import { systemClock } from '../../../shared/runtime/clock.js';
import { startLocalConsole } from '../../../local/console.js';
import { ThroughputRecorder } from '../../../console/throughput.js';
import { silentLogger } from '../../../shared/runtime/logger.js';
import { kajRunner, localStateDir, healthyScenarioSuite, untilStatus } from './harness.js';

const suite = healthyScenarioSuite('cli');
const { scenario, kaj } = suite;

describe('kaj usage errors (exit 2, a clear message, nothing on stdout)', () => {
  it.each([
    [[], /Usage: kaj/],
    [['dlq', 'list'], /no target: give --local .*--stack NAME/],
    [['dlq', 'list', '--local', '--stack', 'x'], /either --local or --stack/],
    [['stats', '--endpoint-url', 'http://localhost:4566'], /needs --stack NAME/],
    [['dlq', 'redrive', '--local', '--since', '3x'], /--since <duration>.*invalid/],
    [['dlq', 'redrive', '--local', '--queue', 'urgent'], /--queue <priority>.*Allowed choices are high, normal, low/],
    [['dlq', 'redrive', '--local', '--rate', 'fast'], /--rate/],
    [['dlq', 'redrive', '--local', '--native', '--type', 'fixable'], /--native moves whole DLQs/],
    [['dlq', 'redrive', '--local'], /refusing to redrive without --yes/],
    [['dlq', 'purge', '--local', '--type', 'x'], /refusing to purge without --yes/],
    [['dlq', 'list', '--local', '--limit', '0'], /--limit/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['task', 'show', '--local'], /missing required argument 'task-id'/],
    [['submit', '--local'], /missing required argument 'type'/],
    [['submit', 'no_such_type', '--local'], /unknown task type "no_such_type"/],
    [['submit', 'fixable', '--local', '--payload', '{bad'], /--payload <json>.*not valid JSON/],
    [['submit', 'fixable', '--local', '--payload', '{"n":"x"}'], /payload\.n/],
    [['stats', '--local', '--watch', '0'], /--watch/],
    // Ids that cannot name a task: a usage error before any request.
    [['task', 'show', '', '--local'], /argument 'task-id'.*a task id cannot be empty/],
    [['task', 'cancel', '', '--local'], /argument 'task-id'.*a task id cannot be empty/],
    [['dlq', 'show', '', '--local'], /argument 'task-id'.*a task id cannot be empty/],
    [['task', 'show', ' t_abc', '--local'], /" t_abc" is not a task id/],
    [['task', 'show', 'abc\u0007', '--local'], /"abc\\u0007" is not a task id/],
    [['dlq', 'list', '--local', '--task', ''], /--task <id\.\.\.>.*a task id cannot be empty/],
    [['dlq', 'redrive', '--local', '--yes', '--task', 't_ok', ''], /--task <id\.\.\.>.*a task id cannot be empty/],
    [['dlq', 'purge', '--local', '--yes', '--task', 'x y'], /"x y" is not a task id/],
  ])('kaj %j', async (args, message) => {
    const r = await kaj(args as string[]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(r.out).toBe('');
  });
});

describe('kaj task ids', () => {
  it('an id DynamoDB would refuse as a key (over 2 KB) is a usage error, not an outage', async () => {
    const r = await kaj(['task', 'show', `t_${'a'.repeat(3000)}`, '--local']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/is not a task id/);
    expect(r.err).not.toMatch(/StoreUnavailableError|ValidationException/);
  });

  it('a well-formed id of no task is still "not found" (exit 1)', async () => {
    const r = await kaj(['task', 'show', 't_0123456789abcdef0123456789abcdef', '--local']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/not found/);
  });
});

describe('kaj --help', () => {
  it.each([
    [[]],
    [['stats']],
    [['dlq']],
    [['dlq', 'list']],
    [['dlq', 'show']],
    [['dlq', 'redrive']],
    [['dlq', 'purge']],
    [['task']],
    [['task', 'show']],
    [['task', 'cancel']],
    [['submit']],
  ])('kaj %j --help', async (path) => {
    const r = await kaj([...(path as string[]), '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`Usage: kaj${(path as string[]).length ? ` ${(path as string[]).join(' ')}` : ''}`);
  });

  it('says what reading a DLQ does to it, and the native trade-off', async () => {
    const list = (await kaj(['dlq', 'list', '--help'])).out;
    expect(list).toMatch(/visibility timeout of 30 s/);
    expect(list).toMatch(/ChangeMessageVisibility 0/);
    expect(list).toMatch(/ApproximateReceiveCount/);
    const redrive = (await kaj(['dlq', 'redrive', '--help'])).out;
    expect(redrive).toMatch(/StartMessageMoveTask/);
    expect(redrive).toMatch(/moto does not/);
    expect((await kaj(['stats', '--help'])).out).toMatch(/SCANS THE WHOLE TABLE/);
  });
});

describe('kaj targets', () => {
  it('--local without npm start: a clear message, exit 1', async () => {
    const r = await kajRunner('/nonexistent-dir')(['stats', '--local']);
    expect(r).toMatchObject({ code: 1, out: '' });
    expect(r.err).toMatch(/no local Kaj is running here.*npm start/s);
    expect(r.err).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('--local with a stale state file: names the dead pid', async () => {
    const stale = localStateDir(suite.runtime);
    const file = join(stale.dir, '.kaj', 'local.json');
    writeFileSync(
      file,
      JSON.stringify({ pid: 2 ** 22 + 12345, endpoints: suite.runtime.endpoints, resources: suite.runtime.resources }),
    );
    const r = await kajRunner(stale.dir)(['stats', '--local']);
    stale.remove();
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/is not running any more/);
  });

  it('--stack against an endpoint that is down: a clear message, no stack trace', async () => {
    const r = await kaj(['stats', '--stack', 'kaj', '--endpoint-url', 'http://127.0.0.1:9']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/cannot reach the endpoint/);
    expect(r.err).not.toMatch(/\n\s+at /);
  });
});

describe('kaj submit, task show, task cancel, stats', () => {
  it('submit --json, then task show (--json and text)', async () => {
    const sub = await kaj(['submit', 'fixable', '--local', '--payload', '{"n":1}', '--priority', 'high', '--json']);
    expect(sub.code).toBe(0);
    const { task_id, status, priority, replayed } = JSON.parse(sub.out);
    expect({ status, priority, replayed }).toEqual({ status: 'queued', priority: 'high', replayed: false });
    await untilStatus(suite.runtime, [task_id], 'succeeded');

    const shown = await kaj(['task', 'show', task_id, '--local', '--json']);
    expect(JSON.parse(shown.out)).toMatchObject({ task_id, status: 'succeeded', type: 'fixable', payload: { n: 1 } });
    expect((await kaj(['task', 'show', task_id, '--local'])).out).toMatch(/status:\s+succeeded/);
    const missing = await kaj(['task', 'show', 't_nope', '--local']);
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/task t_nope not found/);

    const again = await kaj(['submit', 'fixable', '--local', '--idempotency-key', 'k1', '--json']);
    const replay = await kaj(['submit', 'fixable', '--local', '--idempotency-key', 'k1', '--json']);
    expect(JSON.parse(replay.out)).toMatchObject({ task_id: JSON.parse(again.out).task_id, replayed: true });
  });

  it('a workflow run: task show prints its timeline; task signal wakes it; the timeline shows it done', async () => {
    const sub = JSON.parse((await kaj(['submit', 'approval_flow', '--local', '--json'])).out) as { task_id: string };
    await untilStatus(suite.runtime, [sub.task_id], 'waiting');
    const waiting = await kaj(['task', 'show', sub.task_id, '--local']);
    expect(waiting.out).toMatch(/status:\s+waiting/);
    expect(waiting.out).toMatch(/timeline:\n\s+check\s+step\s+succeeded/);
    expect(waiting.out).toMatch(/go\s+signal\s+waiting/);
    expect(waiting.out).toMatch(/waiting for:\s+its timer at .*, signal go until /);
    const bad = await kaj(['task', 'signal', sub.task_id, 'go', '--local', '--data', '{oops']);
    expect(bad.code).toBe(2);
    const sent = await kaj(['task', 'signal', sub.task_id, 'go', '--local', '--data', '{"ok":true}', '--json']);
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.out)).toMatchObject({ task_id: sub.task_id, signal: 'go' });
    await untilStatus(suite.runtime, [sub.task_id], 'succeeded');
    const done = JSON.parse((await kaj(['task', 'show', sub.task_id, '--local', '--json'])).out) as Record<string, any>;
    expect(done.result).toEqual({ checked: 'checked', go: { ok: true } });
    expect(done.steps.map((s: { name: string; status: string }) => `${s.name}:${s.status}`)).toEqual([
      'check:succeeded',
      'go:received',
    ]);
    const again = await kaj(['task', 'signal', sub.task_id, 'go', '--local']);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/the run is succeeded: it takes no/);
  });

  it('task cancel: a delayed task is cancelled; a finished one cannot be', async () => {
    const sub = JSON.parse((await kaj(['submit', 'fixable', '--local', '--delay', '600', '--json'])).out);
    const cancelled = await kaj(['task', 'cancel', sub.task_id, '--local', '--yes', '--json']);
    expect(cancelled.code).toBe(0);
    expect(JSON.parse(cancelled.out)).toEqual({ task_id: sub.task_id, status: 'cancelled', cancel_requested: false });

    const done = JSON.parse((await kaj(['submit', 'fixable', '--local', '--json'])).out);
    await untilStatus(suite.runtime, [done.task_id], 'succeeded');
    const refused = await kaj(['task', 'cancel', done.task_id, '--local', '--yes']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/succeeded and can no longer be cancelled/);
  });

  it('stats --json and --by-status', async () => {
    const r = await kaj(['stats', '--local', '--by-status', '--json']);
    expect(r.code).toBe(0);
    const snap = JSON.parse(r.out);
    expect(snap.queues.map((q: { priority: string }) => q.priority)).toEqual(['high', 'normal', 'low']);
    expect(snap.queues[0]).toMatchObject({
      queue: {
        visible: expect.any(Number),
        inFlight: expect.any(Number),
        delayed: expect.any(Number),
        oldestAgeSeconds: null,
      },
      dlq: { visible: 0 },
    });
    expect(snap.byStatus.counts.succeeded).toBeGreaterThanOrEqual(2);
    expect(snap.byStatus.counts.cancelled).toBeGreaterThanOrEqual(1);

    const text = await kaj(['stats', '--local', '--by-status']);
    expect(text.out).toMatch(/QUEUE\s+VISIBLE\s+IN FLIGHT\s+DELAYED \(SQS\)\s+DELAYED \(TABLE\)\s+OLDEST\s+DLQ/);
    expect(text.out).toMatch(/OLDEST: '-' because/);
    expect(text.out).toMatch(/succeeded\s+\d+/);
  });

  it('a task delayed beyond 15 minutes is counted on both surfaces: kaj stats and the console overview', async () => {
    type Snap = { delayedInTable: { byPriority: Record<string, { count: number }>; total: { count: number } } };
    const stats = async (): Promise<Snap> => JSON.parse((await kaj(['stats', '--local', '--json'])).out) as Snap;
    const before = await stats();
    const sub = await kaj(['submit', 'fixable', '--local', '--delay', '3600', '--priority', 'low', '--json']);
    const { task_id } = JSON.parse(sub.out) as { task_id: string };
    // Beyond SQS's 15 minutes: the task waits in the table (an outbox entry), not in the queue.
    expect((await suite.runtime.kaj.store.get(task_id))?.outbox_pk).toMatch(/^queue#low/);

    const after = await stats();
    expect(after.delayedInTable.byPriority.low?.count).toBe((before.delayedInTable.byPriority.low?.count ?? 0) + 1);
    expect(after.delayedInTable.total.count).toBe(before.delayedInTable.total.count + 1);
    const text = (await kaj(['stats', '--local'])).out;
    expect(text).toMatch(
      new RegExp(`\\nlow\\s+\\d+\\s+\\d+\\s+\\d+\\s+${after.delayedInTable.byPriority.low?.count}\\s+-`),
    );
    expect(text).toContain(`DELAYED (TABLE): ${after.delayedInTable.total.count} task(s) wait in the table`);

    const ui = await startLocalConsole(suite.runtime, {
      throughput: new ThroughputRecorder(systemClock),
      logger: silentLogger,
      cwd: suite.dir,
      context: { registry: async () => scenario.registry(), env: {} },
    });
    try {
      const page = await (await fetch(ui.url)).text();
      expect(page).toContain('Delayed in table (&gt; 15 min)');
      expect(page).toContain(
        `data-stat="delayed-table"><a href="/tasks?status=delayed">${after.delayedInTable.total.count}</a>`,
      );
      expect(page).toMatch(/data-stat="delayed-sqs">\d+</);
    } finally {
      await ui.close();
    }

    expect((await kaj(['task', 'cancel', task_id, '--local', '--yes'])).code).toBe(0);
    expect((await stats()).delayedInTable.total.count).toBe(before.delayedInTable.total.count);
  });

  it('stats --watch refreshes until Ctrl-C (one JSON line per refresh)', async () => {
    const controller = new AbortController();
    let sleeps = 0;
    const r = await kaj(['stats', '--local', '--watch', '1', '--json'], {
      signal: controller.signal,
      sleep: async () => {
        if (++sleeps === 2) controller.abort();
      },
    });
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(JSON.parse(l).queues).toHaveLength(3);
  });
});

// biome-ignore lint/plugin/no-conditional-skip: moto is optional; without it only the embedded emulators run
describe.skipIf(!motoAvailable())('--native on moto', () => {
  it('moto has no StartMessageMoveTask: native redrive refuses before changing anything', async () => {
    const moto = await startMoto();
    const creds = { accessKeyId: 'test', secretAccessKey: 'test' };
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: moto.endpoint, credentials: creds });
    const dynamodb = new DynamoDBClient({ region: 'us-east-1', endpoint: moto.endpoint, credentials: creds });
    try {
      const r = await ensureResources({ sqs, dynamodb }, `cli-moto-${process.pid}`);
      const run = nativeRedrive(
        {
          failed: new DynamoTaskTable(dynamodb, r.tableName),
          mover: new SqsMessageMover(sqs, r),
          lifecycle: suite.runtime.kaj.lifecycle,
          clock: systemClock,
          sleep: realSleep,
        },
        { queues: ['normal'], to: 'original', keepAttempts: false, actor: 'tester', dryRun: false },
      );
      await expect(run).rejects.toBeInstanceOf(NativeMoveUnsupportedError);
      await expect(run).rejects.toThrow(/does not implement SQS message move tasks/);
    } finally {
      sqs.destroy();
      dynamodb.destroy();
      await moto.stop();
    }
  });
});
