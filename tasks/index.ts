import { TaskRegistry } from '../shared/task/define.js';
import { makeThumbnails } from './make-thumbnails.js';
import { salesReport } from './sales-report.js';
import { sendEmail } from './send-email.js';

/**
 * Every task type this deployment runs. To add one: write `tasks/<name>.ts` with
 * `defineTask({...})` and add it to this list.
 */
export const registry = new TaskRegistry([sendEmail, makeThumbnails, salesReport]);
