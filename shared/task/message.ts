import * as z from 'zod';
import { PRIORITIES, type Priority } from '../config/resources.js';
import type { ErrorInfo } from './model.js';

/** Body of a message on a priority queue. The payload stays in the table: messages are tiny. */
export interface TaskMessage {
  readonly task_id: string;
  readonly dispatch_id: string;
  /** The task's timeout, so a consumer can see before claiming whether it has time left to run it. */
  readonly timeout_seconds?: number;
  /**
   * When the sender sent it (epoch ms). A message is sent before its record is written; a
   * consumer that finds no record yet (or an older dispatch) waits for the write while the
   * message is younger than the send-first window, and drops it after (docs/reliability.md).
   */
  readonly sent_at?: number;
  /**
   * The task's tenant, when it has one: the message group id on SQS (fair queues), and what a
   * consumer needs to find a tenant-keyed limit full without reading the task first.
   */
  readonly tenant?: string;
}

/** Tenants: what SQS takes as a message group id (1-128 printable ASCII characters, no spaces). */
export const TENANT_PATTERN = /^[\x21-\x7e]{1,128}$/;

export const taskMessageSchema = z.object({
  task_id: z.string().min(1).max(128),
  dispatch_id: z.string().min(1).max(128),
  timeout_seconds: z.number().int().positive().optional(),
  sent_at: z.number().int().nonnegative().optional(),
  tenant: z.string().regex(TENANT_PATTERN).optional(),
});

/** What a dead-letter message says about the task it stands for. */
export interface DeadLetter extends TaskMessage {
  readonly type: string;
  /** The priority queue the task came from: where a redrive sends it back by default. */
  readonly priority: Priority;
  readonly attempts: number;
  readonly reason: string;
  readonly last_error?: ErrorInfo;
  readonly failed_at: string;
}

export const deadLetterSchema = taskMessageSchema.extend({
  type: z.string(),
  priority: z.enum(PRIORITIES),
  attempts: z.number().int().nonnegative(),
  reason: z.string(),
  last_error: z
    .object({ name: z.string(), message: z.string(), retryable: z.boolean(), code: z.string().optional() })
    .optional(),
  failed_at: z.string(),
});

/** Message attribute names; the admin CLI filters dead letters on them without parsing bodies. */
export const MESSAGE_ATTRIBUTES = {
  taskId: 'kaj-task-id',
  type: 'kaj-type',
  priority: 'kaj-priority',
  attempts: 'kaj-attempts',
  error: 'kaj-error',
  failedAt: 'kaj-failed-at',
} as const;

/** SQS caps each message attribute value; long error messages are cut for the attribute (the body keeps more). */
export const MAX_ERROR_ATTRIBUTE_CHARS = 256;
