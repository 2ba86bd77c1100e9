/**
 * `kaj --local schedules …` against a running local suite.runtime (emulators, consumers, scheduler):
 * put → list → show → pause → resume → trigger → backfill → delete, the --json shapes, and the
 * usage errors (exit 2 naming the spec field).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kajRunner, localStateDir, healthyScenarioSuite, untilStatus, waitFor } from './harness.js';

const suite = healthyScenarioSuite('schcli');
const { scenario, kaj } = suite;

/** Once a year (1 January, 00:00 UTC): nothing fires by the clock while the suite runs. */
const YEARLY = { type: 'fixable', cron: '0 0 1 1 *', payload: { n: 1 } };
const NAME = 'yearly-report';

describe('kaj schedules on a local runtime', () => {
  it('put → list → show → pause → resume → trigger → backfill → delete', async () => {
    // put: created, then the same spec is unchanged, from a file too.
    const created = await kaj(['schedules', 'put', NAME, '--local', '--spec', JSON.stringify(YEARLY)]);
    expect(created).toMatchObject({ code: 0, err: '' });
    expect(created.out).toMatch(
      new RegExp(`^created: schedule ${NAME} \\(active, next fire \\d{4}-01-01T00:00:00.000Z`),
    );
    writeFileSync(join(suite.dir, 'spec.json'), JSON.stringify(YEARLY));
    const replay = await kaj(['schedules', 'put', NAME, '--local', '--file', 'spec.json', '--json']);
    expect(replay.code).toBe(0);
    const replayed = JSON.parse(replay.out);
    expect(replayed.result).toBe('unchanged');
    expect(replayed.schedule).toMatchObject({ name: NAME, owner: 'operator', source: 'api', state: 'active' });

    // list: text and JSON.
    const list = await kaj(['schedules', 'list', '--local']);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^NAME\s+STATE\s+TYPE\s+WHEN\s+TIMEZONE\s+NEXT FIRE \(UTC\)\s+LAST OUTCOME$/m);
    expect(list.out).toMatch(
      new RegExp(`^${NAME}\\s+active\\s+fixable\\s+cron 0 0 1 1 \\*\\s+UTC\\s+\\d{4}-01-01T00:00:00.000Z\\s+-$`, 'm'),
    );
    const listed = JSON.parse((await kaj(['schedules', 'list', '--local', '--json'])).out);
    expect(listed).toEqual({
      items: [
        {
          name: NAME,
          owner: 'operator',
          source: 'api',
          state: 'active',
          type: 'fixable',
          when: 'cron 0 0 1 1 *',
          timezone: 'UTC',
          next_fire_time: expect.stringMatching(/^\d{4}-01-01T00:00:00.000Z$/),
        },
      ],
      cursor: null,
    });

    // show: the spec and the next 5 times.
    const show = await kaj(['schedules', 'show', NAME, '--local']);
    expect(show.code).toBe(0);
    expect(show.out).toMatch(/^state:\s+active$/m);
    expect(show.out).toMatch(/^ {2}cron:\s+0 0 1 1 \*$/m);
    expect(show.out).toMatch(/^ {2}payload:\s+\{"n":1\}$/m);
    expect(show.out.match(/^ {2}\d{4}-01-01T00:00:00.000Z {2}\(in \d+d\)$/gm)).toHaveLength(5);
    expect(show.out).toMatch(/recent runs \(newest last\):\n {2}none\n$/);

    // pause with a note, resume.
    const paused = await kaj(['schedules', 'pause', NAME, '--local', '--note', 'audit freeze', '--json']);
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.out)).toMatchObject({ name: NAME, state: 'paused', pause_note: 'audit freeze' });
    expect((await kaj(['schedules', 'show', NAME, '--local'])).out).toMatch(
      /^state:\s+paused since .*: "audit freeze"$/m,
    );
    expect((await kaj(['schedules', 'list', '--local'])).out).toMatch(new RegExp(`^${NAME}\\s+paused\\s+`, 'm'));
    const resumed = await kaj(['schedules', 'resume', NAME, '--local']);
    expect(resumed.code).toBe(0);
    expect(resumed.out).toMatch(new RegExp(`^resumed: schedule ${NAME}, next fire \\d{4}-01-01T00:00:00.000Z`));

    // trigger: a task now, run by the local consumers; show then names it with its status.
    const trig = await kaj(['schedules', 'trigger', NAME, '--local', '--json']);
    expect(trig.code).toBe(0);
    const run = JSON.parse(trig.out);
    expect(run).toEqual({
      run_key: `${NAME}@${run.scheduled_time}`,
      scheduled_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      task_id: expect.stringMatching(/^t_[0-9a-f]{32}$/),
      created: true,
    });
    const [task] = await untilStatus(suite.runtime, [run.task_id], 'succeeded');
    expect(task).toMatchObject({ type: 'fixable', payload: { n: 1 } });
    const view = await waitFor('the run to show as succeeded', async () => {
      const v = JSON.parse((await kaj(['schedules', 'show', NAME, '--local', '--json'])).out);
      return v.recent_runs[0]?.task_status === 'succeeded' ? v : undefined;
    });
    expect(view.recent_runs).toEqual([
      expect.objectContaining({ kind: 'trigger', outcome: 'created', task_id: run.task_id, task_status: 'succeeded' }),
    ]);
    expect(view.last_run).toEqual({ task_id: run.task_id, scheduled_time: run.scheduled_time });
    const shown = (await kaj(['schedules', 'show', NAME, '--local'])).out;
    expect(shown).toMatch(new RegExp(`trigger\\s+created\\s+${run.task_id}\\s+succeeded`));
    const text = await kaj(['schedules', 'trigger', NAME, '--local']);
    expect(text.out).toMatch(new RegExp(`^created: run ${NAME}@\\S+, task t_[0-9a-f]{32}\\n$`));

    // backfill: each past time once; a second, wider backfill finds them there.
    const first = await kaj([
      'schedules',
      'backfill',
      NAME,
      '--local',
      '--from',
      '2023-01-01T00:00:00Z',
      '--to',
      '2024-06-01T00:00:00Z',
    ]);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(new RegExp(`^${NAME}@2023-01-01T00:00:00.000Z\\s+t_\\w+\\s+created$`, 'm'));
    expect(first.out).toMatch(new RegExp(`^${NAME}@2024-01-01T00:00:00.000Z\\s+t_\\w+\\s+created$`, 'm'));
    expect(first.out).toMatch(/2 time\(s\): 2 created, 0 already there\n$/);
    const second = await kaj([
      'schedules',
      'backfill',
      NAME,
      '--local',
      '--from',
      '2022-06-01T00:00:00Z',
      '--to',
      '2025-06-01T00:00:00Z',
      '--json',
    ]);
    expect(second.code).toBe(0);
    const { runs } = JSON.parse(second.out);
    expect(runs.map((r: { run_key: string; created: boolean }) => [r.run_key, r.created])).toEqual([
      [`${NAME}@2023-01-01T00:00:00.000Z`, false],
      [`${NAME}@2024-01-01T00:00:00.000Z`, false],
      [`${NAME}@2025-01-01T00:00:00.000Z`, true],
    ]);
    await untilStatus(
      suite.runtime,
      runs.map((r: { task_id: string }) => r.task_id),
      'succeeded',
    );

    // delete: gone (the tasks of its runs are left alone).
    const deleted = await kaj(['schedules', 'delete', NAME, '--local', '--yes', '--json']);
    expect(deleted.code).toBe(0);
    expect(JSON.parse(deleted.out)).toEqual({ name: NAME, deleted: true });
    const gone = await kaj(['schedules', 'show', NAME, '--local']);
    expect(gone).toMatchObject({ code: 1, out: '' });
    expect(gone.err).toMatch(new RegExp(`schedule "${NAME}" not found`));
    expect((await suite.runtime.kaj.store.get(run.task_id))?.status).toBe('succeeded');
    expect(JSON.parse((await kaj(['schedules', 'list', '--local', '--json'])).out).items).toEqual([]);
  });

  it.each([
    [{ ...YEARLY, payload: { n: 'x' } }, /kaj: error: payload\.n: /],
    [{ ...YEARLY, cron: '0 0 32 1 *' }, /kaj: error: cron: /],
    [{ type: 'fixable' }, /kaj: error: cron: give exactly one of cron, every or at/],
    [{ ...YEARLY, timezone: 'Mars/Olympus' }, /kaj: error: timezone: must be an IANA time zone/],
    [{ ...YEARLY, type: 'no_such_type' }, /kaj: error: type: unknown task type "no_such_type"/],
  ])('an invalid spec is a usage error naming its field: %j', async (spec, message) => {
    const r = await kaj(['schedules', 'put', 'bad-spec', '--local', '--spec', JSON.stringify(spec)]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(r.out).toBe('');
    expect((await kaj(['schedules', 'show', 'bad-spec', '--local'])).code).toBe(1);
  });

  it.each([
    [['schedules', 'show', '--local'], /missing required argument 'name'/],
    [['schedules', 'put', 'x', '--local'], /give the spec: --file PATH/],
    [['schedules', 'put', 'x', '--local', '--spec', '{bad'], /--spec <json>.*not valid JSON/],
    [['schedules', 'put', 'x', '--local', '--file', 'nope.json'], /--file nope.json: cannot read it/],
    [['schedules', 'backfill', 'x', '--local', '--from', '2024-01-01T00:00:00Z'], /required option '--to <time>'/],
    [
      ['schedules', 'list', '--local', '--cursor', 'garbage'],
      /--cursor "garbage" is not a cursor kaj schedules list printed/,
    ],
  ])('kaj %j: exit 2', async (args, message) => {
    const r = await kaj(args as string[]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(r.out).toBe('');
  });

  it('a deployment without a schedules table says so (exit 1)', async () => {
    const old = localStateDir(suite.runtime);
    writeFileSync(
      join(old.dir, '.kaj', 'local.json'),
      JSON.stringify({
        pid: process.pid,
        endpoints: suite.runtime.endpoints,
        resources: { ...suite.runtime.resources, tableName: 'no-schedules-here-tasks' },
      }),
    );
    const r = await kajRunner(old.dir, { registry: async () => scenario.registry() })(['schedules', 'list', '--local']);
    old.remove();
    expect(r).toMatchObject({ code: 1, out: '' });
    expect(r.err).toMatch(/has no schedules table no-schedules-here-schedules/);
  });
});
