import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { serialInterval } from '../../../local/serial-timer.js';

describe('Function: serialInterval', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('skips ticks while the previous run is still going, so two runs never overlap', async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const t = serialInterval(async () => {
      running += 1;
      runs += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 12_000)); // a sweep slower than the 5 s period
      running -= 1;
    }, 5_000);
    await vi.advanceTimersByTimeAsync(40_000);
    expect(most).toBe(1);
    expect(runs).toBe(3); // starts at 5 s, 20 s, 35 s
    const stopped = t.stop();
    await vi.advanceTimersByTimeAsync(12_000);
    await stopped;
    expect(running).toBe(0);
  });
});
