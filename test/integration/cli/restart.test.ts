/**
 * Dead letters across a restart of `npm start`. The embedded SQS is in memory
 * and the table is saved, so at start the runtime writes the dead letters of failed (not
 * purged) tasks again; and `kaj dlq redrive|purge --task ID` for a dead task whose letter is
 * gone works from the task record, or fails loudly — never "selected 0" with exit 0.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalRuntime, type LocalRuntime } from '../../../local/runtime.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { kajRunner, localStateDir, records, Scenario, submitMany, untilDlq, untilStatus } from './harness.js';

const scenario = new Scenario();
const prefix = `restart-${process.pid}`;
let dataDir: string;
let runtime: LocalRuntime | undefined;
let state: { dir: string; remove(): void } | undefined;
let kaj: ReturnType<typeof kajRunner>;
let broken: string[];
let purged: string;
let fixable: string[];

const start = async () => {
  runtime = await startLocalRuntime({ registry: scenario.registry(), prefix, port: 0, waitTimeSeconds: 1, dataDir });
  state?.remove();
  state = localStateDir(runtime);
  kaj = kajRunner(state.dir, { registry: async () => scenario.registry() });
  return runtime;
};

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'kaj-restart-'));
  const first = await start();
  broken = await submitMany(first, 'always_broken', 2);
  [purged] = (await submitMany(first, 'always_broken', 1)) as [string];
  fixable = await submitMany(first, 'fixable', 3);
  await untilStatus(first, [...broken, purged, ...fixable], 'failed');
  await untilDlq(first, 'normal', 6);
  const p = await kaj(['dlq', 'purge', '--local', '--task', purged, '--yes']);
  expect(p.code, p.err).toBe(0);
  await first.stop(2_000);
  // The restart: same saved table, fresh (empty) in-memory queues.
  await start();
});

afterAll(async () => {
  await runtime?.stop(2_000);
  state?.remove();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

interface Listed {
  task_id: string;
  type: string;
  attempts: number;
  last_error: string;
  status: string;
  dead_since: string;
}

describe('dead letters after a restart of the local runtime', () => {
  it('kaj dlq list shows the dead tasks again (not the purged one), with their details', async () => {
    const rt = runtime as LocalRuntime;
    expect(rt.recoveredDeadLetters).toBe(5);
    const r = await kaj(['dlq', 'list', '--local', '--json']);
    expect(r.code, r.err).toBe(0);
    const listed = (JSON.parse(r.out) as { tasks: Listed[] }).tasks;
    expect(listed.map((t) => t.task_id).sort()).toEqual([...broken, ...fixable].sort());
    const byId = new Map(listed.map((t) => [t.task_id, t]));
    for (const rec of await records(rt, broken)) {
      expect(byId.get(rec.task_id)).toMatchObject({
        type: 'always_broken',
        attempts: 1,
        status: 'failed',
        last_error: 'HTTP_410 PermanentError: upstream rejects this forever',
        dead_since: rec.finished_at,
      });
    }
  });

  it('kaj dlq redrive --task ID works on a rebuilt dead letter', async () => {
    scenario.broken = false;
    const [id] = fixable as [string];
    const r = await kaj(['dlq', 'redrive', '--local', '--task', id, '--yes', '--json']);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ selected: 1, redriven: 1, failed: 0 });
    await untilStatus(runtime as LocalRuntime, [id], 'succeeded');
  });

  it('redrive --task ID of a dead task whose letter is gone redrives it from the record', async () => {
    const rt = runtime as LocalRuntime;
    const id = fixable[1] as string;
    await deleteLetterOf(rt, id);
    const r = await kaj(['dlq', 'redrive', '--local', '--task', id, '--yes', '--json']);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({
      selected: 1,
      redriven: 1,
      failed: 0,
      items: [{ task_id: id, message_id: null, action: 'reset_from_record', outcome: 'done' }],
    });
    const [done] = await untilStatus(rt, [id], 'succeeded');
    expect((done as TaskRecord).audit?.map((a) => a.action)).toEqual(['redrive']);
  });

  it('purge --task ID of a dead task whose letter is gone discards it from the record', async () => {
    const rt = runtime as LocalRuntime;
    const id = broken[0] as string;
    await deleteLetterOf(rt, id);
    const r = await kaj(['dlq', 'purge', '--local', '--task', id, '--yes', '--json']);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ selected: 1, purged: 1, failed: 0 });
    const [rec] = await records(rt, [id]);
    expect(rec).toMatchObject({ status: 'failed' });
    expect(rec?.discarded_at).toBeDefined();
  });

  it.each([
    ['redrive', 't_0123456789abcdef0123456789abcdef', /no task record/],
    ['purge', 't_0123456789abcdef0123456789abcdef', /no task record/],
    ['redrive', 'purged', /discarded/],
    ['redrive', 'succeeded', /task is succeeded, not dead/],
  ])('%s --task naming %s, which cannot be done: exit 1, the reason printed', async (command, which, reason) => {
    const rt = runtime as LocalRuntime;
    let id = which;
    if (which === 'purged') id = purged;
    if (which === 'succeeded') {
      [id] = (await submitMany(rt, 'fixable', 1)) as [string];
      await untilStatus(rt, [id], 'succeeded');
    }
    const r = await kaj(['dlq', command, '--local', '--task', id, '--yes']);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(reason);
    expect(r.out).toMatch(/selected 1: \w+ 0, skipped 0, failed 1/);
  });

  it('running a finished redrive --task ID again: skipped, exit 0', async () => {
    const r = await kaj(['dlq', 'redrive', '--local', '--task', fixable[0] as string, '--yes']);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/selected 1: redriven 0, skipped 1, failed 0/);
  });
});

/** Deletes a task's dead letter by hand (what the operator or an expired retention would do). */
async function deleteLetterOf(rt: LocalRuntime, taskId: string): Promise<void> {
  const url = rt.resources.deadLetterQueueUrls.normal;
  for (let i = 0; i < 10; i += 1) {
    const out = await rt.clients.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
    );
    const mine = (out.Messages ?? []).find(
      (m) => (JSON.parse(m.Body ?? '{}') as { task_id?: string }).task_id === taskId,
    );
    if (mine !== undefined) {
      await rt.clients.sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: mine.ReceiptHandle }));
      return;
    }
  }
  throw new Error(`no dead letter of ${taskId} in the normal DLQ`);
}
