import { describe, expect, it } from 'vitest';
import { LimitDefinitionError } from '../../../shared/limit/errors.js';
import { StartLead } from '../../../shared/limit/lead.js';

describe('Class: StartLead', () => {
  it('is the floor until a round trip is measured, and while the learnt lead is below it', () => {
    const lead = new StartLead(50, 15_000);
    expect(lead.ms).toBe(50);
    lead.observe(5); // 5 + 4 · 2.5 = 15
    expect(lead.ms).toBe(50);
  });

  it('a first round trip R gives R + 4 · R/2 (RFC 6298), never past the cap', () => {
    const lead = new StartLead(50, 1_000);
    lead.observe(180);
    expect(lead.ms).toBe(540);
    const capped = new StartLead(50, 1_000);
    capped.observe(400);
    expect(capped.ms).toBe(1_000);
  });

  it('steady round trips bring the lead down towards them; a spike raises it by a fraction, not to the spike', () => {
    const lead = new StartLead(0, 15_000);
    for (let i = 0; i < 100; i += 1) lead.observe(20);
    expect(lead.ms).toBeGreaterThanOrEqual(20);
    expect(lead.ms).toBeLessThan(21);
    lead.observe(600);
    // srtt 20 + (600 − 20) / 8 = 92.5; rttvar (580) / 4 = 145: lead 92.5 + 580 = 672.5
    expect(lead.ms).toBeCloseTo(672.5, 1);
    for (let i = 0; i < 40; i += 1) lead.observe(20);
    expect(lead.ms).toBeLessThan(25);
  });

  it('ignores what cannot be a round trip (negative, NaN, Infinity)', () => {
    const lead = new StartLead(5, 100);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) lead.observe(bad);
    expect(lead.ms).toBe(5);
  });

  it('refuses a floor above its cap or below 0: a LimitDefinitionError naming leadMs (the floor is that option)', () => {
    expect(() => new StartLead(10, 5)).toThrow(LimitDefinitionError);
    expect(() => new StartLead(-1, 5)).toThrow(/^leadMs: must be >= 0 and at most its cap 5, got -1$/);
  });
});
