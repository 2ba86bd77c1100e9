import { TaskRegistry } from '../shared/task/define.js';
import { lanes } from './lanes.js';
import { limits } from './limits.js';
import { loanApplication } from './loan-application.js';
import { makeThumbnails } from './make-thumbnails.js';
import { nightlyClose } from './nightly-close.js';
import { nightlySales, nightlySalesTasks } from './nightly-sales.js';
import { order } from './order.js';
import { salesReport } from './sales-report.js';
import { sendEmail } from './send-email.js';
import { sendSms } from './send-sms.js';

/**
 * Every task type this deployment runs, with its lanes (`tasks/lanes.ts`) and limits
 * (`tasks/limits.ts`). To add a type: write `tasks/<name>.ts` with `defineTask({...})` (or
 * `defineWorkflow({...})`, docs/workflows.md; or a pipeline, `definePipeline`, docs/pipelines.md,
 * with its node types) and add it to this list.
 */
export const registry = new TaskRegistry(
  [
    sendEmail,
    sendSms,
    makeThumbnails,
    salesReport,
    order,
    loanApplication,
    nightlyClose,
    ...nightlySalesTasks,
    nightlySales,
  ],
  {
    lanes,
    limits,
  },
);
