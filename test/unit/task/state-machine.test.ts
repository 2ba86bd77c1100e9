import { describe, expect, it } from 'vitest';
import { IllegalTransitionError } from '../../../shared/task/errors.js';
import { TASK_STATUSES, type TaskStatus } from '../../../shared/task/model.js';
import { isFinished, statusesAllowing, transition, type TaskEvent } from '../../../shared/task/state-machine.js';

const EVENTS: TaskEvent[] = ['claim', 'succeed', 'retry', 'suspend', 'fail', 'cancel', 'redrive'];

// The whole lifecycle, written out independently of the implementation's table.
const EXPECTED: Record<TaskStatus, Partial<Record<TaskEvent, TaskStatus>>> = {
  queued: { claim: 'running', cancel: 'cancelled', fail: 'failed' },
  retrying: { claim: 'running', cancel: 'cancelled', fail: 'failed' },
  running: {
    claim: 'running',
    succeed: 'succeeded',
    retry: 'retrying',
    suspend: 'waiting',
    fail: 'failed',
    cancel: 'cancelled',
  },
  waiting: { claim: 'running', cancel: 'cancelled', fail: 'failed' },
  succeeded: {},
  failed: { redrive: 'queued' },
  cancelled: {},
};

describe('Function: transition', () => {
  const cases = TASK_STATUSES.flatMap((from) => EVENTS.map((event) => ({ from, event, to: EXPECTED[from][event] })));

  it.each(cases.filter((c) => c.to !== undefined))('$from --$event--> $to', ({ from, event, to }) => {
    expect(transition(from, event)).toBe(to);
  });

  it.each(cases.filter((c) => c.to === undefined))('$from --$event--> is illegal', ({ from, event }) => {
    expect(() => transition(from, event, 't_x')).toThrow(IllegalTransitionError);
    try {
      transition(from, event, 't_x');
    } catch (err) {
      expect((err as IllegalTransitionError).taskId).toBe('t_x');
      expect((err as Error).message).toBe(`a ${from} task cannot ${event}`);
    }
  });
});

describe('Function: statusesAllowing', () => {
  it('derives the claimable statuses from the table', () => {
    expect(statusesAllowing('claim')).toEqual(['queued', 'running', 'retrying', 'waiting']);
    expect(statusesAllowing('redrive')).toEqual(['failed']);
  });
});

describe('Function: isFinished', () => {
  it.each(TASK_STATUSES)('%s', (s) => {
    expect(isFinished(s)).toBe(s === 'succeeded' || s === 'failed' || s === 'cancelled');
  });
});
