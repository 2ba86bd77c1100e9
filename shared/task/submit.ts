import { createHash } from 'node:crypto';
import { fingerprint, idempotentTaskId, identifiedRunTaskId } from './task-ids.js';

export { canonicalJson, fingerprint, idempotentTaskId, identifiedRunTaskId } from './task-ids.js';
import * as z from 'zod';
import { DEFAULTS, PRIORITIES, type Priority } from '../config/resources.js';
import { METRICS } from '../config/metrics.js';
import { StoreRejectedError, StoreUnavailableError, TaskAlreadyExistsError } from './store-errors.js';
import type { TaskRegistry } from './define.js';
import { DEFAULT_LANE } from '../config/lanes.js';
import { forEachBounded } from '../runtime/bounded.js';
import { TENANT_PATTERN } from './message.js';
import { nextDispatchId } from './changes.js';
import { resolvePolicy } from './define.js';
import { IdempotencyConflictError, PayloadTooLargeError, TaskError, ValidationError } from './errors.js';
import type { LifecycleDeps, TaskLifecycle } from './lifecycle.js';
import { checkJsonValue } from './json-value.js';
import { type ChildRequest, childTaskId } from './child.js';
import type { TaskRecord } from './model.js';

const MAX_DELAY_SECONDS = 365 * 86_400;

/** `POST /api/v1/tasks` body. Unknown fields are rejected, so a typo never goes unnoticed. */
export const submitRequestSchema = z.strictObject({
  type: z.string().min(1).max(64),
  payload: z.unknown().optional(),
  priority: z.enum(PRIORITIES).default('normal'),
  idempotency_key: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .optional(),
  delay_seconds: z.number().int().min(0).max(MAX_DELAY_SECONDS).optional(),
  run_at: z.iso
    .datetime({ offset: false, message: 'must be an ISO-8601 UTC time such as 2026-01-01T12:00:00Z' })
    .optional(),
  max_attempts: z.number().int().min(1).max(DEFAULTS.maxAttemptsLimit).optional(),
  timeout_seconds: z.number().int().min(1).max(DEFAULTS.maxTaskTimeoutSeconds).optional(),
  tenant: z.string().regex(TENANT_PATTERN, 'must be 1-128 printable ASCII characters without spaces').optional(),
});

export type SubmitRequest = z.infer<typeof submitRequestSchema>;

export interface SubmitResult {
  readonly record: TaskRecord;
  /** True when an earlier request with the same idempotency key created the task. */
  readonly replayed: boolean;
}

/**
 * Turns a zod failure into the domain's error naming the first offending field.
 * @param prefix the path of the value checked (`payload`), before the issue's own path
 * @param root what to name when the value checked is itself at fault (`body`; a batch's `tasks[3]`)
 */
export function validationErrorOf(error: z.ZodError, prefix?: string, root = 'body'): ValidationError {
  const issue = error.issues[0];
  const path = issue?.path.map(String) ?? [];
  if (issue?.code === 'unrecognized_keys') path.push(...issue.keys.slice(0, 1));
  const field = [prefix, ...path].filter((p): p is string => p !== undefined && p !== '').join('.') || (prefix ?? root);
  const message = issue?.code === 'unrecognized_keys' ? 'unknown field' : (issue?.message ?? 'invalid');
  return new ValidationError(field, `${field}: ${message}`, { cause: error });
}

/** Who is asking: the owner every task they submit is recorded under. */
export interface Caller {
  /** The IAM principal (role, not session) on AWS; the local identity on `npm start`. */
  readonly owner: string;
}

export interface SubmitterDeps extends LifecycleDeps {
  readonly registry: TaskRegistry;
  /**
   * Key of the HMAC that turns an idempotency key into a task id. Secret per deployment, so an
   * id cannot be derived from a key by anyone else (ids are also checked against the owner).
   * The scheduler, which only creates runs (their ids come from run keys), has none.
   */
  readonly idSecret?: string;
}

/**
 * Accepts a task: send first, then put (docs/reliability.md). The message goes out before the
 * record is written, so a crash between the two leaves a message without a record (dropped by
 * the consumer once the send-first window has passed; the client saw no 202) and never a record
 * without a message. The put is the commit point. A task that cannot be sent now — a delay
 * beyond SQS's 15 minutes, or SQS failing — is written with an outbox entry for the sweeper.
 */
export class TaskSubmitter {
  constructor(
    private readonly d: SubmitterDeps,
    private readonly lifecycle: TaskLifecycle,
  ) {}

  /** The id a task submitted by `owner` with this type and idempotency key gets. */
  idempotentTaskId(owner: string, type: string, key: string): string {
    if (this.d.idSecret === undefined) throw new TaskError('this submitter has no id secret (KAJ_ID_SECRET)');
    return idempotentTaskId(this.d.idSecret, owner, type, key);
  }

  /** @throws ValidationError, UnknownTaskTypeError, IdempotencyConflictError, StoreUnavailableError */
  async submit(body: unknown, caller: Caller): Promise<SubmitResult> {
    const record = this.prepare(body, caller);
    return this.accept(record, replayCheck(caller, record));
  }

  /**
   * Accepts up to {@link MAX_BATCH_TASKS} tasks, each as `submit` would take it, and answers each
   * in the order given: one bad item never rejects the others. The messages that can go now are
   * sent first, with `SendMessageBatch` (10 a request); then each record is put with the same
   * conditional write as a single submit (`attribute_not_exists`), so "send first, then put"
   * holds item by item: an item answered as accepted has its record, and its message or outbox
   * entry. The same idempotency key twice in one batch is one task: the later items answer as
   * replays of the first (or as conflicts, when they ask for something else).
   *
   * @throws ValidationError for more than {@link MAX_BATCH_TASKS} items (field `tasks`)
   */
  async submitMany(bodies: readonly unknown[], caller: Caller): Promise<BatchItemResult[]> {
    if (bodies.length > MAX_BATCH_TASKS) {
      throw new ValidationError('tasks', `tasks: at most ${MAX_BATCH_TASKS} tasks per request, got ${bodies.length}`);
    }
    const results: BatchItemResult[] = [];
    const firsts: TaskRecord[] = [];
    /** Items whose task id an earlier item of the batch has: [position, the earlier one's record, this one's]. */
    const repeats: [number, TaskRecord, TaskRecord][] = [];
    const firstById = new Map<string, TaskRecord>();
    const positionOf = new Map<TaskRecord, number>();
    bodies.forEach((body, index) => {
      let record: TaskRecord;
      try {
        record = this.prepare(body, caller, `tasks[${index}]`);
      } catch (err) {
        if (!(err instanceof TaskError)) throw err;
        results[index] = { kind: 'rejected', error: err };
        return;
      }
      const first = firstById.get(record.task_id);
      if (first !== undefined) {
        repeats.push([index, first, record]);
        return;
      }
      firstById.set(record.task_id, record);
      positionOf.set(record, index);
      firsts.push(record);
    });
    const owed = await this.lifecycle.outboxes.sendAheadMany(firsts);
    for (const [i, r] of firsts.entries()) Object.assign(r, owed[i]);
    await forEachBounded(firsts, BATCH_PUT_CONCURRENCY, async (record) => {
      const index = positionOf.get(record) as number;
      try {
        results[index] = { kind: 'accepted', ...(await this.commit(record, replayCheck(caller, record))) };
      } catch (err) {
        if (!(err instanceof TaskError || err instanceof StoreUnavailableError || err instanceof StoreRejectedError))
          throw err;
        results[index] = { kind: 'rejected', error: err };
      }
    });
    for (const [index, first, record] of repeats) {
      const outcome = results[positionOf.get(first) as number] as BatchItemResult;
      results[index] =
        outcome.kind === 'rejected'
          ? outcome
          : first.fingerprint === record.fingerprint
            ? { kind: 'accepted', record: outcome.record, replayed: true }
            : { kind: 'rejected', error: new IdempotencyConflictError(first.task_id) };
    }
    return results;
  }

  /**
   * Validates a submit's body and builds the task it asks for (nothing written or sent).
   * @param root what the body is called when it is itself at fault (not an object): `body`, or a batch's `tasks[3]`
   */
  private prepare(body: unknown, caller: Caller, root = 'body'): TaskRecord {
    const parsed = submitRequestSchema.safeParse(body);
    if (!parsed.success) throw validationErrorOf(parsed.error, undefined, root);
    const req = parsed.data;
    if (req.delay_seconds !== undefined && req.run_at !== undefined) {
      throw new ValidationError('run_at', 'run_at: give either delay_seconds or run_at, not both');
    }
    const def = this.d.registry.get(req.type);
    const raw: unknown = req.payload ?? {};
    const payloadResult = def.schema.safeParse(raw);
    if (!payloadResult.success) throw validationErrorOf(payloadResult.error as z.ZodError, 'payload');
    // What is stored is the payload as sent (JSON), not the schema's output: the consumer parses
    // it again before the handler runs, so a schema may transform freely (z.coerce.date() makes
    // a Date, which no store holds). What is sent must itself be storable: checked here, so the
    // store never refuses an accepted task (a 422 naming the field instead of a 503 forever).
    const checked = checkJsonValue(raw, 'payload', DEFAULTS.maxPayloadBytes);
    if (!checked.ok) {
      const message = `${checked.path}: ${checked.reason}`;
      throw checked.path === 'payload' && checked.reason.includes('exceeds the limit')
        ? new PayloadTooLargeError('payload', message)
        : new ValidationError(checked.path, message);
    }
    const payload = checked.value;

    const now = this.d.clock.now();
    const runAtMs =
      req.run_at !== undefined ? Math.max(now, Date.parse(req.run_at)) : now + (req.delay_seconds ?? 0) * 1000;
    if (runAtMs - now > MAX_DELAY_SECONDS * 1000) {
      throw new ValidationError('run_at', 'run_at: must be within 365 days');
    }
    const policy = resolvePolicy(def);
    const createdAt = new Date(now).toISOString();
    const record: TaskRecord = {
      task_id:
        req.idempotency_key === undefined
          ? `t_${this.d.random.id()}`
          : this.idempotentTaskId(caller.owner, req.type, req.idempotency_key),
      owner: caller.owner,
      type: req.type,
      priority: req.priority,
      status: 'queued',
      payload,
      attempts: 0,
      max_attempts: req.max_attempts ?? policy.maxAttempts,
      timeout_seconds: req.timeout_seconds ?? policy.timeoutSeconds,
      run_at: new Date(runAtMs).toISOString(),
      created_at: createdAt,
      updated_at: createdAt,
      history: [],
      fingerprint: fingerprint(req),
      lease_token: 0,
      dispatch_id: nextDispatchId(this.d.random),
    };
    if (req.idempotency_key !== undefined) record.idempotency_key = req.idempotency_key;
    if (req.tenant !== undefined) record.tenant = req.tenant;
    const lane = this.d.registry.laneOf(req.type);
    if (lane !== DEFAULT_LANE) record.lane = lane;
    if (def.crashLimit !== undefined) record.crash_limit = def.crashLimit;

    return record;
  }

  /**
   * Creates the task of one scheduled run (`shared/schedule/`), with the id the scheduler derived
   * from the run key: however many ticks create the same run at once, one task exists. A run
   * whose task exists already is a replay (`replayed`), whatever it was created with.
   *
   * A type that gives its runs an identity (`runIdentity`: a pipeline's logical date) is keyed by
   * it instead: its id comes from the owner, the type and that key ({@link identifiedRunTaskId}),
   * so the schedule, a backfill and a manual run of one date meet on one task. The answer's record
   * carries the id used.
   * @throws ValidationError (the payload no longer fits the type), UnknownTaskTypeError, StoreUnavailableError
   */
  async submitRun(run: ScheduledRun): Promise<SubmitResult> {
    const def = this.d.registry.get(run.type);
    const identity = def.runIdentity?.(run.scheduledTime);
    const payloadResult = def.schema.safeParse(run.payload);
    if (!payloadResult.success) throw validationErrorOf(payloadResult.error as z.ZodError, 'payload');
    const checked = checkJsonValue(run.payload, 'payload', DEFAULTS.maxPayloadBytes);
    if (!checked.ok) throw new ValidationError(checked.path, `${checked.path}: ${checked.reason}`);
    const now = this.d.clock.now();
    const policy = resolvePolicy(def);
    const createdAt = new Date(now).toISOString();
    const scheduledTime = new Date(run.scheduledTime).toISOString();
    const runKey = identity?.key ?? run.runKey;
    const record: TaskRecord = {
      task_id: identity === undefined ? run.taskId : identifiedRunTaskId(run.owner, run.type, identity.key),
      owner: run.owner,
      type: run.type,
      priority: run.priority,
      status: 'queued',
      payload: checked.value,
      attempts: 0,
      max_attempts: run.max_attempts ?? policy.maxAttempts,
      timeout_seconds: run.timeout_seconds ?? policy.timeoutSeconds,
      run_at: new Date(Math.max(now, run.runAt)).toISOString(),
      created_at: createdAt,
      updated_at: createdAt,
      history: [],
      idempotency_key: runKey,
      fingerprint: createHash('sha256').update(runKey).digest('hex'),
      lease_token: 0,
      dispatch_id: nextDispatchId(this.d.random),
      scheduled_time: scheduledTime,
    };
    if (run.schedule !== undefined) record.schedule = run.schedule;
    if (identity !== undefined) record.data_interval = { ...identity.dataInterval };
    if (def.crashLimit !== undefined) record.crash_limit = def.crashLimit;
    const lane = this.d.registry.laneOf(run.type);
    if (lane !== DEFAULT_LANE) record.lane = lane;
    return this.accept(record, () => {});
  }

  /**
   * Creates a workflow run's child (`wf.run`) under the id derived from the run and the call's
   * name: a replay that asks again gets the child it started (`replayed`), whatever its status.
   * @throws ValidationError (the payload does not fit the type), UnknownTaskTypeError, StoreUnavailableError
   */
  async submitChild(child: ChildRequest): Promise<SubmitResult> {
    const record = this.prepare(
      {
        type: child.type,
        payload: child.payload,
        priority: child.priority,
        ...(child.tenant === undefined ? {} : { tenant: child.tenant }),
        ...(child.maxAttempts === undefined ? {} : { max_attempts: child.maxAttempts }),
        ...(child.timeoutSeconds === undefined ? {} : { timeout_seconds: child.timeoutSeconds }),
      },
      { owner: child.owner },
    );
    record.task_id = childTaskId(child.parentId, child.step);
    record.parent_id = child.parentId;
    record.parent_step = child.step;
    if (child.scheduledTime !== undefined) record.scheduled_time = child.scheduledTime;
    if (child.dataInterval !== undefined) record.data_interval = { ...child.dataInterval };
    return this.accept(record, () => {});
  }

  /**
   * Send first, then put; on an existing id, `checkReplay` decides whether it is a replay (it
   * throws otherwise), and the enqueue an earlier request may have left to the sweeper is finished.
   */
  private async accept(record: TaskRecord, checkReplay: (existing: TaskRecord) => void): Promise<SubmitResult> {
    Object.assign(record, await this.lifecycle.outboxes.sendAhead(record));
    return this.commit(record, checkReplay);
  }

  /** The put of "send first, then put": the commit point of an accepted task. */
  private async commit(record: TaskRecord, checkReplay: (existing: TaskRecord) => void): Promise<SubmitResult> {
    try {
      await this.d.store.create(record);
    } catch (err) {
      if (!(err instanceof TaskAlreadyExistsError) || err.existing === undefined) throw err;
      const existing = err.existing;
      checkReplay(existing);
      // A replay (the message just sent carries a dispatch the record does not: it is dropped).
      if (this.lifecycle.outboxes.sendUnconfirmed(existing)) await this.lifecycle.outboxes.dispatchQuietly(existing);
      return { record: existing, replayed: true };
    }
    this.d.metrics.count(METRICS.submitted, record.type);
    return { record, replayed: false };
  }
}

/** Tasks per batch submit (`POST /api/v1/tasks/batch`). */
export const MAX_BATCH_TASKS = 100;
/** Conditional puts of one batch in flight at once: ten, like the sends. */
const BATCH_PUT_CONCURRENCY = 10;

/** `POST /api/v1/tasks/batch` body: `tasks`, each item what `POST /api/v1/tasks` takes. */
export const submitBatchRequestSchema = z.strictObject({
  tasks: z.array(z.unknown()).min(1, 'must hold at least one task').max(MAX_BATCH_TASKS),
});

/** What one item of a batch submit came to. */
export type BatchItemResult =
  | ({ readonly kind: 'accepted' } & SubmitResult)
  | {
      readonly kind: 'rejected';
      /** A TaskError (validation, unknown type, conflict) or a store error (unavailable: retry the item). */
      readonly error: TaskError | StoreUnavailableError | StoreRejectedError;
    };

/** The replay check of a client's submit: same owner and same request, or a conflict. */
function replayCheck(caller: Caller, record: TaskRecord): (existing: TaskRecord) => void {
  return (existing) => {
    // Ids are per owner already; the check stands guard should two owners ever meet on one id.
    if (existing.owner !== caller.owner || existing.fingerprint !== record.fingerprint) {
      throw new IdempotencyConflictError(existing.task_id);
    }
  };
}

/** One run of a schedule, as the scheduler hands it to the task domain. */
export interface ScheduledRun {
  /** Derived from the schedule and the run key (`scheduledRunTaskId`). */
  readonly taskId: string;
  /** `schedule-name@scheduled-time` (UTC ISO); stored as the task's idempotency key. */
  readonly runKey: string;
  /** The schedule that fired it; none for a run started by hand or by a backfill. */
  readonly schedule?: string;
  /** The schedule's owner: the task is theirs. */
  readonly owner: string;
  /** The logical date (epoch ms). */
  readonly scheduledTime: number;
  /** When it should start (the scheduled time plus the schedule's jitter; epoch ms). */
  readonly runAt: number;
  readonly type: string;
  readonly payload: unknown;
  readonly priority: Priority;
  readonly max_attempts?: number;
  readonly timeout_seconds?: number;
}
