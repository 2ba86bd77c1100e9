import * as z from 'zod';
import { defineTask, PermanentError, RetryableError } from '../shared/task/define.js';
import { delay } from './simulated.js';

/**
 * Sends one SMS through a gateway. The gateway here is simulated (nothing leaves the machine);
 * `simulate` makes it fail a few times, refuse, or be slow. The loan application starts it as a
 * child task (`wf.run`): its own retries and dead letter, its result handed back to the run.
 */
export const sendSms = defineTask({
  type: 'send_sms',
  description: 'Send one SMS through the (simulated) gateway',
  schema: z.strictObject({
    to: z.string().min(1).max(200),
    text: z.string().min(1).max(640),
    simulate: z
      .strictObject({
        transient_failures: z.number().int().min(0).max(20).default(0),
        reject: z.boolean().default(false),
        latency_ms: z.number().int().min(0).max(10_000).default(0),
      })
      .optional(),
  }),
  maxAttempts: 5,
  timeoutSeconds: 30,
  backoff: { baseSeconds: 1, capSeconds: 60 },
  handler: async (payload, ctx) => {
    const sim = payload.simulate;
    if (sim !== undefined && sim.latency_ms > 0) await delay(sim.latency_ms, ctx.signal);
    if (sim?.reject === true)
      throw new PermanentError(`gateway refused the number of ${payload.to}`, { code: 'HTTP_400' });
    if (sim !== undefined && ctx.attempt <= sim.transient_failures) {
      throw new RetryableError('gateway unavailable (503)', { code: 'HTTP_503' });
    }
    return { sms_id: `sms-${ctx.taskId}`, segments: Math.ceil(payload.text.length / 160) };
  },
});
