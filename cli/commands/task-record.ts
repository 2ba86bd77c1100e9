import type { TaskRecord } from '../../shared/task/model.js';
import { ago, truncate } from '../output.js';

/** A task record as `kaj task show` and `kaj dlq show` print it: one `key: value` line each. */
export function recordLines(r: TaskRecord, now: number): string[] {
  const lines = [
    `task id:      ${r.task_id}`,
    `status:       ${r.status}${r.discarded_at !== undefined ? ` (discarded ${r.discarded_at})` : ''}`,
    `type:         ${r.type}`,
    `priority:     ${r.priority}`,
    `attempts:     ${r.attempts}/${r.max_attempts}${r.crashes ? `, crashes ${r.crashes}` : ''}`,
    `dispatch id:  ${r.dispatch_id}`,
    `created:      ${r.created_at} (${ago(r.created_at, now)})`,
    `run at:       ${r.run_at}`,
    `updated:      ${r.updated_at} (${ago(r.updated_at, now)})`,
  ];
  if (r.started_at !== undefined) lines.push(`started:      ${r.started_at}`);
  if (r.finished_at !== undefined) lines.push(`finished:     ${r.finished_at}`);
  if (r.last_error !== undefined)
    lines.push(
      `last error:   ${r.last_error.code ? `${r.last_error.code} ` : ''}${r.last_error.name}: ${r.last_error.message}`,
    );
  if (r.outbox_pk !== undefined)
    lines.push(
      `owed message: ${r.outbox_pk} (sweeper sends it ${ago(new Date(r.outbox_due ?? 0).toISOString(), now)})`,
    );
  if (r.redrive_count) lines.push(`redriven:     ${r.redrive_count} time(s)`);
  if (r.result !== undefined) lines.push(`result:       ${truncate(JSON.stringify(r.result), 200)}`);
  lines.push(`payload:      ${truncate(JSON.stringify(r.payload) ?? 'null', 200)}`);
  for (const h of r.history) {
    lines.push(
      `attempt ${h.attempt}:    ${h.outcome} ${h.finished_at}${h.error ? ` — ${h.error.name}: ${h.error.message}` : ''}`,
    );
  }
  for (const a of r.audit ?? []) {
    lines.push(`audit:        ${a.action} by ${a.by} at ${a.at}${a.reason !== undefined ? ` — ${a.reason}` : ''}`);
  }
  return lines;
}
