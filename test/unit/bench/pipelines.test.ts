import { describe, expect, it } from 'vitest';
import {
  addCounts,
  billOf,
  checkRuns,
  type Counts,
  dateIn,
  daysBetween,
  inFullBatches,
  maxConcurrent,
  mwaaMonthlyFloor,
  NO_COUNTS,
  perMillion,
  type RunSeen,
  scaleCounts,
  stepFunctionsTransitions,
} from '../../../bench/pipelines/model.js';
import { backfillPassed, hoursMinutes } from '../../../bench/pipelines/print-backfill.js';

const A = { consumerMs: 0, consumerMemoryMiB: 1024, fireMs: 0, schedulerMemoryMiB: 1024, logBytesPerDelivery: 0 };

describe('bench:pipelines arithmetic', () => {
  it('prices each service by its list price: a million write units $0.625, a million SQS requests $0.40, a million invocations $0.20', () => {
    expect(billOf({ ...NO_COUNTS, wru: 1_000_000 }, A).dynamodb).toBeCloseTo(0.625, 10);
    expect(billOf({ ...NO_COUNTS, rru: 1_000_000 }, A).dynamodb).toBeCloseTo(0.125, 10);
    expect(billOf({ ...NO_COUNTS, sqs: 1_000_000 }, A).sqs).toBeCloseTo(0.4, 10);
    expect(billOf({ ...NO_COUNTS, invocations: 1_000_000 }, A).lambda).toBeCloseTo(0.2, 10);
    // 1,000 deliveries of 1 s at 1 GiB: 1,000 GB-s; a fire is duration only, never an invocation.
    const timed = billOf({ ...NO_COUNTS, deliveries: 1000, fires: 1000 }, { ...A, consumerMs: 1000, fireMs: 1000 });
    expect(timed.lambda).toBeCloseTo(2000 * 0.0000133334, 10);
    const logged = billOf({ ...NO_COUNTS, deliveries: 2 }, { ...A, logBytesPerDelivery: 1024 ** 3 / 2 });
    expect(logged.logs).toBeCloseTo(0.5, 10);
    const all = billOf({ ...NO_COUNTS, wru: 1e6, sqs: 1e6 }, A);
    expect(all.total).toBeCloseTo(all.dynamodb + all.sqs + all.lambda + all.logs, 12);
  });

  it('adds and scales counts field by field', () => {
    const c: Counts = { wru: 2, rru: 1, storageGbMonths: 3, sqs: 4, sends: 1, invocations: 2, deliveries: 2, fires: 1 };
    expect(addCounts(c, c)).toEqual(scaleCounts(c, 2));
    expect(addCounts(c, NO_COUNTS)).toEqual(c);
  });

  it('in full batches, a receive, a delete and a visibility call are shared by the batch; sends are not', () => {
    const alone: Counts = { ...NO_COUNTS, sends: 12, sqs: 12 + 3 * 13, invocations: 13, deliveries: 13 };
    const busy = inFullBatches(alone, 10);
    expect(busy.invocations).toBeCloseTo(1.3, 10);
    expect(busy.sqs).toBeCloseTo(12 + 3.9, 10);
    expect(busy.deliveries).toBe(13);
  });

  it('counts the most intervals overlapping at once, an end and a start at one moment not overlapping', () => {
    expect(maxConcurrent([])).toBe(0);
    expect(
      maxConcurrent([
        { start: 0, end: 10 },
        { start: 10, end: 20 },
        { start: 20, end: 30 },
      ]),
    ).toBe(1);
    expect(
      maxConcurrent([
        { start: 0, end: 10 },
        { start: 5, end: 15 },
        { start: 9, end: 12 },
        { start: 12, end: 13 },
      ]),
    ).toBe(3);
    expect(() => maxConcurrent([{ start: 5, end: 4 }])).toThrow(RangeError);
  });

  it('a 5-task DAG with one Parallel state is 6 state transitions: $150 per million runs at $25 per million', () => {
    expect(stepFunctionsTransitions(5, 1)).toBe(6);
    expect(perMillion((25 / 1_000_000) * stepFunctionsTransitions(5, 1))).toBeCloseTo(150, 8);
    expect(() => stepFunctionsTransitions(1.5, 0)).toThrow(RangeError);
  });

  it("an MWAA mw1.small environment's floor is its hourly price over 730 hours, plus what is added", () => {
    expect(mwaaMonthlyFloor()).toBeCloseTo(0.49 * 730, 8);
    expect(mwaaMonthlyFloor({ extraWorkers: 1, metaDatabaseGb: 10 })).toBeCloseTo(0.49 * 730 + 0.055 * 730 + 1, 8);
  });

  it('names calendar days in a zone and lists a range of them, both ends included', () => {
    expect(dateIn('Asia/Dhaka', '2026-11-27T18:30:00.000Z')).toBe('2026-11-28');
    expect(dateIn('UTC', undefined)).toBe('?');
    expect(daysBetween('2026-11-29', '2026-12-02')).toEqual(['2026-11-29', '2026-11-30', '2026-12-01', '2026-12-02']);
    expect(daysBetween('2026-12-02', '2026-12-01')).toEqual([]);
  });

  it('checks a backfill: one run per date, every run succeeded, the most active at once, the logical date each node got', () => {
    const run = (id: string, date: string, admittedAt: number, status = 'succeeded'): RunSeen => ({
      id,
      date,
      status,
      intervalStart: `${date}T00:00:00.000Z`,
      admittedAt,
    });
    const runs = [run('a', '2026-11-01', 0), run('b', '2026-11-02', 5), run('c', '2026-11-02', 30, 'failed')];
    const exec = (taskId: string, runId: string, date: string, end: number) => ({
      taskId,
      runId,
      logicalDate: `${date}T00:00:00.000Z`,
      end,
    });
    const checks = checkRuns(
      runs,
      [
        exec('a1', 'a', '2026-11-01', 10),
        exec('a2', 'a', '2026-11-01', 20),
        exec('b1', 'b', '2026-11-01', 25),
        exec('b1', 'b', '2026-11-02', 26),
        exec('c1', 'c', '2026-11-02', 40),
      ],
      ['2026-11-01', '2026-11-02', '2026-11-03'],
    );
    expect(checks.duplicateDates).toEqual(['2026-11-02']);
    expect(checks.missingDates).toEqual(['2026-11-03']);
    expect(checks.unsucceeded).toEqual(['2026-11-02 failed']);
    // a: 0–20, b: 5–26, c: 30–40.
    expect(checks.maxActive).toBe(2);
    expect(checks.lastEnd.get('b')).toBe(26);
    expect(checks.rerunNodes).toBe(1);
    expect(checks.wrongDates).toBe(1);
    expect(checks.nodeExecutions).toBe(5);
    expect(backfillPassed({ ...checks, dates: 3 }, 2)).toBe(false);
    const clean = checkRuns(
      runs.slice(0, 2),
      [exec('a1', 'a', '2026-11-01', 10), exec('b1', 'b', '2026-11-02', 26)],
      ['2026-11-01', '2026-11-02'],
    );
    expect(backfillPassed({ ...clean, dates: 2 }, 2)).toBe(true);
    expect(backfillPassed({ ...clean, dates: 2 }, 1)).toBe(false);
  });

  it('formats virtual time as hours and minutes', () => {
    expect(hoursMinutes(7_715_621)).toBe('2 h 09 min');
    expect(hoursMinutes(0)).toBe('0 h 00 min');
  });
});
