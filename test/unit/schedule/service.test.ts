import { describe, expect, it } from 'vitest';
import {
  ScheduleConflictError,
  ScheduleLimitReachedError,
  ScheduleNotFoundError,
  ScheduleValidationError,
} from '../../../shared/schedule/errors.js';
import { CODE_OWNER } from '../../../shared/schedule/model.js';
import type { SchedulerSettings } from '../../../shared/schedule/settings.js';
import { LEGACY_RUN_MARGIN_MS, legacyRunTaskId, runKeyOf, runTaskId } from '../../../shared/schedule/tick.js';
import { jitterOffsetMs } from '../../../shared/schedule/timing.js';
import { OWNER } from '../../../testing/fixtures.js';
import { scheduleKaj } from '../../support/schedule-kaj.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const GRACE = 150 * SECOND;
const iso = (t: number) => new Date(t).toISOString();
const OTHER = { owner: 'someone-else' } as const;
const OPERATOR = undefined;

/** A body every 10 minutes. */
const body = (o: Record<string, unknown> = {}) => ({ every: '10m', type: 'echo', payload: { value: 1 }, ...o });

const setup = (scheduling: Partial<SchedulerSettings> = {}, start = T0 + MINUTE) => scheduleKaj(scheduling, start);

async function rejects<E extends Error>(p: Promise<unknown>, type: new (...args: never[]) => E): Promise<E> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(type);
  return err as E;
}

describe('ScheduleService: put', () => {
  it('PUT twice with the same body: created, then unchanged (version kept)', async () => {
    const s = setup();
    const first = await s.service.put('nightly', body(), OWNER);
    expect(first).toMatchObject({ created: true, changed: true });
    expect(first.view).toMatchObject({ name: 'nightly', owner: OWNER.owner, source: 'api', state: 'active' });
    const version = s.stored('nightly').version;
    const writes = s.schedules.writes;

    // The same body, with its defaults spelled out and its keys in another order.
    const again = await s.service.put(
      'nightly',
      { payload: { value: 1 }, type: 'echo', overlap: 'forbid', misfire: 'skip', every: '10m', timezone: 'UTC' },
      OWNER,
    );
    expect(again).toMatchObject({ created: false, changed: false });
    expect(s.stored('nightly').version).toBe(version);
    expect(s.schedules.writes).toBe(writes);
  });

  it('a new schedule starts at its next time, due at its fire moment', async () => {
    const s = setup();
    await s.service.put('nightly', body(), OWNER);
    const r = s.stored('nightly');
    expect(r).toMatchObject({ state: 'active', fired: 0, missed: 0, next_time: T0 + 10 * MINUTE, version: 1 });
    expect(r.due_at).toBe(T0 + 10 * MINUTE);
  });

  it('a changed spec takes effect at the next fire (the old next time replaced)', async () => {
    const s = setup();
    await s.service.put('nightly', body(), OWNER);
    const version = s.stored('nightly').version;
    const changed = await s.service.put('nightly', body({ every: '15m', payload: { value: 2 } }), OWNER);
    expect(changed).toMatchObject({ created: false, changed: true });
    const r = s.stored('nightly');
    expect(r.version).toBe(version + 1);
    expect(r.next_time).toBe(T0 + 15 * MINUTE);
    expect(r.due_at).toBe(T0 + 15 * MINUTE);
    expect(changed.view.next_times[0]).toBe(iso(T0 + 15 * MINUTE));

    // The old time (T0 + 10 min) no longer fires; the new one does, with the new payload.
    s.clock.set(T0 + 10 * MINUTE);
    expect((await s.ticker.tick()).created).toBe(0);
    s.clock.set(T0 + 15 * MINUTE);
    expect((await s.ticker.tick()).created).toBe(1);
    expect(s.runs('nightly').map((t) => [t.scheduled_time, t.payload])).toEqual([
      [iso(T0 + 15 * MINUTE), { value: 2 }],
    ]);
  });

  it('a changed spec keeps state and history', async () => {
    const s = setup();
    await s.service.put('nightly', body(), OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    await s.service.pause('nightly', 'maintenance', OWNER);
    await s.service.put('nightly', body({ every: '20m' }), OWNER);
    const r = s.stored('nightly');
    expect(r).toMatchObject({ state: 'paused', pause_note: 'maintenance', fired: 1 });
    expect(r.recent).toHaveLength(1);
    expect(r.due_at).toBeUndefined();
  });

  it('a changed limit already reached finishes the schedule', async () => {
    const s = setup();
    await s.service.put('nightly', body(), OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    await s.service.put('nightly', body({ limit: 1 }), OWNER);
    expect(s.stored('nightly')).toMatchObject({ state: 'finished' });
    expect(s.stored('nightly').next_time).toBeUndefined();
    expect(s.stored('nightly').due_at).toBeUndefined();
  });

  it('an invalid body is a ScheduleValidationError naming the field, and nothing is stored', async () => {
    const s = setup();
    const err = await rejects(s.service.put('bad', body({ payload: {} }), OWNER), ScheduleValidationError);
    expect(err.field).toBe('payload.value');
    await rejects(s.service.put('bad name', body(), OWNER), ScheduleValidationError);
    expect(s.schedules.items.size).toBe(0);
  });
});

describe('ScheduleService: concurrent writers', () => {
  /** Makes the next `n` writes find the schedule changed by someone else (its version bumped). */
  function interfere(s: ReturnType<typeof setup>, n: number): void {
    let left = n;
    s.schedules.beforeWrite = (name) => {
      if (left <= 0) return;
      left -= 1;
      const r = s.schedules.items.get(name);
      if (r !== undefined) s.schedules.items.set(name, { ...r, version: r.version + 1 });
    };
  }

  it('a change that loses to another writer reads again and applies to what it finds', async () => {
    const s = setup();
    await s.service.put('c', body(), OWNER);
    const version = s.stored('c').version;
    interfere(s, 1);
    await s.service.pause('c', 'note', OWNER);
    expect(s.stored('c')).toMatchObject({ state: 'paused', version: version + 2 });
    interfere(s, 1);
    await s.service.put('c', body({ every: '5m' }), OWNER);
    expect(s.stored('c').spec.every_ms).toBe(5 * MINUTE);
  });

  it('a change that keeps losing gives up with concurrent_change', async () => {
    const s = setup();
    await s.service.put('c', body(), OWNER);
    interfere(s, 100);
    const err = await rejects(s.service.pause('c', undefined, OWNER), ScheduleConflictError);
    expect(err.reason).toBe('concurrent_change');
    expect(s.stored('c').state).toBe('active');
  });

  it('a tick whose write loses to an API change counts a conflict; the next tick makes no second task', async () => {
    const s = setup();
    await s.service.put('c', body({ overlap: 'allow' }), OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    interfere(s, 1);
    const report = await s.ticker.tick();
    expect(report).toMatchObject({ created: 1, conflicts: 1 });
    s.schedules.beforeWrite = undefined;
    s.clock.advance(30 * SECOND);
    const again = await s.ticker.tick();
    expect(again).toMatchObject({ created: 0, replayed: 1, conflicts: 0 });
    expect(s.runs('c')).toHaveLength(1);
    expect(s.stored('c').next_time).toBe(T0 + 20 * MINUTE);
  });
});

describe('ScheduleService: owners', () => {
  it("another owner's schedule: get and delete are 404, PUT is a name_taken conflict", async () => {
    const s = setup();
    await s.service.put('mine', body(), OWNER);
    await rejects(s.service.get('mine', OTHER), ScheduleNotFoundError);
    await rejects(s.service.delete('mine', OTHER), ScheduleNotFoundError);
    await rejects(s.service.pause('mine', undefined, OTHER), ScheduleNotFoundError);
    await rejects(s.service.trigger('mine', OTHER), ScheduleNotFoundError);
    const err = await rejects(s.service.put('mine', body({ every: '5m' }), OTHER), ScheduleConflictError);
    expect(err.reason).toBe('name_taken');
    // Not even the same body passes.
    await rejects(s.service.put('mine', body(), OTHER), ScheduleConflictError);
    expect(s.stored('mine').owner).toBe(OWNER.owner);
    expect(s.stored('mine').spec.every_ms).toBe(10 * MINUTE);
    // The owner and an operator see it.
    await expect(s.service.get('mine', OWNER)).resolves.toMatchObject({ name: 'mine' });
    await expect(s.service.get('mine', OPERATOR)).resolves.toMatchObject({ name: 'mine' });
  });

  it('a missing schedule is a ScheduleNotFoundError', async () => {
    const s = setup();
    await rejects(s.service.get('nope', OWNER), ScheduleNotFoundError);
    await rejects(s.service.delete('nope', OPERATOR), ScheduleNotFoundError);
  });

  it('list: a caller sees its own schedules and those declared in code; an operator sees all', async () => {
    const s = setup();
    await s.service.put('a-mine', body(), OWNER);
    await s.service.put('b-theirs', body(), OTHER);
    await s.service.syncDeclared([
      { type: 'echo', declaration: { name: 'c-code', every: '1h', payload: { value: 1 } } },
    ]);
    const names = async (caller: typeof OWNER | undefined) => (await s.service.list(caller)).items.map((i) => i.name);
    expect(await names(OWNER)).toEqual(['a-mine', 'c-code']);
    expect(await names(OPERATOR)).toEqual(['a-mine', 'b-theirs', 'c-code']);
    const [summary] = (await s.service.list(OWNER)).items;
    expect(summary).toMatchObject({ type: 'echo', when: 'every 10m', next_fire_time: iso(T0 + 10 * MINUTE) });
  });

  it('delete by the owner removes the schedule; runs already created stay', async () => {
    const s = setup();
    await s.service.put('gone', body(), OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    await s.service.delete('gone', OWNER);
    expect(s.schedules.items.has('gone')).toBe(false);
    expect(s.runs('gone')).toHaveLength(1);
    s.clock.set(T0 + 20 * MINUTE);
    expect((await s.ticker.tick()).due).toBe(0);
  });
});

describe('ScheduleService: schedules per owner (maxPerOwner)', () => {
  it('a create over the cap is a ScheduleLimitReachedError naming name (schedule_limit_reached), nothing stored', async () => {
    const s = setup({ maxPerOwner: 2 });
    await s.service.put('a', body(), OWNER);
    await s.service.put('b', body(), OWNER);
    const err = await rejects(s.service.put('c', body(), OWNER), ScheduleLimitReachedError);
    expect(err).toBeInstanceOf(ScheduleValidationError);
    expect(err).toMatchObject({ field: 'name', code: 'schedule_limit_reached', schedule: 'c', max: 2 });
    expect(err.message).toMatch(/^name: you own 2 schedules/);
    expect(s.schedules.items.has('c')).toBe(false);
    expect(s.schedules.owners.get(OWNER.owner)).toBe(2);
    // Another owner has slots of its own.
    await s.service.put('d', body(), OTHER);
    expect(s.schedules.owners.get(OTHER.owner)).toBe(1);
  });

  it('replacing a schedule (changed or not) takes no slot: at the cap it still succeeds', async () => {
    const s = setup({ maxPerOwner: 1 });
    await s.service.put('a', body(), OWNER);
    expect((await s.service.put('a', body(), OWNER)).changed).toBe(false);
    expect(await s.service.put('a', body({ every: '20m' }), OWNER)).toMatchObject({ created: false, changed: true });
    expect(s.schedules.owners.get(OWNER.owner)).toBe(1);
    expect(s.stored('a').counted).toBe(true);
  });

  it('delete gives the slot back (by the owner or an operator); a create then succeeds', async () => {
    const s = setup({ maxPerOwner: 1 });
    await s.service.put('a', body(), OWNER);
    await rejects(s.service.put('b', body(), OWNER), ScheduleLimitReachedError);
    await s.service.delete('a', OWNER);
    expect(s.schedules.owners.get(OWNER.owner)).toBe(0);
    await s.service.put('b', body(), OWNER);
    await s.service.delete('b', OPERATOR);
    expect(s.schedules.owners.get(OWNER.owner)).toBe(0);
    await s.service.put('c', body(), OWNER);
    expect(s.schedules.owners.get(OWNER.owner)).toBe(1);
  });

  it('a create that fails leaves no count behind (a store outage; a name taken by another owner)', async () => {
    const s = setup({ maxPerOwner: 1 });
    s.schedules.failNext.put = new Error('outage');
    await expect(s.service.put('a', body(), OWNER)).rejects.toThrow('outage');
    await s.service.put('taken', body(), OTHER);
    await rejects(s.service.put('taken', body(), OWNER), ScheduleConflictError);
    expect(s.schedules.owners.get(OWNER.owner) ?? 0).toBe(0);
    await s.service.put('a', body(), OWNER);
    expect(s.schedules.owners.get(OWNER.owner)).toBe(1);
  });

  it('two concurrent creates at max - 1: exactly one is stored', async () => {
    const s = setup({ maxPerOwner: 2 });
    await s.service.put('a', body(), OWNER);
    const results = await Promise.allSettled([s.service.put('b', body(), OWNER), s.service.put('c', body(), OWNER)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected');
    expect((refused as PromiseRejectedResult).reason).toBeInstanceOf(ScheduleLimitReachedError);
    expect([...s.schedules.items.keys()].filter((n) => n !== 'a')).toHaveLength(1);
    expect(s.schedules.owners.get(OWNER.owner)).toBe(2);
  });

  it("an operator's schedules and those declared in code take no slot, and their deletes give none back", async () => {
    const s = setup({ maxPerOwner: 1 });
    await s.service.put('by-operator', body(), OPERATOR);
    await s.service.syncDeclared([
      { type: 'echo', declaration: { name: 'from-code', every: '10m', payload: { value: 1 } } },
    ]);
    await s.service.put('mine', body(), OWNER);
    expect(s.stored('by-operator').counted).toBeUndefined();
    await s.service.delete('by-operator', OPERATOR);
    await s.service.delete('from-code', OPERATOR);
    expect(s.schedules.owners.get(OWNER.owner)).toBe(1);
    expect(s.schedules.owners.has('operator')).toBe(false);
    expect(s.schedules.owners.has(CODE_OWNER)).toBe(false);
  });

  it('a schedule stored before the cap was enforced (no counted flag): its delete gives no slot back', async () => {
    const s = setup({ maxPerOwner: 1 });
    await s.service.put('old', body(), OWNER);
    const { counted: _, ...legacy } = s.stored('old');
    s.schedules.items.set('old', legacy);
    s.schedules.owners.clear();
    await s.service.delete('old', OWNER);
    expect(s.schedules.owners.get(OWNER.owner) ?? 0).toBe(0);
  });
});

describe('ScheduleService: schedules declared in code', () => {
  const declared = (o: Record<string, unknown> = {}) => [
    { type: 'echo', declaration: { name: 'from-code', every: '10m', payload: { value: 1 }, ...o } },
  ];

  it('visible to API callers, read-only for them; an operator may pause and delete it', async () => {
    const s = setup();
    await s.service.syncDeclared(declared());
    const view = await s.service.get('from-code', OWNER);
    expect(view).toMatchObject({ owner: CODE_OWNER, source: 'code' });

    const pause = await rejects(s.service.pause('from-code', 'no', OWNER), ScheduleConflictError);
    expect(pause.reason).toBe('declared_in_code');
    const del = await rejects(s.service.delete('from-code', OWNER), ScheduleConflictError);
    expect(del.reason).toBe('declared_in_code');
    expect((await rejects(s.service.trigger('from-code', OWNER), ScheduleConflictError)).reason).toBe(
      'declared_in_code',
    );
    const put = await rejects(s.service.put('from-code', body(), OWNER), ScheduleConflictError);
    expect(put.reason).toBe('declared_in_code');
    expect(s.stored('from-code').state).toBe('active');

    await expect(s.service.pause('from-code', 'ops', OPERATOR)).resolves.toMatchObject({ state: 'paused' });
    await s.service.delete('from-code', OPERATOR);
    expect(s.schedules.items.has('from-code')).toBe(false);
  });

  it('syncDeclared creates, updates a changed declaration (state kept), deletes a removed one', async () => {
    const s = setup();
    expect(await s.service.syncDeclared(declared())).toEqual({
      created: ['from-code'],
      updated: [],
      deleted: [],
      conflicts: [],
    });
    // The same declarations again: nothing to do.
    const writes = s.schedules.writes;
    expect(await s.service.syncDeclared(declared())).toEqual({ created: [], updated: [], deleted: [], conflicts: [] });
    expect(s.schedules.writes).toBe(writes);

    await s.service.pause('from-code', 'held by ops', OPERATOR);
    const created = s.stored('from-code').created_at;
    expect(await s.service.syncDeclared(declared({ every: '15m' }))).toMatchObject({ updated: ['from-code'] });
    expect(s.stored('from-code')).toMatchObject({ state: 'paused', pause_note: 'held by ops', created_at: created });
    expect(s.stored('from-code').spec.every_ms).toBe(15 * MINUTE);

    expect(await s.service.syncDeclared([])).toMatchObject({ deleted: ['from-code'] });
    expect(s.schedules.items.has('from-code')).toBe(false);
  });

  it('syncDeclared leaves an API-made schedule of the same name alone (conflict listed), and never deletes it', async () => {
    const s = setup();
    await s.service.put('from-code', body({ every: '5m' }), OWNER);
    const before = s.stored('from-code');
    expect(await s.service.syncDeclared(declared())).toEqual({
      created: [],
      updated: [],
      deleted: [],
      conflicts: ['from-code'],
    });
    expect(s.stored('from-code')).toEqual(before);
    await s.service.syncDeclared([]);
    expect(s.stored('from-code')).toEqual(before);
  });

  it('syncDeclared refuses a name declared twice', async () => {
    const s = setup();
    const err = await rejects(s.service.syncDeclared([...declared(), ...declared()]), ScheduleValidationError);
    expect(err.field).toBe('name');
  });
});

describe('ScheduleService: pause and resume', () => {
  it('pause with a note: no runs while paused; leaves the due index', async () => {
    const s = setup();
    await s.service.put('p', body(), OWNER);
    const view = await s.service.pause('p', 'deploy freeze', OWNER);
    expect(view).toMatchObject({ state: 'paused', pause_note: 'deploy freeze', paused_at: iso(T0 + MINUTE) });
    expect(s.stored('p').due_pk).toBeUndefined();
    for (let m = 10; m <= 40; m += 10) {
      s.clock.set(T0 + m * MINUTE);
      const report = await s.ticker.tick();
      expect(report.due).toBe(0);
    }
    expect(s.runs('p')).toEqual([]);
  });

  it('a note too long is refused', async () => {
    const s = setup();
    await s.service.put('p', body(), OWNER);
    const err = await rejects(s.service.pause('p', 'x'.repeat(501), OWNER), ScheduleValidationError);
    expect(err.field).toBe('note');
  });

  it('resume (skip): the times missed while paused are dropped, counted; later times run', async () => {
    const s = setup();
    await s.service.put('p', body(), OWNER);
    await s.service.pause('p', undefined, OWNER);
    s.clock.set(T0 + 35 * MINUTE);
    const view = await s.service.resume('p', OWNER);
    expect(view.state).toBe('active');
    expect(view.pause_note).toBeUndefined();
    expect(view.paused_at).toBeUndefined();
    await s.ticker.tick();
    expect(s.runs('p')).toEqual([]);
    expect(s.stored('p')).toMatchObject({ missed: 3, next_time: T0 + 40 * MINUTE });
    s.clock.set(T0 + 40 * MINUTE);
    await s.ticker.tick();
    expect(s.runTimes('p')).toEqual([iso(T0 + 40 * MINUTE)]);
  });

  it('resume (run_once): one run for the latest time missed while paused', async () => {
    const s = setup();
    await s.service.put('p', body({ misfire: 'run_once' }), OWNER);
    await s.service.pause('p', undefined, OWNER);
    s.clock.set(T0 + 35 * MINUTE);
    await s.service.resume('p', OWNER);
    await s.ticker.tick();
    expect(s.runTimes('p')).toEqual([iso(T0 + 30 * MINUTE)]);
    expect(s.stored('p')).toMatchObject({ missed: 2, next_time: T0 + 40 * MINUTE });
  });

  it('resume (catch_up): every time missed while paused, oldest first', async () => {
    const s = setup();
    await s.service.put('p', body({ misfire: 'catch_up', overlap: 'allow' }), OWNER);
    await s.service.pause('p', undefined, OWNER);
    s.clock.set(T0 + 35 * MINUTE);
    await s.service.resume('p', OWNER);
    await s.ticker.tick();
    expect(s.runTimes('p')).toEqual([10, 20, 30].map((m) => iso(T0 + m * MINUTE)));
  });

  it('resume of a schedule that is not paused changes nothing', async () => {
    const s = setup();
    await s.service.put('p', body(), OWNER);
    const version = s.stored('p').version;
    await s.service.resume('p', OWNER);
    expect(s.stored('p').version).toBe(version);
  });
});

describe('ScheduleService: trigger and backfill', () => {
  it('trigger: a task now, recorded with kind trigger, whatever the state', async () => {
    const s = setup({}, T0 + MINUTE + 7 * SECOND);
    await s.service.put('t', body(), OWNER);
    await s.service.pause('t', undefined, OWNER);
    const now = s.clock.now();
    const result = await s.service.trigger('t', OWNER);
    const key = runKeyOf('t', now);
    expect(result).toEqual({
      run_key: key,
      scheduled_time: iso(now),
      task_id: runTaskId(OWNER.owner, 't', now),
      created: true,
    });
    const task = s.store.items.get(result.task_id);
    expect(task).toMatchObject({ run_at: iso(now), status: 'queued', schedule: 't', owner: OWNER.owner });
    const r = s.stored('t');
    expect(r.recent).toEqual([
      expect.objectContaining({
        kind: 'trigger',
        outcome: 'created',
        task_id: result.task_id,
        scheduled_time: iso(now),
      }),
    ]);
    expect(r.last_run).toEqual({ task_id: result.task_id, scheduled_time: iso(now) });
    expect(r.fired).toBe(0);
    expect(r.state).toBe('paused');
  });

  it('backfill: each time of the range once; a second backfill creates nothing new', async () => {
    const s = setup();
    await s.service.put('b', body(), OWNER);
    const range = { from: iso(T0 - 30 * MINUTE), to: iso(T0) };
    const first = await s.service.backfill('b', range, OWNER);
    expect(first.runs.map((r) => [r.scheduled_time, r.created])).toEqual(
      [-30, -20, -10, 0].map((m) => [iso(T0 + m * MINUTE), true]),
    );
    expect(s.runTimes('b')).toEqual([-30, -20, -10, 0].map((m) => iso(T0 + m * MINUTE)));
    for (const t of s.runs('b')) expect(t.run_at).toBe(iso(T0 + MINUTE));
    expect(s.stored('b').recent.map((e) => e.kind)).toEqual(['backfill', 'backfill', 'backfill', 'backfill']);

    const writes = s.schedules.writes;
    const second = await s.service.backfill('b', range, OWNER);
    expect(second.runs.every((r) => !r.created)).toBe(true);
    expect(second.runs.map((r) => r.task_id)).toEqual(first.runs.map((r) => r.task_id));
    expect(s.runs('b')).toHaveLength(4);
    expect(s.stored('b').recent).toHaveLength(4);
    expect(s.schedules.writes).toBeLessThanOrEqual(writes + 1);
  });

  it('backfill: a time that already ran on schedule is not run again', async () => {
    const s = setup();
    await s.service.put('b', body(), OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    expect(s.runTimes('b')).toEqual([iso(T0 + 10 * MINUTE)]);
    s.clock.set(T0 + 25 * MINUTE);
    const result = await s.service.backfill('b', { from: iso(T0), to: iso(T0 + 20 * MINUTE) }, OWNER);
    expect(result.runs.map((r) => [r.scheduled_time, r.created])).toEqual([
      [iso(T0), true],
      [iso(T0 + 10 * MINUTE), false],
      [iso(T0 + 20 * MINUTE), true],
    ]);
    expect(s.runTimes('b')).toEqual([0, 10, 20].map((m) => iso(T0 + m * MINUTE)));
  });

  it('a schedule deleted and created again does not run a time that ran (backfill, ticker)', async () => {
    const s = setup();
    await s.service.put('again', body({ overlap: 'allow' }), OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    s.clock.set(T0 + 20 * MINUTE - 30 * SECOND);
    await s.ticker.tick(); // hands over T0 + 20 min, half a minute ahead
    expect(s.runTimes('again')).toEqual([iso(T0 + 10 * MINUTE), iso(T0 + 20 * MINUTE)]);
    const ids = s.runs('again').map((t) => t.task_id);

    await s.service.delete('again', OWNER);
    await s.service.put('again', body({ overlap: 'allow' }), OWNER);
    // The new instance's first time is T0 + 20 min, which the old one handed over already.
    await s.ticker.tick();
    s.clock.set(T0 + 25 * MINUTE);
    const result = await s.service.backfill('again', { from: iso(T0), to: iso(T0 + 20 * MINUTE) }, OWNER);
    expect(result.runs.map((r) => [r.scheduled_time, r.created])).toEqual([
      [iso(T0), true],
      [iso(T0 + 10 * MINUTE), false],
      [iso(T0 + 20 * MINUTE), false],
    ]);
    expect(s.runTimes('again')).toEqual([0, 10, 20].map((m) => iso(T0 + m * MINUTE)));
    expect(s.runs('again').map((t) => t.task_id)).toEqual(expect.arrayContaining(ids));
  });

  it('the same name under another owner is another schedule: its runs are its own', async () => {
    const s = setup();
    await s.service.put('shared-name', body(), OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    await s.service.delete('shared-name', OWNER);
    await s.service.put('shared-name', body(), OTHER);
    s.clock.set(T0 + 15 * MINUTE);
    const result = await s.service.backfill(
      'shared-name',
      { from: iso(T0 + 10 * MINUTE), to: iso(T0 + 10 * MINUTE) },
      OTHER,
    );
    expect(result.runs).toEqual([expect.objectContaining({ created: true })]);
    expect(result.runs[0]?.task_id).toBe(runTaskId(OTHER.owner, 'shared-name', T0 + 10 * MINUTE));
  });

  it('a schedule created by an earlier version: a run made under its earlier id is not made again', async () => {
    const s = setup();
    await s.service.put('old', body(), OWNER);
    // As an earlier version stored it: a uid, from which it derived its runs' ids.
    const legacy = { ...s.stored('old'), uid: 'uid-before-upgrade' };
    s.schedules.items.set('old', legacy);
    // That version created the run of T0 + 10 min, and its tick died before the schedule write.
    const earlierId = legacyRunTaskId('uid-before-upgrade', runKeyOf('old', T0 + 10 * MINUTE));
    await s.kaj.submitter.submitRun({
      taskId: earlierId,
      runKey: runKeyOf('old', T0 + 10 * MINUTE),
      schedule: 'old',
      owner: OWNER.owner,
      scheduledTime: T0 + 10 * MINUTE,
      runAt: T0 + 10 * MINUTE,
      type: 'echo',
      payload: { value: 1 },
      priority: 'normal',
    });
    s.clock.set(T0 + 10 * MINUTE);
    const report = await s.ticker.tick();
    expect(report).toMatchObject({ created: 0, replayed: 1 });
    expect(s.runs('old').map((t) => t.task_id)).toEqual([earlierId]);
    expect(s.stored('old').last_run?.task_id).toBe(earlierId);
    // The first tick of this version bounds the look-ups: later times are created at once.
    const until = s.stored('old').legacy_runs_until;
    expect(until).toBe(T0 + 10 * MINUTE + 60 * SECOND + LEGACY_RUN_MARGIN_MS);
    s.finish(earlierId);
    s.clock.set(T0 + 20 * MINUTE);
    await s.ticker.tick();
    expect(s.runTimes('old')).toEqual([iso(T0 + 10 * MINUTE), iso(T0 + 20 * MINUTE)]);
    expect(s.store.items.has(runTaskId(OWNER.owner, 'old', T0 + 20 * MINUTE))).toBe(true);
    // Backfill over the earlier run finds it too.
    s.clock.set(T0 + 25 * MINUTE);
    const result = await s.service.backfill('old', { from: iso(T0 + 10 * MINUTE), to: iso(T0 + 10 * MINUTE) }, OWNER);
    expect(result.runs).toEqual([expect.objectContaining({ task_id: earlierId, created: false })]);
    expect(s.runs('old')).toHaveLength(2);
  });

  it('backfill: a range over maxBackfill, or reaching into the future, is refused (field to)', async () => {
    const s = setup({ maxBackfill: 5 });
    await s.service.put('b', body(), OWNER);
    // 6 times: T0 - 50 min … T0.
    const over = await rejects(
      s.service.backfill('b', { from: iso(T0 - 50 * MINUTE), to: iso(T0) }, OWNER),
      ScheduleValidationError,
    );
    expect(over.field).toBe('to');
    // 5 times are fine.
    await expect(s.service.backfill('b', { from: iso(T0 - 40 * MINUTE), to: iso(T0) }, OWNER)).resolves.toMatchObject({
      runs: { length: 5 },
    });
    const future = await rejects(
      s.service.backfill('b', { from: iso(T0), to: iso(T0 + 20 * MINUTE) }, OWNER),
      ScheduleValidationError,
    );
    expect(future.field).toBe('to');
    const backwards = await rejects(
      s.service.backfill('b', { from: iso(T0), to: iso(T0 - 20 * MINUTE) }, OWNER),
      ScheduleValidationError,
    );
    expect(backwards.field).toBe('to');
    const bad = await rejects(
      s.service.backfill('b', { from: 'yesterday', to: iso(T0) }, OWNER),
      ScheduleValidationError,
    );
    expect(bad.field).toBe('from');
  });
});

describe('ScheduleService: view', () => {
  it('the next 5 times, their fire times with the jitter offset, and the recent runs with task statuses', async () => {
    const s = setup();
    await s.service.put('v', body({ jitter: '1h' }), OWNER);
    const offset = jitterOffsetMs('v', 60 * MINUTE);
    const view = await s.service.get('v', OWNER);
    const times = [10, 20, 30, 40, 50].map((m) => T0 + m * MINUTE);
    expect(view.next_times).toEqual(times.map(iso));
    expect(view.next_fire_times).toEqual(times.map((t) => iso(t + offset)));
    expect(view.jitter_offset_seconds).toBe(offset / 1000);
    expect(view.spec).toMatchObject({ every: '10m', jitter: '1h', overlap: 'forbid', misfire: 'skip', type: 'echo' });
    expect(view.recent_runs).toEqual([]);
  });

  it('recent runs show what became of each task', async () => {
    const s = setup();
    await s.service.put('v', body(), OWNER);
    s.clock.set(T0 + 10 * MINUTE);
    await s.ticker.tick();
    s.clock.set(T0 + 20 * MINUTE);
    await s.ticker.tick(); // skipped_overlap: the first run is still queued
    const [first] = s.runs('v');
    let view = await s.service.get('v', OWNER);
    expect(view.recent_runs.map((e) => [e.outcome, e.task_status])).toEqual([
      ['created', 'queued'],
      ['skipped_overlap', undefined],
    ]);
    s.finish(first!.task_id);
    view = await s.service.get('v', OWNER);
    expect(view.recent_runs[0]?.task_status).toBe('succeeded');
    s.store.items.delete(first!.task_id);
    view = await s.service.get('v', OWNER);
    expect(view.recent_runs[0]?.task_status).toBe('expired');
    expect(view.last_run?.task_id).toBe(first!.task_id);
  });

  it('a finished schedule shows no next times', async () => {
    const s = setup();
    await s.service.put('once', { at: iso(T0 + 5 * MINUTE), type: 'echo', payload: { value: 1 } }, OWNER);
    expect((await s.service.get('once', OWNER)).next_times).toEqual([iso(T0 + 5 * MINUTE)]);
    s.clock.set(T0 + 5 * MINUTE);
    await s.ticker.tick();
    const view = await s.service.get('once', OWNER);
    expect(view.state).toBe('finished');
    expect(view.next_times).toEqual([]);
    expect(view.next_fire_times).toEqual([]);
  });

  it('an at time already past is refused through the API (at), and nothing is stored', async () => {
    const s = setup({}, T0 + 10 * MINUTE + GRACE);
    const err = await rejects(
      s.service.put('late', { at: iso(T0), type: 'echo', payload: { value: 1 } }, OWNER),
      ScheduleValidationError,
    );
    expect(err.field).toBe('at');
    expect(err.message).toMatch(/^at: 2026-01-01T00:00:00.000Z has passed/);
    expect(s.schedules.items.has('late')).toBe(false);
    // Now, or a moment ago, is past too; a moment ahead runs once.
    await rejects(s.service.put('late', { at: iso(s.clock.now()), type: 'echo' }, OWNER), ScheduleValidationError);
    await s.service.put('late', { at: iso(s.clock.now() + SECOND), type: 'echo', payload: { value: 1 } }, OWNER);
    expect(s.stored('late')).toMatchObject({ state: 'active', next_time: s.clock.now() + SECOND });
  });

  it('a one-time schedule whose time has passed: PUT again as it is changes nothing; a new past at is refused', async () => {
    const s = setup();
    const at = iso(T0 + 5 * MINUTE);
    await s.service.put('once', { at, type: 'echo', payload: { value: 1 } }, OWNER);
    s.clock.set(T0 + 5 * MINUTE);
    await s.ticker.tick();
    s.clock.set(T0 + 30 * MINUTE);
    await expect(s.service.put('once', { at, type: 'echo', payload: { value: 1 } }, OWNER)).resolves.toMatchObject({
      changed: false,
    });
    // Its description changed, its time not: accepted, still finished.
    await s.service.put('once', { at, type: 'echo', payload: { value: 1 }, description: 'done' }, OWNER);
    expect(s.stored('once').state).toBe('finished');
    const err = await rejects(
      s.service.put('once', { at: iso(T0 + 10 * MINUTE), type: 'echo', payload: { value: 1 } }, OWNER),
      ScheduleValidationError,
    );
    expect(err.field).toBe('at');
    expect(s.runs('once')).toHaveLength(1);
  });

  it('declared in code with an at time already past: stored finished, with a warning (a start is not stopped)', async () => {
    const s = setup({}, T0 + 10 * MINUTE + GRACE);
    const report = await s.service.syncDeclared([
      { type: 'echo', declaration: { name: 'late-code', at: iso(T0), payload: { value: 1 } } },
    ]);
    expect(report.created).toEqual(['late-code']);
    expect(s.stored('late-code').state).toBe('finished');
    expect(s.logger.entries.some((l) => l.level === 'warn' && /at time in the past/.test(l.message))).toBe(true);
  });
});
