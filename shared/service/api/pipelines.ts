/**
 * The pipeline routes (`/api/v1/pipelines…`): parse, call `PipelineService`, reply. A pipeline's
 * runs belong to the deployment (docs/pipelines.md): every caller the API authenticates sees and
 * starts the same runs; pausing a pipeline's schedule is an operator's (`kaj pipelines pause`).
 *
 * @module
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod';
import { PipelineRequestError } from '../../pipeline/errors.js';
import type { PipelineService } from '../../pipeline/service.js';
import type { Caller } from '../../task/submit.js';
import { HttpError } from './errors.js';
import type { Reply } from './schedules.js';

export type PipelineRouteName =
  | 'pipeline_list'
  | 'pipeline_get'
  | 'pipeline_runs'
  | 'pipeline_trigger'
  | 'pipeline_backfill'
  | 'pipeline_run'
  | 'pipeline_run_cancel'
  | 'pipeline_run_clear';

const DATE = z.string({ error: 'must be a date (YYYY-MM-DD) or an ISO time' }).min(1).max(40);

export const pipelineTriggerSchema = z.strictObject({ logical_date: DATE });

export const pipelineBackfillSchema = z.strictObject({
  from: DATE,
  to: DATE,
  reprocess: z.enum(['none', 'failed', 'all']).default('none'),
  max_active_runs: z.number().int().min(1).optional(),
  backwards: z.boolean().default(false),
  dry_run: z.boolean().default(false),
});

export const pipelineClearSchema = z.strictObject({
  nodes: z.array(z.string().min(1).max(64)).max(100).optional(),
  downstream: z.boolean().default(false),
  failed: z.boolean().default(false),
});

/** Answers one pipeline route. `body`: the request's JSON object, when it has one. */
export async function pipelineRoute(
  route: PipelineRouteName,
  params: { readonly name: string; readonly logicalDate: string },
  event: APIGatewayProxyEventV2,
  body: Record<string, unknown> | undefined,
  service: PipelineService | undefined,
  caller: Caller,
): Promise<Reply> {
  if (service === undefined) throw new HttpError(404, 'not_found', 'this deployment has no pipelines');
  const { name, logicalDate } = params;
  const operator = { actor: caller.owner };
  switch (route) {
    case 'pipeline_list':
      return { status: 200, body: { items: service.list() } };
    case 'pipeline_get':
      return { status: 200, body: service.summary(name) };
    case 'pipeline_runs': {
      const q = event.queryStringParameters ?? {};
      service.get(name);
      const runs = await service.runs(name, {
        ...(q.from === undefined ? {} : { from: q.from }),
        ...(q.to === undefined ? {} : { to: q.to }),
      });
      return { status: 200, body: { pipeline: name, items: runs } };
    }
    case 'pipeline_trigger': {
      service.get(name);
      const req = parse(pipelineTriggerSchema, body ?? {});
      const { run, created } = await service.trigger(name, req.logical_date);
      return { status: created ? 201 : 200, body: { ...run, created } };
    }
    case 'pipeline_backfill': {
      service.get(name);
      const req = parse(pipelineBackfillSchema, body ?? {});
      const plan = await service.backfill(
        name,
        {
          from: req.from,
          to: req.to,
          reprocess: req.reprocess,
          backwards: req.backwards,
          dryRun: req.dry_run,
          ...(req.max_active_runs === undefined ? {} : { maxActiveRuns: req.max_active_runs }),
        },
        operator,
      );
      return { status: req.dry_run ? 200 : 202, body: { pipeline: name, dry_run: req.dry_run, runs: plan } };
    }
    case 'pipeline_run':
      return { status: 200, body: await service.run(name, logicalDate) };
    case 'pipeline_run_cancel':
      return { status: 200, body: await service.cancel(name, logicalDate) };
    case 'pipeline_run_clear': {
      service.get(name);
      const req = parse(pipelineClearSchema, body ?? {});
      const view = await service.clear(
        name,
        logicalDate,
        { ...(req.nodes === undefined ? {} : { nodes: req.nodes }), downstream: req.downstream, failed: req.failed },
        operator,
      );
      return { status: 202, body: view };
    }
  }
}

/** The body by `schema`, or 422 naming the first field it refuses. */
function parse<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue === undefined || issue.path.length === 0 ? 'body' : issue.path.map(String).join('.');
  throw new PipelineRequestError(field, `${field}: ${issue?.message ?? 'invalid'}`);
}
