/**
 * The task API's response bodies as zod schemas: the OpenAPI document (`./openapi.ts`) publishes
 * them, and the contract test (`test/integration/openapi-contract.test.ts`) checks real responses
 * against what it publishes.
 *
 * @module
 */
import * as z from 'zod';
import { PRIORITIES } from '../../config/resources.js';
import { TASK_STATUSES } from '../../task/model.js';

const iso = z.string().describe('ISO-8601 UTC time');

export const errorBodySchema = z.object({
  error: z.object({
    code: z.string().describe('machine-readable: validation_error, unknown_type, idempotency_conflict, not_found…'),
    message: z.string(),
    field: z.string().optional().describe('the offending field, as a dotted path (payload.to)'),
  }),
});

/**
 * What API Gateway answers itself, before or instead of Kaj's function: `{"message": "Forbidden"}`
 * (403, IAM auth), `{"message": "Too Many Requests"}` (429, the stage's throttling),
 * `{"message": "Internal Server Error"}` (500/502, the function could not run or failed).
 */
export const gatewayErrorSchema = z.object({
  message: z.string().describe("API Gateway's own text: Forbidden, Too Many Requests, Internal Server Error…"),
});

export const acceptedSchema = z.object({
  task_id: z.string(),
  status: z.enum(TASK_STATUSES),
  priority: z.enum(PRIORITIES),
  run_at: iso,
  created_at: iso,
});

const errorInfoSchema = z.object({
  name: z.string(),
  message: z.string(),
  retryable: z.boolean(),
  code: z.string().optional(),
});

export const taskViewSchema = z.object({
  task_id: z.string(),
  type: z.string(),
  status: z.enum(TASK_STATUSES),
  priority: z.enum(PRIORITIES),
  tenant: z.string().optional(),
  attempts: z.number().int(),
  max_attempts: z.number().int(),
  run_at: iso,
  created_at: iso,
  updated_at: iso,
  started_at: iso.optional(),
  finished_at: iso.optional(),
  result: z.unknown().optional(),
  last_error: errorInfoSchema.optional(),
  cancel_requested: z.literal(true).optional(),
  parent_id: z.string().optional().describe('a child task: the workflow run that started it (`wf.run`)'),
  history: z.array(
    z.object({
      attempt: z.number().int(),
      outcome: z.enum(['succeeded', 'retrying', 'failed', 'cancelled', 'crashed']),
      started_at: iso.optional(),
      finished_at: iso,
      duration_ms: z.number().optional(),
      error: errorInfoSchema.optional(),
    }),
  ),
  steps: z
    .array(
      z.object({
        name: z.string(),
        kind: z.enum(['step', 'sleep', 'signal', 'child']),
        status: z.enum([
          'succeeded',
          'failed',
          'retrying',
          'sleeping',
          'done',
          'waiting',
          'received',
          'timed_out',
          'running',
          'cancelled',
        ]),
        child_id: z.string().optional(),
        attempts: z.number().int().optional(),
        started_at: iso.optional(),
        ended_at: iso.optional(),
        result_bytes: z.number().int().optional(),
        error: errorInfoSchema.optional(),
        next_attempt_at: iso.optional(),
        until: iso.optional(),
        received_at: iso.optional(),
      }),
    )
    .optional()
    .describe('a workflow run: its steps, sleeps, signals and children in the order they started (docs/workflows.md)'),
  waiting_for: z
    .object({
      timer: iso,
      signals: z.array(z.object({ name: z.string(), deadline: iso })).optional(),
      children: z.number().int().optional(),
    })
    .optional()
    .describe('a waiting workflow run: what wakes it (its timer, the signals it waits for, its children not ended)'),
});

export const cancelResultSchema = z.object({
  task_id: z.string(),
  status: z.enum(TASK_STATUSES),
  cancel_requested: z.literal(true).optional(),
});

export const signalResultSchema = z.object({
  task_id: z.string(),
  signal: z.string(),
  accepted_at: iso,
  woken: z.boolean().describe('true when the run was waiting for a time still to come and was woken now'),
});

export const batchResultSchema = z.object({
  accepted: z.number().int(),
  replayed: z.number().int(),
  rejected: z.number().int(),
  results: z.array(
    z.union([
      acceptedSchema.extend({ index: z.number().int(), http_status: z.union([z.literal(202), z.literal(200)]) }),
      errorBodySchema.extend({ index: z.number().int(), http_status: z.number().int().min(400) }),
    ]),
  ),
});

export const taskPageSchema = z.object({
  // A list row: the task's view without result and history, as the index last saw it.
  items: z.array(
    taskViewSchema.omit({ result: true, history: true, steps: true, waiting_for: true }).extend({
      status: z.enum(TASK_STATUSES).describe('as the index last saw it: GET the task for the current record'),
      cancel_requested: z.boolean().optional(),
      listed_at: iso.describe(
        'when the task entered the listed status (the order of the listing, newest first); for a delayed task, when it was submitted or last rescheduled',
      ),
    }),
  ),
  cursor: z.string().optional().describe('present when more may follow: pass it back with the same filters'),
});

const lastRunSchema = z.object({}).passthrough();

export const scheduleViewSchema = z.object({
  name: z.string(),
  owner: z.string(),
  source: z.enum(['code', 'api']),
  state: z.enum(['active', 'paused']),
  pause_note: z.string().optional(),
  paused_at: iso.optional(),
  spec: z.record(z.string(), z.unknown()),
  next_times: z.array(iso),
  next_fire_times: z.array(iso),
  jitter_offset_seconds: z.number(),
  buffered: z.string().optional(),
  fired: z.number().int(),
  missed: z.number().int(),
  last_run: lastRunSchema.optional(),
  recent_runs: z.array(z.object({}).passthrough()),
  created_at: iso,
  updated_at: iso,
  changed: z.boolean().optional().describe('PUT only: whether the definition changed'),
});

export const schedulePageSchema = z.object({
  items: z.array(
    z
      .object({
        name: z.string(),
        owner: z.string(),
        source: z.enum(['code', 'api']),
        state: z.enum(['active', 'paused']),
        type: z.string(),
        when: z.string(),
        timezone: z.string(),
        next_fire_time: iso.optional(),
      })
      .passthrough(),
  ),
  cursor: z.string().optional(),
});

const nodeStates = [
  'pending',
  'queued',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'upstream_failed',
  'skipped',
] as const;

export const pipelineSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  schedule: z.object({ cron: z.string(), timezone: z.string(), catchup: z.boolean() }).optional(),
  timezone: z.string(),
  max_active_runs: z.number().int(),
  max_run_days: z.number().int(),
  logical_date_format: z.enum(['date', 'time']),
  nodes: z.array(z.object({ name: z.string(), type: z.string(), after: z.array(z.string()), trigger: z.string() })),
});

export const pipelineListSchema = z.object({ items: z.array(pipelineSchema) });

export const pipelineRunSchema = z.object({
  pipeline: z.string(),
  logical_date: z.string(),
  run_id: z.string(),
  status: z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']),
  data_interval: z.object({ start: iso, end: iso }).optional(),
  created_at: iso,
  updated_at: iso,
  error: z.string().optional(),
  created: z.boolean().optional().describe('POST …/runs only: whether this request created the run'),
  nodes: z.array(
    z.object({
      name: z.string(),
      type: z.string(),
      after: z.array(z.string()),
      trigger: z.string(),
      state: z.enum(nodeStates),
      task_id: z.string().optional(),
      attempts: z.number().int().optional(),
      try: z.number().int(),
    }),
  ),
});

export const pipelineRunsSchema = z.object({ pipeline: z.string(), items: z.array(pipelineRunSchema) });

export const pipelineBackfillSchema = z.object({
  pipeline: z.string(),
  dry_run: z.boolean(),
  runs: z.array(
    z.object({
      logical_date: z.string(),
      action: z.enum(['create', 'skip_exists', 'skip_active', 'rerun_failed', 'rerun']),
      run_id: z.string(),
      was: z.string().optional(),
    }),
  ),
});

/** The response schemas with a name of their own under `components.schemas`. */
export const NAMED = new Map<z.ZodType, string>([
  [errorBodySchema, 'Error'],
  [gatewayErrorSchema, 'GatewayError'],
  [acceptedSchema, 'Accepted'],
  [taskViewSchema, 'Task'],
  [cancelResultSchema, 'CancelResult'],
  [batchResultSchema, 'BatchResult'],
  [taskPageSchema, 'TaskPage'],
  [scheduleViewSchema, 'Schedule'],
  [schedulePageSchema, 'SchedulePage'],
  [pipelineSchema, 'Pipeline'],
  [pipelineListSchema, 'PipelineList'],
  [pipelineRunSchema, 'PipelineRun'],
  [pipelineRunsSchema, 'PipelineRuns'],
  [pipelineBackfillSchema, 'BackfillResult'],
]);
