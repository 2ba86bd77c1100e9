/**
 * Managing schedules: what `PUT/GET/DELETE /api/v1/schedules…`, `kaj schedules …` and the sync
 * of schedules declared in code do. Every schedule change is an operation here, a whole-record
 * put conditioned on the version read (two writers never both win; the loser re-reads).
 *
 * Who may do what (docs/security.md): a caller acts on the schedules it owns; schedules declared
 * in code are read-only over the API (an operator manages them with the CLI, which sees all).
 *
 * @module
 */
import { StoreRejectedError } from '../task/store-errors.js';
import { OwnerScheduleLimitError, ScheduleVersionConflictError } from './store-errors.js';
import type { SchedulePage } from './schedule-store.js';
import { CursorSigner } from '../task/cursor.js';
import type { TaskRegistry } from '../task/define.js';
import { InvalidCursorError } from '../task/errors.js';
import type { TaskStatus } from '../task/model.js';
import type { ScheduleDeclaration } from './declaration.js';
import {
  ScheduleConflictError,
  ScheduleError,
  ScheduleLimitReachedError,
  ScheduleNotFoundError,
  ScheduleValidationError,
} from './errors.js';
import { CODE_OWNER, type RunEntry, type RunKind, type ScheduleRecord, type ScheduleSpec } from './model.js';
import { fireAt, withDue, withRecent } from './plan.js';
import { checkScheduleName, parseDeclaration, parseScheduleSpec, renderSpec } from './spec.js';
import { createRun, type SchedulerDeps } from './tick.js';
import { jitterOffsetMs, nextTimeAfter, timesBetween, upcoming } from './timing.js';

export interface ScheduleServiceDeps extends SchedulerDeps {
  readonly registry: TaskRegistry;
  /**
   * The deployment's id secret: the listing's cursors are signed under a key derived from it
   * (`shared/task/cursor.ts`), as the task listing's are. Without one (the scheduler function,
   * which never lists) `list` refuses to run.
   */
  readonly idSecret?: string;
}

/** Who asks: an API caller (owner), or an operator (`undefined`: the CLI, the code sync). */
export type ScheduleCaller = { readonly owner: string } | undefined;

/** A recent run as shown: what the schedule recorded, and its task's status now. */
export interface RunView extends RunEntry {
  readonly task_status?: TaskStatus | 'expired';
}

/** A schedule as the API and the CLI show it. */
export interface ScheduleView {
  readonly name: string;
  readonly owner: string;
  readonly source: ScheduleRecord['source'];
  readonly state: ScheduleRecord['state'];
  readonly pause_note?: string;
  readonly paused_at?: string;
  readonly spec: Record<string, unknown>;
  /** The next nominal times (the logical dates, UTC ISO). */
  readonly next_times: string[];
  /** When each of them fires: the time plus the schedule's jitter offset. */
  readonly next_fire_times: string[];
  readonly jitter_offset_seconds: number;
  readonly buffered?: string;
  readonly fired: number;
  readonly missed: number;
  readonly last_run?: ScheduleRecord['last_run'];
  readonly recent_runs: RunView[];
  readonly created_at: string;
  readonly updated_at: string;
}

/** One line of a listing. */
export interface ScheduleSummary {
  readonly name: string;
  readonly owner: string;
  readonly source: ScheduleRecord['source'];
  readonly state: ScheduleRecord['state'];
  readonly type: string;
  readonly when: string;
  readonly timezone: string;
  readonly next_fire_time?: string;
  readonly last_run?: ScheduleRecord['last_run'];
  readonly last_outcome?: RunEntry['outcome'];
}

export interface PutResult {
  readonly view: ScheduleView;
  readonly created: boolean;
  /** False when the body matched the stored spec (an idempotent replay). */
  readonly changed: boolean;
}

export interface RunResult {
  readonly run_key: string;
  readonly scheduled_time: string;
  readonly task_id: string;
  /** False when the run's task existed already. */
  readonly created: boolean;
  readonly invalid?: string;
}

/** How many times a write re-reads after losing to another writer before it gives up (409). */
const WRITE_ROUNDS = 5;
/** Next times shown. */
const UPCOMING = 5;

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
    return this.upsert(name, spec, hash, caller === undefined ? 'operator' : caller.owner, 'api', caller !== undefined);
  }

  async get(name: string, caller: ScheduleCaller): Promise<ScheduleView> {
    return this.view(await this.readable(name, caller));
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
      .map((r) => this.summary(r));
    return page.cursor === undefined ? { items } : { items, cursor: cursors.encode([page.cursor], scope) };
  }

  /** Deletes a schedule (runs already created are left alone); a counted one gives its owner's slot back. */
  async delete(name: string, caller: ScheduleCaller): Promise<void> {
    await this.change(name, caller, 'delete', () => 'delete');
  }

  async pause(name: string, note: string | undefined, caller: ScheduleCaller): Promise<ScheduleView> {
    if (note !== undefined && (typeof note !== 'string' || note.length > 500)) {
      throw new ScheduleValidationError('note', 'note: must be a string of at most 500 characters');
    }
    const now = this.d.clock.now();
    return this.view(
      await this.change(name, caller, 'pause', (r) => {
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
    return this.view(
      await this.change(name, caller, 'resume', (r) => {
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
    const record = await this.writable(name, caller, 'trigger');
    const now = this.d.clock.now();
    const [result] = await this.runTimes(record, [now], 'trigger');
    return result as RunResult;
  }

  /**
   * Runs every time of the schedule in [from, to] that has no run yet (each time once: a time
   * that ran already is a replay), oldest first, ignoring the overlap policy.
   */
  async backfill(name: string, body: unknown, caller: ScheduleCaller): Promise<{ runs: RunResult[] }> {
    const { from, to } = parseRange(body);
    const record = await this.writable(name, caller, 'backfill');
    const now = this.d.clock.now();
    if (to > now) throw new ScheduleValidationError('to', 'to: must not be in the future');
    const max = this.d.scheduling.maxBackfill;
    const times = timesBetween(record.spec, from - 1, to, max + 1);
    if (times.length > max) {
      throw new ScheduleValidationError('to', `to: the range holds more than ${max} times; backfill it in parts`);
    }
    return { runs: await this.runTimes(record, times, 'backfill') };
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
        const r = await this.upsert(name, spec, hash, CODE_OWNER, 'code');
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

  // ------------------------------------------------------------------------------------------

  private async upsert(
    name: string,
    spec: ScheduleSpec,
    hash: string,
    owner: string,
    source: ScheduleRecord['source'],
    counted = false,
  ): Promise<PutResult> {
    for (let round = 0; round < WRITE_ROUNDS; round += 1) {
      const existing = await this.d.schedules.get(name);
      const now = this.d.clock.now();
      const iso = new Date(now).toISOString();
      if (existing !== undefined) {
        if (existing.source !== source) {
          throw existing.source === 'code'
            ? new ScheduleConflictError(
                name,
                'declared_in_code',
                `schedule "${name}" is declared in code; change it there`,
              )
            : new ScheduleConflictError(name, 'name_taken', `schedule "${name}" exists already (made through the API)`);
        }
        if (source === 'api' && owner !== 'operator' && existing.owner !== owner) {
          throw new ScheduleConflictError(name, 'name_taken', `the name "${name}" is taken`);
        }
        if (existing.spec_hash === hash) return { view: await this.view(existing), created: false, changed: false };
        this.checkAt(name, spec, source, existing.spec.at, now);
        // A changed spec takes effect from the next time not yet handled (or now).
        const from = existing.next_time === undefined ? now : Math.min(existing.next_time, now);
        const next = nextTimeAfter(spec, from - 1);
        const replaced: ScheduleRecord = {
          ...existing,
          spec,
          spec_hash: hash,
          state: existing.state === 'paused' ? 'paused' : next === undefined ? 'finished' : 'active',
          version: existing.version + 1,
          updated_at: iso,
        };
        if (next === undefined) delete replaced.next_time;
        else replaced.next_time = next;
        if (spec.limit !== undefined && replaced.fired >= spec.limit) {
          replaced.state = 'finished';
          delete replaced.next_time;
        }
        try {
          const written = withDue(replaced, now);
          await this.d.schedules.put(written, existing.version);
          return { view: await this.view(written), created: false, changed: true };
        } catch (err) {
          if (!(err instanceof ScheduleVersionConflictError)) throw err;
          continue;
        }
      }
      this.checkAt(name, spec, source, undefined, now);
      const next = nextTimeAfter(spec, now - 1);
      const record: ScheduleRecord = {
        name,
        owner,
        source,
        spec,
        spec_hash: hash,
        state: next === undefined ? 'finished' : 'active',
        fired: 0,
        missed: 0,
        recent: [],
        version: 1,
        created_at: iso,
        updated_at: iso,
        ...(next === undefined ? {} : { next_time: next }),
        ...(counted ? { counted: true as const } : {}),
      };
      try {
        const written = withDue(record, now);
        const max = this.d.scheduling.maxPerOwner;
        await this.d.schedules.put(written, 'absent', counted ? { owner, max } : undefined);
        return { view: await this.view(written), created: true, changed: true };
      } catch (err) {
        if (err instanceof OwnerScheduleLimitError) throw new ScheduleLimitReachedError(name, err.max, { cause: err });
        if (!(err instanceof ScheduleVersionConflictError)) throw err;
      }
    }
    throw new ScheduleConflictError(name, 'concurrent_change', `schedule "${name}" is being changed by others; retry`);
  }

  /**
   * A one-time schedule whose `at` has passed would never run: refused through the API (422
   * naming `at`) when the schedule is new or its `at` changes. Declared in code, it is stored
   * finished, with a warning (a declaration is synced at every start; refusing it would stop the
   * deployment once the time has passed).
   */
  private checkAt(
    name: string,
    spec: ScheduleSpec,
    source: ScheduleRecord['source'],
    storedAt: number | undefined,
    now: number,
  ): void {
    if (spec.at === undefined || spec.at > now || spec.at === storedAt) return;
    if (source === 'code') {
      this.d.logger.warn('schedule declared in code has an at time in the past: it will not run', {
        schedule: name,
        at: new Date(spec.at).toISOString(),
      });
      return;
    }
    throw new ScheduleValidationError(
      'at',
      `at: ${new Date(spec.at).toISOString()} has passed; give a future time (to run the task now, POST /api/v1/tasks)`,
      { schedule: name },
    );
  }

  /** Read-modify-write with the version condition; `apply` returns the new record or `'delete'`. */
  private async change(
    name: string,
    caller: ScheduleCaller,
    action: string,
    apply: (r: ScheduleRecord) => ScheduleRecord | 'delete',
  ): Promise<ScheduleRecord> {
    for (let round = 0; round < WRITE_ROUNDS; round += 1) {
      const r = await this.writable(name, caller, action);
      const out = apply(r);
      try {
        if (out === 'delete') {
          await this.d.schedules.delete(name, r.version, r.counted === true ? r.owner : undefined);
          return r;
        }
        if (out === r) return r;
        const now = this.d.clock.now();
        const written = withDue({ ...out, version: r.version + 1, updated_at: new Date(now).toISOString() }, now);
        await this.d.schedules.put(written, r.version);
        return written;
      } catch (err) {
        if (!(err instanceof ScheduleVersionConflictError)) throw err;
      }
    }
    throw new ScheduleConflictError(name, 'concurrent_change', `schedule "${name}" is being changed by others; retry`);
  }

  /** Creates the runs of `times` (trigger, backfill) and records them on the schedule. */
  private async runTimes(record: ScheduleRecord, times: readonly number[], kind: RunKind): Promise<RunResult[]> {
    const now = this.d.clock.now();
    const results: RunResult[] = [];
    const entries: RunEntry[] = [];
    for (const time of times) {
      const runAt = kind === 'backfill' ? now : Math.max(now, time);
      const made = await createRun(this.d, record, { scheduledTime: time, runAt, kind });
      const scheduled_time = new Date(time).toISOString();
      const run_key = `${record.name}@${scheduled_time}`;
      if (made.kind === 'invalid') {
        results.push({
          run_key,
          scheduled_time,
          task_id: made.taskId,
          created: false,
          invalid: made.entry.reason ?? '',
        });
        entries.push(made.entry);
        continue;
      }
      results.push({ run_key, scheduled_time, task_id: made.taskId, created: !made.replayed });
      if (!made.replayed) {
        entries.push({
          scheduled_time,
          outcome: 'created',
          kind,
          task_id: made.taskId,
          at: new Date(now).toISOString(),
        });
      }
    }
    const last = results.filter((r) => r.invalid === undefined).at(-1);
    if (entries.length > 0 || last !== undefined) {
      await this.change(record.name, undefined, kind, (r) => ({
        ...r,
        recent: withRecent(r.recent, entries, this.d.scheduling.recentRuns),
        ...(last === undefined ? {} : { last_run: { task_id: last.task_id, scheduled_time: last.scheduled_time } }),
      })).catch((err: unknown) => {
        // The runs exist; only their mention on the schedule is lost.
        if (!(err instanceof ScheduleNotFoundError)) throw err;
      });
    }
    return results;
  }

  private async readable(name: string, caller: ScheduleCaller): Promise<ScheduleRecord> {
    const r = await this.d.schedules.get(name);
    if (r === undefined || !visible(r, caller)) throw new ScheduleNotFoundError(name);
    return r;
  }

  private async writable(name: string, caller: ScheduleCaller, action: string): Promise<ScheduleRecord> {
    const r = await this.readable(name, caller);
    if (caller !== undefined && r.source === 'code') {
      throw new ScheduleConflictError(
        name,
        'declared_in_code',
        `schedule "${name}" is declared in code: ${action} it with the CLI (kaj schedules ${action})`,
      );
    }
    return r;
  }

  private async view(r: ScheduleRecord): Promise<ScheduleView> {
    const offset = jitterOffsetMs(r.name, r.spec.jitter_ms);
    const after = r.next_time === undefined ? undefined : r.next_time - 1;
    const next = r.state === 'finished' || after === undefined ? [] : upcoming(r.spec, after, UPCOMING);
    const recent_runs = await Promise.all(
      r.recent.map(async (e): Promise<RunView> => {
        if (e.task_id === undefined) return e;
        const task = await this.d.lifecycle.requests.find(e.task_id).catch(() => undefined);
        return { ...e, task_status: task === undefined ? 'expired' : task.status };
      }),
    );
    return {
      name: r.name,
      owner: r.owner,
      source: r.source,
      state: r.state,
      ...(r.pause_note === undefined ? {} : { pause_note: r.pause_note }),
      ...(r.paused_at === undefined ? {} : { paused_at: r.paused_at }),
      spec: renderSpec(r.spec),
      next_times: next.map((t) => new Date(t).toISOString()),
      next_fire_times: next.map((t) => new Date(fireAt(r, t)).toISOString()),
      jitter_offset_seconds: offset / 1000,
      ...(r.buffered === undefined ? {} : { buffered: new Date(r.buffered).toISOString() }),
      fired: r.fired,
      missed: r.missed,
      ...(r.last_run === undefined ? {} : { last_run: r.last_run }),
      recent_runs,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  private summary(r: ScheduleRecord): ScheduleSummary {
    const s = r.spec;
    const when =
      s.cron !== undefined
        ? `cron ${s.cron}`
        : s.every_ms !== undefined
          ? `every ${String(renderSpec(s).every)}`
          : `at ${new Date(s.at ?? 0).toISOString()}`;
    const last = r.recent.at(-1);
    return {
      name: r.name,
      owner: r.owner,
      source: r.source,
      state: r.state,
      type: s.task.type,
      when,
      timezone: s.timezone,
      ...(r.state === 'active' && r.next_time !== undefined
        ? { next_fire_time: new Date(fireAt(r, r.next_time)).toISOString() }
        : {}),
      ...(r.last_run === undefined ? {} : { last_run: r.last_run }),
      ...(last === undefined ? {} : { last_outcome: last.outcome }),
    };
  }
}

/** An operator sees every schedule; a caller its own and those declared in code. */
/** The store's own cursor, which a listing cursor holds (one non-empty string). */
function storeCursorOf(position: unknown[]): string {
  const [cursor, ...rest] = position;
  if (typeof cursor !== 'string' || cursor === '' || rest.length > 0) throw new InvalidCursorError();
  return cursor;
}

function visible(r: ScheduleRecord, caller: ScheduleCaller): boolean {
  return caller === undefined || r.owner === caller.owner || r.source === 'code';
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
