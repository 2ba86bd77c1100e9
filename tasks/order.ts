import * as z from 'zod';
import { PermanentError, RetryableError } from '../shared/task/define.js';
import { defineWorkflow } from '../shared/workflow/define.js';

const STEPS = ['reserve_stock', 'charge_payment', 'make_invoice', 'send_email'] as const;

/**
 * An order, as a workflow of four steps: reserve the stock, charge the payment, make the invoice,
 * email the customer. Each step runs once for the order and is recorded; a worker that dies in the
 * middle leaves a run that the next worker replays, getting the recorded steps back instead of
 * charging twice. The services are simulated (nothing leaves the machine); `simulate` makes a
 * step fail, so you can watch a step's retries and a failed run.
 */
export const order = defineWorkflow({
  type: 'order',
  description: 'Reserve stock, charge the payment, make the invoice, email the customer (simulated services)',
  schema: z.strictObject({
    order_id: z.string().min(1).max(64),
    sku: z.string().min(1).max(64),
    quantity: z.number().int().positive().max(1_000),
    amount: z.number().positive().max(1_000_000),
    email: z.email(),
    /** Demo knobs: the step `step` fails its first `transient_failures` attempts (503), or for good (`reject`). */
    simulate: z
      .strictObject({
        step: z.enum(STEPS),
        transient_failures: z.number().int().min(0).max(20).default(0),
        reject: z.boolean().default(false),
      })
      .optional(),
  }),
  maxAttempts: 4,
  timeoutSeconds: 30,
  backoff: { baseSeconds: 1, capSeconds: 30 },
  run: async (input, wf) => {
    // Each service gets the step's key as its idempotency key: a step runs at least once.
    const service = (step: (typeof STEPS)[number]) => async (s: { key: string; attempt: number }) => {
      const sim = input.simulate;
      if (sim?.step === step && sim.reject) throw new PermanentError(`${step}: refused by the service`);
      if (sim?.step === step && s.attempt <= sim.transient_failures) {
        throw new RetryableError(`${step}: service unavailable (503)`, { code: 'HTTP_503' });
      }
      return { id: `${step}:${s.key}` };
    };
    const reservation = await wf.step('reserve_stock', service('reserve_stock'));
    const charge = await wf.step('charge_payment', service('charge_payment'));
    const invoice = await wf.step('make_invoice', service('make_invoice'));
    const email = await wf.step('send_email', service('send_email'));
    return {
      order_id: input.order_id,
      reservation: reservation.id,
      charge: charge.id,
      invoice: invoice.id,
      email: email.id,
    };
  },
});
