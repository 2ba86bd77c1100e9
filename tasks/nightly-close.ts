import * as z from 'zod';
import { defineWorkflow } from '../shared/workflow/define.js';
import { salesReport } from './sales-report.js';

/**
 * A schedule that starts a workflow: each night at 00:45 in Dhaka, the sales report of every
 * region, each a child task (`wf.run`), then one summary step. The children inherit the run's
 * logical date (`scheduledTime`), so a caught-up or retried night reports the day it was
 * scheduled for, in every region alike.
 */
export const nightlyClose = defineWorkflow({
  type: 'nightly_close',
  description: 'Each night: the sales report of every region (child tasks of the same logical date), then a summary',
  schema: z.strictObject({
    regions: z.array(z.string().min(1).max(64)).min(1).max(50).default(['north', 'south', 'east', 'west']),
  }),
  timeoutSeconds: 60,
  schedules: [{ name: 'nightly-close', cron: '45 0 * * *', timezone: 'Asia/Dhaka', misfire: 'run_once' }],
  run: async (input, wf) => {
    const reports = await Promise.all(
      input.regions.map((region) => wf.run(salesReport, { region }, { name: `report_${region}` })),
    );
    return wf.step('publish_summary', () => ({
      day: reports[0]?.day,
      reports: reports.map((r) => r.report_key),
    }));
  },
});
