/**
 * `GET /api/v1/tasks?status=…&type=…&limit=…&cursor=…`: the caller's tasks of one listable
 * status, newest first, from the sparse listing index — or, for `status=delayed`, the queued
 * tasks waiting in the table, soonest first, from the outbox index (`shared/task/listing.ts`).
 *
 * @module
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import * as z from 'zod';
import type { ListedTask } from '../../task/task-store.js';
import { listedAt, MAX_LIST_LIMIT, type TaskListing } from '../../task/listing.js';
import { LISTING_VIEWS, type ListingView } from '../../task/model.js';
import type { Caller } from '../../task/submit.js';
import { validationErrorOf } from '../../task/submit.js';
import { InvalidCursorError, ValidationError } from '../../task/errors.js';
import { HttpError } from './errors.js';

/** Rows per page when the request names no `limit`. */
export const DEFAULT_LIST_LIMIT = 50;

const NOT_LISTED: Readonly<Record<string, string>> = {
  queued:
    'queued tasks wait in SQS, not in the listing index (an index entry per task would cost a write each): their count is the queue depth (`kaj stats`); those waiting in the table (a delay beyond 15 minutes) are status=delayed',
  succeeded:
    'succeeded tasks are not listed (the ordinary case: listing them would cost a write per task); GET one by id',
};

/** The query string of the listing route. Unknown parameters are refused, so a typo is not a silent "no filter". */
export const listQuerySchema = z.strictObject({
  status: z.string().superRefine((s, ctx) => {
    if ((LISTING_VIEWS as readonly string[]).includes(s)) return;
    ctx.addIssue({
      code: 'custom',
      message: NOT_LISTED[s] ?? `must be one of ${LISTING_VIEWS.join(', ')}`,
    });
  }),
  type: z.string().min(1).max(64).optional(),
  limit: z
    .string()
    .regex(/^\d{1,3}$/, `must be an integer from 1 to ${MAX_LIST_LIMIT}`)
    .transform(Number)
    .pipe(
      z
        .number()
        .int()
        .min(1, `must be an integer from 1 to ${MAX_LIST_LIMIT}`)
        .max(MAX_LIST_LIMIT, `must be an integer from 1 to ${MAX_LIST_LIMIT}`),
    )
    .optional(),
  // Checked by the listing (empty, too long, tampered: 400 invalid_cursor), as the schedule listing's.
  cursor: z.string().optional(),
});

/** A row of the listing, as the API answers it. */
export type ListedTaskView = Omit<ListedTask, 'list_sk' | 'owner'> & {
  /** When the task entered the listed status (ISO); for a delayed task, its last write (submit, reschedule). */
  readonly listed_at: string;
};

export function toListedView(row: ListedTask): ListedTaskView {
  const { list_sk: _sk, owner: _owner, ...rest } = row;
  return { ...rest, listed_at: listedAt(row) };
}

export async function listRoute(
  event: APIGatewayProxyEventV2,
  listing: TaskListing | undefined,
  caller: Caller,
): Promise<{ items: ListedTaskView[]; cursor?: string }> {
  if (listing === undefined) throw new HttpError(404, 'not_found', 'listing is not available in this deployment');
  const raw = event.queryStringParameters ?? {};
  if (raw.status === undefined)
    throw badQuery(new ValidationError('status', `status: required (one of ${LISTING_VIEWS.join(', ')})`));
  const parsed = listQuerySchema.safeParse(raw);
  if (!parsed.success) throw badQuery(validationErrorOf(parsed.error));
  const q = parsed.data;
  const page = await catchingBadQuery(() =>
    listing.list({
      status: q.status as ListingView,
      owner: caller.owner,
      limit: q.limit ?? DEFAULT_LIST_LIMIT,
      ...(q.type === undefined ? {} : { type: q.type }),
      ...(q.cursor === undefined ? {} : { cursor: q.cursor }),
    }),
  );
  return { items: page.items.map(toListedView), ...(page.cursor === undefined ? {} : { cursor: page.cursor }) };
}

/** A bad query parameter is a 400 naming it, not a 422: there is no body. A bad cursor is `invalid_cursor`. */
function badQuery(err: ValidationError): HttpError {
  return new HttpError(400, 'invalid_query', err.message, { field: err.field, cause: err });
}

async function catchingBadQuery<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw err instanceof ValidationError && !(err instanceof InvalidCursorError) ? badQuery(err) : err;
  }
}
