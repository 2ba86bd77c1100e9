import { describe, expect, it } from 'vitest';
import { runStateOf } from '../../../shared/pipeline/view.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import type { HistoryEntry, HistoryEntryKind } from '../../../shared/workflow/history-store.js';

const record = (status: TaskRecord['status']) => ({ status }) as TaskRecord;
const entry = (key: string, kind: HistoryEntryKind, at: number) =>
  ({ run_id: 'r', key, kind, at, lease_token: 1 }) as HistoryEntry;

describe('runStateOf: a run is queued until it holds its slot', () => {
  it('queued before its admission, running after, its end state once ended', () => {
    expect(runStateOf(record('queued'), [])).toBe('queued');
    expect(runStateOf(record('waiting'), [])).toBe('queued');
    expect(runStateOf(record('running'), [])).toBe('running');
    expect(runStateOf(record('waiting'), [entry('admit#1', 'admit', 1)])).toBe('running');
    expect(runStateOf(record('failed'), [entry('admit#1', 'admit', 1)])).toBe('failed');
  });

  it('a reopened run is queued again until it takes a slot anew', () => {
    const first = [
      entry('admit#1', 'admit', 1),
      entry('child_start#x', 'child_start', 2),
      entry('reopen#1', 'reopen', 3),
    ];
    expect(runStateOf(record('waiting'), first)).toBe('queued');
    expect(runStateOf(record('waiting'), [...first, entry('admit#2', 'admit', 4)])).toBe('running');
  });

  it('without slots (no admission recorded), a node started since the opening means running', () => {
    expect(runStateOf(record('waiting'), [entry('child_start#x', 'child_start', 2)])).toBe('running');
  });
});
