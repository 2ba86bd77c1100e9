import { isPriority, type Priority } from '../../shared/config/resources.js';
import {
  deadLetterSchema,
  MESSAGE_ATTRIBUTES as A,
  taskMessageSchema,
  type DeadLetter,
  type TaskMessage,
} from '../../shared/task/message.js';
import type { TaskRecord } from '../../shared/task/model.js';

/** One message as received from a DLQ. */
export interface DlqMessage {
  readonly messageId: string;
  readonly receiptHandle: string;
  readonly body: string;
  /** String message attributes (`kaj-type`, ...); empty for a message without any. */
  readonly attributes: Readonly<Record<string, string>>;
  /** When the message was first sent (epoch ms), if the queue reports it. */
  readonly sentTimestamp?: number;
  /** How often it has been received, this receive included. */
  readonly receiveCount?: number;
}

/**
 * The slice of SQS the CLI uses on the three dead-letter queues. `SqsDeadLetterQueues`
 * implements it; tests use an in-memory fake.
 */
export interface DeadLetterQueues {
  /**
   * Receives up to `max` (1-10) messages of the DLQ of `priority`, hiding them from every
   * other reader for `visibilitySeconds`. Each receive bumps the message's receive count.
   */
  receive(
    priority: Priority,
    options: { readonly max: number; readonly visibilitySeconds: number; readonly waitSeconds: number },
  ): Promise<DlqMessage[]>;
  /** Makes received messages visible again at once (visibility 0). Best effort. */
  release(priority: Priority, receiptHandles: readonly string[]): Promise<void>;
  /** Deletes received messages. Returns the receipt handles whose delete failed. */
  delete(priority: Priority, receiptHandles: readonly string[]): Promise<string[]>;
}

/** How a message came to be in a DLQ. */
export type DeadEntryKind =
  /** Written by the consumer when it failed the task (permanent error, attempts exhausted, crash loop). */
  | 'dead_letter'
  /** An original task message that SQS's redrive policy moved after `maxReceiveCount` receives. */
  | 'moved_by_sqs'
  /** Not a Kaj message at all (or a body that does not parse). */
  | 'unreadable';

/** A DLQ message with what Kaj knows about the task it stands for. */
export interface DeadEntry {
  readonly messageId: string;
  receiptHandle: string;
  /** The DLQ it was received from. */
  readonly dlq: Priority;
  readonly kind: DeadEntryKind;
  readonly taskId?: string;
  readonly dispatchId?: string;
  /** The priority queue the task died on: the dead letter's own field, else the DLQ it sits in. */
  readonly originPriority: Priority;
  /** The parsed body. */
  readonly letter?: DeadLetter | TaskMessage;
  readonly receiveCount?: number;
  /**
   * The task record as read while selecting: `null` when it was looked up and is gone,
   * `undefined` when it was not looked up.
   */
  record?: TaskRecord | null;
}

/** Which dead tasks a command acts on. All given parts must hold. */
export interface DeadLetterFilter {
  /** Task type, exact. */
  readonly type?: string;
  /** Case-insensitive substring of the last error (message, name or code) or the death reason. */
  readonly errorContains?: string;
  /** Died at or after this time (epoch ms). */
  readonly since?: number;
  /** Only these tasks. */
  readonly taskIds?: readonly string[];
}

export function isEmptyFilter(f: DeadLetterFilter): boolean {
  return (
    f.type === undefined &&
    f.errorContains === undefined &&
    f.since === undefined &&
    (f.taskIds === undefined || f.taskIds.length === 0)
  );
}

/** Reads a received DLQ message: a consumer dead letter, a message SQS moved, or neither. */
export function parseDeadEntry(dlq: Priority, m: DlqMessage): DeadEntry {
  const base = {
    messageId: m.messageId,
    receiptHandle: m.receiptHandle,
    dlq,
    ...(m.receiveCount === undefined ? {} : { receiveCount: m.receiveCount }),
  };
  let body: unknown;
  try {
    body = JSON.parse(m.body);
  } catch {
    return { ...base, kind: 'unreadable', originPriority: dlq };
  }
  const dead = deadLetterSchema.safeParse(body);
  if (dead.success) {
    return {
      ...base,
      kind: 'dead_letter',
      taskId: dead.data.task_id,
      dispatchId: dead.data.dispatch_id,
      originPriority: dead.data.priority,
      letter: dead.data as DeadLetter,
    };
  }
  const moved = taskMessageSchema.safeParse(body);
  if (moved.success) {
    const attrPriority = m.attributes[A.priority];
    return {
      ...base,
      kind: 'moved_by_sqs',
      taskId: moved.data.task_id,
      dispatchId: moved.data.dispatch_id,
      // SQS moved it out of the main queue of this DLQ's priority.
      originPriority: isPriority(attrPriority) ? attrPriority : dlq,
      letter: moved.data,
    };
  }
  return { ...base, kind: 'unreadable', originPriority: dlq };
}

/** Whether filtering this entry needs its task record (a message SQS moved carries no details). */
export function needsRecord(entry: DeadEntry, filter: DeadLetterFilter): boolean {
  if (entry.kind !== 'moved_by_sqs' || entry.record !== undefined) return false;
  return filter.type !== undefined || filter.errorContains !== undefined || filter.since !== undefined;
}

/** What is shown and filtered on, from the dead letter or else from the task record. */
export interface DeadTaskSummary {
  readonly taskId: string | undefined;
  readonly type: string | undefined;
  readonly originPriority: Priority;
  readonly attempts: number | undefined;
  readonly lastError: string | undefined;
  /** ISO time the task died (the dead letter's `failed_at`, else the record's `finished_at`/`updated_at`). */
  readonly deadSince: string | undefined;
  readonly kind: DeadEntryKind;
  readonly reason: string | undefined;
}

export function summarize(entry: DeadEntry): DeadTaskSummary {
  const r = entry.record ?? undefined;
  const letter = entry.kind === 'dead_letter' ? (entry.letter as DeadLetter) : undefined;
  const error = letter?.last_error ?? r?.last_error;
  const lastError =
    error !== undefined
      ? `${error.code !== undefined ? `${error.code} ` : ''}${error.name}: ${error.message}`
      : letter?.reason;
  return {
    taskId: entry.taskId,
    type: letter?.type ?? r?.type,
    originPriority: entry.originPriority,
    attempts: letter?.attempts ?? r?.attempts,
    lastError,
    deadSince: letter?.failed_at ?? (entry.kind === 'moved_by_sqs' ? (r?.finished_at ?? r?.updated_at) : undefined),
    kind: entry.kind,
    reason:
      letter?.reason ?? (entry.kind === 'moved_by_sqs' ? 'moved by SQS after maxReceiveCount receives' : undefined),
  };
}

export function matches(entry: DeadEntry, f: DeadLetterFilter): boolean {
  if (f.taskIds !== undefined && f.taskIds.length > 0) {
    if (entry.taskId === undefined || !f.taskIds.includes(entry.taskId)) return false;
  }
  if (isEmptyFilter({ ...f, taskIds: undefined })) return true;
  if (entry.kind === 'unreadable') return false;
  const s = summarize(entry);
  if (f.type !== undefined && s.type !== f.type) return false;
  if (f.errorContains !== undefined) {
    const needle = f.errorContains.toLowerCase();
    const r = entry.record ?? undefined;
    const letter = entry.kind === 'dead_letter' ? (entry.letter as DeadLetter) : undefined;
    const error = letter?.last_error ?? r?.last_error;
    const haystack = [s.lastError, s.reason, error?.name, error?.code, error?.message]
      .filter((x): x is string => x !== undefined)
      .join('\n')
      .toLowerCase();
    if (!haystack.includes(needle)) return false;
  }
  if (f.since !== undefined) {
    const at = s.deadSince === undefined ? Number.NaN : Date.parse(s.deadSince);
    if (!(at >= f.since)) return false;
  }
  return true;
}
