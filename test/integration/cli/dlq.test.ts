/**
 * `kaj dlq ...` against the embedded emulators with consumers running: tasks really die, get
 * dead-lettered by the consumer, are redriven by the CLI, and run again.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../../local/runtime.js';
import type { DeadLetterQueues } from '../../../cli/admin/dead-letters.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import {
  type CliRuntime,
  dlqDepth,
  records,
  Scenario,
  startCliRuntime,
  submitMany,
  untilDlq,
  untilStatus,
  waitFor,
} from './harness.js';

const scenario = new Scenario();
let runtime: LocalRuntime;
let kaj: CliRuntime['kaj'];
let stop = async () => {};

beforeAll(async () => {
  ({ runtime, kaj, stop } = await startCliRuntime(scenario.registry(), 'cli-dlq', {
    runtime: { sweepIntervalMs: 1_000 },
    cli: {},
  }));
});

afterAll(() => stop());

describe('kaj dlq (embedded emulators)', () => {
  let fixable: string[];
  let broken: string[];

  it('dead tasks are listed with their details; --json parses; listing releases what it read', async () => {
    fixable = await submitMany(runtime, 'fixable', 4);
    broken = await submitMany(runtime, 'always_broken', 2);
    await untilStatus(runtime, [...fixable, ...broken], 'failed');
    await untilDlq(runtime, 'normal', 6);

    const listed = await kaj(['dlq', 'list', '--local', '--json']);
    expect(listed.code).toBe(0);
    const body = JSON.parse(listed.out) as {
      tasks: {
        task_id: string;
        type: string;
        origin_priority: string;
        attempts: number;
        last_error: string;
        dead_since: string;
        status: string;
        kind: string;
      }[];
    };
    expect(body.tasks.map((t) => t.task_id).sort()).toEqual([...fixable, ...broken].sort());
    const one = body.tasks.find((t) => t.task_id === fixable[0]);
    expect(one).toMatchObject({
      type: 'fixable',
      origin_priority: 'normal',
      attempts: 1,
      status: 'failed',
      kind: 'dead_letter',
    });
    expect(one?.last_error).toContain('config missing');
    expect(Date.parse(one?.dead_since ?? '')).toBeGreaterThan(Date.now() - 60_000);
    await untilDlq(runtime, 'normal', 6); // everything visible again

    const text = await kaj(['dlq', 'list', '--local', '--type', 'always_broken', '--error-contains', 'FOREVER']);
    expect(text.code).toBe(0);
    expect(text.out).toContain(broken[0]);
    expect(text.out).not.toContain(fixable[0]);
    expect(text.out).toMatch(/2 dead task\(s\)/);
  });

  it('dlq show puts the dead letter and the task record side by side', async () => {
    const shown = await kaj(['dlq', 'show', fixable[0] as string, '--local']);
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(/DEAD LETTER \(normal DLQ\).*│ TASK RECORD/);
    expect(shown.out).toContain('(current)');
    const json = JSON.parse((await kaj(['dlq', 'show', fixable[0] as string, '--local', '--json'])).out);
    expect(json.dead_letters).toHaveLength(1);
    expect(json.record.status).toBe('failed');
    expect(json.dead_letters[0].body.dispatch_id).toBe(json.record.dispatch_id);
  });

  it('--dry-run changes nothing', async () => {
    const before = await records(runtime, [...fixable, ...broken]);
    const dry = await kaj(['dlq', 'redrive', '--local', '--type', 'fixable', '--dry-run', '--json']);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.out)).toMatchObject({ dry_run: true, selected: 4, redriven: 4, skipped: 0, failed: 0 });
    expect(await records(runtime, [...fixable, ...broken])).toEqual(before);
    await untilDlq(runtime, 'normal', 6);
    expect(scenario.runs.get(fixable[0] as string)).toBe(1);
  });

  it('redrive by type moves only that type, and once the cause is fixed the tasks succeed', async () => {
    scenario.broken = false;
    const res = await kaj([
      'dlq',
      'redrive',
      '--local',
      '--type',
      'fixable',
      '--yes',
      '--reason',
      'SMTP_HOST set',
      '--json',
    ]);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.out)).toMatchObject({ dry_run: false, selected: 4, redriven: 4, skipped: 0, failed: 0 });

    const done = await untilStatus(runtime, fixable, 'succeeded');
    for (const r of done) {
      expect(r).toMatchObject({ redrive_count: 1, attempts: 1 });
      expect(r.audit).toEqual([{ action: 'redrive', at: expect.any(String), by: 'tester', reason: 'SMTP_HOST set' }]);
      expect(scenario.successes.get(r.task_id)).toBe(1);
    }
    // The other type is untouched: still failed, still in the DLQ.
    expect((await records(runtime, broken)).map((r) => r.status)).toEqual(['failed', 'failed']);
    await untilDlq(runtime, 'normal', 2);
  });

  it('a crash between send and delete, then a re-run: every task redriven once in effect', async () => {
    scenario.broken = true;
    const ids = await submitMany(runtime, 'fixable', 5, 'low');
    await untilStatus(runtime, ids, 'failed');
    await untilDlq(runtime, 'low', 5);
    scenario.broken = false;

    let crashes = 1;
    const crashOnce = (d: DeadLetterQueues): DeadLetterQueues => ({
      receive: (p, o) => d.receive(p, o),
      release: (p, h) => d.release(p, h),
      delete: async (p, h) => {
        if (crashes-- > 0) throw new Error('injected crash before the delete');
        return d.delete(p, h);
      },
    });
    const first = await kaj(['dlq', 'redrive', '--local', '--queue', 'low', '--yes', '--json'], {
      seams: { dlq: crashOnce },
    });
    expect(first.code).toBe(1); // partial failure
    expect(JSON.parse(first.out)).toMatchObject({ selected: 5, redriven: 0, failed: 5 });
    await untilStatus(runtime, ids, 'succeeded'); // the sends happened: the tasks ran
    await untilDlq(runtime, 'low', 5); // and the letters are still there

    const second = await kaj(['dlq', 'redrive', '--local', '--queue', 'low', '--yes', '--json']);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.out)).toMatchObject({ selected: 5, redriven: 0, skipped: 5, failed: 0 });
    await untilDlq(runtime, 'low', 0);
    for (const r of await records(runtime, ids)) {
      expect(r).toMatchObject({ status: 'succeeded', redrive_count: 1 });
      expect(scenario.successes.get(r.task_id)).toBe(1);
      expect(scenario.runs.get(r.task_id)).toBe(2); // died once, ran once after the redrive
    }
  });

  it('a task whose message SQS moved to the DLQ (maxReceiveCount) is re-sent and runs', async () => {
    const [id] = await submitMany(runtime, 'fixable', 1, 'high');
    await untilStatus(runtime, [id as string], 'succeeded');
    // Stand-in for SQS's redrive policy: a waiting task whose original message sits in the DLQ.
    const now = new Date().toISOString();
    const template = (await runtime.kaj.store.get(id as string)) as TaskRecord;
    await runtime.kaj.store.create({
      ...template,
      task_id: 't_moved_by_sqs',
      status: 'queued',
      attempts: 0,
      dispatch_id: 'd-moved',
      history: [],
      run_at: now,
      updated_at: now,
      finished_at: undefined,
      result: undefined,
      outbox_pk: 'queue#high',
      outbox_due: Date.now() + 3_600_000,
    });
    await runtime.clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: runtime.resources.deadLetterQueueUrls.high,
        MessageBody: JSON.stringify({ task_id: 't_moved_by_sqs', dispatch_id: 'd-moved', timeout_seconds: 60 }),
      }),
    );
    await untilDlq(runtime, 'high', 1);
    const listed = JSON.parse((await kaj(['dlq', 'list', '--local', '--queue', 'high', '--json'])).out);
    expect(listed.tasks[0]).toMatchObject({
      task_id: 't_moved_by_sqs',
      kind: 'moved_by_sqs',
      type: 'fixable',
      origin_priority: 'high',
      status: 'queued',
    });

    const res = await kaj(['dlq', 'redrive', '--local', '--queue', 'high', '--type', 'fixable', '--yes', '--json']);
    expect(JSON.parse(res.out)).toMatchObject({ redriven: 1, items: [{ action: 'resend' }] });
    await untilStatus(runtime, ['t_moved_by_sqs'], 'succeeded');
    await untilDlq(runtime, 'high', 0);
  });

  it('--native: records reset first, then StartMessageMoveTask; the tasks run', async () => {
    scenario.broken = true;
    const ids = await submitMany(runtime, 'fixable', 3, 'high');
    await untilStatus(runtime, ids, 'failed');
    await untilDlq(runtime, 'high', 3);
    scenario.broken = false;
    const res = await kaj(['dlq', 'redrive', '--local', '--native', '--queue', 'high', '--yes', '--json']);
    expect(res.code).toBe(0);
    const body = JSON.parse(res.out);
    expect(body.queues[0]).toMatchObject({
      dlq: 'high',
      selected: 3,
      reset: 3,
      failed: 0,
      move: { status: 'COMPLETED', moved: 3 },
    });
    const done = await untilStatus(runtime, ids, 'succeeded');
    for (const r of done) expect(scenario.successes.get(r.task_id)).toBe(1);
    await untilDlq(runtime, 'high', 0);
  });

  it('purge marks the tasks discarded (audited), status stays failed, letters gone', async () => {
    const res = await kaj([
      'dlq',
      'purge',
      '--local',
      '--type',
      'always_broken',
      '--yes',
      '--reason',
      'customer deleted',
      '--json',
    ]);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.out)).toMatchObject({ selected: 2, purged: 2, failed: 0 });
    for (const r of await records(runtime, broken)) {
      expect(r).toMatchObject({ status: 'failed', discarded_at: expect.any(String) });
      expect(r.audit).toEqual([{ action: 'purge', at: r.discarded_at, by: 'tester', reason: 'customer deleted' }]);
    }
    await untilDlq(runtime, 'normal', 0);
    expect(await dlqDepth(runtime, 'normal')).toEqual({ visible: 0, inFlight: 0 });
    await waitFor('nothing else to run', async () =>
      (await kaj(['stats', '--local', '--json'])).code === 0 ? true : undefined,
    );
  });
});
