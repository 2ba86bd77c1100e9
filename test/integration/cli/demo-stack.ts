/**
 * The local stack of docs/operations.md's walkthrough: `npm start` plus one task type you can
 * break and fix from the shell, so the redrive workflow can be run by hand.
 *
 *   npx tsx test/integration/cli/demo-stack.ts        (then, in another shell: npx kaj --local ...)
 *
 * `deliver_webhook` posts nowhere: it reads the API key from .kaj/demo-webhook-key and fails
 * permanently (HTTP 401, no retries help) unless the file says `valid`. `npm start` cannot
 * change a handler without a restart, and a restart empties the embedded SQS (the DLQ with it),
 * hence this script. It writes .kaj/local.json like `npm start`, so `kaj --local` finds it.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as z from 'zod';
import { consoleLogger } from '../../../local/console-logger.js';
import { LOCAL_STATE_FILE, startLocalRuntime } from '../../../local/runtime.js';
import { defineTask, PermanentError, TaskRegistry } from '../../../shared/task/define.js';
import { makeThumbnails } from '../../../tasks/make-thumbnails.js';
import { limits } from '../../../tasks/limits.js';
import { sendEmail } from '../../../tasks/send-email.js';

const KEY_FILE = resolve('.kaj', 'demo-webhook-key');

const deliverWebhook = defineTask({
  type: 'deliver_webhook',
  description: 'Deliver an event to a customer webhook (simulated; the API key lives in .kaj/demo-webhook-key)',
  schema: z.strictObject({ url: z.url(), event: z.string().min(1) }),
  handler: async (payload) => {
    let key = '';
    try {
      key = readFileSync(KEY_FILE, 'utf8').trim();
    } catch {
      // no key at all
    }
    if (key !== 'valid')
      throw new PermanentError(`webhook ${new URL(payload.url).host} rejected the API key (401 Unauthorized)`, {
        code: 'HTTP_401',
      });
    return { delivered: payload.event };
  },
});

mkdirSync(resolve('.kaj'), { recursive: true });
const runtime = await startLocalRuntime({
  registry: new TaskRegistry([sendEmail, makeThumbnails, deliverWebhook], { limits }),
  port: Number(process.env.PORT ?? 3000),
  logger: consoleLogger('warn'),
});
writeFileSync(
  resolve(LOCAL_STATE_FILE),
  `${JSON.stringify({ pid: process.pid, apiUrl: runtime.url, endpoints: runtime.endpoints, resources: runtime.resources }, null, 2)}\n`,
);
process.stdout.write(
  `demo stack up: API ${runtime.url}; task types send_email, make_thumbnails, deliver_webhook (key file ${KEY_FILE})\n`,
);
const stop = () => {
  rmSync(resolve(LOCAL_STATE_FILE), { force: true });
  void runtime.stop(5_000).then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
