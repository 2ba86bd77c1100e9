/**
 * `kaj schedules …` over in-memory fakes: argument parsing, usage errors (exit 2 naming the flag
 * or spec field), exit codes, and the text and JSON output of every verb.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import {
  backfillText,
  listText,
  type OpenSchedules,
  parseScheduleName,
  registerSchedules,
  specOf,
} from '../../../cli/commands/schedules.js';
import { defaultContext, type RunState } from '../../../cli/context.js';
import { CliError, EXIT, explain, UsageError } from '../../../cli/errors.js';
import { schedulesTableOf } from '../../../cli/services.js';
import { checkTargetFlags } from '../../../cli/target.js';
import { noMetrics, silentLogger } from '../../../shared/runtime/logger.js';
import {
  ScheduleConflictError,
  ScheduleNotFoundError,
  ScheduleValidationError,
} from '../../../shared/schedule/errors.js';
import { ScheduleService } from '../../../shared/schedule/service.js';
import { schedulerSettings } from '../../../shared/schedule/settings.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { FakeClock, sequenceRandom } from '../../../testing/doubles.js';
import { unitKaj, type UnitKaj } from '../../../testing/fixtures.js';
import { MemoryScheduleStore } from '../../../testing/memory-schedule-store.js';
import { capturedIo } from '../../../testing/captured-io.js';

const NOW = Date.parse('2026-03-01T10:20:00.000Z');

function registry(payload: z.ZodType = z.object({ to: z.string() })): TaskRegistry {
  return new TaskRegistry([defineTask({ type: 'report', schema: payload, handler: async () => ({}) })]);
}

interface Harness {
  readonly store: MemoryScheduleStore;
  readonly unit: UnitKaj;
  readonly clock: FakeClock;
  service: ScheduleService;
  kaj(args: readonly string[]): Promise<{ code: number; out: string; err: string }>;
}

function serviceOver(h: Pick<Harness, 'store' | 'clock'>, reg: TaskRegistry, unit: UnitKaj): ScheduleService {
  return new ScheduleService({
    schedules: h.store,
    submitter: unit.kaj.submitter,
    lifecycle: unit.kaj.lifecycle,
    registry: reg,
    scheduling: schedulerSettings(),
    clock: h.clock,
    logger: silentLogger,
    metrics: noMetrics,
    idSecret: 'cli-test-id-secret',
  });
}

/** `kaj` as runCli runs it, with `schedules` opened on the in-memory service instead of a target. */
function harness(): Harness {
  const clock = new FakeClock(NOW);
  const reg = registry();
  const unit = unitKaj(reg, sequenceRandom([0.5]), clock);
  const store = new MemoryScheduleStore();
  const h: Harness = {
    store,
    unit,
    clock,
    service: undefined as unknown as ScheduleService,
    async kaj(args) {
      const captured = capturedIo();
      const ctx = defaultContext({
        io: captured.io,
        env: {},
        cwd: dir,
        clock,
        registry: async () => reg,
      });
      const state: RunState = { exitCode: EXIT.ok };
      const open: OpenSchedules = async (flags, fn) => {
        checkTargetFlags(flags);
        return fn(h.service);
      };
      const program = new Command('kaj')
        .option('--local')
        .option('--stack <name>')
        .option('--endpoint-url <url>')
        .option('--region <region>')
        .option('--profile <name>')
        .exitOverride()
        .configureOutput({ writeOut: ctx.io.out, writeErr: ctx.io.err });
      registerSchedules(program, ctx, state, open);
      try {
        await program.parseAsync([...args], { from: 'user' });
        return { code: state.exitCode, out: captured.out(), err: captured.err() };
      } catch (e) {
        if (e instanceof CommanderError)
          return { code: e.code === 'commander.helpDisplayed' ? 0 : 2, out: captured.out(), err: captured.err() };
        const { message, exitCode } = explain(e);
        return { code: exitCode, out: captured.out(), err: `${captured.err()}kaj: ${message}\n` };
      }
    },
  };
  h.service = serviceOver(h, reg, unit);
  return h;
}

const dir = mkdtempSync(join(tmpdir(), 'kaj-schedules-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HOURLY = JSON.stringify({ type: 'report', every: '1h', payload: { to: 'ops@example.com' } });
const put = (h: Harness, name: string, spec: string, ...extra: string[]) =>
  h.kaj(['schedules', 'put', name, '--local', '--spec', spec, ...extra]);

describe('kaj schedules: arguments', () => {
  it('schedule names: checked before any request, with the domain rule', () => {
    for (const ok of ['nightly', 'a', 'Report.v2', 'team:billing-1', `a${'b'.repeat(127)}`])
      expect(parseScheduleName(ok)).toBe(ok);
    for (const bad of ['', ' x', '-x', 'a b', 'a/b', `a${'b'.repeat(128)}`])
      expect(() => parseScheduleName(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
  });

  it('the spec: exactly one of --file and --spec; a file is read relative to the working directory', () => {
    expect(() => specOf(undefined, undefined, dir)).toThrow(/give the spec: --file PATH .* or --spec JSON/);
    expect(() => specOf('x.json', { a: 1 }, dir)).toThrow(/not both/);
    expect(() => specOf('missing.json', undefined, dir)).toThrow(/--file missing.json: cannot read it \(ENOENT\)/);
    writeFileSync(join(dir, 'bad.json'), '{nope');
    expect(() => specOf('bad.json', undefined, dir)).toThrow(UsageError);
    expect(() => specOf('bad.json', undefined, dir)).toThrow(/--file bad.json: not valid JSON/);
    writeFileSync(join(dir, 'good.json'), '{"type":"report"}');
    expect(specOf('good.json', undefined, dir)).toEqual({ type: 'report' });
    expect(specOf(undefined, { every: '1h' }, dir)).toEqual({ every: '1h' });
  });

  it('the schedules table is <prefix>-schedules next to <prefix>-tasks', () => {
    const t = (tableName: string) => ({ label: 'stack x', resources: { tableName } as never });
    expect(schedulesTableOf(t('kaj-prod-tasks'))).toBe('kaj-prod-schedules');
    expect(() => schedulesTableOf(t('legacy'))).toThrow(CliError);
  });

  it('the scheduler errors map to exit codes: validation 2 naming the field, not found and conflict 1', () => {
    expect(explain(new ScheduleValidationError('cron', 'cron: bad'))).toEqual({ message: 'cron: bad', exitCode: 2 });
    expect(explain(new ScheduleValidationError('payload.to', 'required'))).toEqual({
      message: 'payload.to: required',
      exitCode: 2,
    });
    expect(explain(new ScheduleNotFoundError('x'))).toEqual({
      message: 'schedule "x" not found (see kaj schedules list)',
      exitCode: 1,
    });
    expect(explain(new ScheduleConflictError('x', 'concurrent_change', 'busy; retry'))).toEqual({
      message: 'busy; retry',
      exitCode: 1,
    });
  });
});

describe('kaj schedules: usage errors (exit 2, a message, nothing on stdout)', () => {
  let h: Harness;
  beforeEach(() => {
    h = harness();
  });

  it.each([
    [['schedules', 'show', '--local'], /missing required argument 'name'/],
    [['schedules', 'put', '--local', '--spec', '{}'], /missing required argument 'name'/],
    [['schedules', 'show', 'a b', '--local'], /argument 'name'.*name: must be a letter or digit/],
    [['schedules', 'put', 'x', '--local'], /give the spec: --file PATH \(a JSON file\) or --spec JSON/],
    [['schedules', 'put', 'x', '--local', '--spec', '{}', '--file', 'a.json'], /not both/],
    [['schedules', 'put', 'x', '--local', '--spec', '{bad'], /--spec <json>.*not valid JSON/],
    [['schedules', 'put', 'x', '--local', '--spec', '{"type":"report","cron":"61 * * * *"}'], /kaj: cron: /],
    [['schedules', 'put', 'x', '--local', '--spec', '{"type":"report","every":"1h"}'], /kaj: payload\.to: /],
    [['schedules', 'put', 'x', '--local', '--spec', '{"type":"report","every":"1h","evry":1}'], /evry: unknown field/],
    [['schedules', 'put', 'x', '--local', '--spec', '{"type":"nope","every":"1h"}'], /type: unknown task type "nope"/],
    [['schedules', 'list', '--local', '--limit', '0'], /--limit <n>.*whole number/],
    [['schedules', 'list', '--local', '--limit', '500'], /--limit: must be an integer in \[1, 200\]/],
    [['schedules', 'backfill', 'x', '--local', '--to', '2026-01-01T00:00:00Z'], /required option '--from <time>'/],
    [['schedules', 'list'], /no target/],
  ])('kaj %j', async (args, message) => {
    const r = await h.kaj(args as string[]);
    expect(r.err).toMatch(message);
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
  });

  it('flags the service checks are named as flags: --from, --to, --note, --cursor', async () => {
    await put(h, 'hourly', HOURLY);
    const bf = (from: string, to: string) =>
      h.kaj(['schedules', 'backfill', 'hourly', '--local', '--from', from, '--to', to]);
    expect((await bf('yesterday', '2026-03-01T09:00:00Z')).err).toMatch(/kaj: --from: must be an ISO-8601 time/);
    expect((await bf('2026-03-01T09:00:00Z', '2026-03-01T12:00:00Z')).err).toMatch(/--to: must not be in the future/);
    expect((await bf('2026-03-01T09:00:00Z', '2026-03-01T08:00:00Z')).err).toMatch(/--to: must not be before from/);
    const note = await h.kaj(['schedules', 'pause', 'hourly', '--local', '--note', 'x'.repeat(501)]);
    expect(note).toMatchObject({ code: 2, out: '' });
    expect(note.err).toMatch(/--note: must be a string of at most 500 characters/);
    const cursor = await h.kaj(['schedules', 'list', '--local', '--cursor', 'garbage']);
    expect(cursor.code).toBe(2);
    expect(cursor.err).toMatch(/--cursor "garbage" is not a cursor kaj schedules list printed/);
  });

  it('--file: the spec from a file', async () => {
    writeFileSync(join(dir, 'hourly.json'), HOURLY);
    const r = await h.kaj(['schedules', 'put', 'from-file', '--local', '--file', 'hourly.json', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ result: 'created', schedule: { name: 'from-file' } });
  });
});

describe('kaj schedules: verbs and their output', () => {
  let h: Harness;
  beforeEach(() => {
    h = harness();
  });

  it('put: created, unchanged, updated (text and --json)', async () => {
    const created = await put(h, 'hourly', HOURLY);
    expect(created).toMatchObject({ code: 0, err: '' });
    expect(created.out).toBe('created: schedule hourly (active, next fire 2026-03-01T11:00:00.000Z (in 40m))\n');
    expect((await put(h, 'hourly', HOURLY)).out).toMatch(/^unchanged: schedule hourly/);
    const updated = await put(h, 'hourly', HOURLY.replace('"1h"', '"2h"'), '--json');
    const body = JSON.parse(updated.out);
    expect(Object.keys(body)).toEqual(['result', 'schedule']);
    expect(body.result).toBe('updated');
    expect(body.schedule).toMatchObject({
      name: 'hourly',
      owner: 'operator',
      source: 'api',
      state: 'active',
      spec: { every: '2h', type: 'report', payload: { to: 'ops@example.com' }, timezone: 'UTC' },
      next_times: [
        '2026-03-01T12:00:00.000Z',
        '2026-03-01T14:00:00.000Z',
        expect.any(String),
        expect.any(String),
        expect.any(String),
      ],
    });
  });

  it('list: an aligned table; an empty listing; --json { items, cursor }; pages with --cursor', async () => {
    expect((await h.kaj(['schedules', 'list', '--local'])).out).toBe('no schedules.\n');
    await put(h, 'hourly', HOURLY);
    await put(
      h,
      'nightly',
      JSON.stringify({ type: 'report', cron: '30 0 * * *', timezone: 'Asia/Dhaka', payload: { to: 'a' } }),
    );
    await h.kaj(['schedules', 'pause', 'nightly', '--local']);
    const text = (await h.kaj(['schedules', 'list', '--local'])).out;
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^NAME\s+STATE\s+TYPE\s+WHEN\s+TIMEZONE\s+NEXT FIRE \(UTC\)\s+LAST OUTCOME$/);
    expect(lines[1]).toMatch(/^hourly\s+active\s+report\s+every 1h\s+UTC\s+2026-03-01T11:00:00.000Z\s+-$/);
    expect(lines[2]).toMatch(/^nightly\s+paused\s+report\s+cron 30 0 \* \* \*\s+Asia\/Dhaka\s+-\s+-$/);
    // Aligned: every column starts at the same offset on every line.
    expect(lines[1]?.indexOf('active')).toBe(lines[0]?.indexOf('STATE'));
    expect(lines[2]?.indexOf('Asia/Dhaka')).toBe(lines[0]?.indexOf('TIMEZONE'));
    expect(text).toMatch(/\n2 schedule\(s\)\.\n$/);

    const all = JSON.parse((await h.kaj(['schedules', 'list', '--local', '--json'])).out);
    expect(all.cursor).toBeNull();
    expect(all.items).toEqual([
      expect.objectContaining({ name: 'hourly', state: 'active', type: 'report', when: 'every 1h', timezone: 'UTC' }),
      expect.objectContaining({ name: 'nightly', state: 'paused', when: 'cron 30 0 * * *', timezone: 'Asia/Dhaka' }),
    ]);

    const first = await h.kaj(['schedules', 'list', '--local', '--limit', '1']);
    const cursor = /more: kaj schedules list --cursor (\S+)/.exec(first.out)?.[1];
    expect(first.out).toMatch(/^hourly/m);
    expect(cursor).toBeDefined();
    const second = await h.kaj(['schedules', 'list', '--local', '--limit', '1', '--cursor', cursor as string]);
    expect(second.out).toMatch(/^nightly/m);
  });

  it('show: the spec, the state, the next 5 times and the recent runs with their tasks', async () => {
    await put(h, 'hourly', HOURLY);
    const trig = JSON.parse((await h.kaj(['schedules', 'trigger', 'hourly', '--local', '--json'])).out);
    const out = (await h.kaj(['schedules', 'show', 'hourly', '--local'])).out;
    expect(out).toMatch(/^name:\s+hourly$/m);
    expect(out).toMatch(/^state:\s+active$/m);
    expect(out).toMatch(/^source:\s+API \/ CLI \(owner operator\)$/m);
    expect(out).toMatch(/^ {2}every:\s+1h$/m);
    expect(out).toMatch(/^ {2}payload:\s+\{"to":"ops@example.com"\}$/m);
    expect(out).toMatch(/^last run:\s+t_[0-9a-f]{32} \(2026-03-01T10:20:00.000Z\)$/m);
    const next = out.slice(out.indexOf('next times (UTC):'), out.indexOf('recent runs'));
    expect(next.match(/2026-03-01T\d\d:00:00.000Z/g)).toEqual([
      '2026-03-01T11:00:00.000Z',
      '2026-03-01T12:00:00.000Z',
      '2026-03-01T13:00:00.000Z',
      '2026-03-01T14:00:00.000Z',
      '2026-03-01T15:00:00.000Z',
    ]);
    expect(next).not.toMatch(/FIRES AT/);
    expect(out).toMatch(/SCHEDULED TIME\s+KIND\s+OUTCOME\s+TASK ID\s+TASK STATUS\s+DECIDED AT\s+NOTE/);
    expect(out).toContain(trig.task_id);
    expect(out).toMatch(/2026-03-01T10:20:00.000Z\s+trigger\s+created\s+t_\w+\s+queued\s+/);

    const view = JSON.parse((await h.kaj(['schedules', 'show', 'hourly', '--local', '--json'])).out);
    expect(view).toMatchObject({
      name: 'hourly',
      state: 'active',
      fired: 0,
      next_times: expect.any(Array),
      next_fire_times: expect.any(Array),
      recent_runs: [{ kind: 'trigger', outcome: 'created', task_id: trig.task_id, task_status: 'queued' }],
    });
  });

  it('show: with jitter, the fire time of each next time', async () => {
    await put(h, 'spread', JSON.stringify({ type: 'report', every: '1h', jitter: '10m', payload: { to: 'a' } }));
    const view = JSON.parse((await h.kaj(['schedules', 'show', 'spread', '--local', '--json'])).out);
    expect(view.jitter_offset_seconds).toBeGreaterThan(0);
    const out = (await h.kaj(['schedules', 'show', 'spread', '--local'])).out;
    expect(out).toMatch(/TIME\s+FIRES AT/);
    expect(out).toContain(`${view.next_times[0]}  ${view.next_fire_times[0]}`);
    expect(out).toMatch(new RegExp(`^jitter:\\s+fires ${view.jitter_offset_seconds}s after each time$`, 'm'));
  });

  it('pause with a note, resume: text, --json, and what list and show say', async () => {
    await put(h, 'hourly', HOURLY);
    const paused = await h.kaj(['schedules', 'pause', 'hourly', '--local', '--note', 'deploy freeze']);
    expect(paused.out).toBe('paused: schedule hourly ("deploy freeze")\n');
    expect((await h.kaj(['schedules', 'show', 'hourly', '--local'])).out).toMatch(
      /^state:\s+paused since 2026-03-01T10:20:00.000Z: "deploy freeze"$/m,
    );
    const again = JSON.parse((await h.kaj(['schedules', 'pause', 'hourly', '--local', '--json'])).out);
    expect(again).toMatchObject({ state: 'paused', paused_at: '2026-03-01T10:20:00.000Z' });
    expect(again.pause_note).toBeUndefined();
    const resumed = await h.kaj(['schedules', 'resume', 'hourly', '--local']);
    expect(resumed.out).toMatch(/^resumed: schedule hourly, next fire 2026-03-01T11:00:00.000Z/);
    expect(JSON.parse((await h.kaj(['schedules', 'resume', 'hourly', '--local', '--json'])).out).state).toBe('active');
  });

  it('trigger: the run key and the task id; a task it cannot create is exit 1', async () => {
    await put(h, 'hourly', HOURLY);
    const r = await h.kaj(['schedules', 'trigger', 'hourly', '--local']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^created: run hourly@2026-03-01T10:20:00.000Z, task t_[0-9a-f]{32}\n$/);
    const task = /task (t_\w+)/.exec(r.out)?.[1] as string;
    expect((await h.unit.kaj.store.get(task))?.type).toBe('report');
    const again = JSON.parse((await h.kaj(['schedules', 'trigger', 'hourly', '--local', '--json'])).out);
    expect(again).toEqual({
      run_key: 'hourly@2026-03-01T10:20:00.000Z',
      scheduled_time: '2026-03-01T10:20:00.000Z',
      task_id: task,
      created: false,
    });

    // The task type changed since the schedule was put: its payload no longer fits.
    const changed = registry(z.object({ to: z.string(), cc: z.string() }));
    h.service = serviceOver(h, changed, unitKaj(changed, sequenceRandom([0.5]), h.clock));
    h.clock.advance(1000);
    const invalid = await h.kaj(['schedules', 'trigger', 'hourly', '--local']);
    expect(invalid.code).toBe(1);
    expect(invalid.out).toMatch(/^invalid: run hourly@2026-03-01T10:20:01.000Z could not create task t_\w+: .*cc/);
  });

  it('backfill: each run, created or already there', async () => {
    await put(h, 'hourly', HOURLY);
    const args = [
      'schedules',
      'backfill',
      'hourly',
      '--local',
      '--from',
      '2026-03-01T07:00:00Z',
      '--to',
      '2026-03-01T09:30:00Z',
    ];
    const first = await h.kaj(args);
    expect(first.code).toBe(0);
    expect(first.out.split('\n')[0]).toMatch(/^RUN KEY\s+TASK ID\s+RESULT$/);
    for (const hour of ['07', '08', '09'])
      expect(first.out).toMatch(new RegExp(`^hourly@2026-03-01T${hour}:00:00.000Z\\s+t_\\w+\\s+created$`, 'm'));
    expect(first.out).toMatch(/3 time\(s\): 3 created, 0 already there\n$/);

    const second = JSON.parse(
      (await h.kaj([...args.slice(0, 4), '--from', '2026-03-01T08:00:00Z', '--to', '2026-03-01T10:00:00Z', '--json']))
        .out,
    );
    expect(second.runs.map((r: { run_key: string; created: boolean }) => [r.run_key, r.created])).toEqual([
      ['hourly@2026-03-01T08:00:00.000Z', false],
      ['hourly@2026-03-01T09:00:00.000Z', false],
      ['hourly@2026-03-01T10:00:00.000Z', true],
    ]);
    expect(backfillText('hourly', second.runs)).toMatch(/3 time\(s\): 1 created, 2 already there/);
    expect(backfillText('hourly', [])).toMatch(/no time of schedule hourly falls in that range/);
  });

  it('delete, then the schedule is not found (exit 1, a clear message)', async () => {
    await put(h, 'hourly', HOURLY);
    expect((await h.kaj(['schedules', 'delete', 'hourly', '--local', '--yes'])).out).toBe('deleted: schedule hourly\n');
    for (const verb of ['show', 'delete', 'pause', 'resume', 'trigger']) {
      const r = await h.kaj(['schedules', verb, 'hourly', '--local', ...(verb === 'delete' ? ['--yes'] : [])]);
      expect(r).toMatchObject({ code: 1, out: '' });
      expect(r.err).toBe('kaj: schedule "hourly" not found (see kaj schedules list)\n');
    }
    await put(h, 'other', HOURLY);
    expect(JSON.parse((await h.kaj(['schedules', 'delete', 'other', '--local', '--yes', '--json'])).out)).toEqual({
      name: 'other',
      deleted: true,
    });
  });

  it('list text of a page with a cursor says how to get the next', () => {
    expect(listText({ items: [], cursor: 'abc' })).toBe(
      'no schedules on this page.\nmore: kaj schedules list --cursor abc\n',
    );
  });

  it('--help of every verb', async () => {
    for (const verb of ['list', 'show', 'put', 'delete', 'pause', 'resume', 'trigger', 'backfill']) {
      const r = await h.kaj(['schedules', verb, '--help']);
      expect(r.code).toBe(0);
      expect(r.out).toContain(`Usage: kaj schedules ${verb}`);
    }
    expect((await h.kaj(['schedules', 'put', '--help'])).out).toMatch(/cron \| every \| at/);
  });
});
