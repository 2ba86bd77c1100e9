/**
 * The schedule routes (`/api/v1/schedules…`): parse, call `ScheduleService`, reply. The caller is
 * the owner the task routes use; schedules declared in code are read-only here.
 *
 * @module
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ScheduleValidationError } from '../../schedule/errors.js';
import type { ScheduleService } from '../../schedule/service.js';
import type { Caller } from '../../task/submit.js';
import { HttpError } from './errors.js';

export type ScheduleRouteName =
  | 'schedule_list'
  | 'schedule_put'
  | 'schedule_get'
  | 'schedule_delete'
  | 'schedule_pause'
  | 'schedule_resume'
  | 'schedule_trigger'
  | 'schedule_backfill';

/** A reply: status and JSON body (`http.ts` turns it into a response). */
export interface Reply {
  readonly status: number;
  readonly body: unknown;
}

/**
 * Answers one schedule route.
 * @param body the request body parsed as JSON (`undefined` when there is none)
 */
export async function scheduleRoute(
  route: ScheduleRouteName,
  name: string,
  event: APIGatewayProxyEventV2,
  body: unknown,
  service: ScheduleService | undefined,
  caller: Caller,
): Promise<Reply> {
  if (service === undefined) throw new HttpError(404, 'not_found', 'schedules are not enabled in this deployment');
  switch (route) {
    case 'schedule_list': {
      const q = event.queryStringParameters ?? {};
      const limit = q.limit === undefined ? undefined : Number(q.limit);
      const page = await service.list(caller, {
        ...(limit === undefined ? {} : { limit }),
        ...(q.cursor === undefined ? {} : { cursor: q.cursor }),
      });
      return { status: 200, body: page };
    }
    case 'schedule_put': {
      const r = await service.put(name, body, caller);
      return { status: r.created ? 201 : 200, body: { ...r.view, changed: r.changed } };
    }
    case 'schedule_get':
      return { status: 200, body: await service.get(name, caller) };
    case 'schedule_delete':
      await service.delete(name, caller);
      return { status: 200, body: { name, deleted: true } };
    case 'schedule_pause': {
      const note = (body as { note?: unknown } | undefined)?.note;
      const extra = body === undefined ? [] : Object.keys(body as object).filter((k) => k !== 'note');
      if (extra[0] !== undefined) throw new ScheduleValidationError(extra[0], `${extra[0]}: unknown field`);
      return { status: 200, body: await service.pause(name, note as string | undefined, caller) };
    }
    case 'schedule_resume':
      return { status: 200, body: await service.resume(name, caller) };
    case 'schedule_trigger': {
      const run = await service.trigger(name, caller);
      return { status: run.created ? 202 : 200, body: run };
    }
    case 'schedule_backfill':
      return { status: 202, body: await service.backfill(name, body, caller) };
  }
}
