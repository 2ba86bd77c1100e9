/**
 * Tenant fairness on the local runtime (embedded emulators: local-aws-sqs serves message groups
 * fairly): one tenant's backlog of 10,000 tasks delays another tenant's task by seconds, counted in
 * the noisy tenant's own runs. The suite's frame is test/support/flow-bench.ts's.
 */
import { describe, expect, it } from 'vitest';
import { FlowBench, flowTarget, LEASE, waitForValue } from '../../support/flow-bench.js';
import { maxConcurrent, runsOf } from '../../support/limit-tasks.js';

describe('tenant fairness on the local runtime (embedded emulators: local-aws-sqs serves message groups fairly)', () => {
  const s = flowTarget();

  it('a tenant with 10,000 queued tasks (per-tenant concurrency 5) delays another tenant’s single task by seconds, not by its backlog', async () => {
    const bench = (s.bench = await FlowBench.start(undefined, {
      tag: 'fc-fair',
      lease: LEASE,
      consumers: true,
      concurrency: { high: 1, normal: 10, low: 1 },
    }));
    const noisy = await bench.submitMany(10_000, () => ({
      type: 'tenant_work',
      payload: { ms: 200 },
      extra: { tenant: 'noisy' },
    }));
    const submitted = Date.now();
    const quiet = await bench.submit('tenant_work', { ms: 10 }, { tenant: 'quiet' });
    const started = await waitForValue('the quiet tenant’s task to start', async () =>
      bench.exec().find((e) => e.taskId === quiet && e.event === 'S'),
    );
    const delay = started.at - submitted;
    const noisyIds = new Set(noisy);
    const noisyRuns = runsOf(bench.exec().filter((e) => noisyIds.has(e.taskId)));
    // Runs that started while the quiet task waited (from its submit to its start); those the
    // 10,000 submits themselves left time for (on a loaded machine, hundreds) were not ahead of it.
    const ranBefore = noisyRuns.filter((r) => r.start >= submitted && r.start < started.at).length;
    console.info(
      `[embedded] fairness: the quiet tenant's task started ${delay} ms after its submit, behind 10,000 of the noisy tenant's ` +
        `(${ranBefore} of them started while it waited, ${noisyRuns.length} by now; their peak concurrency ${maxConcurrent(noisyRuns)})`,
    );
    // "Seconds, not its backlog", counted in the noisy tenant's own runs, not in wall-clock time (a
    // loaded machine slows both tenants): at most 5 run at once, each 200 ms — 25 a second — so
    // fewer than 250 ahead of it is less than 10 s of the noisy tenant's capped throughput.
    expect(ranBefore).toBeLessThan(250);
    expect(maxConcurrent(noisyRuns)).toBeLessThanOrEqual(5);
    // The premise: the noisy backlog was far from drained when the quiet task ran.
    expect(noisyRuns.length).toBeLessThan(9_000);
  }, 600_000);
});
