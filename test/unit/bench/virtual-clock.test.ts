/** The simulations' virtual clock (testing/virtual-clock.ts). */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../testing/virtual-clock.js';

const T0 = Date.UTC(2026, 10, 30);

describe('Class: VirtualClock', () => {
  it('wakes sleepers in time order, at exact (fractional) times, FIFO among equal times', async () => {
    const clock = new VirtualClock(T0);
    const woke: [string, number][] = [];
    const sleeper = async (name: string, ms: number) => {
      await clock.sleep(ms);
      woke.push([name, clock.now() - T0]);
    };
    void sleeper('c', 12.5);
    void sleeper('a', 2.5);
    void sleeper('b', 2.5);
    void sleeper('d', 0);
    expect(await clock.run()).toBe('idle');
    expect(woke).toEqual([
      ['d', 0],
      ['a', 2.5],
      ['b', 2.5],
      ['c', 12.5],
    ]);
    expect(clock.events).toBe(4);
    expect(clock.instants).toBe(3);
  });

  it('stops when told, or at its limit', async () => {
    const clock = new VirtualClock(T0);
    let n = 0;
    const tick = () => {
      n += 1;
      clock.at(10, tick);
    };
    clock.at(10, tick);
    expect(await clock.run(T0 + 1000, () => n >= 5)).toBe('done');
    expect(clock.now()).toBe(T0 + 50);
    expect(await clock.run(T0 + 100)).toBe('limit');
    expect(clock.now()).toBe(T0 + 100);
  });

  it('rounds delays to whole milliseconds when asked, and runUntil ends at its limit', async () => {
    const clock = new VirtualClock(T0, { wholeMilliseconds: true });
    const woke: number[] = [];
    clock.at(2.4, () => woke.push(clock.now() - T0));
    clock.at(2.6, () => woke.push(clock.now() - T0));
    await clock.runUntil(T0 + 10);
    expect(woke).toEqual([2, 3]);
    expect(clock.now()).toBe(T0 + 10);
  });

  it('runs intervals until cancelled; a cancelled timer never fires', async () => {
    const clock = new VirtualClock(T0);
    const ticks: number[] = [];
    const interval = clock.every(100, () => ticks.push(clock.now() - T0));
    const once = clock.at(150, () => ticks.push(-1));
    clock.cancel(once);
    clock.at(350, () => clock.cancel(interval));
    await clock.runUntil(T0 + 1000);
    expect(ticks).toEqual([100, 200, 300]);
  });

  it('puts the global timers on the clock while installed', async () => {
    const clock = new VirtualClock(T0);
    const realSetTimeout = globalThis.setTimeout;
    const restore = clock.installGlobalTimers();
    const woke: number[] = [];
    try {
      setTimeout(() => woke.push(clock.now() - T0), 5_000);
      const t = setTimeout(() => woke.push(-1), 1_000);
      clearTimeout(t);
      let ticks = 0;
      const i = setInterval(() => {
        woke.push(clock.now() - T0);
        ticks += 1;
        if (ticks === 3) clearInterval(i);
      }, 2_000);
      await clock.runUntil(T0 + 60_000);
    } finally {
      restore();
    }
    expect(woke).toEqual([2_000, 4_000, 5_000, 6_000]);
    expect(globalThis.setTimeout).toBe(realSetTimeout);
  });
});
