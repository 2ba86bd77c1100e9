/**
 * The active-run slots of workflow types with `maxActiveRuns` (shared/workflow/active-runs.ts):
 * over the in-memory limits and task stores, which pass the same contracts as DynamoDB's.
 */
import { describe, expect, it } from 'vitest';
import { activeRunsKey, limitStoreActiveRuns } from '../../../shared/workflow/active-runs.js';
import { deadTaskRecord } from '../../../testing/fixtures.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';
import { MemoryTaskStore } from '../../../testing/memory-task-store.js';

const NOW = Date.parse('2026-12-01T00:00:00Z');
const run = (id: string, max = 2, leaseUntil = NOW + 86_400_000) => ({
  type: 'nightly',
  owner: 'kaj:code',
  runId: id,
  max,
  leaseUntil,
});

const ERROR = { name: 'E', message: 'x', retryable: false };

function slots() {
  const limits = new MemoryLimitStore();
  const tasks = new MemoryTaskStore();
  const active = limitStoreActiveRuns(limits, tasks, { now: () => NOW });
  const holders = async () => Object.keys((await limits.list())[0]?.holders ?? {}).sort();
  /** Runs that exist and are going (a holder whose run is missing is reclaimed as gone). */
  const live = async (...ids: string[]) => {
    for (const id of ids) await tasks.create(deadTaskRecord(id, NOW, ERROR, { status: 'waiting' }));
  };
  return { limits, tasks, active, holders, live };
}

describe('active-run slots', () => {
  it('grants up to max, refuses the next, and a run asking again keeps its slot', async () => {
    const s = slots();
    await s.live('r1', 'r2');
    expect(await s.active.admit(run('r1'))).toBe(true);
    expect(await s.active.admit(run('r2'))).toBe(true);
    expect(await s.active.admit(run('r1'))).toBe(true);
    expect(await s.active.admit(run('r3'))).toBe(false);
    expect(await s.holders()).toEqual(['r1', 'r2']);
    expect((await s.limits.list())[0]?.pk).toBe(activeRunsKey('nightly', 'kaj:code'));
  });

  it('a released slot goes to the next run', async () => {
    const s = slots();
    await s.live('r1');
    await s.active.admit(run('r1', 1));
    expect(await s.active.admit(run('r2', 1))).toBe(false);
    await s.active.release(run('r1', 1));
    expect(await s.active.admit(run('r2', 1))).toBe(true);
    expect(await s.holders()).toEqual(['r2']);
  });

  it('a full item: the slots of finished runs and of ended leases are reclaimed, live ones kept', async () => {
    const s = slots();
    await s.active.admit(run('t_finished', 3));
    await s.active.admit(run('t_live', 3));
    await s.active.admit(run('t_expired', 3, NOW - 1));
    await s.tasks.create(deadTaskRecord('t_finished', NOW, ERROR));
    await s.live('t_live', 't_expired');
    expect(await s.active.admit(run('t_new', 3))).toBe(true);
    expect(await s.holders()).toEqual(['t_live', 't_new']);
  });

  it('stays full while every holder is live', async () => {
    const s = slots();
    await s.active.admit(run('t_a', 1));
    await s.live('t_a');
    expect(await s.active.admit(run('t_b', 1))).toBe(false);
    expect(await s.holders()).toEqual(['t_a']);
  });
});

describe('active-run slots of runs that are gone', () => {
  it('a holder whose task no longer exists (expired) is reclaimed', async () => {
    const s = slots();
    await s.active.admit(run('t_gone', 1));
    expect(await s.active.admit(run('t_next', 1))).toBe(true);
    expect(await s.holders()).toEqual(['t_next']);
  });
});
