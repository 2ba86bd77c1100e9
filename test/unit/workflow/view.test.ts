import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../../shared/workflow/history-store.js';
import { stepsView } from '../../../shared/workflow/view.js';

const T0 = Date.UTC(2026, 10, 28, 9, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const entry = (e: Omit<HistoryEntry, 'run_id' | 'lease_token'>): HistoryEntry => ({
  run_id: 'r',
  lease_token: 1,
  ...e,
});
const oops = { name: 'Error', message: '503', retryable: true };

describe('Function: stepsView', () => {
  it('shows steps and sleeps in the order they started, with their status', () => {
    const entries = [
      entry({ key: 'step#b', kind: 'step', at: T0 + 30, started_at: T0 + 20, attempt: 1, value: { ok: true } }),
      entry({
        key: 'fail#c#1',
        kind: 'step_failure',
        at: T0 + 40,
        started_at: T0 + 35,
        attempt: 1,
        error: oops,
        until: T0 + 2_000,
      }),
      entry({ key: 'step#a', kind: 'step', at: T0 + 10, started_at: T0, attempt: 1, value: 'x' }),
      entry({ key: 'sleep#nap', kind: 'sleep', at: T0 + 50, until: T0 + 60_000 }),
      entry({
        key: 'fail#d#1',
        kind: 'step_failure',
        at: T0 + 60,
        started_at: T0 + 55,
        attempt: 1,
        error: oops,
        until: T0 + 70,
      }),
      entry({
        key: 'step#d',
        kind: 'step',
        at: T0 + 90,
        started_at: T0 + 80,
        attempt: 2,
        error: { ...oops, retryable: false },
      }),
    ];
    expect(stepsView(entries, T0 + 1_000)).toEqual([
      {
        name: 'a',
        kind: 'step',
        status: 'succeeded',
        attempts: 1,
        started_at: iso(T0),
        ended_at: iso(T0 + 10),
        result_bytes: 3,
      },
      {
        name: 'b',
        kind: 'step',
        status: 'succeeded',
        attempts: 1,
        started_at: iso(T0 + 20),
        ended_at: iso(T0 + 30),
        result_bytes: 11,
      },
      {
        name: 'c',
        kind: 'step',
        status: 'retrying',
        attempts: 1,
        started_at: iso(T0 + 35),
        error: oops,
        next_attempt_at: iso(T0 + 2_000),
      },
      { name: 'nap', kind: 'sleep', status: 'sleeping', started_at: iso(T0 + 50), until: iso(T0 + 60_000) },
      {
        name: 'd',
        kind: 'step',
        status: 'failed',
        attempts: 2,
        started_at: iso(T0 + 55),
        ended_at: iso(T0 + 90),
        error: { ...oops, retryable: false },
      },
    ]);
    expect(stepsView(entries, T0 + 60_000).find((s) => s.name === 'nap')?.status).toBe('done');
  });

  it('an empty history has no steps', () => {
    expect(stepsView([], T0)).toEqual([]);
  });
});
