import type { TaskRecord } from '../../shared/task/model.js';
import type { StepView, WaitingForView } from '../../shared/workflow/view.js';
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
  if (r.parent_id !== undefined) lines.push(`parent run:   ${r.parent_id} (its call ${r.parent_step ?? '?'})`);
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

/**
 * A workflow run's timeline as `kaj task show` prints it: one line per step, sleep, signal and
 * child in the order they started, then what a waiting run waits for.
 */
export function timelineLines(steps: readonly StepView[], waiting?: WaitingForView): string[] {
  if (steps.length === 0 && waiting === undefined) return [];
  const width = Math.min(32, Math.max(4, ...steps.map((s) => s.name.length)));
  const lines = ['timeline:'];
  for (const s of steps) {
    const when = s.ended_at !== undefined ? `${s.started_at ?? '?'} → ${s.ended_at}` : (s.started_at ?? '');
    const extra = [
      s.attempts !== undefined && s.attempts > 1 ? `${s.attempts} attempts` : undefined,
      s.until !== undefined && s.status !== 'done' && s.status !== 'received' ? `until ${s.until}` : undefined,
      s.next_attempt_at !== undefined ? `next attempt ${s.next_attempt_at}` : undefined,
      s.child_id !== undefined ? `task ${s.child_id}` : undefined,
      s.error !== undefined ? `${s.error.name}: ${truncate(s.error.message, 120)}` : undefined,
    ].filter((x) => x !== undefined);
    lines.push(
      `  ${s.name.padEnd(width)}  ${s.kind.padEnd(6)}  ${s.status.padEnd(9)}  ${when}${extra.length > 0 ? `  (${extra.join('; ')})` : ''}`,
    );
  }
  if (waiting !== undefined) {
    const what = [
      `its timer at ${waiting.timer}`,
      ...(waiting.signals ?? []).map((g) => `signal ${g.name} until ${g.deadline}`),
      ...(waiting.children === undefined ? [] : [`${waiting.children} child task(s) to end`]),
    ];
    lines.push(`waiting for:  ${what.join(', ')}`);
  }
  return lines;
}
