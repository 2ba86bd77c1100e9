/**
 * `npm start` syncs the schedules declared in code before it serves, and its banner lists each
 * schedule with its next fire time (UTC); `kaj schedules list --local` sees the same.
 */
import { describe, expect, it } from 'vitest';
import { localState, sandboxPerTest, startNpm } from './sandbox.js';

const run = sandboxPerTest();

describe('npm start banner', () => {
  it('lists the schedules declared in code with their next fire times', async () => {
    const npm = await startNpm(run);
    const out = npm.output();
    // tasks/nightly-close.ts and tasks/sales-report.ts: 00:45 and 00:30 in Dhaka (UTC+6) are
    // 18:45 and 18:30 UTC the day before; one schedule a line, by name.
    expect(out).toMatch(
      /Schedules {2}nightly-close {2}nightly_close {2}cron 45 0 \* \* \* \(Asia\/Dhaka\) {2}next \d{4}-\d\d-\d\dT18:45:00\.000Z\n {13}nightly-sales-report {2}sales_report {2}cron 30 0 \* \* \* \(Asia\/Dhaka\) {2}next \d{4}-\d\d-\d\dT18:30:00\.000Z/,
    );
    const state = localState(npm.dir);
    const res = await fetch(`${state.apiUrl}/api/v1/schedules/nightly-sales-report`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ source: 'code', owner: 'kaj:code', state: 'active' });
  }, 60_000);
});
