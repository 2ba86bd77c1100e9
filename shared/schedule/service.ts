/**
 * Managing schedules: what `PUT/GET/DELETE /api/v1/schedules…`, `kaj schedules …` and the sync
 * of schedules declared in code do. Every schedule change is an operation here, a whole-record
 * put conditioned on the version read (two writers never both win; the loser re-reads): the
 * writes are in `./writes.ts`, how a schedule is shown in `./views.ts`.
 *
 * Who may do what (docs/security.md): a caller acts on the schedules it owns; schedules declared
 * in code are read-only over the API (an operator manages them with the CLI, which sees all).
 *
 * @module
 */
import { CursorSigner } from '../task/cursor.js';
import { InvalidCursorError } from '../task/errors.js';
import { StoreRejectedError } from '../task/store-errors.js';
import type { ScheduleDeclaration } from './declaration.js';
import { ScheduleConflictError, ScheduleError, ScheduleValidationError } from './errors.js';
import { CODE_OWNER, type ScheduleRecord } from './model.js';
import type { SchedulePage } from './schedule-store.js';
import { checkScheduleName, parseDeclaration, parseScheduleSpec } from './spec.js';
import { ScheduleVersionConflictError } from './store-errors.js';
import { timesBetween } from './timing.js';
import { type ScheduleSummary, type ScheduleView, scheduleSummary } from './views.js';
import {
  change,
  type PutResult,
  type RunResult,
  readable,
  runTimes,
  type ScheduleCaller,
  type ScheduleServiceDeps,
  upsert,
  viewOf,
  visible,
  writable,
} from './writes.js';

export class ScheduleService {
  private readonly cursors: CursorSigner | undefined;

  constructor(private readonly d: ScheduleServiceDeps) {
    this.cursors =
      d.idSecret === undefined ? undefined : new CursorSigner(`${d.idSecret}\nschedules`, 'kaj-schedule-cursor');
  }

  /**
   * `PUT /schedules/{name}`: creates or replaces; the same body twice changes nothing. A caller's
   * create takes one of its `maxPerOwner` slots (a `ScheduleLimitReachedError`, naming `name`,
   * when none is left); replacing a schedule takes none. An operator's schedules are not counted.
   */
  async put(name: string, body: unknown, caller: ScheduleCaller): Promise<PutResult> {
    checkScheduleName(name);
    const { spec, hash } = parseScheduleSpec(body, this.d.registry, { rules: this.d.scheduling });
    return upsert(
      this.d,
      name,
      spec,
      hash,
      caller === undefined ? 'operator' : caller.owner,
      'api',
      caller !== undefined,
    );
  }

  async get(name: string, caller: ScheduleCaller): Promise<ScheduleView> {
    return viewOf(this.d, await readable(this.d, name, caller));
  }

  /**
   * A page of schedules the caller may see (all of them for an operator), by name. The cursor is
   * signed and bound to the caller: a tampered, foreign or unsound one is an `InvalidCursorError`.
   */
  async list(
    caller: ScheduleCaller,
    options: { limit?: number; cursor?: string } = {},
  ): Promise<{ items: ScheduleSummary[]; cursor?: string }> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
      throw new ScheduleValidationError('limit', 'limit: must be an integer in [1, 200]');
    }
    const cursors = this.cursors;
    if (cursors === undefined) {
      throw new ScheduleError('this schedule service has no id secret to sign listing cursors with', undefined);
    }
    const scope = caller === undefined ? ['operator', ''] : ['owner', caller.owner];
    const from = options.cursor === undefined ? undefined : storeCursorOf(cursors.decode(options.cursor, scope));
    let page: SchedulePage;
    try {
      page = await this.d.schedules.list(limit, from);
    } catch (err) {
      // The limit is checked above: a refusal is the position's (a signature says who wrote it, not that it is sound).
      if (from !== undefined && err instanceof StoreRejectedError)
        throw new InvalidCursorError(undefined, { cause: err });
      throw err;
    }
    const items = page.items
      .filter((r) => visible(r, caller))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((r) => scheduleSummary(r));
    return page.cursor === undefined ? { items } : { items, cursor: cursors.encode([page.cursor], scope) };
  }

  /** Deletes a schedule (runs already created are left alone); a counted one gives its owner's slot back. */
  async delete(name: string, caller: ScheduleCaller): Promise<void> {
    await change(this.d, name, caller, 'delete', () => 'delete');
  }

  async pause(name: string, note: string | undefined, caller: ScheduleCaller): Promise<ScheduleView> {
    if (note !== undefined && (typeof note !== 'string' || note.length > 500)) {
      throw new ScheduleValidationError('note', 'note: must be a string of at most 500 characters');
    }
    const now = this.d.clock.now();
    return viewOf(
      this.d,
      await change(this.d, name, caller, 'pause', (r) => {
        if (r.state === 'finished') return r;
        const out: ScheduleRecord = { ...r, state: 'paused', paused_at: new Date(now).toISOString() };
        if (note === undefined) delete out.pause_note;
        else out.pause_note = note;
        return out;
      }),
    );
  }

  /** Resumes a paused schedule: times missed while paused are the misfire policy's. */
  async resume(name: string, caller: ScheduleCaller): Promise<ScheduleView> {
    return viewOf(
      this.d,
      await change(this.d, name, caller, 'resume', (r) => {
        if (r.state !== 'paused') return r;
        const out: ScheduleRecord = { ...r, state: r.next_time === undefined ? 'finished' : 'active' };
        delete out.pause_note;
        delete out.paused_at;
        return out;
      }),
    );
  }

  /** Runs the schedule's task now (whatever its state and overlap policy); its logical date is now. */
  async trigger(name: string, caller: ScheduleCaller): Promise<RunResult> {
    const record = await writable(this.d, name, caller, 'trigger');
    const now = this.d.clock.now();
    const [result] = await runTimes(this.d, record, [now], 'trigger');
    return result as RunResult;
  }

  /**
   * Runs every time of the schedule in [from, to] that has no run yet (each time once: a time
   * that ran already is a replay), oldest first, ignoring the overlap policy.
   */
  async backfill(name: string, body: unknown, caller: ScheduleCaller): Promise<{ runs: RunResult[] }> {
    const { from, to } = parseRange(body);
    const record = await writable(this.d, name, caller, 'backfill');
    const now = this.d.clock.now();
    if (to > now) throw new ScheduleValidationError('to', 'to: must not be in the future');
    const max = this.d.scheduling.maxBackfill;
    const times = timesBetween(record.spec, from - 1, to, max + 1);
    if (times.length > max) {
      throw new ScheduleValidationError('to', `to: the range holds more than ${max} times; backfill it in parts`);
    }
    return { runs: await runTimes(this.d, record, times, 'backfill') };
  }

  /**
   * Makes the table match the schedules declared in code: creates the new ones, replaces the
   * changed ones (their state and history kept), deletes the ones no longer declared. A name held
   * by a schedule made through the API is left to it (logged).
   */
  async syncDeclared(
    declarations: readonly { readonly type: string; readonly declaration: ScheduleDeclaration }[],
  ): Promise<{ created: string[]; updated: string[]; deleted: string[]; conflicts: string[] }> {
    const report = {
      created: [] as string[],
      updated: [] as string[],
      deleted: [] as string[],
      conflicts: [] as string[],
    };
    const declared = new Set<string>();
    for (const { type, declaration } of declarations) {
      const { name, spec, hash } = parseDeclaration(declaration, type, this.d.registry, this.d.scheduling);
      if (declared.has(name)) throw new ScheduleValidationError('name', `schedule "${name}" is declared twice`);
      declared.add(name);
      try {
        const r = await upsert(this.d, name, spec, hash, CODE_OWNER, 'code');
        if (r.created) report.created.push(name);
        else if (r.changed) report.updated.push(name);
      } catch (err) {
        if (!(err instanceof ScheduleConflictError)) throw err;
        report.conflicts.push(name);
        this.d.logger.warn('schedule declared in code conflicts with one made through the API', { schedule: name });
      }
    }
    let cursor: string | undefined;
    do {
      const page = await this.d.schedules.list(200, cursor);
      for (const r of page.items) {
        if (r.source !== 'code' || declared.has(r.name)) continue;
        try {
          await this.d.schedules.delete(r.name, r.version);
          report.deleted.push(r.name);
        } catch (err) {
          if (!(err instanceof ScheduleVersionConflictError)) throw err;
        }
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    return report;
  }
}

/** The store's own cursor, which a listing cursor holds (one non-empty string). */
function storeCursorOf(position: unknown[]): string {
  const [cursor, ...rest] = position;
  if (typeof cursor !== 'string' || cursor === '' || rest.length > 0) throw new InvalidCursorError();
  return cursor;
}

/** `{ "from": ISO, "to": ISO }` of a backfill. */
function parseRange(body: unknown): { from: number; to: number } {
  const o = (body ?? {}) as Record<string, unknown>;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ScheduleValidationError('body', 'body: send {"from": ISO time, "to": ISO time}');
  }
  for (const k of Object.keys(o)) {
    if (k !== 'from' && k !== 'to') throw new ScheduleValidationError(k, `${k}: unknown field`);
  }
  const time = (field: 'from' | 'to'): number => {
    const v = o[field];
    const ms = typeof v === 'string' && /^\d{4}-\d\d-\d\dT.*(Z|[+-]\d\d:?\d\d)$/.test(v) ? Date.parse(v) : Number.NaN;
    if (!Number.isFinite(ms)) {
      throw new ScheduleValidationError(
        field,
        `${field}: must be an ISO-8601 time with a zone, such as 2026-10-01T00:00:00Z`,
      );
    }
    return ms;
  };
  const from = time('from');
  const to = time('to');
  if (to < from) throw new ScheduleValidationError('to', 'to: must not be before from');
  return { from, to };
}
