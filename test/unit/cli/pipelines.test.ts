/**
 * `kaj pipelines …` over in-memory fakes, with the example pipeline `nightly_sales`
 * (tasks/nightly-sales.ts): list and show (its schedule paused and resumed), the grid of runs
 * after a trigger and the consumer's work, a backfill's dry run, a clear of a failed node, a
 * cancel, and the errors (a bad date names its flag; an unknown pipeline or run).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type OpenPipelines, registerPipelines } from '../../../cli/commands/pipelines.js';
import { defaultContext, type RunState } from '../../../cli/context.js';
import { EXIT, explain } from '../../../cli/errors.js';
import { pipelineServiceOf } from '../../../cli/services.js';
import { checkTargetFlags } from '../../../cli/target.js';
import { registry } from '../../../tasks/index.js';
import { capturedIo } from '../../../testing/captured-io.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';
import { MemoryScheduleStore } from '../../../testing/memory-schedule-store.js';
import { drivenKaj } from '../../../testing/queue-drain.js';

const ACTOR = 'ops-tester';
const NOW = Date.parse('2026-12-01T00:00:00Z');
const FAKED = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] as const;

/** Kaj on fakes, driven by hand, and `kaj` with its `pipelines` group opened on them (`--local` stands for the target). */
async function setup(options: { sync?: boolean } = {}) {
  const u = drivenKaj(registry, {
    history: new MemoryHistoryStore(),
    limits: new MemoryLimitStore(),
    schedules: new MemoryScheduleStore(),
  });
  const schedules = u.kaj.schedules;
  if (schedules === undefined) throw new Error('no schedule service');
  if (options.sync !== false) await schedules.syncDeclared(registry.declaredSchedules());
  const pipelines = pipelineServiceOf(u.kaj);
  const open: OpenPipelines = async (flags, fn) => {
    checkTargetFlags(flags);
    return fn({ pipelines, schedules });
  };

  const kaj = async (...args: string[]) => {
    const io = capturedIo();
    const ctx = defaultContext({ io: io.io, env: {}, clock: u.clock, actor: ACTOR, registry: async () => registry });
    const state: RunState = { exitCode: EXIT.ok };
    const program = new Command('kaj').option('--local').exitOverride();
    program.configureOutput({ writeOut: io.io.out, writeErr: io.io.err });
    registerPipelines(program, ctx, state, open);
    let code: number = EXIT.ok;
    try {
      await program.parseAsync(['pipelines', ...args, '--local'], { from: 'user' });
      code = state.exitCode;
    } catch (e) {
      // As runCli says it: commander's own errors are usage errors; the rest through explain().
      const told = e instanceof CommanderError ? { message: e.message, exitCode: EXIT.usage } : explain(e);
      io.io.err(`kaj: ${told.message}\n`);
      code = told.exitCode;
    }
    return { code, out: io.out(), err: io.err() };
  };
  /** Every message to the consumer once due (time moved on while only delayed ones are left). */
  const drain = () => u.drain({ advance: (ms) => vi.advanceTimersByTimeAsync(ms) });
  return { ...u, kaj, drain, pipelines };
}

/** The grid's row of a logical date, split into its cells. */
function row(out: string, date: string): string[] {
  const line = out.split('\n').find((l) => l.startsWith(date));
  if (line === undefined) throw new Error(`no row for ${date} in:\n${out}`);
  return line.trim().split(/\s+/);
}

describe('kaj pipelines', () => {
  // The nodes write their partitions under a folder of this test's; time is fake (1 Dec 2026, UTC).
  let dir = '';
  beforeEach(() => {
    vi.useFakeTimers({ now: NOW, toFake: [...FAKED] });
    dir = mkdtempSync(join(tmpdir(), 'kaj-cli-pipelines-'));
    vi.stubEnv('KAJ_PARTITIONS_DIR', dir);
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
    vi.unstubAllEnvs();
    vi.useRealTimers();
  });

  it('list: each pipeline with its schedule, zone, max active runs and nodes; --json the items', async () => {
    const h = await setup();
    const text = await h.kaj('list');
    expect(text.code).toBe(0);
    const line = text.out.split('\n').find((l) => l.startsWith('nightly_sales'));
    expect(line).toMatch(
      /^nightly_sales\s+30 0 \* \* \*\s+Asia\/Dhaka\s+1\s+5: extract, clean, customers, summary, dashboard$/,
    );
    const asJson = await h.kaj('list', '--json');
    const items = (JSON.parse(asJson.out) as { items: { name: string; max_active_runs: number }[] }).items;
    expect(items.find((p) => p.name === 'nightly_sales')).toMatchObject({ max_active_runs: 1 });
  });

  it("show: the schedule, catchup, max active runs, the graph, and the schedule's state through pause and resume", async () => {
    const h = await setup();
    const shown = await h.kaj('show', 'nightly_sales');
    expect(shown.code).toBe(0);
    expect(shown.out).toContain('schedule:         30 0 * * * (Asia/Dhaka), catchup on');
    expect(shown.out).toMatch(/schedule state: {3}active, next fire 2026-12-01T18:30:00\.000Z/);
    expect(shown.out).toContain('max active runs:  1');
    expect(shown.out).toMatch(/\n {2}summary\s+build_daily_summary\s+clean, customers\s+all_success\n/);
    expect(shown.out).toMatch(/\n {2}extract\s+extract_sales\s+-\s+all_success\n/);

    const paused = await h.kaj('pause', 'nightly_sales', '--note', 'warehouse migration');
    expect(paused).toMatchObject({
      code: 0,
      out: 'paused: the schedule of pipeline nightly_sales ("warehouse migration")\n',
    });
    expect((await h.kaj('show', 'nightly_sales')).out).toMatch(
      /schedule state: {3}paused since .+: "warehouse migration"\n/,
    );
    const asJson = JSON.parse((await h.kaj('show', 'nightly_sales', '--json')).out) as Record<string, unknown>;
    expect(asJson.schedule_state).toMatchObject({ state: 'paused', pause_note: 'warehouse migration' });
    expect(asJson.nodes).toHaveLength(5);

    const resumed = await h.kaj('resume', 'nightly_sales');
    expect(resumed.out).toBe('resumed: the schedule of pipeline nightly_sales, next fire 2026-12-01T18:30:00.000Z\n');
    expect((await h.kaj('show', 'nightly_sales')).out).toMatch(/schedule state: {3}active/);
  });

  it('show: a schedule not synced yet is said to be so', async () => {
    const h = await setup({ sync: false });
    const shown = await h.kaj('show', 'nightly_sales');
    expect(shown.out).toContain('schedule state:   not created yet');
  });

  it('trigger, then the consumer runs it: one row in the grid, every node ok, the run succeeded', async () => {
    const h = await setup();
    const triggered = await h.kaj('trigger', 'nightly_sales', '--date', '2026-11-28');
    expect(triggered.code).toBe(0);
    expect(triggered.out).toMatch(/^created: run nightly_sales@2026-11-28\n/);
    expect(triggered.out).toContain('data interval:  2026-11-27T18:30:00.000Z → 2026-11-28T18:30:00.000Z');
    const again = await h.kaj('trigger', 'nightly_sales', '--date', '2026-11-28');
    expect(again.out).toMatch(/^already there: run nightly_sales@2026-11-28\n/);

    await h.drain();
    const grid = await h.kaj('runs', 'nightly_sales');
    expect(grid.code).toBe(0);
    expect(grid.out.split('\n')[0]).toMatch(
      /^LOGICAL DATE\s+STATUS\s+extract\s+clean\s+customers\s+summary\s+dashboard$/,
    );
    expect(row(grid.out, '2026-11-28')).toEqual(['2026-11-28', 'succeeded', 'ok', 'ok', 'ok', 'ok', 'ok']);
    expect(grid.out).toContain('1 run(s), newest first.');
    expect(grid.out).toContain('legend: ok succeeded');

    const one = await h.kaj('show-run', 'nightly_sales', '--date', '2026-11-28');
    expect(one.out).toContain('status:         succeeded');
    expect(one.out).toMatch(/\n {2}dashboard\s+succeeded\s+1\s+1\s+t_\w+\n/);
    const asJson = JSON.parse((await h.kaj('runs', 'nightly_sales', '--json')).out) as { items: { status: string }[] };
    expect(asJson.items.map((r) => r.status)).toEqual(['succeeded']);
    const ended = await h.kaj('cancel', 'nightly_sales', '--date', '2026-11-28', '--yes');
    expect(ended).toMatchObject({ code: EXIT.failure, err: 'kaj: the run has ended (succeeded): nothing to cancel\n' });
  });

  it('backfill --dry-run prints the plan and changes nothing', async () => {
    const h = await setup();
    await h.kaj('trigger', 'nightly_sales', '--date', '2026-11-02');
    const sent = h.queue.sent.length;
    const plan = await h.kaj('backfill', 'nightly_sales', '--from', '2026-11-01', '--to', '2026-11-03', '--dry-run');
    expect(plan.code).toBe(0);
    expect(row(plan.out, '2026-11-01').slice(0, 2)).toEqual(['2026-11-01', 'create']);
    expect(plan.out).toMatch(/\n2026-11-02\s+skip \(run active\)\s+queued\s+t_\w+\n/);
    expect(plan.out).toContain('dry run, nothing changed. 3 date(s): 2 to create, 0 to clear, 1 left as they are.');
    expect(h.queue.sent.length).toBe(sent);
    const grid = await h.kaj('runs', 'nightly_sales', '--from', '2026-11-01', '--to', '2026-11-03', '--json');
    expect((JSON.parse(grid.out) as { items: { logical_date: string }[] }).items.map((r) => r.logical_date)).toEqual([
      '2026-11-02',
    ]);
  });

  it('clear of a failed node reopens the run; it runs again with its downstream, and the run succeeds', async () => {
    const h = await setup();
    vi.stubEnv('KAJ_NIGHTLY_SALES_FAIL', 'clean');
    await h.kaj('trigger', 'nightly_sales', '--date', '2026-11-28');
    await h.drain();
    const failed = await h.kaj('runs', 'nightly_sales');
    expect(row(failed.out, '2026-11-28')).toEqual([
      '2026-11-28',
      'failed',
      'ok',
      'FAIL',
      'ok',
      'up_failed',
      'up_failed',
    ]);

    vi.stubEnv('KAJ_NIGHTLY_SALES_FAIL', '');
    const cleared = await h.kaj('clear', 'nightly_sales', '--date', '2026-11-28', '--node', 'clean', '--downstream');
    expect(cleared.code).toBe(0);
    expect(cleared.out).toMatch(
      /^cleared: run nightly_sales@2026-11-28 reopened \(clean, summary, dashboard to run again\)\n/,
    );
    expect(cleared.out).toContain('status:         queued');
    const run = await h.store.get(await h.pipelines.runId('nightly_sales', '2026-11-28'));
    expect(run?.audit?.at(-1)).toMatchObject({ action: 'reopen', by: ACTOR });

    await h.drain();
    const done = await h.kaj('runs', 'nightly_sales');
    expect(row(done.out, '2026-11-28')).toEqual(['2026-11-28', 'succeeded', 'ok', 'ok#2', 'ok', 'ok#2', 'ok#2']);
    const again = await h.kaj('clear', 'nightly_sales', '--date', '2026-11-28', '--failed');
    expect(again).toMatchObject({ code: 1, err: 'kaj: the run of 2026-11-28 has no failed node to clear\n' });
  });

  it('cancel asks for --yes off a terminal, then cancels the run', async () => {
    const h = await setup();
    await h.kaj('trigger', 'nightly_sales', '--date', '2026-11-28');
    const refused = await h.kaj('cancel', 'nightly_sales', '--date', '2026-11-28');
    expect(refused.code).toBe(EXIT.usage);
    expect(refused.err).toContain('refusing to cancel the run of nightly_sales for 2026-11-28 without --yes');
    const cancelled = await h.kaj('cancel', 'nightly_sales', '--date', '2026-11-28', '--yes');
    expect(cancelled.code).toBe(0);
    expect(cancelled.out).toMatch(/^cancelled: run nightly_sales@2026-11-28\n/);
    expect(cancelled.out).toMatch(/\n {2}extract\s+cancelled\s+1\s+-\s+-\n/);
    expect(row((await h.kaj('runs', 'nightly_sales')).out, '2026-11-28').slice(0, 3)).toEqual([
      '2026-11-28',
      'cancelled',
      'cancel',
    ]);
  });

  it('a bad date, range or option is a usage error naming its flag', async () => {
    const h = await setup();
    const date = await h.kaj('trigger', 'nightly_sales', '--date', '2026-13-01');
    expect(date).toMatchObject({
      code: EXIT.usage,
      err: 'kaj: --date: must be a date (YYYY-MM-DD), got "2026-13-01"\n',
    });
    const range = await h.kaj('backfill', 'nightly_sales', '--from', '2026-11-05', '--to', '2026-11-01');
    expect(range).toMatchObject({ code: EXIT.usage, err: 'kaj: --to: must not be before from\n' });
    const cap = await h.kaj(
      'backfill',
      'nightly_sales',
      '--from',
      '2026-11-01',
      '--to',
      '2026-11-02',
      '--max-active-runs',
      '2',
    );
    expect(cap.code).toBe(EXIT.usage);
    expect(cap.err).toMatch(/^kaj: --max-active-runs: must be an integer in \[1, 1\]/);
    const node = await h.kaj('clear', 'nightly_sales', '--date', '2026-11-28', '--failed', '--node', 'clean');
    expect(node).toMatchObject({
      code: EXIT.usage,
      err: expect.stringContaining('--node NODE (repeatable) or --failed'),
    });
    const from = await h.kaj('runs', 'nightly_sales', '--from', 'yesterday');
    expect(from).toMatchObject({ code: EXIT.usage, err: expect.stringMatching(/^kaj: --from: must be a date/) });
    expect(h.queue.sent).toEqual([]);
  });

  it('an unknown pipeline, or a date without a run, is a failure (exit 1) that says where to look', async () => {
    const h = await setup();
    for (const args of [
      ['show', 'nope'],
      ['runs', 'nope'],
      ['trigger', 'nope', '--date', '2026-11-28'],
      ['pause', 'nope'],
    ]) {
      const r = await h.kaj(...args);
      expect(r, args.join(' ')).toMatchObject({
        code: EXIT.failure,
        err: 'kaj: pipeline "nope" is not defined in this deployment (see kaj pipelines list)\n',
      });
    }
    const none = await h.kaj('show-run', 'nightly_sales', '--date', '2026-11-20');
    expect(none).toMatchObject({
      code: EXIT.failure,
      err: 'kaj: pipeline "nightly_sales" has no run for 2026-11-20 (see kaj pipelines runs nightly_sales)\n',
    });
  });
});
