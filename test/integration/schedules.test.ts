/**
 * The scheduler end to end on each emulator (embedded, moto): a schedule fires on time through
 * the real queue and the consumer; N concurrent ticks create one task per scheduled time; a
 * runtime stopped across three fire times and restarted runs what the misfire policy says, no
 * more; PUT is idempotent and a changed spec takes effect at the next fire; bad specs are 422
 * naming the field.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { LocalRuntime } from '../../local/runtime.js';
import { DynamoScheduleStore } from '../../shared/aws/dynamo-schedule-store.js';
import { defineTask, TaskRegistry } from '../../shared/task/define.js';
import type { TaskRecord } from '../../shared/task/model.js';
import { FakeClock } from '../../testing/doubles.js';
import { callApi, runtimeForSuite } from '../support/suite-runtime.js';
import { targets } from '../support/targets.js';
import { waitFor } from '../../testing/wait.js';

const seen: { scheduledTime: string | undefined; schedule: string | undefined; at: number }[] = [];
const registry = new TaskRegistry([
  defineTask({
    type: 'tick_probe',
    schema: z.object({ label: z.string().default('x') }),
    handler: async (_p, ctx) => {
      seen.push({ scheduledTime: ctx.scheduledTime?.toISOString(), schedule: ctx.schedule, at: Date.now() });
      return { ok: true };
    },
  }),
]);

/** Every task of a schedule in the table (a Scan: the test table is small). */
async function tasksOf(runtime: LocalRuntime, schedule: string): Promise<TaskRecord[]> {
  const { ScanCommand } = await import('@aws-sdk/client-dynamodb');
  const { unmarshall } = await import('@aws-sdk/util-dynamodb');
  const out: TaskRecord[] = [];
  let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
  do {
    const page = await runtime.clients.dynamodb.send(
      new ScanCommand({ TableName: runtime.resources.tableName, ExclusiveStartKey: start }),
    );
    for (const item of page.Items ?? []) {
      const r = unmarshall(item) as TaskRecord;
      if (r.schedule === schedule) out.push(r);
    }
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return out;
}

const call = callApi;

describe.each(targets())('scheduler on $name', (target) => {
  describe('live: the real queue and consumer', () => {
    let runtime: LocalRuntime;
    runtimeForSuite(
      target,
      'sch',
      {
        registry,
        waitTimeSeconds: 1,
        // Runs every two seconds: a deployment that allows a seconds field.
        scheduling: { tickSeconds: 1, allowSecondsField: true, minIntervalSeconds: 1 },
      },
      (r) => (runtime = r),
      60_000,
    );

    it('a schedule fires on time through the real queue; the handler gets its logical date', async () => {
      seen.length = 0;
      const put = await call(runtime, 'PUT', '/api/v1/schedules/every-2s', {
        cron: '*/2 * * * * *',
        type: 'tick_probe',
        overlap: 'allow',
      });
      expect(put.status).toBe(201);
      await waitFor(
        'two runs of every-2s',
        () => (seen.filter((s) => s.schedule === 'every-2s').length >= 2 ? true : undefined),
        {
          timeoutMs: 20_000,
        },
      );
      const mine = seen.filter((s) => s.schedule === 'every-2s');
      for (const s of mine) {
        const t = Date.parse(s.scheduledTime ?? '');
        expect(new Date(t).getUTCSeconds() % 2).toBe(0);
        expect(t % 1000).toBe(0);
        // Never before its second (SQS DelaySeconds has one-second resolution). How soon after it
        // the handler starts is the poller's and the machine's speed, not a promise: no upper bound.
        expect(s.at - t).toBeGreaterThanOrEqual(-1_000);
      }
      const view = await call(runtime, 'GET', '/api/v1/schedules/every-2s');
      expect(view.status).toBe(200);
      expect((view.body.next_times as string[]).length).toBe(5);
      expect(view.body.recent_runs, JSON.stringify(view.body)).toEqual(
        expect.arrayContaining([expect.objectContaining({ outcome: 'created' })]),
      );
      const del = await call(runtime, 'DELETE', '/api/v1/schedules/every-2s');
      expect(del.status).toBe(200);
    }, 40_000);

    it('deleted and created again, a schedule runs no time twice: not by its ticker, not by backfill', async () => {
      seen.length = 0;
      const body = { cron: '*/2 * * * * *', type: 'tick_probe', overlap: 'allow' };
      const runsOf = () => seen.filter((s) => s.schedule === 'again');
      expect((await call(runtime, 'PUT', '/api/v1/schedules/again', body)).status).toBe(201);
      await waitFor('two runs of again', () => (runsOf().length >= 2 ? true : undefined), { timeoutMs: 20_000 });
      // Again at once: the times the first instance handed over already are the new one's first.
      expect((await call(runtime, 'DELETE', '/api/v1/schedules/again')).status).toBe(200);
      expect((await call(runtime, 'PUT', '/api/v1/schedules/again', body)).status).toBe(201);
      const ran = runsOf().map((s) => s.scheduledTime ?? '');
      const sorted = [...ran].sort();
      const from = sorted[0] ?? '';
      const to = sorted[sorted.length - 1] ?? '';
      const backfill = await call(runtime, 'POST', '/api/v1/schedules/again/backfill', { from, to });
      expect(backfill.status).toBe(202);
      const runs = backfill.body.runs as { scheduled_time: string; created: boolean }[];
      for (const time of ran) expect(runs.find((r) => r.scheduled_time === time)?.created, time).toBe(false);
      // Two runs of the new instance after the backfill: its messages (sent at once) were received before them.
      await waitFor(
        'two runs after the backfill',
        () => (runsOf().filter((s) => (s.scheduledTime ?? '') > to).length >= 2 ? true : undefined),
        { timeoutMs: 20_000 },
      );
      expect((await call(runtime, 'DELETE', '/api/v1/schedules/again')).status).toBe(200);
      const times = runsOf().map((s) => s.scheduledTime);
      expect(times.length, JSON.stringify(times)).toBe(new Set(times).size);
      const tasks = await tasksOf(runtime, 'again');
      expect(tasks.length).toBe(new Set(tasks.map((t) => t.scheduled_time)).size);
    }, 60_000);

    it('PUT twice with the same body is idempotent; a changed spec takes effect at the next fire', async () => {
      const body = { cron: '0 3 * * *', timezone: 'America/New_York', type: 'tick_probe' };
      const first = await call(runtime, 'PUT', '/api/v1/schedules/nightly', body);
      const again = await call(runtime, 'PUT', '/api/v1/schedules/nightly', { ...body });
      expect(first.status).toBe(201);
      expect(again.status).toBe(200);
      expect(again.body.changed).toBe(false);
      expect(again.body.next_times).toEqual(first.body.next_times);
      const changed = await call(runtime, 'PUT', '/api/v1/schedules/nightly', { ...body, cron: '0 4 * * *' });
      expect(changed.status).toBe(200);
      expect(changed.body.changed).toBe(true);
      const next = (changed.body.next_times as string[])[0] as string;
      // 04:00 in New York is 08:00 or 09:00 UTC depending on DST.
      expect(['08', '09']).toContain(next.slice(11, 13));
      await call(runtime, 'DELETE', '/api/v1/schedules/nightly');
    });

    it.each([
      [{ cron: 'not a cron', type: 'tick_probe' }, 'cron'],
      [{ cron: '0 * * * *', timezone: 'Mars/Olympus', type: 'tick_probe' }, 'timezone'],
      // This runtime allows intervals down to 1 s (its ticks are 1 s); the 1-minute default is unit-tested.
      [{ every: '0s', type: 'tick_probe' }, 'every'],
      [{ every: '1h', start_at: '2027-01-02T00:00:00Z', end_at: '2027-01-01T00:00:00Z', type: 'tick_probe' }, 'end_at'],
      [{ every: '1h', type: 'no_such_type' }, 'type'],
      [{ every: '1h', type: 'tick_probe', payload: { label: 5 } }, 'payload.label'],
    ])('PUT %j → 422 naming %s', async (body, field) => {
      const r = await call(runtime, 'PUT', '/api/v1/schedules/bad', body);
      expect(r.status).toBe(422);
      expect((r.body.error as { field: string }).field).toBe(field);
    });
  });

  describe('ticks on a fake clock against the emulator store', () => {
    let runtime: LocalRuntime;
    const clock = new FakeClock(Date.parse('2026-11-30T23:58:00.000Z'));
    runtimeForSuite(
      target,
      'scf',
      {
        registry,
        consumers: false,
        scheduler: false,
        clock,
        scheduling: { tickSeconds: 60, misfireGraceSeconds: 150, allowSecondsField: true, minIntervalSeconds: 1 },
      },
      (r) => (runtime = r),
      60_000,
    );

    it('8 concurrent ticks create exactly one task per scheduled time', async () => {
      const service = runtime.kaj.schedules;
      const ticker = runtime.kaj.ticker;
      if (service === undefined || ticker === undefined) throw new Error('scheduler not wired');
      clock.set(Date.parse('2026-11-30T23:58:00.200Z'));
      await service.put('each-10s', { cron: '*/10 * * * * *', type: 'tick_probe', overlap: 'allow' }, undefined);
      clock.set(Date.parse('2026-11-30T23:58:00.500Z'));
      const reports = await Promise.all(Array.from({ length: 8 }, () => ticker.tick()));
      const tasks = await tasksOf(runtime, 'each-10s');
      const times = tasks.map((t) => t.scheduled_time).sort();
      // The times due before the next tick: 23:58:10 … 23:59:00 (six of them), once each.
      expect(times).toEqual(
        ['10', '20', '30', '40', '50'].map((s) => `2026-11-30T23:58:${s}.000Z`).concat('2026-11-30T23:59:00.000Z'),
      );
      expect(new Set(tasks.map((t) => t.task_id)).size).toBe(6);
      expect(reports.reduce((n, r) => n + r.created, 0)).toBe(6);
      const stored = await new DynamoScheduleStore(
        runtime.clients.dynamodb,
        runtime.config.schedulesTableName ?? '',
      ).get('each-10s');
      expect(stored?.next_time).toBe(Date.parse('2026-11-30T23:59:10.000Z'));
      expect(stored?.fired).toBe(6);
      await service.delete('each-10s', undefined);
    });

    it.each([
      ['skip', 0],
      ['run_once', 1],
      ['catch_up', 3],
    ] as const)(
      'stopped across three fire times, misfire %s → %i run(s) for them, no more',
      async (misfire, expected) => {
        const service = runtime.kaj.schedules;
        const ticker = runtime.kaj.ticker;
        if (service === undefined || ticker === undefined) throw new Error('scheduler not wired');
        const name = `down-${misfire}`;
        clock.set(Date.parse('2026-12-01T10:00:30.000Z'));
        await service.put(name, { cron: '*/5 * * * *', type: 'tick_probe', misfire, overlap: 'allow' }, undefined);
        // Down from 10:00:30 to 10:18:00: 10:05, 10:10, 10:15 fall due while nothing ticks, and
        // the last is more than the misfire grace (150 s) late when the first tick comes.
        clock.set(Date.parse('2026-12-01T10:18:00.000Z'));
        await ticker.tick();
        await ticker.tick(); // a second tick changes nothing
        const times = (await tasksOf(runtime, name)).map((t) => t.scheduled_time).sort();
        const missed = ['10:05', '10:10', '10:15'].map((m) => `2026-12-01T${m}:00.000Z`);
        const want = misfire === 'skip' ? [] : misfire === 'run_once' ? [missed[2]] : missed;
        expect(times).toEqual(want);
        expect(times.length).toBe(expected);
        const view = await service.get(name, undefined);
        expect(view.missed).toBe(3 - expected);
        await service.delete(name, undefined);
      },
    );
  });
});
