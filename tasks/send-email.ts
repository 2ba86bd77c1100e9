import * as z from 'zod';
import { defineTask, PermanentError, RetryableError } from '../shared/task/define.js';
import { delay } from './simulated.js';

/**
 * Sends an email through a provider. The provider here is simulated (no email leaves the
 * machine); `simulate` tells it to fail, so you can watch retries and dead letters.
 */
export const sendEmail = defineTask({
  type: 'send_email',
  description: 'Send one email through the (simulated) provider',
  schema: z.strictObject({
    to: z.email(),
    subject: z.string().min(1).max(200),
    body: z.string().max(10_000).default(''),
    /** Demo knobs: fail the first N attempts with a 503, or reject outright with a 400. */
    simulate: z
      .strictObject({
        transient_failures: z.number().int().min(0).max(50).default(0),
        reject: z.boolean().default(false),
        latency_ms: z.number().int().min(0).max(10_000).default(20),
      })
      .optional(),
  }),
  maxAttempts: 6,
  timeoutSeconds: 30,
  // The provider's account limit, shared by every worker (tasks/limits.ts).
  uses: ['email_provider'],
  backoff: { baseSeconds: 1, capSeconds: 120 },
  handler: async (payload, ctx) => {
    const sim = payload.simulate ?? { transient_failures: 0, reject: false, latency_ms: 20 };
    await delay(sim.latency_ms, ctx.signal);
    if (sim.reject) throw new PermanentError(`provider rejected recipient ${payload.to}`, { code: 'HTTP_400' });
    if (ctx.attempt <= sim.transient_failures) {
      throw new RetryableError('provider unavailable (503)', { code: 'HTTP_503' });
    }
    ctx.logger.info('email sent', { subject_length: payload.subject.length });
    return { message_id: `msg-${ctx.taskId}-${ctx.attempt}`, accepted: [payload.to] };
  },
});
