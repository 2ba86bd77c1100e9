/**
 * The soak (`bench/soak.ts`, `npm run soak`) at CI size: 300 tasks across the priorities,
 * 30 % transient failures and 2 % poison, while worker processes are SIGKILLed twice.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, runSoak } from '../../../bench/soak.js';
import { targets } from '../../support/targets.js';

describe.each(targets())('soak (CI size) on $name', (target) => {
  it('300 tasks, 2 kills: all finished, succeeded + failed = submitted, failures explained, extra runs bounded by the kills', async () => {
    const progress: string[] = [];
    const report = await runSoak({
      target,
      tasks: 300,
      workers: 2,
      killEveryMs: 2_500,
      maxKills: 2,
      leaseSeconds: 3,
      // The watchdog re-sends the message of a task still queued this long after its run_at, so
      // the backlog must stay shorter than it (moto runs ~5 tasks/s): at most 50 unfinished at once.
      watchdogSeconds: 15,
      maxOutstanding: 50,
      concurrency: 2,
      batchSize: 5,
      timeoutMs: 180_000, // report (with the stragglers) before the test's own timeout
      log: (line) => progress.push(line),
    });
    console.info(formatReport(report));
    if (!report.invariantHeld) console.info(progress.join('\n'));
    expect(report.problems).toEqual([]);
    expect(report.submitted).toBe(300);
    expect(report.unfinished).toBe(0);
    expect(report.succeeded + report.failed).toBe(300);
    expect(report.failedOther).toBe(0);
    expect(report.failedPoison).toBeGreaterThan(0); // the workload has poison tasks: their failure is recorded
    expect(report.failed).toBe(report.failedPoison + report.failedCrashLoop);
    expect(report.kills).toBe(2);
    expect(report.extraRuns).toBeLessThanOrEqual(report.extraRunsBound);
    expect(report.invariantHeld).toBe(true);
  }, 240_000);
});
