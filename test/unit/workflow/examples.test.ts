/**
 * The example workflows of `tasks/` (order, loan_application), run through the consumer and the
 * API on the in-memory fakes: each path a user can take with `npm start`.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registry } from '../../../tasks/index.js';
import { apiEvent, lambdaContext, sqsEvent, sqsRecord, TimerClock, unitKaj } from '../../../testing/fixtures.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';
import { MemoryScheduleStore } from '../../../testing/memory-schedule-store.js';
import { stepsView } from '../../../shared/workflow/view.js';

function setup() {
  const history = new MemoryHistoryStore();
  const u = unitKaj(registry, undefined, new TimerClock(), {
    history,
    limits: new MemoryLimitStore(), // send_email uses a limit
    schedules: new MemoryScheduleStore(),
  });
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await u.kaj.handleHttp(
      apiEvent(method, path, body === undefined ? {} : { body: JSON.stringify(body) }),
    );
    return { status: res.statusCode, json: JSON.parse(res.body) as Record<string, any> };
  };
  /** When each message was first seen (sent): it is due its delay later. */
  const seen = new Map<unknown, number>();
  const delivered = new Set<unknown>();
  /** Delivers every message due by now until none is left (the sweeper sends what waits in the table). */
  const drain = async () => {
    for (let round = 0; round < 50; round += 1) {
      await u.kaj.sweep(10_000);
      for (const m of u.queue.sent) if (!seen.has(m)) seen.set(m, Date.now());
      const due = u.queue.sent.filter(
        (m) => !delivered.has(m) && (seen.get(m) ?? 0) + m.delaySeconds * 1000 <= Date.now(),
      );
      if (due.length === 0) return;
      for (const m of due) {
        delivered.add(m);
        await u.kaj.processBatch(sqsEvent(sqsRecord(m.message)), lambdaContext());
      }
    }
  };
  return { ...u, api, drain, history };
}

describe('tasks/ example workflows', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      now: Date.parse('2026-03-01T00:00:00Z'),
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
  });
  afterEach(() => vi.useRealTimers());

  it('order: four steps, each once, the result names them', async () => {
    const u = setup();
    const { json } = await u.api('POST', '/api/v1/tasks', {
      type: 'order',
      payload: { order_id: 'o-1', sku: 'tea', quantity: 2, amount: 12.5, email: 'ada@example.com' },
    });
    await u.drain();
    const done = await u.api('GET', `/api/v1/tasks/${json.task_id}`);
    expect(done.json.status).toBe('succeeded');
    expect(done.json.steps.map((s: { name: string; status: string }) => `${s.name}:${s.status}`)).toEqual([
      'reserve_stock:succeeded',
      'charge_payment:succeeded',
      'make_invoice:succeeded',
      'send_email:succeeded',
    ]);
  });

  it('order: a step failing twice is retried on durable timers, then the order completes', async () => {
    const u = setup();
    const { json } = await u.api('POST', '/api/v1/tasks', {
      type: 'order',
      payload: {
        order_id: 'o-2',
        sku: 'tea',
        quantity: 1,
        amount: 3,
        email: 'ada@example.com',
        simulate: { step: 'charge_payment', transient_failures: 2 },
      },
    });
    await u.drain();
    expect((await u.api('GET', `/api/v1/tasks/${json.task_id}`)).json.status).toBe('waiting');
    vi.setSystemTime(Date.now() + 60_000);
    await u.drain();
    vi.setSystemTime(Date.now() + 60_000);
    await u.drain();
    const done = (await u.api('GET', `/api/v1/tasks/${json.task_id}`)).json;
    expect(done.status).toBe('succeeded');
    expect(done.steps.find((s: { name: string }) => s.name === 'charge_payment')).toMatchObject({ attempts: 3 });
  });

  it('loan_application over 50,000: waits for manager_approval; approved → contract, disbursement, SMS', async () => {
    const u = setup();
    const { json } = await u.api('POST', '/api/v1/tasks', {
      type: 'loan_application',
      payload: { applicant: 'Ada', amount: 75_000 },
    });
    await u.drain();
    const waiting = (await u.api('GET', `/api/v1/tasks/${json.task_id}`)).json;
    expect(waiting.status).toBe('waiting');
    expect(waiting.waiting_for.signals).toEqual([{ name: 'manager_approval', deadline: expect.any(String) }]);
    const sent = await u.api('POST', `/api/v1/tasks/${json.task_id}/signals/manager_approval`, { approved: true });
    expect(sent.status).toBe(202);
    await u.drain();
    const done = (await u.api('GET', `/api/v1/tasks/${json.task_id}`)).json;
    expect(done).toMatchObject({ status: 'succeeded', result: { outcome: 'approved' } });
    expect(done.steps.map((s: { name: string }) => s.name)).toEqual([
      'verify_documents',
      'risk_score',
      'manager_approval',
      'contract_pdf',
      'disburse',
      'send_sms',
    ]);
    // The SMS is a child task, linked both ways.
    const sms = done.steps.find((s: { name: string }) => s.name === 'send_sms');
    expect(sms).toMatchObject({ kind: 'child', status: 'succeeded', child_id: expect.stringMatching(/^t_/) });
    const child = (await u.api('GET', `/api/v1/tasks/${sms.child_id}`)).json;
    expect(child).toMatchObject({ type: 'send_sms', status: 'succeeded', parent_id: json.task_id });
  });

  it('loan_application: no decision within 48 hours → rejected', async () => {
    const u = setup();
    const { json } = await u.api('POST', '/api/v1/tasks', {
      type: 'loan_application',
      payload: { applicant: 'Ada', amount: 75_000 },
    });
    await u.drain();
    vi.setSystemTime(Date.now() + 48 * 3_600_000);
    await u.drain();
    expect((await u.api('GET', `/api/v1/tasks/${json.task_id}`)).json).toMatchObject({
      status: 'succeeded',
      result: { outcome: 'rejected', reason: 'no decision within 48 hours' },
    });
  });

  it('loan_application: the disbursement refused → the contract is voided, then the run fails with the disbursement’s error', async () => {
    const u = setup();
    const { json } = await u.api('POST', '/api/v1/tasks', {
      type: 'loan_application',
      payload: { applicant: 'Ada', amount: 1_000, simulate: { step: 'disburse', reject: true } },
    });
    await u.drain();
    const failed = (await u.api('GET', `/api/v1/tasks/${json.task_id}`)).json;
    expect(failed.status).toBe('failed');
    expect(failed.last_error).toMatchObject({ name: 'StepFailedError', code: 'STEP_FAILED', retryable: false });
    expect(failed.steps.map((s: { name: string; status: string }) => `${s.name}:${s.status}`)).toEqual([
      'verify_documents:succeeded',
      'risk_score:succeeded',
      'contract_pdf:succeeded',
      'disburse:failed',
      'compensate:contract_pdf:succeeded',
    ]);
  });

  it('nightly_close (started by its schedule): every region’s report is a child of the same logical date, then the summary', async () => {
    const u = setup();
    await u.kaj.schedules?.syncDeclared(registry.declaredSchedules());
    // 00:45 in Dhaka (UTC+6) the next night: the ticker creates the run.
    vi.setSystemTime(Date.parse('2026-03-01T18:45:01Z'));
    await u.kaj.ticker?.tick();
    await u.drain();
    const runs = new Set(u.queue.sent.filter((m) => m.type === 'nightly_close').map((m) => m.message.task_id));
    expect(runs.size).toBe(1);
    const run = await u.store.get([...runs][0] ?? '');
    expect(run?.status).toBe('succeeded');
    expect(run).toMatchObject({ schedule: 'nightly-close', scheduled_time: '2026-03-01T18:45:00.000Z' });
    const result = run?.result as { day: string; reports: string[] };
    expect(result.reports).toEqual(['north', 'south', 'east', 'west'].map((r) => `reports/sales/${r}/2026-03-01.csv`));
    const steps = stepsView(await u.history.read(run?.task_id ?? ''), Date.now());
    const children = steps.filter((s) => s.kind === 'child');
    expect(children).toHaveLength(4);
    // Each region's report is a child of the run, of its logical date: the day before, in Dhaka.
    const child = await u.store.get(children[0]?.child_id ?? '');
    expect(child).toMatchObject({ type: 'sales_report', status: 'succeeded', parent_id: run?.task_id });
    expect(child?.scheduled_time).toBe(run?.scheduled_time);
    expect(result.day).toBe('2026-03-01');
  });
});
