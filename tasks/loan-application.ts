import * as z from 'zod';
import { PermanentError, RetryableError } from '../shared/task/define.js';
import { defineWorkflow } from '../shared/workflow/define.js';
import { sendSms } from './send-sms.js';
import { delay } from './simulated.js';

const STEPS = ['verify_documents', 'risk_score', 'contract_pdf', 'disburse', 'void_contract', 'send_sms'] as const;
type Step = (typeof STEPS)[number];

/**
 * A loan application over several services and days: verify the documents, score the risk; over
 * 50,000, wait for the manager's approval (the signal `manager_approval` with `{ "approved": … }`)
 * or 48 hours, whichever comes first; make the contract, disburse the money, send an SMS (a child
 * task, `send_sms`). If the
 * disbursement fails for good, the contract is voided (a compensation, itself a durable step)
 * and the run fails with the disbursement's error.
 *
 * The services are simulated (nothing leaves the machine): `simulate` makes one step fail a few
 * times (`transient_failures`), for good (`reject`), or take `latency_ms`.
 */
export const loanApplication = defineWorkflow({
  type: 'loan_application',
  description: 'Verify, score, approve over 50,000 (signal manager_approval or 48 h), contract, disburse, SMS',
  schema: z.strictObject({
    applicant: z.string().min(1).max(200),
    amount: z.number().positive().max(10_000_000),
    simulate: z
      .strictObject({
        step: z.enum(STEPS),
        transient_failures: z.number().int().min(0).max(20).default(0),
        reject: z.boolean().default(false),
        latency_ms: z.number().int().min(0).max(20_000).default(0),
      })
      .optional(),
  }),
  maxAttempts: 4,
  timeoutSeconds: 30,
  backoff: { baseSeconds: 1, capSeconds: 60 },
  run: async (input, wf) => {
    // A simulated service: gets the step's key as its idempotency key (a step runs at least once).
    const service =
      (step: Step, make: () => Record<string, unknown> = () => ({})) =>
      async (s: { key: string; attempt: number; signal: AbortSignal }) => {
        const sim = input.simulate?.step === step ? input.simulate : undefined;
        if (sim !== undefined && sim.latency_ms > 0) await delay(sim.latency_ms, s.signal);
        if (sim?.reject === true) throw new PermanentError(`${step}: refused by the service`);
        if (sim !== undefined && s.attempt <= sim.transient_failures) {
          throw new RetryableError(`${step}: service unavailable (503)`, { code: 'HTTP_503' });
        }
        return { id: `${step}:${s.key}`, ...make() };
      };

    const docs = await wf.step('verify_documents', service('verify_documents'));
    const risk = await wf.step(
      'risk_score',
      service('risk_score', () => ({ score: input.amount > 50_000 ? 'B' : 'A' })),
    );
    if (input.amount > 50_000) {
      const decision = await wf.waitForSignal<{ approved: boolean }>('manager_approval', { timeout: '48h' });
      if (decision === null) return { outcome: 'rejected', reason: 'no decision within 48 hours' };
      if (decision.approved !== true) return { outcome: 'rejected', reason: 'declined by the manager' };
    }
    // If the run fails after this (the disbursement refused for good), the contract is voided:
    // its compensation, run by Kaj as a durable step of its own before the run ends failed.
    const contract = await wf.step('contract_pdf', service('contract_pdf'), {
      compensate: (c, s) => service('void_contract', () => ({ voided: c.id }))(s),
    });
    await wf.step(
      'disburse',
      service('disburse', () => ({ amount: input.amount })),
    );
    // The SMS is a child task: its own retries and dead letter; the run waits for its result.
    const sim = input.simulate?.step === 'send_sms' ? input.simulate : undefined;
    await wf.run(
      sendSms,
      {
        to: input.applicant,
        text: `Your loan of ${input.amount} is approved.`,
        ...(sim === undefined
          ? {}
          : {
              simulate: { transient_failures: sim.transient_failures, reject: sim.reject, latency_ms: sim.latency_ms },
            }),
      },
      { name: 'send_sms' },
    );
    return { outcome: 'approved', documents: docs.id, risk, contract: contract.id };
  },
});
