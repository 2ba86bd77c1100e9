import * as z from 'zod';
import { defineTask } from '../shared/task/define.js';

const ZONE = 'Asia/Dhaka';

/** The calendar day (YYYY-MM-DD) of an instant in a zone. */
function dayIn(zone: string, at: Date): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    at,
  );
}

/**
 * A scheduled task and the logical-date habit (docs/schedules.md): the nightly sales report of
 * the day before, at 00:30 in Dhaka.
 *
 * The handler reports on the day *before its scheduled time* (`ctx.scheduledTime`), never on
 * "yesterday" from the clock: a run that is retried at 09:00, caught up after an outage, or
 * backfilled a month later still reports the day it was scheduled for, and running it twice
 * writes the same report (the output key is derived from the day).
 */
export const salesReport = defineTask({
  type: 'sales_report',
  description: 'The sales report of the day before the scheduled time (the logical date)',
  schema: z.strictObject({ region: z.string().min(1).max(64).default('all') }),
  timeoutSeconds: 120,
  schedules: [{ name: 'nightly-sales-report', cron: '30 0 * * *', timezone: ZONE, misfire: 'run_once' }],
  handler: async (payload, ctx) => {
    // Submitted by hand (no schedule): the report of the day before now.
    const logical = ctx.scheduledTime ?? new Date();
    const day = dayIn(ZONE, new Date(logical.getTime() - 86_400_000));
    if (ctx.signal.aborted) throw ctx.signal.reason;
    // A real handler would query the day's orders and write the report where it belongs.
    return { region: payload.region, day, report_key: `reports/sales/${payload.region}/${day}.csv` };
  },
});
