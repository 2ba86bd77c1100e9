/**
 * A schedule declared in code, next to its task type:
 *
 * ```ts
 * defineTask({ type: 'sales_report', …, schedules: [{ name: 'nightly-report', cron: '30 0 * * *', timezone: 'Asia/Dhaka' }] })
 * ```
 *
 * The fields are those of `PUT /api/v1/schedules/{name}` without `type` (it is the task's), in
 * the same wire format (durations as `15m`, times as ISO-8601 strings). Validated at start-up
 * and synced to the schedules table by the scheduler (docs/schedules.md).
 *
 * No imports: `shared/task/define.ts` names this type without depending on the scheduler.
 */
export interface ScheduleDeclaration {
  readonly name: string;
  readonly cron?: string;
  readonly every?: string;
  readonly at?: string;
  readonly timezone?: string;
  readonly start_at?: string;
  readonly end_at?: string;
  readonly limit?: number;
  readonly jitter?: string;
  readonly overlap?: 'allow' | 'forbid' | 'buffer_one' | 'replace';
  readonly misfire?: 'skip' | 'run_once' | 'catch_up';
  readonly catchup_window?: string;
  readonly payload?: unknown;
  readonly priority?: 'high' | 'normal' | 'low';
  readonly max_attempts?: number;
  readonly timeout_seconds?: number;
  readonly description?: string;
}
