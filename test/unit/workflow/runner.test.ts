import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { PermanentError, RetryableError } from '../../../shared/retry/errors.js';
import { LeaseLostError } from '../../../shared/task/errors.js';
import { defineWorkflow, type WorkflowContext } from '../../../shared/workflow/define.js';
import {
  DuplicateStepError,
  HistoryLimitError,
  NonDeterminismError,
  RunExpiredError,
  StepFailedError,
} from '../../../shared/workflow/errors.js';
import { historyRetentionDays } from '../../../shared/workflow/history-store.js';
import { TaskRegistry } from '../../../shared/task/define.js';
import type { RunInvocation, WorkflowOutcome } from '../../../shared/workflow/runner.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';
import { invokeWorkflow } from '../../../testing/workflow-runs.js';

const T0 = Date.UTC(2026, 10, 28, 9, 0, 0);
const DAY = 86_400_000;

/** A run's world: its history, a clock the test moves, and counts of real executions per step. */
function world() {
  const history = new MemoryHistoryStore();
  let now = T0;
  const executions = new Map<string, number>();
  return {
    history,
    executions,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
    /** A step's function that counts its executions, then returns `value`. */
    effect:
      <T>(name: string, value: T) =>
      async (): Promise<T> => {
        executions.set(name, (executions.get(name) ?? 0) + 1);
        return value;
      },
    invoke: (
      run: (input: unknown, wf: WorkflowContext) => Promise<unknown>,
      o: Partial<RunInvocation> & { maxAttempts?: number; maxHistoryEntries?: number } = {},
    ): Promise<WorkflowOutcome> => {
      const def = defineWorkflow({
        type: 'test_flow',
        schema: z.unknown(),
        maxAttempts: o.maxAttempts ?? 3,
        timeoutSeconds: 10,
        backoff: { baseSeconds: 1, capSeconds: 10 },
        ...(o.maxHistoryEntries === undefined ? {} : { maxHistoryEntries: o.maxHistoryEntries }),
        run,
      });
      return invokeWorkflow(def, {
        history,
        now: () => now,
        runId: 't_0123456789abcdef0123456789abcdef',
        createdAt: T0,
        ...o,
      });
    },
  };
}

/** The four-step order: reserve → charge → invoice → email. */
function orderFlow(w: ReturnType<typeof world>, invoice: () => Promise<string> = w.effect('invoice', 'inv-1')) {
  return async (_: unknown, wf: WorkflowContext) => {
    const hold = await wf.step('reserve', w.effect('reserve', 'hold-1'));
    const charge = await wf.step('charge', w.effect('charge', 'ch-1'));
    const inv = await wf.step('invoice', invoice);
    await wf.step('email', w.effect('email', 'sent'));
    return { hold, charge, inv };
  };
}

describe('Function: runWorkflow — steps', () => {
  it('runs each step once and records it; a replay returns the recorded results without running any', async () => {
    const w = world();
    const first = await w.invoke(orderFlow(w));
    expect(first).toEqual({ kind: 'completed', value: { hold: 'hold-1', charge: 'ch-1', inv: 'inv-1' } });
    expect((await w.history.read('t_0123456789abcdef0123456789abcdef')).map((e) => e.key).sort()).toEqual(
      ['step#charge', 'step#email', 'step#invoice', 'step#reserve'].sort(),
    );
    const again = await w.invoke(orderFlow(w));
    expect(again).toEqual(first);
    expect(Object.fromEntries(w.executions)).toEqual({ reserve: 1, charge: 1, invoice: 1, email: 1 });
  });

  it('a worker that dies inside step 3 of 4: the next invocation runs step 3 again and step 4 once', async () => {
    const w = world();
    const dying = new AbortController();
    // The first invocation's worker dies while the invoice is being made: its promise never settles.
    const died = w.invoke(
      orderFlow(w, async () => {
        w.executions.set('invoice', (w.executions.get('invoice') ?? 0) + 1);
        return new Promise<string>(() => {});
      }),
      { signal: dying.signal },
    );
    await new Promise((r) => setTimeout(r, 20));
    void died; // abandoned, as a killed worker's would be
    const resumed = await w.invoke(orderFlow(w), { leaseToken: () => 2 });
    expect(resumed.kind).toBe('completed');
    expect(Object.fromEntries(w.executions)).toEqual({ reserve: 1, charge: 1, invoice: 2, email: 1 });
  });

  it('memoizes by name: a deploy that inserts a step before the recorded ones re-runs none of them', async () => {
    const w = world();
    await w.invoke(async (_, wf) => {
      await wf.step('a', w.effect('a', 1));
      await wf.sleep('pause', '1h');
      return wf.step('b', w.effect('b', 2));
    });
    w.advance(2 * 3_600_000);
    const outcome = await w.invoke(async (_, wf) => {
      const x = await wf.step('inserted', w.effect('inserted', 10));
      const a = await wf.step('a', w.effect('a', 1));
      await wf.sleep('pause', '1h');
      return x + a + (await wf.step('b', w.effect('b', 2)));
    });
    expect(outcome).toEqual({ kind: 'completed', value: 13 });
    expect(Object.fromEntries(w.executions)).toEqual({ a: 1, inserted: 1, b: 1 });
  });

  it('wf.patched: a run past the change takes the old path; a new run (and a run at its frontier) the new one, on every replay', async () => {
    const v1 = async (_: unknown, wf: WorkflowContext) => {
      await wf.step('a', w.effect('a', 1));
      await wf.sleep('pause', '1h');
      return wf.step('b', w.effect('b', 2));
    };
    const v2 = async (_: unknown, wf: WorkflowContext) => {
      // The change: a fraud check before `a`.
      const checked = (await wf.patched('fraud_check')) ? await wf.step('fraud', w.effect('fraud', 100)) : 0;
      const a = await wf.step('a', w.effect('a', 1));
      await wf.sleep('pause', '1h');
      return checked + a + (await wf.step('b', w.effect('b', 2)));
    };
    // A run started before the deploy: `a` recorded past the patch point → the old path.
    let w = world();
    await w.invoke(v1);
    w.advance(2 * 3_600_000);
    expect(await w.invoke(v2)).toEqual({ kind: 'completed', value: 3 });
    expect(Object.fromEntries(w.executions)).toEqual({ a: 1, b: 1 });
    expect(w.history.all().some((e) => e.key === 'patch#fraud_check')).toBe(false);
    // A run started after it: the new path, recorded, so its replay after the sleep agrees.
    w = world();
    expect((await w.invoke(v2)).kind).toBe('suspended');
    w.advance(2 * 3_600_000);
    expect(await w.invoke(v2)).toEqual({ kind: 'completed', value: 103 });
    expect(Object.fromEntries(w.executions)).toEqual({ fraud: 1, a: 1, b: 1 });
    expect(w.history.all().filter((e) => e.key === 'patch#fraud_check')).toHaveLength(1);
  });

  it('a step name asked for twice in one run is a DuplicateStepError at the call', async () => {
    const w = world();
    const outcome = await w.invoke(async (_, wf) => {
      await wf.step('same', w.effect('same', 1));
      await wf.step('same', w.effect('same', 2));
    });
    expect(outcome.kind).toBe('failed');
    expect((outcome as { error: unknown }).error).toBeInstanceOf(DuplicateStepError);
    expect(w.executions.get('same')).toBe(1);
  });

  it('a name recorded as a sleep and asked for as a step is a NonDeterminismError', async () => {
    const w = world();
    await w.invoke(async (_, wf) => wf.sleep('x', 0));
    const outcome = await w.invoke(async (_, wf) => wf.step('x', w.effect('x', 1)));
    expect((outcome as { error: unknown }).error).toBeInstanceOf(NonDeterminismError);
    expect(w.executions.get('x')).toBeUndefined();
  });

  it('a result that cannot be stored fails the step for good, naming it', async () => {
    const w = world();
    const outcome = await w.invoke(async (_, wf) => wf.step('big', async () => 'x'.repeat(40 * 1024)));
    const error = (outcome as { error: unknown }).error;
    expect(error).toBeInstanceOf(StepFailedError);
    expect((error as StepFailedError).message).toMatch(/step "big" result/);
    expect((error as StepFailedError).message).toMatch(/store large data elsewhere/);
  });

  it('gives each step a key stable for the run and step, and its attempt', async () => {
    const w = world();
    const seen: unknown[] = [];
    await w.invoke(async (_, wf) => {
      await wf.step('pay', async (s) => {
        seen.push({ key: s.key, attempt: s.attempt });
        return 1;
      });
      return wf.stepKey('pay');
    });
    expect(seen).toEqual([{ key: 't_0123456789abcdef0123456789abcdef/pay', attempt: 1 }]);
  });
});

describe('Function: runWorkflow — retries of a step', () => {
  it('retries a failing step after a durable backoff, then goes on; its failed attempts are recorded', async () => {
    const w = world();
    let calls = 0;
    const flaky = async () => {
      calls += 1;
      if (calls < 3) throw new RetryableError('503');
      return 'ok';
    };
    const flow = async (_: unknown, wf: WorkflowContext) => wf.step('flaky', flaky);
    const first = await w.invoke(flow);
    expect(first.kind).toBe('suspended');
    const wake1 = (first as { wakeAt: number }).wakeAt;
    expect(wake1).toBeGreaterThanOrEqual(w.now());
    expect(wake1).toBeLessThanOrEqual(w.now() + 2_000); // full jitter, base 1 s: attempt 1 ≤ 2 s
    // Woken early (a duplicate message): it waits again for the same time, running nothing.
    const early = await w.invoke(flow);
    expect(early).toMatchObject({ kind: 'suspended', wakeAt: wake1 });
    expect(calls).toBe(1);
    w.advance(2_000);
    expect((await w.invoke(flow)).kind).toBe('suspended');
    w.advance(10_000);
    expect(await w.invoke(flow)).toEqual({ kind: 'completed', value: 'ok' });
    expect(calls).toBe(3);
    const keys = (await w.history.read('t_0123456789abcdef0123456789abcdef')).map((e) => e.key).sort();
    expect(keys).toEqual(['fail#flaky#1', 'fail#flaky#2', 'step#flaky']);
  });

  it('a step out of attempts throws StepFailedError, which the code can catch — on every replay', async () => {
    const w = world();
    const flow = async (_: unknown, wf: WorkflowContext) => {
      try {
        await wf.step('never', async () => {
          throw new RetryableError('down');
        });
        return 'unreachable';
      } catch (err) {
        return err instanceof StepFailedError ? `caught ${err.step}` : 'other';
      }
    };
    let outcome = await w.invoke(flow, { maxAttempts: 2 });
    expect(outcome.kind).toBe('suspended');
    w.advance(60_000);
    outcome = await w.invoke(flow, { maxAttempts: 2 });
    expect(outcome).toEqual({ kind: 'completed', value: 'caught never' });
    expect(await w.invoke(flow, { maxAttempts: 2 })).toEqual({ kind: 'completed', value: 'caught never' });
  });

  it('a PermanentError is not retried; uncaught, it fails the run as permanent', async () => {
    const w = world();
    const outcome = await w.invoke(async (_, wf) =>
      wf.step('refused', async () => {
        throw new PermanentError('no such account');
      }),
    );
    expect(outcome.kind).toBe('failed');
    const error = (outcome as { error: unknown }).error;
    expect(error).toBeInstanceOf(StepFailedError);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as StepFailedError).error.message).toBe('no such account');
  });
});

describe('Function: runWorkflow — sleeps and time', () => {
  it('a sleep suspends the run until its time; a replay before then suspends again, after it goes on', async () => {
    const w = world();
    const flow = async (_: unknown, wf: WorkflowContext) => {
      await wf.step('before', w.effect('before', 1));
      await wf.sleep('cool_off', '2d');
      return wf.step('after', w.effect('after', 2));
    };
    const first = await w.invoke(flow);
    expect(first).toMatchObject({ kind: 'suspended', wakeAt: T0 + 2 * DAY });
    w.advance(DAY);
    expect(await w.invoke(flow)).toMatchObject({ kind: 'suspended', wakeAt: T0 + 2 * DAY });
    w.advance(DAY);
    expect(await w.invoke(flow)).toEqual({ kind: 'completed', value: 2 });
    expect(Object.fromEntries(w.executions)).toEqual({ before: 1, after: 1 });
  });

  it('sleepUntil waits for a date; a date past is no wait', async () => {
    const w = world();
    const outcome = await w.invoke(async (_, wf) => {
      await wf.sleepUntil('past', new Date(T0 - 1000));
      await wf.sleepUntil('noon', new Date(T0 + 3 * 3_600_000));
      return 'done';
    });
    expect(outcome).toMatchObject({ kind: 'suspended', wakeAt: T0 + 3 * 3_600_000 });
  });

  it('now(), random() and uuid() give the same values on every replay', async () => {
    const w = world();
    const seen: unknown[][] = [];
    const flow = async (_: unknown, wf: WorkflowContext) => {
      const start = wf.now().getTime();
      await wf.step('one', w.effect('one', 1));
      seen.push([start, wf.now().getTime(), wf.random(), wf.uuid(), wf.uuid()]);
      await wf.sleep('wait', '1m');
      return 'ok';
    };
    await w.invoke(flow);
    w.advance(5 * 60_000);
    await w.invoke(flow);
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    const [start, afterStep, random, u1, u2] = seen[0] ?? [];
    expect(start).toBe(T0);
    expect(afterStep).toBe(T0); // the step was recorded at T0 (the clock did not move)
    expect(random).toBeGreaterThanOrEqual(0);
    expect(random).toBeLessThan(1);
    expect(u1).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(u2).not.toBe(u1);
  });

  it('parallel branches: the run suspends only once the running steps have ended', async () => {
    const w = world();
    let release: () => void = () => {};
    const slow = new Promise<void>((r) => {
      release = r;
    });
    const invocation = w.invoke(async (_, wf) => {
      await Promise.all([
        wf.sleep('nap', '1h'),
        wf.step('slow', async () => {
          await slow;
          w.executions.set('slow', 1);
          return 's';
        }),
      ]);
      return 'done';
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(w.executions.get('slow')).toBeUndefined();
    release();
    const outcome = await invocation;
    expect(outcome).toMatchObject({ kind: 'suspended', wakeAt: T0 + 3_600_000 });
    expect((await w.history.read('t_0123456789abcdef0123456789abcdef')).map((e) => e.key).sort()).toEqual([
      'sleep#nap',
      'step#slow',
    ]);
  });

  it('a step that would not finish before the invocation must end waits for the next invocation', async () => {
    const w = world();
    const outcome = await w.invoke(async (_, wf) => wf.step('long', w.effect('long', 1)), {
      deadline: T0 + 5_000, // the step's timeout is 10 s
    });
    expect(outcome).toMatchObject({ kind: 'suspended', wakeAt: T0 });
    expect(w.executions.get('long')).toBeUndefined();
  });
});

describe('Function: runWorkflow — signals', () => {
  const RUN = 't_0123456789abcdef0123456789abcdef';
  const flow = async (_: unknown, wf: WorkflowContext) => {
    const got = await wf.waitForSignal<{ ok: boolean }>('approval', { timeout: '48h' });
    return got === null ? 'timed out' : got.ok ? 'yes' : 'no';
  };

  it('waits until its deadline (recorded when first reached); a signal recorded meanwhile is returned on the wake', async () => {
    const w = world();
    expect(await w.invoke(flow)).toMatchObject({ kind: 'suspended', wakeAt: T0 + 2 * DAY });
    w.advance(3_600_000);
    expect(await w.invoke(flow)).toMatchObject({ kind: 'suspended', wakeAt: T0 + 2 * DAY }); // the same deadline
    await w.history.append({
      run_id: RUN,
      key: 'signal#approval',
      kind: 'signal',
      at: w.now(),
      lease_token: 0,
      value: { ok: true },
    });
    expect(await w.invoke(flow)).toEqual({ kind: 'completed', value: 'yes' });
  });

  it('a signal recorded before the wait is returned at once, with no write', async () => {
    const w = world();
    await w.history.append({
      run_id: RUN,
      key: 'signal#approval',
      kind: 'signal',
      at: T0,
      lease_token: 0,
      value: { ok: false },
    });
    expect(await w.invoke(flow)).toEqual({ kind: 'completed', value: 'no' });
    expect((await w.history.read(RUN)).map((e) => e.key)).toEqual(['signal#approval']);
  });

  it('past its deadline the wait ends with null, recorded so a later signal cannot change a replay', async () => {
    const w = world();
    await w.invoke(flow);
    w.advance(2 * DAY);
    expect(await w.invoke(flow)).toEqual({ kind: 'completed', value: 'timed out' });
    const late = await w.history.append({
      run_id: RUN,
      key: 'signal#approval',
      kind: 'signal',
      at: w.now(),
      lease_token: 0,
      value: { ok: true },
    });
    expect(late.written).toBe(false);
    expect(await w.invoke(flow)).toEqual({ kind: 'completed', value: 'timed out' });
  });

  it('a signal name that is not lower snake case fails the run, naming it', async () => {
    const w = world();
    const outcome = await w.invoke(async (_, wf) => wf.waitForSignal('Not Valid', { timeout: '1h' }));
    expect((outcome as { error: Error }).error.message).toMatch(/signal name must be lower snake case/);
  });
});

describe('Function: runWorkflow — compensations (sagas)', () => {
  const RUN = 't_0123456789abcdef0123456789abcdef';
  /** reserve → charge → ship (fails as `failShip` says); each of the first two undone by its compensation. */
  const saga =
    (w: ReturnType<typeof world>, failShip: () => Promise<string>, undoCharge = w.effect('refund', 'r')) =>
    async (_: unknown, wf: WorkflowContext) => {
      await wf.step('reserve', w.effect('reserve', 'h'), { compensate: w.effect('release', 'x') });
      await wf.step('charge', w.effect('charge', 'c'), { compensate: undoCharge });
      await wf.step('untouched', w.effect('untouched', 'u')); // no compensation
      return wf.step('ship', failShip);
    };
  const refused = async (): Promise<string> => {
    throw new PermanentError('no courier');
  };

  it('a step failing for good: the compensations run newest first, once; the run fails with the step’s error', async () => {
    const w = world();
    const order: string[] = [];
    const outcome = await w.invoke(
      saga(w, refused, async () => {
        order.push('refund');
        return 'r';
      }),
    );
    expect(outcome.kind).toBe('failed');
    expect((outcome as { error: unknown }).error).toBeInstanceOf(StepFailedError);
    expect((outcome as { error: StepFailedError }).error.step).toBe('ship');
    const keys = (await w.history.read(RUN)).map((e) => e.key);
    expect(keys).toContain('step#compensate:charge');
    expect(keys).toContain('step#compensate:reserve');
    const seqOf = async (k: string) => (await w.history.read(RUN)).find((e) => e.key === k)?.seq ?? -1;
    expect(await seqOf('step#compensate:charge')).toBeLessThan(await seqOf('step#compensate:reserve'));
    expect(order).toEqual(['refund']);
    // A replay (a duplicate message) runs none of them again.
    expect((await w.invoke(saga(w, refused))).kind).toBe('failed');
    expect(Object.fromEntries(w.executions)).toEqual({ reserve: 1, charge: 1, untouched: 1, release: 1 });
  });

  it('a compensation that fails for a while is retried on its own timer, then the run fails', async () => {
    const w = world();
    let tries = 0;
    const flaky = async () => {
      tries += 1;
      if (tries < 2) throw new RetryableError('bank down');
      return 'refunded';
    };
    const first = await w.invoke(saga(w, refused, flaky));
    expect(first.kind).toBe('suspended');
    w.advance(60_000);
    const second = await w.invoke(saga(w, refused, flaky));
    expect(second.kind).toBe('failed');
    expect(tries).toBe(2);
    expect(w.executions.get('release')).toBe(1);
  });

  it('wf.compensate() fails the run after undoing what was done', async () => {
    const w = world();
    const outcome = await w.invoke(async (_, wf) => {
      await wf.step('reserve', w.effect('reserve', 'h'), { compensate: w.effect('release', 'x') });
      wf.compensate('customer cancelled');
    });
    expect((outcome as { error: Error }).error).toMatchObject({
      name: 'CompensationRequestedError',
      message: 'customer cancelled',
    });
    expect(w.executions.get('release')).toBe(1);
  });

  it('a retryable error of the code retries the run without compensating — unless it is the last attempt', async () => {
    const w = world();
    const flow = async (_: unknown, wf: WorkflowContext) => {
      await wf.step('reserve', w.effect('reserve', 'h'), { compensate: w.effect('release', 'x') });
      throw new Error('a bug between steps');
    };
    expect((await w.invoke(flow)).kind).toBe('failed');
    expect(w.executions.get('release')).toBeUndefined();
    expect((await w.invoke(flow, { finalAttempt: true })).kind).toBe('failed');
    expect(w.executions.get('release')).toBe(1);
  });
});

describe('Function: runWorkflow — fencing and limits', () => {
  it('a worker whose step write finds an entry of a newer lease stops with LeaseLostError', async () => {
    // The new owner (lease 5) recorded the step while the stale worker (lease 4) was running it.
    const history = new MemoryHistoryStore();
    await history.append({ run_id: 'r', key: 'step#pay', kind: 'step', at: T0, lease_token: 5, value: 'new' });
    const def = defineWorkflow({
      type: 'fence_flow',
      schema: z.unknown(),
      run: async (_, wf) => wf.step('pay', async () => 'stale'),
    });
    const lost = await invokeWorkflow(def, {
      history: skipReads(history),
      now: () => T0,
      runId: 'r',
      leaseToken: () => 4,
    });
    expect(lost.kind).toBe('failed');
    expect((lost as { error: unknown }).error).toBeInstanceOf(LeaseLostError);
  });

  it('maxRunDays: a wait ending after the run’s end of life is refused at the call; a run older than it fails', async () => {
    const w = world();
    const long = await w.invoke(async (_, wf) => {
      await wf.sleep('too_long', '91d'); // the default maxRunDays is 90
    });
    expect((long as { error: unknown }).error).toBeInstanceOf(RunExpiredError);
    expect(String((long as { error: Error }).error.message)).toContain('"too_long" would wait until');
    expect(w.history.all()).toEqual([]);
    const signal = await w.invoke(async (_, wf) => wf.waitForSignal('approval', { timeout: '100d' }));
    expect((signal as { error: unknown }).error).toBeInstanceOf(RunExpiredError);
    // A run still going after its 90 days (a child that never ended, retries): it ends, running nothing.
    w.advance(90 * DAY + 1);
    const old = await w.invoke(async (_, wf) => wf.step('late', w.effect('late', 1)));
    expect((old as { error: unknown }).error).toBeInstanceOf(RunExpiredError);
    expect(w.executions.get('late')).toBeUndefined();
  });

  it('history entries are kept the deployment’s retention plus its longest maxRunDays', () => {
    const registry = new TaskRegistry([
      defineWorkflow({ type: 'short_flow', schema: z.unknown(), run: async () => 1 }),
      defineWorkflow({ type: 'long_flow', schema: z.unknown(), maxRunDays: 200, run: async () => 1 }),
    ]);
    expect(historyRetentionDays({ retentionDays: 30 })).toBe(30 + 90);
    expect(historyRetentionDays({ retentionDays: 30 }, registry)).toBe(30 + 200);
    expect(() => defineWorkflow({ type: 'x_flow', schema: z.unknown(), maxRunDays: 366, run: async () => 1 })).toThrow(
      /maxRunDays must be an integer in \[1, 365\]/,
    );
  });

  it('a run over its limit of history entries fails with HistoryLimitError', async () => {
    const w = world();
    const outcome = await w.invoke(
      async (_, wf) => {
        for (let i = 0; i < 5; i += 1) await wf.step(`s${i}`, w.effect('s', i));
      },
      { maxHistoryEntries: 3 },
    );
    expect((outcome as { error: unknown }).error).toBeInstanceOf(HistoryLimitError);
    expect(w.executions.get('s')).toBe(4); // the 4th ran; its record was refused
  });
});

/** The store as a worker sees it that read the history before another worker wrote: reads give nothing. */
function skipReads(store: MemoryHistoryStore): MemoryHistoryStore {
  return Object.assign(Object.create(store) as MemoryHistoryStore, { read: async () => [] });
}
