/**
 * The process's readers–writer gate (shared/service/consumer/exclusive-gate.ts): an attempt that
 * runs alone waits for the shared holders and holds new ones back; `GateTurn` is one message's
 * shared place, taken and given back once; `closed` times how long the gate held shared holders
 * back (what a benchmark reports as the cost of suspects).
 */
import { describe, expect, it } from 'vitest';
import { ExclusiveGate, GateTurn } from '../../../shared/service/consumer/exclusive-gate.js';

describe('ExclusiveGate', () => {
  it('closes to new shared holders from the moment one asks to run alone until it leaves, and times it', async () => {
    let now = 1_000;
    const gate = new ExclusiveGate(() => now);
    const leaveShared = await gate.enter(false);
    now = 1_100;
    let alone: (() => void) | undefined;
    const asking = gate.enter(true).then((leave) => {
      alone = leave;
    });
    // A shared holder arriving now waits behind the one asking to run alone.
    let lateEntered = false;
    const late = gate.enter(false).then((leave) => {
      lateEntered = true;
      return leave;
    });
    await Promise.resolve();
    expect(gate.state).toEqual({ shared: 1, exclusive: false, waiting: 2 });
    now = 1_300;
    leaveShared();
    await asking;
    expect(gate.state).toEqual({ shared: 0, exclusive: true, waiting: 1 });
    expect(lateEntered).toBe(false);
    now = 1_500;
    expect(gate.closed).toEqual({ ms: 400, alone: 1 });
    alone?.();
    (await late)();
    expect(lateEntered).toBe(true);
    now = 9_000;
    expect(gate.closed).toEqual({ ms: 400, alone: 1 });
    expect(gate.state).toEqual({ shared: 0, exclusive: false, waiting: 0 });
  });
});

describe('GateTurn', () => {
  it('holds one shared place at most, and gives it back once however often it is given back', async () => {
    const gate = new ExclusiveGate();
    const turn = new GateTurn(gate);
    expect(turn.held).toBe(false);
    await turn.take();
    await turn.take();
    expect(gate.state.shared).toBe(1);
    expect(turn.held).toBe(true);
    turn.giveBack();
    turn.giveBack();
    expect(gate.state.shared).toBe(0);
    expect(turn.held).toBe(false);
  });
});
