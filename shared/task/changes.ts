/**
 * Pure building blocks of task-record changes: outbox fields, expiry, attempt entries, the
 * "finished" and "failed" change sets. No I/O; every function takes `now` and the settings.
 * The writes themselves are in outbox.ts, claim.ts, outcome.ts, requests.ts and operations.
 */
import { DEFAULTS, type Priority } from '../config/resources.js';
import type { RuntimeSettings } from '../config/settings.js';
import type { TaskChanges } from './task-store.js';
import {
  outboxKey,
  type AttemptRecord,
  type ErrorInfo,
  type OutboxTarget,
  type TaskRecord,
  type TaskStatus,
} from './model.js';
import { statusesAllowing, transition } from './state-machine.js';

export const iso = (ms: number): string => new Date(ms).toISOString();

/** SQS's longest DelaySeconds, in ms: a longer delay waits in the table (the outbox). */
export const SQS_DELAY_MS = DEFAULTS.maxSqsDelaySeconds * 1000;

/** Statuses a message may claim from (a running task is only reclaimed after its lease). */
export const CLAIMABLE_FRESH: readonly TaskStatus[] = statusesAllowing('claim').filter((s) => s !== 'running');

/**
 * Outbox fields for a message owed to `target`, to be sent at `runAtMs`: due when the rest of
 * the delay fits in SQS's 15 minutes, or after `outboxGraceSeconds` (a send that failed, a dead
 * letter about to be written).
 */
export function outboxFields(
  taskId: string,
  target: OutboxTarget,
  priority: Priority,
  runAtMs: number,
  now: number,
  settings: Pick<RuntimeSettings, 'outboxGraceSeconds'>,
): Pick<TaskRecord, 'outbox_pk' | 'outbox_due'> {
  const due =
    target === 'queue' && runAtMs - now > SQS_DELAY_MS
      ? runAtMs - SQS_DELAY_MS
      : now + settings.outboxGraceSeconds * 1000;
  return { outbox_pk: outboxKey(target, priority, taskId), outbox_due: due };
}

/** True when a message due at `runAtMs` can be sent now (SQS holds the rest of the delay). */
export function sendableNow(runAtMs: number, now: number): boolean {
  return runAtMs - now <= SQS_DELAY_MS;
}

/**
 * Dispatch ids are ordered per task: `<sequence>.<random>`, the sequence one more than the
 * dispatch it replaces. A consumer holding a message newer than the record knows the record's
 * write is still landing (the message is sent first); an older one is superseded.
 */
export function nextDispatchId(random: { id(): string }, previous?: string): string {
  return `${previous === undefined ? 0 : dispatchSequence(previous) + 1}.${random.id()}`;
}

/** The sequence of a dispatch id (0 for ids made before dispatch ids were ordered). */
export function dispatchSequence(dispatchId: string): number {
  const dot = dispatchId.indexOf('.');
  const n = dot > 0 ? Number(dispatchId.slice(0, dot)) : 0;
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** TTL of a finished task (epoch seconds). */
export function finishedExpiry(now: number, settings: Pick<RuntimeSettings, 'retentionDays'>): number {
  return Math.floor(now / 1000) + settings.retentionDays * 86_400;
}

/** TTL of a dead task: as long as its dead letter can be redriven, and then some. */
export function deadExpiry(now: number, settings: Pick<RuntimeSettings, 'retentionDays'>): number {
  return finishedExpiry(now, settings) + DEFAULTS.dlqRetentionSeconds;
}

/** The history entry of the task's current attempt. */
export function attemptRecord(
  record: TaskRecord,
  outcome: AttemptRecord['outcome'],
  now: number,
  durationMs: number | undefined,
  error?: ErrorInfo,
): AttemptRecord {
  return {
    attempt: record.attempts,
    outcome,
    ...(record.started_at === undefined ? {} : { started_at: record.started_at }),
    finished_at: iso(now),
    ...(durationMs === undefined ? {} : { duration_ms: Math.round(durationMs) }),
    ...(error === undefined ? {} : { error }),
  };
}

/** The history with `entry` appended, keeping the last `historyLength` attempts. */
export function withAttempt(
  history: readonly AttemptRecord[],
  entry: AttemptRecord,
  settings: Pick<RuntimeSettings, 'historyLength'>,
): AttemptRecord[] {
  return [...history, entry].slice(-settings.historyLength);
}

/** A task moving to `failed`: its dead letter is owed (a `dlq#` outbox entry). */
export function failChanges(
  record: TaskRecord,
  error: ErrorInfo,
  history: AttemptRecord[],
  now: number,
  settings: Pick<RuntimeSettings, 'retentionDays' | 'outboxGraceSeconds'>,
  add?: TaskChanges['add'],
): TaskChanges {
  return {
    set: {
      status: transition(record.status, 'fail', record.task_id),
      finished_at: iso(now),
      updated_at: iso(now),
      last_error: error,
      history,
      ...outboxFields(record.task_id, 'dlq', record.priority, now, now, settings),
      expires_at: deadExpiry(now, settings),
    },
    remove: ['lease_until', 'solo'],
    ...(add === undefined ? {} : { add }),
  };
}

/** A task moving to `cancelled` (from `from`), with an optional last history entry. */
export function cancelChanges(
  record: TaskRecord,
  now: number,
  settings: Pick<RuntimeSettings, 'retentionDays'>,
  history?: AttemptRecord[],
): TaskChanges {
  return {
    set: {
      status: transition(record.status, 'cancel', record.task_id),
      finished_at: iso(now),
      updated_at: iso(now),
      expires_at: finishedExpiry(now, settings),
      ...(history === undefined ? {} : { history }),
    },
    remove: ['lease_until', 'outbox_pk', 'outbox_due', 'solo'],
  };
}
